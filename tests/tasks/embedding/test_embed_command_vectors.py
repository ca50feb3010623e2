"""`bert-tf embed` gives, for every kind of model it reads and every pooling, the vectors of an independent path: each
text alone through the encoder's full call, pooled in NumPy, then the trained projection and normalisation in NumPy."""

import json

import keras
import numpy as np
import pytest

from bert_tf import BertClassifier, BertEmbedder, BertModel, BertTokenizer
from bert_tf.tasks.spec import TaskSpec
from bert_tf_cli import main
from tiny_inspection_models import CONFIG, TOKENS, save_tiny, tiny_pretrainer

TEXTS = ["the woman went to the store and bought a pair of shoes", "i opened", "we sat on the river bank ."]
PAIRS = [("who sat on the bank ?", "we sat on the river bank ."), ("i opened", "a bank account")]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """{kind: (directory, encoder)}: a pre-training run's model, a classifier, and an embedding model that pools the
    [CLS] vector, projects it to 48 values and normalises (trained so; its settings say so)."""
    root = tmp_path_factory.mktemp("models")
    keras.utils.set_random_seed(3)
    pretrainer = tiny_pretrainer()
    classifier = BertClassifier(BertModel(CONFIG), num_classes=2)
    embedder = BertEmbedder(BertModel(CONFIG), pooling="cls", embedding_size=48)
    spec = TaskSpec.of("embed", seq_length=CONFIG.max_position_embeddings, pooling="cls", embedding_size=48)
    return {"pretrainer": (save_tiny(pretrainer, root / "pretrainer"), pretrainer.encoder, None),
            "classifier": (save_tiny(classifier, root / "classifier", task="classify"), classifier.encoder, None),
            "embedder": (save_tiny(embedder, root / "embedder", task=spec), embedder.encoder, embedder.projection)}


def ids_of(text: str | tuple[str, str]) -> tuple[list[int], list[int]]:
    """[CLS] text [SEP] (a pair: [CLS] first [SEP] second [SEP]) and its segment ids, as BERT reads them."""
    tokenizer = BertTokenizer(list(TOKENS))
    pieces = [tokenizer.tokenize(part).numpy().tolist() for part in ((text,) if isinstance(text, str) else text)]
    ids, types = [tokenizer.vocabulary.cls_id], [0]
    for segment, part in enumerate(pieces):
        ids += [*part, tokenizer.vocabulary.sep_id]
        types += [segment] * (len(part) + 1)
    return ids, types


def hidden_of(encoder, text, layers) -> tuple[np.ndarray, dict]:
    """The text's token vectors [tokens, width · layers] (the layers concatenated) from the full call, and the call."""
    ids, types = ids_of(text)
    outputs = encoder({"input_word_ids": np.array([ids]), "input_type_ids": np.array([types])})
    hidden = np.concatenate([(outputs["embedding_output"] if layer == "embeddings" else
                              outputs["encoder_outputs"][layer])[0].numpy() for layer in layers], axis=-1)
    return hidden, outputs


def expected_vector(encoder, text, pooling, layers=(-1,), normalize=False, skip_special=False, projection=None):
    hidden, outputs = hidden_of(encoder, text, layers)
    real = hidden[1:-1] if skip_special else hidden
    vector = {"cls": hidden[0], "mean": real.mean(axis=0), "max": real.max(axis=0),
              "mean_max": np.concatenate([real.mean(axis=0), real.max(axis=0)]),
              "pooled": outputs["pooled_output"][0].numpy() if pooling == "pooled" else None}[pooling]
    if projection is not None:
        kernel, bias = (weight.numpy() for weight in projection.weights)
        vector = vector @ kernel + bias
    return vector / np.linalg.norm(vector) if normalize else vector


def embed(tmp_path, directory, texts, *flags, name="v.npy"):
    out = tmp_path / name
    source = tmp_path / "in.txt"
    source.write_text("".join(f"{text}\n" if isinstance(text, str) else f"{text[0]}\t{text[1]}\n" for text in texts))
    assert main(["embed", "--model", str(directory), "--in", str(source), "--out", str(out), "--no-progress",
                 *flags]) == 0
    return np.load(out) if out.suffix == ".npy" else [json.loads(line) for line in out.read_text().splitlines()]


# (model, flags, what the vectors are: pooling, layers, normalize, skip [CLS]/[SEP], the trained projection)
CASES = [
    ("pretrainer", [], dict(pooling="mean")),
    ("pretrainer", ["--pooling", "cls"], dict(pooling="cls")),
    ("pretrainer", ["--pooling", "pooled"], dict(pooling="pooled")),
    ("pretrainer", ["--pooling", "max", "--layer", "embeddings", "-2", "--normalize"],
     dict(pooling="max", layers=("embeddings", -2), normalize=True)),
    ("pretrainer", ["--pooling", "mean_max", "--layer", "0"], dict(pooling="mean_max", layers=(0,))),
    ("pretrainer", ["--skip-special"], dict(pooling="mean", skip_special=True)),
    ("classifier", ["--pooling", "mean"], dict(pooling="mean")),
    ("embedder", [], dict(pooling="cls", normalize=True, projection=True)),  # as it was trained
    ("embedder", ["--pooling", "mean"], dict(pooling="mean", normalize=True)),  # another pooling: no projection
    ("embedder", ["--layer", "0"], dict(pooling="cls", layers=(0,), normalize=True)),  # another layer: none either
]


@pytest.mark.parametrize("kind, flags, what", CASES, ids=[f"{kind}{''.join(flags)}" for kind, flags, _ in CASES])
def test_sentence_vectors_are_those_of_each_text_alone(models, tmp_path, kind, flags, what):
    directory, encoder, projection = models[kind]
    what = dict(what, projection=projection if what.get("projection") else None)
    vectors = embed(tmp_path, directory, TEXTS, *flags)
    expected = np.stack([expected_vector(encoder, text, **what) for text in TEXTS])
    assert vectors.shape == expected.shape and vectors.dtype == np.float32
    np.testing.assert_allclose(vectors, expected, atol=2e-5)


@pytest.mark.parametrize("pooling", ["cls", "mean"])
def test_pair_vectors_are_those_of_each_pair_alone(models, tmp_path, pooling):
    directory, encoder, _ = models["pretrainer"]
    records = embed(tmp_path, directory, PAIRS, "--pairs", "--pooling", pooling, name="p.jsonl")
    assert [record["text"] for record in records] == [f"{first}\t{second}" for first, second in PAIRS]
    expected = [expected_vector(encoder, pair, pooling) for pair in PAIRS]
    np.testing.assert_allclose([record["vector"] for record in records], expected, atol=2e-5)


def test_token_vectors_are_those_of_each_text_alone(models, tmp_path):
    directory, encoder, _ = models["pretrainer"]
    records = embed(tmp_path, directory, TEXTS, "--tokens", "--layer", "-2", "-1", name="t.jsonl")
    for text, record in zip(TEXTS, records):
        hidden, _ = hidden_of(encoder, text, (-2, -1))
        assert len(record["tokens"]) == len(hidden)
        np.testing.assert_allclose([token["vector"] for token in record["tokens"]], hidden, atol=2e-5)
