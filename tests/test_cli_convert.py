"""`bert-tf convert` from the command line, in a fresh process."""

import json
import pickle
import subprocess
import sys

import numpy as np
import pytest

import bert_tf
from bert_tf import BertConfig, BertModel

CONFIG = BertConfig(vocab_size=60, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                    intermediate_size=48, max_position_embeddings=16)


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "bert_tf_cli", *map(str, args)], capture_output=True, text=True,
                          timeout=300)


@pytest.fixture(scope="module")
def hf_source(tmp_path_factory):
    model = BertModel(CONFIG)
    directory = tmp_path_factory.mktemp("hf")
    vocab = directory / "source_vocab.txt"
    vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n")
    bert_tf.write_hf_directory(model, directory, vocab_file=vocab, lower_case=True)
    return model, directory


def test_convert_hf_to_keras_and_back(tmp_path, hf_source):
    model, source = hf_source
    result = run_cli("convert", "--from", source, "--to", tmp_path / "keras", "--format", "keras")
    assert result.returncode == 0, result.stderr
    assert "Wrote keras model" in result.stdout
    converted = bert_tf.from_pretrained(tmp_path / "keras")
    assert converted.lower_case is True and (tmp_path / "keras" / "vocab.txt").is_file()
    ids = {"input_word_ids": np.array([[2, 7, 8, 3]])}
    np.testing.assert_array_equal(converted(ids)["pooled_output"], model(ids)["pooled_output"])

    result = run_cli("convert", "--from", tmp_path / "keras", "--to", tmp_path / "hf", "--format", "hf")
    assert result.returncode == 0, result.stderr
    assert json.loads((tmp_path / "hf" / "tokenizer_config.json").read_text())["do_lower_case"] is True
    np.testing.assert_array_equal(bert_tf.from_pretrained(tmp_path / "hf")(ids)["pooled_output"],
                                  model(ids)["pooled_output"])


def test_convert_refuses_to_overwrite_and_reports_missing_input(tmp_path, hf_source):
    _, source = hf_source
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "keep.txt").write_text("user data")
    result = run_cli("convert", "--from", source, "--to", tmp_path / "busy")
    assert result.returncode == 2 and "not empty" in result.stderr
    assert (tmp_path / "busy" / "keep.txt").read_text() == "user data"
    result = run_cli("convert", "--from", tmp_path / "missing", "--to", tmp_path / "out")
    assert result.returncode == 2 and "Checkpoint not found" in result.stderr


class RunsCode:
    """Unpickling this would create a file: what a malicious pytorch_model.bin does."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_convert_refuses_a_pickle_that_would_run_code_in_one_line(tmp_path):
    pytest.importorskip("torch")
    source, marker = tmp_path / "hf", tmp_path / "pwned"
    source.mkdir()
    CONFIG.write_json(source / "config.json", style="hf")
    with open(source / "pytorch_model.bin", "wb") as file:
        pickle.dump({"embeddings.word_embeddings.weight": RunsCode(marker)}, file)
    result = run_cli("convert", "--from", source, "--to", tmp_path / "out")
    assert result.returncode == 2 and not marker.exists()
    assert result.stderr.startswith(f"bert-tf convert: error: {source / 'pytorch_model.bin'} was refused: it is not a "
                                    "pickle of tensors only (unpickling it could run code from the file)")
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
