"""The embedding task: its losses against hand computations, its poolings, its data files, and training it."""

import json

import numpy as np
import pytest
import tensorflow as tf

import bert_tf
from bert_tf.tasks.embedding.data import read_embedding_file
from bert_tf.tasks.embedding.losses import CoSENTLoss, CosineSimilarityLoss, InBatchNegativesLoss, MatryoshkaLoss
from bert_tf.tasks.embedding.model import BertEmbedder
from bert_tf.tasks.registry import task_from_spec
from bert_tf.tasks.spec import TaskSpec
from bert_tf_cli import main
from bert_tf.training.finetune import evaluate, finetune
from bert_tf.training.finetune_config import FinetuneConfig
from serving.export.saved_model import export_saved_model
from serving.tflite_runner import TfliteModel
from tiny_finetune_files import write_bert_config, write_vocab

RNG = np.random.default_rng(0)


def unit(vectors):
    return vectors / np.linalg.norm(vectors, axis=-1, keepdims=True)


def cross_entropy(logits, label):
    logits = logits - logits.max()
    return np.log(np.exp(logits).sum()) - logits[label]


@pytest.mark.parametrize("texts, symmetric", [(2, False), (3, False), (2, True)])
def test_in_batch_negatives_is_cross_entropy_over_the_batch(texts, symmetric):
    vectors = RNG.normal(size=(4, texts, 5))
    anchors, candidates = unit(vectors[:, 0]), unit(np.concatenate([vectors[:, i] for i in range(1, texts)]))
    expected = np.mean([cross_entropy(20.0 * candidates @ anchors[i], i) for i in range(4)])
    if symmetric:
        positives = unit(vectors[:, 1])
        expected = (expected + np.mean([cross_entropy(20.0 * anchors @ positives[i], i) for i in range(4)])) / 2
    loss = InBatchNegativesLoss(scale=20.0, symmetric=symmetric)(np.zeros(4), vectors)
    np.testing.assert_allclose(float(loss), expected, rtol=1e-5)


def test_cosent_sums_over_the_pairs_ordered_by_score():
    vectors = RNG.normal(size=(5, 2, 6))
    scores = np.array([0.2, 4.0, 2.5, 2.5, 1.0])
    cosines = 20.0 * np.sum(unit(vectors[:, 0]) * unit(vectors[:, 1]), axis=-1)
    terms = [cosines[j] - cosines[i] for i in range(5) for j in range(5) if scores[i] > scores[j]]
    expected = np.log(1.0 + np.exp(terms).sum())
    np.testing.assert_allclose(float(CoSENTLoss(scale=20.0)(scores, vectors)), expected, rtol=1e-5)


def test_cosine_loss_and_matryoshka_sum_over_the_cut_vectors():
    vectors = RNG.normal(size=(3, 2, 8))
    scores = np.array([0.1, 0.5, 0.9])

    def cosine_loss(values):
        return np.mean((np.sum(unit(values[:, 0]) * unit(values[:, 1]), axis=-1) - scores) ** 2)

    np.testing.assert_allclose(float(CosineSimilarityLoss()(scores, vectors)), cosine_loss(vectors), rtol=1e-5)
    matryoshka = MatryoshkaLoss(CosineSimilarityLoss(), dims=(8, 4, 2))(scores, vectors)
    np.testing.assert_allclose(float(matryoshka), sum(cosine_loss(vectors[..., :d]) for d in (8, 4, 2)), rtol=1e-5)


def tiny_encoder(vocab_size=60):
    return bert_tf.BertModel(bert_tf.BertConfig(vocab_size=vocab_size, hidden_size=8, num_hidden_layers=1,
                                                num_attention_heads=2, intermediate_size=16,
                                                hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0))


@pytest.mark.parametrize("pooling", ["mean", "cls", "max", "mean_max"])
def test_poolings_read_the_real_tokens_only_and_groups_share_the_weights(pooling):
    model = BertEmbedder(tiny_encoder(), pooling=pooling, normalize=False)
    ids = {"input_word_ids": np.array([[2, 7, 9, 3, 0], [2, 8, 3, 0, 0]]),
           "input_mask": np.array([[1, 1, 1, 1, 0], [1, 1, 1, 0, 0]])}
    tokens = model.encoder(ids)["sequence_output"].numpy()
    mask = ids["input_mask"][:, :, None].astype(bool)
    mean, maximum = (tokens * mask).sum(1) / mask.sum(1), np.where(mask, tokens, -np.inf).max(1)
    expected = {"mean": mean, "cls": tokens[:, 0], "max": maximum,
                "mean_max": np.concatenate([mean, maximum], axis=-1)}[pooling]
    np.testing.assert_allclose(model(ids).numpy(), expected, atol=1e-5)
    grouped = model({name: value[None] for name, value in ids.items()}).numpy()  # [1 example, 2 texts, hidden]
    np.testing.assert_allclose(grouped[0], expected, atol=1e-5)
    assert np.allclose(np.linalg.norm(BertEmbedder(model.encoder, pooling=pooling)(ids), axis=-1), 1.0)


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def test_files_say_how_they_train(tmp_path):
    stsb = write(tmp_path / "sts.csv", "main-news\tMSRvid\t2012\t0001\t4.5\tA man plays.\tA man is playing.\n"
                                       "main-news\tMSRvid\t2012\t0002\t0.5\tA cat.\tA car.\tnote\n")
    examples = read_embedding_file(stsb)
    assert (examples.kind, examples.texts, examples.scores) == (
        "scored", [("A man plays.", "A man is playing."), ("A cat.", "A car.")], [4.5, 0.5])
    triples = write(tmp_path / "triples.jsonl", "\n".join(json.dumps(row) for row in [
        {"anchor": "q", "positive": "p", "negative": "n"}, {"anchor": "q2", "positive": "p2", "negative": "n2"}]))
    assert read_embedding_file(triples).kind == "pairs" and read_embedding_file(triples).texts[1] == ("q2", "p2", "n2")
    sentences = write(tmp_path / "books.txt", "one sentence.\n\nanother one.\n")
    assert read_embedding_file(sentences).texts == [("one sentence.",), ("another one.",)]
    assert read_embedding_file(sentences).kind == "sentences"


@pytest.mark.parametrize("name, text, message", [
    ("range.tsv", "sentence1\tsentence2\tscore\na\tb\t7.5\n", r"line 2: the score 7.5 is outside the declared range 0 to 5"),
    ("nan.tsv", "sentence1\tsentence2\tscore\na\tb\tmuch\n", r"line 2: the score 'much' is not a number"),
    ("columns.tsv", "left\tright\na\tb\n", r"no known text columns among \['left', 'right'\]"),
    ("empty.txt", "\n\n", r"the file is empty"),
    ("blank.tsv", "anchor\tpositive\na\t \n", r"line 2: an empty text"),
])
def test_bad_files_are_refused_in_one_line(tmp_path, name, text, message):
    with pytest.raises(ValueError, match=message):
        read_embedding_file(write(tmp_path / name, text))


def test_a_loss_that_does_not_fit_the_data_is_refused(tmp_path):
    write_vocab(tmp_path)
    task = task_from_spec(TaskSpec(task="embed", seq_length=16), bert_tf.BertTokenizer(tmp_path / "vocab.txt"))
    sentences = task.prepare(task.read(write(tmp_path / "s.txt", "a good film\n")), training=True)
    config = FinetuneConfig(task="embed", train_file="s.txt", output_dir="out", init="tiny",
                            settings={"embedding_loss": "cosent"})
    with pytest.raises(ValueError, match="The cosent loss trains on scored pairs .* holds sentences examples"):
        task.loss(config, sentences)
    with pytest.raises(ValueError, match=r"\['pooling'\] are not settings of task 'classify'"):
        FinetuneConfig(task="classify", train_file="t.tsv", output_dir="out", init="tiny", settings={"pooling": "cls"})


def test_simcse_pairs_each_sentence_with_itself(tmp_path):
    write_vocab(tmp_path)
    task = task_from_spec(TaskSpec(task="embed", seq_length=16), bert_tf.BertTokenizer(tmp_path / "vocab.txt"))
    data = task.prepare(task.read(write(tmp_path / "s.txt", "a good film\nthe plot\n")), training=True)
    ids, labels = next(iter(task.training_batches(data, batch_size=2, bucketing=False, seed=0)))
    words = ids["input_word_ids"].numpy()
    assert words.shape[:2] == (2, 2) and (words[:, 0] == words[:, 1]).all()
    assert labels.numpy().tolist() == [0.0, 0.0]


STS_TRAIN = [("good film", "great film", 5.0), ("good film", "bad film", 0.5), ("fine plot", "nice plot", 4.5),
             ("bad plot", "awful plot", 4.0), ("fine film", "poor plot", 1.0), ("nice plot", "sad film", 0.0)]


@pytest.mark.slow
def test_cosent_training_raises_the_spearman_it_is_scored_on(tmp_path, capsys):
    """CoSENT on a tiny random encoder: the dev Spearman (here the training pairs) goes up from where the same start
    scores untrained (a rate too small to move it), and evaluate reads back the same score from the saved model."""
    write_vocab(tmp_path)
    write_bert_config(tmp_path)
    rows = "\n".join(f"x\tx\t2012\t{i:04d}\t{score}\t{a}\t{b}" for i, (a, b, score) in enumerate(STS_TRAIN * 4))
    train = write(tmp_path / "sts-train.csv", rows + "\n")
    config = dict(task="embed", train_file=str(train), dev_file=str(train), init=str(tmp_path / "bert_config.json"),
                  vocab_file=str(tmp_path / "vocab.txt"), seq_length=16, batch_size=8, seed=1, overwrite=True)
    untrained = finetune(FinetuneConfig(**config, epochs=1, learning_rate=1e-12, output_dir=str(tmp_path / "start")),
                         progress=False)
    trained = finetune(FinetuneConfig(**config, epochs=4, learning_rate=3e-3, output_dir=str(tmp_path / "trained")),
                       progress=False)
    assert trained.metrics["spearman"] > untrained.metrics["spearman"] + 10
    task, scores = evaluate(tmp_path / "trained", train, progress=False)
    assert task.name == "embed" and scores["spearman"] == pytest.approx(trained.metrics["spearman"], abs=1e-6)
    texts = ["good film", "fine film", "the plot was awful"]
    vectors = bert_tf.load_model_directory(tmp_path / "trained").model.predict(texts, verbose=0)
    assert vectors.shape == (3, 32) and np.allclose(np.linalg.norm(vectors, axis=-1), 1.0, atol=1e-5)

    # Exported: the SavedModel answers the same vectors, the int8 TFLite model nearly the same direction.
    saved = export_saved_model(tmp_path / "trained", tmp_path / "exports", "embed")
    served = tf.saved_model.load(str(saved)).signatures["serving_default"](text=tf.constant(texts))["embedding"]
    np.testing.assert_allclose(served.numpy(), vectors, atol=1e-5)
    int8 = export_saved_model(tmp_path / "trained", tmp_path / "exports", "embed", quantize="int8")
    quantized = TfliteModel(int8 / "model.tflite").predict_texts(texts)["embedding"]
    cosines = np.sum(unit(quantized) * vectors, axis=-1)
    assert cosines.min() > 0.99, cosines

    assert main(["predict", "--model", str(tmp_path / "trained"), "good film"]) == 0
    assert capsys.readouterr().out.strip().endswith("(32 values)\tgood film")
    # bert-tf embed takes the trained model's pooling and normalisation without flags.
    assert main(["embed", "--model", str(tmp_path / "trained"), "--out", str(tmp_path / "v.npy"), *texts]) == 0
    np.testing.assert_allclose(np.load(tmp_path / "v.npy"), vectors, atol=1e-5)


def test_pairs_are_scored_as_retrieval_and_a_retrieval_folder_too(tmp_path):
    write_vocab(tmp_path)
    task = task_from_spec(TaskSpec(task="embed", seq_length=16), bert_tf.BertTokenizer(tmp_path / "vocab.txt"))
    model = BertEmbedder(tiny_encoder(vocab_size=len((tmp_path / "vocab.txt").read_text().split())))
    pairs = write(tmp_path / "pairs.tsv", "anchor\tpositive\ngood film\tgood film\nthe plot\tthe plot\n")
    scores = task.evaluate(model, task.prepare(task.read(pairs), training=False), batch_size=4)
    assert scores["recall@1"] == 100.0 and scores["score"] == scores["ndcg@10"] == 100.0  # each finds itself
    folder = tmp_path / "beir"
    (folder / "qrels").mkdir(parents=True)
    write(folder / "corpus.jsonl", '{"_id": "d1", "title": "", "text": "good film"}\n'
                                   '{"_id": "d2", "title": "", "text": "the plot"}\n')
    write(folder / "queries.jsonl", '{"_id": "q1", "text": "the plot"}\n')
    write(folder / "qrels" / "test.tsv", "query-id\tcorpus-id\tscore\nq1\td2\t1\n")
    scores = task.evaluate(model, task.prepare(task.read(folder), training=False), batch_size=4)
    assert scores["queries"] == 1 and scores["recall@1"] == 100.0
    assert task.format_scores(scores).startswith("nDCG@10 100.00")


def test_a_mean_max_embedder_is_twice_as_wide_and_not_written_for_sentence_transformers(tmp_path):
    from bert_tf.tasks.embedding.sentence_transformers_folder import write_sentence_transformers_folder

    model = BertEmbedder(tiny_encoder(), pooling="mean_max")
    assert model.embedding_size == 2 * model.encoder.config.hidden_size
    with pytest.raises(ValueError, match="A sentence-transformers folder pools by one of mean, cls, max, not mean_max"):
        write_sentence_transformers_folder(model, tmp_path / "st")
