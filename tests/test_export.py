"""`serving.export.saved_model` and `bert-tf export`: the TF Serving layout and versions, the signatures of each
task (equal to the Keras model), the recorded settings, and the ids-only variant loaded in a
fresh process without tensorflow-text."""

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow as tf

import bert_tf
from bert_tf_cli import main
from serving.export.saved_model import export_saved_model, next_version
from tiny_exports import PAIRS, TEXTS, VOCAB, tiny_encoder, write_vocab

SEQ_LENGTH = 24


@pytest.fixture(scope="module")
def vocab_file(tmp_path_factory):
    return write_vocab(tmp_path_factory.mktemp("vocab"))


@pytest.fixture(scope="module")
def preprocessor(vocab_file):
    return bert_tf.BertPreprocessor(bert_tf.BertTokenizer(vocab_file), seq_length=SEQ_LENGTH)


@pytest.fixture(scope="module")
def classifier_dir(vocab_file, tmp_path_factory):
    model = bert_tf.BertClassifier(tiny_encoder(), num_classes=3, label_names=["neg", "neutral", "pos"])
    return bert_tf.save_pretrained(model, tmp_path_factory.mktemp("classifier") / "model", vocab_file=vocab_file,
                                   task="classify", seq_length=SEQ_LENGTH)


@pytest.fixture(scope="module")
def exports(classifier_dir, tmp_path_factory):
    """The classifier exported twice: with text signatures (version 1) and ids only (version 2)."""
    base = tmp_path_factory.mktemp("models")
    return export_saved_model(classifier_dir, base, "clf"), export_saved_model(classifier_dir, base, "clf", ids_only=True)


def load_signatures(path):
    return tf.saved_model.load(str(path)).signatures


def test_versions_follow_the_tf_serving_layout(classifier_dir, exports, tmp_path):
    text_export, ids_export = exports
    assert (text_export.name, ids_export.name) == ("1", "2") and text_export.parent == ids_export.parent
    assert next_version(text_export.parent) == 3 and next_version(tmp_path / "absent") == 1
    assert (text_export / "saved_model.pb").is_file() and (text_export / "variables").is_dir()
    assert (text_export / "assets" / "vocab.txt").read_text().split() == VOCAB

    assert export_saved_model(classifier_dir, tmp_path, "m", version=5) == tmp_path / "m" / "5"
    with pytest.raises(FileExistsError, match="exists already"):
        export_saved_model(classifier_dir, tmp_path, "m", version=5)
    for name in ("", "a/b", ".hidden"):
        with pytest.raises(ValueError, match="Invalid model name"):
            export_saved_model(classifier_dir, tmp_path, name)
    assert sorted(path.name for path in (tmp_path / "m").iterdir()) == ["5"]  # nothing half-written beside it


def test_classifier_signatures_equal_the_keras_model(classifier_dir, exports, preprocessor):
    keras_model = bert_tf.load_model_directory(classifier_dir).model
    signatures = load_signatures(exports[0])
    assert set(signatures) == {"serving_default", "serve_ids", "preprocess", "model_info"}
    expected = tf.nn.softmax(keras_model(preprocessor(tf.constant(TEXTS)))).numpy()

    outputs = signatures["serving_default"](text=tf.constant(TEXTS))
    np.testing.assert_allclose(outputs["probabilities"].numpy(), expected, atol=1e-5, rtol=0)
    assert outputs["label_names"].numpy().tolist() == [[b"neg", b"neutral", b"pos"]] * len(TEXTS)
    ids = signatures["preprocess"](text=tf.constant(TEXTS))
    for name, value in preprocessor(tf.constant(TEXTS)).items():
        np.testing.assert_array_equal(ids[name].numpy(), value.numpy())
    np.testing.assert_allclose(signatures["serve_ids"](**ids)["probabilities"].numpy(), expected, atol=1e-5, rtol=0)

    info = {name: value.numpy() for name, value in signatures["model_info"](request=tf.constant(["", ""])).items()}
    assert (info["task"][1], info["seq_length"][1], info["lower_case"][1], info["vocab_size"][1]) == (
        b"classify", SEQ_LENGTH, True, len(VOCAB))
    assert info["label_names"].tolist() == [[b"neg", b"neutral", b"pos"]] * 2
    assert info["classifier_mode"].tolist() == [b"single_label"] * 2
    loaded = tf.saved_model.load(str(exports[0]))
    assert (bool(loaded.do_lower_case.numpy()), int(loaded.seq_length.numpy())) == (True, SEQ_LENGTH)
    assert loaded.vocab_file.asset_path.numpy().endswith(b"assets/vocab.txt")


def test_ids_only_export_loads_without_tensorflow_text_or_bert_tf(exports, classifier_dir, preprocessor):
    text_export, ids_export = exports
    assert set(load_signatures(ids_export)) == {"serving_default", "serve_ids", "model_info"}
    features = {name: value.numpy().tolist() for name, value in preprocessor(tf.constant(TEXTS)).items()}
    script = textwrap.dedent(f"""
        import json, sys
        import tensorflow as tf
        try:
            tf.saved_model.load({str(text_export)!r})
            text_error = ""
        except Exception as error:  # the text signatures' ops are not registered without tensorflow_text
            text_error = str(error)
        model = tf.saved_model.load({str(ids_export)!r})
        outputs = model.signatures["serving_default"](**{{k: tf.constant(v) for k, v in {features!r}.items()}})
        print(json.dumps({{"text_error": text_error, "probabilities": outputs["probabilities"].numpy().tolist(),
                          "modules": [m for m in ("tensorflow_text", "bert_tf", "serving") if m in sys.modules]}}))
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd="/")
    assert result.returncode == 0, result.stderr[-3000:]
    answer = json.loads(result.stdout.strip().splitlines()[-1])
    assert answer["modules"] == []
    assert "Op type not registered" in answer["text_error"]
    keras_model = bert_tf.load_model_directory(classifier_dir).model
    expected = tf.nn.softmax(keras_model(preprocessor(tf.constant(TEXTS)))).numpy()
    np.testing.assert_allclose(answer["probabilities"], expected, atol=1e-5, rtol=0)


def test_pair_classifier_takes_text_and_text_b(vocab_file, preprocessor, tmp_path):
    model = bert_tf.BertClassifier(tiny_encoder(seed=3), num_classes=2, mode="multi_label")
    model_dir = bert_tf.save_pretrained(model, tmp_path / "pair", vocab_file=vocab_file, task="classify",
                                        seq_length=SEQ_LENGTH, text_pair=True)
    signatures = load_signatures(export_saved_model(model_dir, tmp_path / "models", "pair"))
    outputs = signatures["serving_default"](text=tf.constant(TEXTS), text_b=tf.constant(PAIRS))
    expected = tf.sigmoid(model(preprocessor((tf.constant(TEXTS), tf.constant(PAIRS))))).numpy()
    np.testing.assert_allclose(outputs["probabilities"].numpy(), expected, atol=1e-5, rtol=0)
    assert outputs["label_names"].numpy().tolist() == [[b"0", b"1"]] * len(TEXTS)


@pytest.mark.slow
def test_regression_outputs_predictions(vocab_file, preprocessor, tmp_path):
    model = bert_tf.BertClassifier(tiny_encoder(seed=4), num_classes=1, mode="regression")
    model_dir = bert_tf.save_pretrained(model, tmp_path / "sts", vocab_file=vocab_file, task="classify",
                                        seq_length=SEQ_LENGTH)
    outputs = load_signatures(export_saved_model(model_dir, tmp_path / "models", "sts"))["serving_default"](
        text=tf.constant(TEXTS))
    assert set(outputs) == {"predictions"}
    np.testing.assert_allclose(outputs["predictions"].numpy(), model(preprocessor(tf.constant(TEXTS))).numpy(),
                               atol=1e-5, rtol=0)


@pytest.mark.parametrize("kind", ["encoder", pytest.param("pretrainer", marks=pytest.mark.slow)])
def test_encoder_export_is_an_embedding_service(kind, vocab_file, preprocessor, tmp_path):
    encoder = tiny_encoder(seed=5)
    model = encoder if kind == "encoder" else bert_tf.BertPretrainer(encoder)
    model_dir = bert_tf.save_pretrained(model, tmp_path / kind, vocab_file=vocab_file, task=kind)
    signatures = load_signatures(export_saved_model(model_dir, tmp_path / "models", kind, seq_length=SEQ_LENGTH))
    outputs = signatures["serving_default"](text=tf.constant(TEXTS))
    assert set(outputs) == {"sequence_output", "pooled_output"}
    expected = encoder(preprocessor(tf.constant(TEXTS)))
    assert outputs["sequence_output"].shape == (len(TEXTS), SEQ_LENGTH, 32)
    for name in outputs:
        np.testing.assert_allclose(outputs[name].numpy(), expected[name].numpy(), atol=1e-5, rtol=0)


def test_unexportable_directories_are_clear_errors(classifier_dir, vocab_file, tmp_path):
    with pytest.raises(ValueError, match=r"seq_length must be in \[3, 64\] \(the model's max_position_embeddings\)"):
        export_saved_model(classifier_dir, tmp_path, "m", seq_length=65)
    with pytest.raises(ValueError, match="the task is 'classify', but the model is a BertModel"):
        bert_tf.save_pretrained(tiny_encoder(), tmp_path / "enc", vocab_file=vocab_file, task="classify")
    mismatched = bert_tf.save_pretrained(tiny_encoder(), tmp_path / "enc", vocab_file=vocab_file)
    (mismatched / "bert_tf.json").write_text('{"task": "classify", "seq_length": 16}')  # edited by hand
    with pytest.raises(ValueError, match="bert_tf.json: the task is 'classify', but the model is a BertModel"):
        export_saved_model(mismatched, tmp_path, "m")
    no_vocab = bert_tf.save_pretrained(tiny_encoder(), tmp_path / "novocab")
    with pytest.raises(FileNotFoundError, match="no vocab.txt"):
        export_saved_model(no_vocab, tmp_path, "m")
    with pytest.raises(FileNotFoundError, match="Model directory not found: .*absent"):
        export_saved_model(tmp_path / "absent", tmp_path, "m")
    with pytest.raises(FileNotFoundError, match="is not a bert-tf model directory"):
        export_saved_model(vocab_file.parent, tmp_path, "m")
    assert not (tmp_path / "m").exists() or not any((tmp_path / "m").iterdir())


def test_cli_export(classifier_dir, tmp_path, capsys):
    assert main(["export", "--model", str(classifier_dir), "--out", str(tmp_path), "--name", "clf", "--ids-only",
                 "--version", "3", "--seq-length", "12"]) == 0
    assert "clf/3 (ids only)" in capsys.readouterr().out
    signature = load_signatures(tmp_path / "clf" / "3")["serving_default"]
    assert signature.structured_input_signature[1]["input_word_ids"].shape.as_list() == [None, 12]
    assert main(["export", "--model", str(classifier_dir), "--out", str(tmp_path)]) == 2
    assert "--name is required" in capsys.readouterr().err
    assert main(["export", "--model", str(classifier_dir), "--out", str(tmp_path), "--name", "x",
                 "--quantize", "float16"]) == 2
    assert main(["export", "--model", str(classifier_dir), "--out", str(tmp_path / "m.tflite"), "--format", "tflite",
                 "--name", "x"]) == 2
    assert "--name applies to --format saved_model only" in capsys.readouterr().err


NER_LABELS = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
NER_TEXTS = ["who lives in paris ?", "Where\u00a0is  Berlin", "the movies", "zzz", "the film " * 20]


@pytest.mark.slow
def test_ner_export_tags_words_as_the_prediction_pipeline_does(vocab_file, tmp_path):
    from bert_tf.prediction import Predictor

    model = bert_tf.BertTokenClassifier(tiny_encoder(seed=6), num_labels=len(NER_LABELS), label_names=NER_LABELS)
    model_dir = bert_tf.save_pretrained(model, tmp_path / "ner", vocab_file=vocab_file, task="ner",
                                        seq_length=SEQ_LENGTH, settings={"label_names": NER_LABELS})
    signatures = load_signatures(export_saved_model(model_dir, tmp_path / "models", "ner"))
    outputs = signatures["serving_default"](text=tf.constant(NER_TEXTS))
    expected = Predictor(model_dir).tag(NER_TEXTS)
    for row, tagged in enumerate(expected):
        words = [word.decode() for word in outputs["words"][row].numpy().tolist() if word]
        tags = [tag.decode() for tag in outputs["word_tags"][row].numpy().tolist()[:len(words)]]
        assert list(zip(words, tags)) == tagged
    assert b"" not in outputs["word_tags"][4].numpy().tolist()  # 40 one-piece words: two windows

    ids = signatures["preprocess"](text=tf.constant(NER_TEXTS))  # [batch, most windows, SEQ_LENGTH]
    assert ids["input_word_ids"].shape == (len(NER_TEXTS), 2, SEQ_LENGTH)
    logits = model({name: tf.reshape(value, [-1, SEQ_LENGTH]) for name, value in ids.items()})
    present = ids["input_mask"].numpy()[:, :, 0] == 1
    probabilities = tf.reshape(tf.nn.softmax(logits), [len(NER_TEXTS), 2, SEQ_LENGTH, -1]).numpy()
    np.testing.assert_allclose(outputs["probabilities"].numpy()[present], probabilities[present], atol=1e-5, rtol=0)
    np.testing.assert_array_equal(outputs["tag_ids"].numpy()[present], probabilities[present].argmax(-1))
    assert outputs["tags"].numpy()[0, 0, 0] in [label.encode() for label in NER_LABELS]
    assert outputs["tags"].numpy()[3, 0, -1] == b""  # padding
    assert not outputs["tags"].numpy()[3, 1].astype(bool).any()  # a window the text does not have


@pytest.mark.slow
def test_squad_export_answers_as_the_prediction_pipeline_does(vocab_file, tmp_path):
    from bert_tf.prediction import Predictor

    settings = {"max_query_length": 4, "max_answer_length": 5, "version_2": False, "doc_stride": 6}
    model_dir = bert_tf.save_pretrained(bert_tf.BertSpanLabeler(tiny_encoder(seed=7)), tmp_path / "squad",
                                        vocab_file=vocab_file, task="squad", seq_length=SEQ_LENGTH, settings=settings)
    signatures = load_signatures(export_saved_model(model_dir, tmp_path / "models", "squad"))
    questions = ["who lives in paris ?", "where is the film ?", "who"]
    contexts = ["The film: Paris, Berlin — who lives in Berlin?", "a dull film, not good! " * 8, "Paris"]
    outputs = signatures["serving_default"](question=tf.constant(questions), context=tf.constant(contexts))
    expected = Predictor(model_dir).answer(questions, contexts)  # every window of the long context, as served
    for row, answer in enumerate(expected):
        assert outputs["answer_text"].numpy()[row].decode() == answer["text"]
        assert (outputs["answer_char_start"].numpy()[row], outputs["answer_char_end"].numpy()[row]) == (
            answer["start"], answer["end"])
        assert outputs["answer_score"].numpy()[row] == pytest.approx(answer["score"], abs=1e-5)
        assert outputs["answer_probability"].numpy()[row] == pytest.approx(answer["probability"], abs=1e-5)
    assert outputs["start_logits"].shape == (3, 8, SEQ_LENGTH)  # per window: 56 context tokens, 17 a window, 6 apart
