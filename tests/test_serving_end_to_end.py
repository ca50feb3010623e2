"""End to end: a tiny classifier is trained, saved (save_pretrained), exported (export_saved_model),
served (ModelServer on free 127.0.0.1 ports) and called through the gRPC and REST clients; the
answers equal the in-process Keras model's, metadata lists the signatures, bad requests get
their status while the server keeps serving, and a new version is picked up."""

import json
import subprocess
import sys
import textwrap
import time

import grpc
import keras
import numpy as np
import pytest
import tensorflow as tf

import bert_tf
from serving.export.saved_model import export_saved_model
from serving.client.grpc_client import GrpcClient
from serving.client.rest_client import RestClient, RestError
from serving.server.model_server import ModelServer

NAME = "sentiment"
SEQ_LENGTH = 16
LABELS = ["negative", "positive"]
WORDS = ["the", "a", "movie", "film", "plot", "is", "was", "not", "very", "good", "great", "fine", "fun",
         "bad", "dull", "awful", "boring", ",", ".", "!", "##s", "##ly"]
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS
TRAIN = [("the movie was good", 1), ("a great film !", 1), ("fine , fun plot", 1), ("very good films", 1),
         ("the movie was bad", 0), ("a dull film .", 0), ("awful , boring plot", 0), ("not good", 0)]
TEXTS = ["the film was great", "", "Awful, BORING plot!", "héllo wörld ✓", "the movie " * 20, "zzz unknown words"]
CODE = grpc.StatusCode


def build_classifier(seed: int) -> bert_tf.BertClassifier:
    keras.utils.set_random_seed(seed)
    config = bert_tf.BertConfig(vocab_size=len(VOCAB), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                intermediate_size=64, max_position_embeddings=32)
    return bert_tf.BertClassifier(bert_tf.BertModel(config), num_classes=2, label_names=LABELS)


@pytest.fixture(scope="module")
def vocab_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    path.write_text("".join(f"{token}\n" for token in VOCAB))
    return path


@pytest.fixture(scope="module")
def preprocessor(vocab_file):
    return bert_tf.BertPreprocessor(bert_tf.BertTokenizer(vocab_file), seq_length=SEQ_LENGTH)


@pytest.fixture(scope="module")
def classifier(preprocessor):
    """A tiny classifier after a few training steps."""
    model = build_classifier(seed=1)
    model.compile(optimizer=keras.optimizers.Adam(1e-2))
    features = preprocessor(tf.constant([text for text, _ in TRAIN]))
    model.fit(features, np.array([label for _, label in TRAIN]), batch_size=4, epochs=10, verbose=0)
    return model


def keras_probabilities(model, preprocessor, texts):
    return tf.nn.softmax(model(preprocessor(tf.constant(texts)), training=False)).numpy()


@pytest.fixture(scope="module")
def model_dir(classifier, vocab_file, tmp_path_factory):
    return bert_tf.save_pretrained(classifier, tmp_path_factory.mktemp("trained") / "model", vocab_file=vocab_file,
                                   task="classify", seq_length=SEQ_LENGTH)


@pytest.fixture(scope="module")
def base_path(model_dir, tmp_path_factory):
    base = tmp_path_factory.mktemp("models")
    assert export_saved_model(model_dir, base, NAME) == base / NAME / "1"
    return base


@pytest.fixture(scope="module")
def server(base_path):
    with ModelServer(NAME, base_path / NAME, poll_wait_s=0) as server:
        yield server


@pytest.fixture(scope="module")
def grpc_client(server):
    with GrpcClient(f"127.0.0.1:{server.grpc_port}", model_name=NAME, timeout_s=30) as client:
        yield client


@pytest.mark.slow
def test_grpc_and_rest_answers_equal_the_keras_model(server, grpc_client, classifier, preprocessor):
    expected = keras_probabilities(classifier, preprocessor, TEXTS)
    assert set(expected.argmax(axis=1)) == {0, 1}  # trained: not one answer for everything

    answer = grpc_client.predict({"text": TEXTS})
    assert set(answer) == {"probabilities", "label_names", "logits"}
    np.testing.assert_allclose(answer["probabilities"], expected, atol=1e-5, rtol=0)
    assert answer["label_names"].tolist() == [[label.encode() for label in LABELS]] * len(TEXTS)

    rest = RestClient(f"http://127.0.0.1:{server.rest_port}", model_name=NAME, timeout_s=30)
    for row_format in (False, True):
        np.testing.assert_allclose(rest.predict({"text": TEXTS}, row_format=row_format)["probabilities"], expected,
                                   atol=1e-5, rtol=0)

    classes = grpc_client.classify([{"text": text} for text in TEXTS])
    assert [[label for label, _ in row] for row in classes] == [LABELS] * len(TEXTS)
    np.testing.assert_allclose([[score for _, score in row] for row in classes], expected, atol=1e-5, rtol=0)
    assert [[label for label, _ in row] for row in rest.classify([{"text": TEXTS[0]}])] == [LABELS]


def test_serve_ids_and_preprocess_signatures_agree_with_keras(server, classifier, preprocessor):
    ids = GrpcClient(f"127.0.0.1:{server.grpc_port}", model_name=NAME, signature_name="preprocess").predict(
        {"text": TEXTS})
    expected_ids = preprocessor(tf.constant(TEXTS))
    for name, value in expected_ids.items():
        np.testing.assert_array_equal(ids[name], value.numpy())
    answer = GrpcClient(f"127.0.0.1:{server.grpc_port}", model_name=NAME, signature_name="serve_ids").predict(ids)
    np.testing.assert_allclose(answer["probabilities"], keras_probabilities(classifier, preprocessor, TEXTS),
                               atol=1e-5, rtol=0)


def test_metadata_lists_the_signatures_and_model_info_the_settings(server, grpc_client):
    signatures = grpc_client.metadata()
    assert {"serving_default", "serve_ids", "preprocess", "model_info"} <= set(signatures)
    assert set(signatures["serving_default"]["inputs"]) == {"text"}
    assert set(signatures["serving_default"]["outputs"]) == {"probabilities", "label_names", "logits"}
    dims = signatures["serve_ids"]["inputs"]["input_word_ids"]["tensor_shape"]["dim"]
    assert [int(dim["size"]) for dim in dims] == [-1, SEQ_LENGTH]

    expected = {"task": b"classify", "seq_length": SEQ_LENGTH, "lower_case": True, "vocab_size": len(VOCAB)}
    rest = RestClient(f"http://127.0.0.1:{server.rest_port}", model_name=NAME, signature_name="model_info")
    grpc_info = GrpcClient(f"127.0.0.1:{server.grpc_port}", model_name=NAME, signature_name="model_info").predict(
        {"request": [""]})
    for info in (grpc_info, rest.predict({"request": [""]}, row_format=True)):
        assert {name: info[name][0] for name in expected} == expected
        assert info["label_names"].tolist() == [[label.encode() for label in LABELS]]
        assert info["vocab_file"][0].endswith(b"assets/vocab.txt")


def test_odd_but_valid_inputs_are_served(grpc_client, classifier, preprocessor):
    empty = grpc_client.predict({"text": np.array([], dtype=object)})
    assert empty["probabilities"].shape == (0, 2) and empty["label_names"].shape == (0, 2)
    np.testing.assert_allclose(grpc_client.predict({"text": [""]})["probabilities"],
                               keras_probabilities(classifier, preprocessor, [""]), atol=1e-5, rtol=0)
    # Bytes that are not UTF-8 are dropped by the tokenizer (bert_tf.BertTokenizer), not refused.
    invalid = grpc_client.predict({"text": np.array([b"the film \xff\xfewas great"], dtype=object)})
    np.testing.assert_allclose(invalid["probabilities"],
                               keras_probabilities(classifier, preprocessor, ["the film was great"]), atol=1e-5, rtol=0)


BAD_REQUESTS = {
    "wrong dtype": ({"text": np.array([1, 2], np.int32)}, "serving_default", CODE.INVALID_ARGUMENT),
    "missing input": ({"input_word_ids": np.zeros([1, SEQ_LENGTH], np.int32)}, "serve_ids", CODE.INVALID_ARGUMENT),
    "wrong sequence length": ({name: np.zeros([1, 4], np.int32) for name in
                               ("input_word_ids", "input_mask", "input_type_ids")}, "serve_ids", CODE.INVALID_ARGUMENT),
    "id out of range": ({"input_word_ids": np.full([1, SEQ_LENGTH], 999, np.int32),
                         "input_mask": np.ones([1, SEQ_LENGTH], np.int32),
                         "input_type_ids": np.zeros([1, SEQ_LENGTH], np.int32)}, "serve_ids", CODE.INVALID_ARGUMENT),
    "unknown signature": ({"text": ["a"]}, "classify_everything", CODE.NOT_FOUND),
}


@pytest.mark.parametrize("case", BAD_REQUESTS, ids=list(BAD_REQUESTS))
def test_bad_requests_get_their_status_and_the_server_keeps_serving(case, server, grpc_client, classifier,
                                                                    preprocessor):
    inputs, signature, code = BAD_REQUESTS[case]
    client = GrpcClient(f"127.0.0.1:{server.grpc_port}", model_name=NAME, signature_name=signature, retries=0)
    with pytest.raises(grpc.RpcError) as raised:
        client.predict(inputs)
    assert raised.value.code() == code, raised.value.details()
    rest = RestClient(f"http://127.0.0.1:{server.rest_port}", model_name=NAME)
    with pytest.raises(RestError) as refused:
        rest._request(rest._url(None, ":predict"), {"signature_name": signature, "inputs": _json_inputs(inputs)})
    assert refused.value.status == {CODE.INVALID_ARGUMENT: 400, CODE.NOT_FOUND: 404}[code], refused.value.message
    np.testing.assert_allclose(grpc_client.predict({"text": TEXTS})["probabilities"],
                               keras_probabilities(classifier, preprocessor, TEXTS), atol=1e-5, rtol=0)


def _json_inputs(inputs):
    return {name: np.asarray(value).tolist() for name, value in inputs.items()}


@pytest.mark.slow
def test_a_new_version_is_picked_up(model_dir, vocab_file, preprocessor, tmp_path):
    base = tmp_path / "models"
    export_saved_model(model_dir, base, NAME)
    other = build_classifier(seed=7)
    other_dir = bert_tf.save_pretrained(other, tmp_path / "other", vocab_file=vocab_file, task="classify",
                                        seq_length=SEQ_LENGTH)
    with ModelServer(NAME, base / NAME, poll_wait_s=0.1) as server:
        client = GrpcClient(f"127.0.0.1:{server.grpc_port}", model_name=NAME)
        assert client.status() == {1: "AVAILABLE"}
        assert export_saved_model(other_dir, base, NAME) == base / NAME / "2"
        deadline = time.monotonic() + 60
        while client.status().get(2) != "AVAILABLE" and time.monotonic() < deadline:
            time.sleep(0.1)
        assert client.status() == {2: "AVAILABLE", 1: "END"}
        np.testing.assert_allclose(client.predict({"text": TEXTS})["probabilities"],
                                   keras_probabilities(other, preprocessor, TEXTS), atol=1e-5, rtol=0)


def test_export_loads_in_a_fresh_process_with_tensorflow_text_only(base_path, classifier, preprocessor):
    script = textwrap.dedent(f"""
        import json, sys
        import tensorflow as tf
        import tensorflow_text  # registers the tokenizer's ops, which loading the SavedModel needs
        model = tf.saved_model.load({str(base_path / NAME / "1")!r})
        outputs = model.signatures["serving_default"](text=tf.constant({TEXTS!r}))
        assert "bert_tf" not in sys.modules and "serving" not in sys.modules
        print(json.dumps(outputs["probabilities"].numpy().tolist()))
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd="/")
    assert result.returncode == 0, result.stderr[-3000:]
    np.testing.assert_allclose(np.array(json.loads(result.stdout.strip().splitlines()[-1])),
                               keras_probabilities(classifier, preprocessor, TEXTS), atol=1e-5, rtol=0)


def test_cli_predict_asks_the_server(server, classifier, preprocessor, capsys):
    from bert_tf_cli import main

    texts = TEXTS[:3]
    assert main(["predict", "--server", f"127.0.0.1:{server.grpc_port}", "--model", NAME, *texts]) == 0
    expected = keras_probabilities(classifier, preprocessor, texts)
    for line, text, row in zip(capsys.readouterr().out.splitlines(), texts, expected, strict=True):
        label, probability, printed = line.split("\t")
        assert (label, printed) == (LABELS[row.argmax()], text)
        assert abs(float(probability) - row.max()) < 1e-4
    assert main(["predict", "--server", f"127.0.0.1:{server.grpc_port}", "--model", NAME, "a", "--pair", "b"]) == 2
    assert "reads text per example; it takes no text_b." in capsys.readouterr().err


@pytest.mark.slow
def test_ner_and_squad_models_answer_through_the_server_as_locally(vocab_file, tmp_path):
    from bert_tf.prediction import Predictor
    from serving.client.server_prediction import ServerPredictor

    config = bert_tf.BertConfig(vocab_size=len(VOCAB), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                intermediate_size=64, max_position_embeddings=32)
    tags = ["O", "B-X", "I-X"]
    models = {
        "ner": (bert_tf.BertTokenClassifier(bert_tf.BertModel(config), num_labels=3, label_names=tags),
                {"label_names": tags}),
        "squad": (bert_tf.BertSpanLabeler(bert_tf.BertModel(config)), {"max_query_length": 4, "doc_stride": 4}),
    }
    texts = ["the movie was good", "a  dull\tfilm !"]
    questions, contexts = ["the plot ?", "was it fun"], ["The plot was dull, not fun. " * 3, "a great film, very fun!"]
    for task, (model, settings) in models.items():
        model_dir = bert_tf.save_pretrained(model, tmp_path / task, vocab_file=vocab_file, task=task,
                                            seq_length=SEQ_LENGTH, settings=settings)
        export_saved_model(model_dir, tmp_path / "models", task)
        with ModelServer(task, tmp_path / "models" / task, poll_wait_s=0) as server:
            remote, local = ServerPredictor(f"127.0.0.1:{server.grpc_port}", task), Predictor(model_dir)
            assert remote.task_name == task
            if task == "ner":
                assert remote.tag(texts) == local.tag(texts)
            else:
                for answer, expected in zip(remote.answer(questions, contexts), local.answer(questions, contexts)):
                    assert {key: answer[key] for key in ("text", "start", "end")} == {
                        key: expected[key] for key in ("text", "start", "end")}
                    assert answer["score"] == pytest.approx(expected["score"], abs=1e-5)
                    assert answer["probability"] == pytest.approx(expected["probability"], abs=1e-5)
            remote.close()
