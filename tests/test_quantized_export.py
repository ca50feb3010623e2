"""`export --quantize int8|bf16`: what the versions hold, how they are served, and where they are refused.

The agreement of the served quantized classifiers with the float32 model (labels, byte budget)
is in tests/test_paths_agree.py; here: tiny models with random weights.
"""

import re
import shutil

import numpy as np
import pytest
import tensorflow as tf

import bert_tf
from bert_tf_cli import main
from serving.export.saved_model import export_saved_model
from serving.server.servable import SavedModelServable, TfliteServable, load_servable
from tiny_exports import TEXTS, tiny_encoder, write_vocab

SEQ_LENGTH = 16


@pytest.fixture(scope="module")
def ner_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("quantized")
    model = bert_tf.BertTokenClassifier(tiny_encoder(), num_labels=3, label_names=["O", "B-PER", "I-PER"])
    return bert_tf.save_pretrained(model, directory / "ner", vocab_file=write_vocab(directory), lower_case=True,
                                   task="ner", seq_length=SEQ_LENGTH)


@pytest.mark.slow
def test_an_int8_ner_version_takes_the_windows_the_float32_model_makes(ner_dir, tmp_path):
    """TFLite cannot window long texts: the int8 ner model's serving_default takes ids; fed the float32
    SavedModel's `preprocess` windows it tags them as the float32 `serve_ids` does."""
    float32 = load_servable(export_saved_model(ner_dir, tmp_path, "ner"), 1)
    int8 = load_servable(export_saved_model(ner_dir, tmp_path, "ner", quantize="int8"), 2)
    assert isinstance(int8, TfliteServable) and sorted(int8.signature_names) == ["model_info", "serving_default"]
    assert sorted(int8.signature_def("serving_default").inputs) == ["input_mask", "input_type_ids", "input_word_ids"]
    windows = float32.predict("preprocess", {"text": np.array([text.encode() for text in TEXTS], dtype=object)})
    ids = {name: value.reshape(-1, SEQ_LENGTH) for name, value in windows.items()}
    expected = float32.predict("serve_ids", ids)
    served = int8.predict("serving_default", ids)
    np.testing.assert_allclose(served["probabilities"], expected["probabilities"], atol=0.02, rtol=0)
    confident = expected["probabilities"].max(-1) > 0.02 + np.sort(expected["probabilities"], -1)[..., -2]
    np.testing.assert_array_equal(served["tag_ids"][confident], expected["tag_ids"][confident])


def test_predicting_text_from_an_int8_ner_version_says_why_it_takes_ids(ner_dir, tmp_path, capsys):
    from serving.server.model_server import ModelServer

    export_saved_model(ner_dir, tmp_path, "ner", quantize="int8")
    with ModelServer("ner", tmp_path / "ner", poll_wait_s=0) as server:
        assert main(["predict", "--server", f"127.0.0.1:{server.grpc_port}", "--model", "ner", "a film"]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert "takes token ids (an int8 (TFLite) export, which cannot window long texts; serve the float32" in line


@pytest.mark.slow
def test_a_bf16_version_computes_in_bfloat16_and_answers_in_float32(ner_dir, tmp_path):
    servable = load_servable(export_saved_model(ner_dir, tmp_path, "ner", quantize="bf16"), 1)
    outputs = servable.predict("serving_default", {"text": np.array([b"the film was great"], dtype=object)})
    assert outputs["probabilities"].dtype == np.float32
    info = servable.predict("model_info", {"request": np.array([b""], dtype=object)})
    assert info["quantization"][0] == b"bf16"
    graph = tf.saved_model.load(str(servable.path)).signatures["serve_ids"].graph.as_graph_def()
    matmul_dtypes = {node.attr["T"].type for function in graph.library.function for node in function.node_def
                     if node.op in ("MatMul", "BatchMatMulV2")}
    assert tf.bfloat16.as_datatype_enum in matmul_dtypes


@pytest.mark.slow
def test_a_version_holding_both_files_serves_its_saved_model_unless_told(ner_dir, tmp_path):
    version = export_saved_model(ner_dir, tmp_path, "ner")
    shutil.copy(export_saved_model(ner_dir, tmp_path, "ner", quantize="int8") / "model.tflite", version)
    assert isinstance(load_servable(version, 1), SavedModelServable)
    assert isinstance(load_servable(version, 1, prefer_tflite_model=True), TfliteServable)


def test_serve_prefer_tflite_model_flag_is_parsed():
    import argparse

    from serving.server.model_server import add_arguments

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    assert parser.parse_args([]).prefer_tflite_model is False
    assert parser.parse_args(["--prefer_tflite_model"]).prefer_tflite_model is True
    assert parser.parse_args(["--prefer_tflite_model=false"]).prefer_tflite_model is False


@pytest.mark.parametrize("argv, message", [
    (["--format", "tflite", "--quantize", "bf16"], "--quantize bf16 applies to --format saved_model only"),
    (["--name", "x", "--quantize", "float16"], "--quantize float16 applies to --format tflite only"),
])
def test_quantize_for_the_wrong_format_is_a_one_line_error(ner_dir, tmp_path, capsys, argv, message):
    out = tmp_path / ("x.tflite" if "tflite" in argv else "models")
    assert main(["export", "--model", str(ner_dir), "--out", str(out), *argv]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert message in line and not out.exists()


@pytest.mark.parametrize("name, value, message", [
    ("input_word_ids", -1, r"input_word_ids holds -1: token ids must be in \[0, 30\) \(the vocabulary's size\)"),
    ("input_word_ids", 30, r"input_word_ids holds 30: token ids must be in \[0, 30\)"),
    ("input_mask", 2, r"input_mask holds 2: mask values must be 0 or 1"),
    ("input_type_ids", 2, r"input_type_ids holds 2: segment ids must be in \[0, 2\)"),
])
def test_every_served_version_refuses_ids_outside_the_vocabulary_alike(ner_dir, tmp_path, name, value, message):
    """The int8 TFLite version wrapped a negative id into the vocabulary (-1 gave id 30521's logits) where the
    float32 SavedModel refused it: over gRPC, both refuse bad ids, masks and segment ids before running."""
    import grpc

    from serving.client.grpc_client import GrpcClient
    from serving.server.model_server import ModelServer

    export_saved_model(ner_dir, tmp_path, "float32", ids_only=True)
    export_saved_model(ner_dir, tmp_path, "int8", quantize="int8")
    ids = {"input_word_ids": np.array([[2, 5, 7, 3]], np.int32), "input_mask": np.ones((1, 4), np.int32),
           "input_type_ids": np.zeros((1, 4), np.int32)}
    ids[name][0, 1] = value
    ids = {key: np.pad(array, [(0, 0), (0, SEQ_LENGTH - 4)]) for key, array in ids.items()}  # the exports' length
    for kind in ("float32", "int8"):
        with ModelServer(kind, tmp_path / kind, poll_wait_s=0) as server:
            client = GrpcClient(f"127.0.0.1:{server.grpc_port}", model_name=kind, retries=0)
            with pytest.raises(grpc.RpcError) as refused:
                client.predict(ids)
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT, (kind, refused.value.details())
        assert re.search(message, refused.value.details()), (kind, refused.value.details())


@pytest.mark.slow
def test_serve_says_which_versions_of_which_models_it_serves_and_in_what_precision(ner_dir, tmp_path, caplog):
    import logging

    from serving.server.model_server import ModelServer
    from serving.server.servable import one_line

    export_saved_model(ner_dir, tmp_path, "ner", version=1)
    export_saved_model(ner_dir, tmp_path, "ner", version=2, quantize="bf16")
    export_saved_model(ner_dir, tmp_path, "ner", version=3, quantize="int8")
    config_file = tmp_path / "models.config"
    config_file.write_text(f'model_config_list {{ config {{ name: "ner" base_path: "{tmp_path / "ner"}" '
                           'model_platform: "tensorflow" model_version_policy { all {} } } }')
    with caplog.at_level(logging.INFO, logger="serving"):
        with ModelServer(model_config_file=config_file, poll_wait_s=0):
            pass
    assert "Model 'ner' serves version 3 (int8 TFLite), 2 (bf16 SavedModel), 1 (float32 SavedModel)." in caplog.text
    assert "Serving model 'ner': version 3 (int8 TFLite), 2 (bf16 SavedModel), 1 (float32 SavedModel); gRPC on" \
        in caplog.text
    # LiteRT writes its error lines without a break between them.
    assert one_line(RuntimeError("gather index out of boundsNode number 2 (GATHER) failed to invoke.")) == \
        "gather index out of bounds. Node number 2 (GATHER) failed to invoke."


@pytest.mark.slow
def test_export_and_serve_of_a_bf16_version_warn_on_a_cpu_without_bfloat16_units(ner_dir, tmp_path, caplog,
                                                                                  monkeypatch):
    import logging

    from bert_tf import cpu_features
    from serving.server.model_server import ModelServer

    monkeypatch.setattr(cpu_features, "cpu_flags", lambda: frozenset({"avx2", "fma"}))  # an AVX2-only CPU
    with caplog.at_level(logging.INFO):
        export_saved_model(ner_dir, tmp_path, "ner", version=1)
        assert "bf16 is slower" not in caplog.text  # float32: nothing to say
        export_saved_model(ner_dir, tmp_path, "ner", version=2, quantize="bf16")
        [exported] = [record for record in caplog.records if "bf16 is slower" in record.message]
        assert exported.levelname == "WARNING" and "has no avx512_bf16 or amx_bf16" in exported.message
        caplog.clear()
        with ModelServer("ner", tmp_path / "ner", poll_wait_s=0):
            pass
    [served] = [record for record in caplog.records if "bf16 is slower" in record.message]
    assert served.levelname == "WARNING" and served.message.startswith("Model 'ner', version 2: bf16 is slower")
