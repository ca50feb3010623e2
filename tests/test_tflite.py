"""`serving.export.tflite` and `serving.tflite_runner`: the ids and raw-text TFLite models give the
SavedModel's token ids and outputs, quantization shrinks the file, and (with the team data) the
raw-text model tokenizes every SST-2 dev sentence as the SavedModel does."""

import io
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import bert_tf
from bert_tf_cli import main
from serving.export.saved_model import export_saved_model
from serving.export.tflite import convert, export_tflite
from serving.export.signatures import serving_spec
from serving.tflite_runner import TfliteModel, main as runner_main
from tiny_exports import PAIRS, TEXTS, VOCAB, tiny_encoder, write_vocab

SEQ_LENGTH = 24
LABELS = ["neg", "pos"]


@pytest.fixture(scope="module")
def vocab_file(tmp_path_factory):
    return write_vocab(tmp_path_factory.mktemp("vocab"))


@pytest.fixture(scope="module")
def classifier_dir(vocab_file, tmp_path_factory):
    model = bert_tf.BertClassifier(tiny_encoder(seed=11), num_classes=2, label_names=LABELS)
    return bert_tf.save_pretrained(model, tmp_path_factory.mktemp("classifier") / "model", vocab_file=vocab_file,
                                   task="classify", seq_length=SEQ_LENGTH)


@pytest.fixture(scope="module")
def saved_model(classifier_dir, tmp_path_factory):
    return tf.saved_model.load(str(export_saved_model(classifier_dir, tmp_path_factory.mktemp("models"), "clf")))


@pytest.fixture(scope="module")
def text_tflite(classifier_dir, tmp_path_factory):
    path = tmp_path_factory.mktemp("tflite") / "clf_text.tflite"
    assert main(["export", "--model", str(classifier_dir), "--format", "tflite", "--tflite-input", "text",
                 "--out", str(path)]) == 0
    return TfliteModel(path)


def test_ids_model_matches_the_saved_model(classifier_dir, saved_model, tmp_path, capsys):
    model = TfliteModel(export_tflite(classifier_dir, tmp_path / "ids.tflite"))
    assert model.signatures["serving_default"]["inputs"] == ["input_mask", "input_type_ids", "input_word_ids"]
    assert model.info == {"task": "classify", "seq_length": SEQ_LENGTH, "lower_case": True, "max_text_bytes": 65536,
                          "quantization": "none",
                          "vocab_size": len(VOCAB), "type_vocab_size": 2, "label_names": LABELS,
                          "classifier_mode": "single_label"}
    ids = {name: value.numpy() for name, value in saved_model.signatures["preprocess"](text=tf.constant(TEXTS)).items()}
    expected = saved_model.signatures["serve_ids"](**{name: tf.constant(value) for name, value in ids.items()})
    outputs = model.run(ids)
    np.testing.assert_allclose(outputs["probabilities"], expected["probabilities"].numpy(), atol=1e-4, rtol=0)
    assert outputs["label_names"].tolist() == expected["label_names"].numpy().tolist()
    with pytest.raises(ValueError, match="takes token ids, not text"):
        model.classify(TEXTS)
    # `python -m serving.tflite_runner` on it says how to feed ids, not only that it refuses text.
    assert runner_main([str(model.path), "a text"]) == 2
    assert (f"takes token ids, not text: int32 input_word_ids, input_mask and input_type_ids [batch, {SEQ_LENGTH}], "
            "fed with TfliteModel(path).run({...})") in capsys.readouterr().err
    with pytest.raises(ValueError, match="takes inputs"):
        model.run({"input_word_ids": ids["input_word_ids"]})


def test_text_model_matches_the_saved_model(text_tflite, saved_model, capsys, monkeypatch):
    assert set(text_tflite.signatures) == {"serving_default", "preprocess", "serve_ids", "model_info"}
    ids = text_tflite.run({"text": TEXTS}, "preprocess")
    for name, value in saved_model.signatures["preprocess"](text=tf.constant(TEXTS)).items():
        np.testing.assert_array_equal(ids[name], value.numpy(), err_msg=name)
    expected = saved_model.signatures["serving_default"](text=tf.constant(TEXTS))["probabilities"].numpy()
    np.testing.assert_allclose(text_tflite.predict_texts(TEXTS)["probabilities"], expected, atol=1e-4, rtol=0)
    labels, probabilities = zip(*text_tflite.classify(TEXTS))
    assert list(labels) == [LABELS[index] for index in expected.argmax(axis=1)]
    np.testing.assert_allclose(probabilities, expected.max(axis=1), atol=1e-4, rtol=0)

    assert runner_main([str(text_tflite.path), TEXTS[0]]) == 0
    label, probability, text = capsys.readouterr().out.strip().split("\t")
    assert (label, text) == (LABELS[expected[0].argmax()], TEXTS[0]) and abs(float(probability) - expected[0].max()) < 1e-3
    lines = [text for text in TEXTS if text.strip()][:2]
    monkeypatch.setattr("sys.stdin", io.StringIO(f"{lines[0]}\n\n{lines[1]}\n"))  # `-`: one text per line
    assert runner_main([str(text_tflite.path), "-"]) == 0
    assert [line.split("\t")[2] for line in capsys.readouterr().out.splitlines()] == lines


def test_the_runner_is_quiet_by_default_and_verbose_on_request(text_tflite):
    """`python -m serving.tflite_runner`, as a user runs it (no TF_CPP_MIN_LOG_LEVEL): the answer, and no LiteRT or
    TensorFlow notices; TF_CPP_MIN_LOG_LEVEL=0 keeps them."""
    environment = {key: value for key, value in os.environ.items() if key != "TF_CPP_MIN_LOG_LEVEL"}
    command = [sys.executable, "-m", "serving.tflite_runner", str(text_tflite.path), TEXTS[0]]
    result = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=300, check=True)
    assert result.stdout.endswith(f"\t{TEXTS[0]}\n") and result.stderr == ""
    verbose = subprocess.run(command, capture_output=True, text=True, env={**environment, "TF_CPP_MIN_LOG_LEVEL": "0"},
                             timeout=300, check=True)
    assert "INFO: Created TensorFlow Lite XNNPACK delegate" in verbose.stderr


def test_text_model_gets_the_texts_the_saved_model_tokenizes(classifier_dir, tmp_path):
    """Invalid UTF-8 and U+FFFD vanish without splitting a word, and texts over the byte budget are cut on a
    character boundary, before the TFLite tokenizer sees them (`TfliteModel.run`): the same ids as the SavedModel."""
    texts = [b"the fi\xfflm was gr\xe2\x82eat", "the film \ufffd was great".encode(), b"\xff",
             ("the movie " * 3 + "\u00e9 a film").encode(), b"the movie " * 5]
    saved_model = tf.saved_model.load(str(export_saved_model(classifier_dir, tmp_path, "f", max_text_bytes=31)))
    version = export_saved_model(classifier_dir, tmp_path, "q", max_text_bytes=31, quantize="int8")
    tflite = TfliteModel(version / "model.tflite")
    assert tflite.max_text_bytes == 31
    ids = tflite.run({"text": texts}, "preprocess")
    for name, value in saved_model.signatures["preprocess"](text=tf.constant(texts)).items():
        np.testing.assert_array_equal(ids[name], value.numpy(), err_msg=name)
    assert ids["input_word_ids"][0].tolist()[:6] == ids["input_word_ids"][1].tolist()[:6]  # "the film was great"


def test_pair_text_model_packs_pairs_as_training_does(vocab_file, tmp_path):
    model = bert_tf.BertClassifier(tiny_encoder(seed=12), num_classes=2)
    model_dir = bert_tf.save_pretrained(model, tmp_path / "pair", vocab_file=vocab_file, task="classify",
                                        seq_length=SEQ_LENGTH, text_pair=True)
    tflite = TfliteModel(export_tflite(model_dir, tmp_path / "pair.tflite", inputs="text"))
    assert tflite.input_names() == ["text", "text_b"]
    preprocessor = bert_tf.BertPreprocessor(bert_tf.BertTokenizer(vocab_file), seq_length=SEQ_LENGTH)
    expected_ids = preprocessor((tf.constant(TEXTS), tf.constant(PAIRS)))  # longest_first, as training packs
    ids = tflite.run({"text": TEXTS, "text_b": PAIRS}, "preprocess")
    for name, value in expected_ids.items():
        np.testing.assert_array_equal(ids[name], value.numpy(), err_msg=name)
    np.testing.assert_allclose(tflite.predict_texts(TEXTS, PAIRS)["probabilities"],
                               tf.nn.softmax(model(expected_ids)).numpy(), atol=1e-4, rtol=0)


def test_quantization_shrinks_the_model(vocab_file, tmp_path):
    # Big enough that almost every weight is a tensor of more than 1024 elements (smaller ones stay float32).
    tokens = VOCAB + [f"word{index}" for index in range(5000)]
    encoder = tiny_encoder(vocab_size=len(tokens), hidden_size=64, intermediate_size=256, seed=13)
    model = bert_tf.BertClassifier(encoder, num_classes=2)
    model_dir = bert_tf.save_pretrained(model, tmp_path / "model", vocab_file=write_vocab(tmp_path, tokens),
                                        task="classify", seq_length=SEQ_LENGTH)
    spec = serving_spec(bert_tf.load_model_directory(model_dir))
    sizes, outputs = {}, {}
    ids = {"input_word_ids": np.random.default_rng(0).integers(5, len(tokens), (4, SEQ_LENGTH)),
           "input_mask": np.ones((4, SEQ_LENGTH)), "input_type_ids": np.zeros((4, SEQ_LENGTH))}
    for quantization in ("none", "int8", "float16"):
        path = tmp_path / f"{quantization}.tflite"
        path.write_bytes(convert(spec, "ids", quantization))
        sizes[quantization] = path.stat().st_size
        outputs[quantization] = TfliteModel(path).run(ids)["probabilities"]
    assert sizes["int8"] <= 0.30 * sizes["none"], sizes
    assert sizes["float16"] <= 0.55 * sizes["none"], sizes
    np.testing.assert_allclose(outputs["float16"], outputs["none"], atol=1e-2)
    np.testing.assert_allclose(outputs["int8"], outputs["none"], atol=5e-2)


def test_bad_arguments_are_clear_errors(classifier_dir, tmp_path):
    with pytest.raises(ValueError, match="must end in .tflite"):
        export_tflite(classifier_dir, tmp_path / "model.bin")
    spec = serving_spec(bert_tf.load_model_directory(classifier_dir))
    with pytest.raises(ValueError, match="quantization must be one of"):
        convert(spec, "ids", "int4")
    with pytest.raises(ValueError, match="inputs must be one of"):
        convert(spec, "strings")
    with pytest.raises(FileNotFoundError):
        TfliteModel(tmp_path / "absent.tflite")
    assert not list(tmp_path.iterdir())


@pytest.mark.slow
def test_sst2_dev_tokens_and_predictions_equal_the_saved_model(shared_data, tmp_path):
    """The raw-text TFLite tokenizer (FastBertNormalizer + FastWordpiece) against the SavedModel's exact one."""
    vocab = shared_data / "vocab" / "bert-base-uncased-vocab.txt"
    sentences = [line.split("\t")[0] for line in (shared_data / "sst2" / "dev.tsv").read_text().splitlines()[1:]]
    model = bert_tf.BertClassifier(tiny_encoder(vocab_size=30522, seed=14), num_classes=2)
    model_dir = bert_tf.save_pretrained(model, tmp_path / "sst2", vocab_file=vocab, task="classify", seq_length=64)
    signatures = tf.saved_model.load(str(export_saved_model(model_dir, tmp_path / "models", "sst2"))).signatures
    tflite = TfliteModel(export_tflite(model_dir, tmp_path / "sst2.tflite", inputs="text"))
    assert len(sentences) == 872
    expected_ids = signatures["preprocess"](text=tf.constant(sentences))
    ids = tflite.run({"text": sentences}, "preprocess")
    mismatched = [sentences[row] for row in np.flatnonzero(
        (ids["input_word_ids"] != expected_ids["input_word_ids"].numpy()).any(axis=1))]
    assert mismatched == []
    expected = signatures["serving_default"](text=tf.constant(sentences))["probabilities"].numpy()
    probabilities = tflite.predict_texts(sentences)["probabilities"]
    np.testing.assert_allclose(probabilities, expected, atol=1e-4, rtol=0)
    assert (probabilities.argmax(axis=1) == expected.argmax(axis=1)).all()


@pytest.mark.slow
def test_encoder_text_model_matches_the_saved_model(vocab_file, tmp_path):
    model_dir = bert_tf.save_pretrained(tiny_encoder(seed=17), tmp_path / "encoder", vocab_file=vocab_file,
                                        seq_length=SEQ_LENGTH)
    signatures = tf.saved_model.load(str(export_saved_model(model_dir, tmp_path / "models", "encoder"))).signatures
    tflite = TfliteModel(export_tflite(model_dir, tmp_path / "encoder.tflite", inputs="text"))
    ids = tflite.run({"text": TEXTS}, "preprocess")
    for name, value in signatures["preprocess"](text=tf.constant(TEXTS)).items():
        np.testing.assert_array_equal(ids[name], value.numpy(), err_msg=name)
    for texts in (TEXTS, TEXTS[:2]):  # also a batch of short texts: per-token outputs keep seq_length rows
        expected = signatures["serving_default"](text=tf.constant(texts))
        outputs = tflite.run({"text": texts})
        assert set(outputs) == set(expected) and outputs["sequence_output"].shape[1] == SEQ_LENGTH
        for name, value in outputs.items():
            np.testing.assert_allclose(value, expected[name].numpy(), atol=1e-4, rtol=0, err_msg=name)


@pytest.mark.parametrize("task", ["ner", "squad"])
@pytest.mark.slow
def test_windowed_tasks_refuse_a_text_model_and_convert_with_ids(task, vocab_file, tmp_path):
    """NER and SQuAD read long inputs in several windows, which TFLite cannot: no one-window text model
    that would silently differ from the SavedModel; the ids model equals the SavedModel's serve_ids."""
    model = {"ner": lambda: bert_tf.BertTokenClassifier(tiny_encoder(seed=15), num_labels=3, label_names=["O", "B", "I"]),
             "squad": lambda: bert_tf.BertSpanLabeler(tiny_encoder(seed=16))}[task]()
    model_dir = bert_tf.save_pretrained(model, tmp_path / task, vocab_file=vocab_file, seq_length=SEQ_LENGTH,
                                        settings={"max_query_length": 4} if task == "squad" else None)
    with pytest.raises(ValueError, match=f"A {task} model has no raw-text TFLite export"):
        export_tflite(model_dir, tmp_path / "text.tflite", inputs="text")
    assert not (tmp_path / "text.tflite").exists()
    tflite = TfliteModel(export_tflite(model_dir, tmp_path / f"{task}.tflite", inputs="ids"))
    signatures = tf.saved_model.load(str(export_saved_model(model_dir, tmp_path / "models", task))).signatures
    segments = (tf.constant(TEXTS[:4]), tf.constant(PAIRS[:4]))
    ids = bert_tf.BertPreprocessor(bert_tf.BertTokenizer(vocab_file), SEQ_LENGTH)(segments if task == "squad" else
                                                                                    segments[0])
    expected = signatures["serve_ids"](**ids)
    outputs = tflite.run({name: value.numpy() for name, value in ids.items()})
    assert set(outputs) == set(expected)
    for name, value in outputs.items():
        if value.dtype.kind in "fc":
            np.testing.assert_allclose(value, expected[name].numpy(), atol=1e-4, rtol=0, err_msg=name)
        else:
            np.testing.assert_array_equal(value, expected[name].numpy(), err_msg=name)
