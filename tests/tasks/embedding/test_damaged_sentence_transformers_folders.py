"""`bert-tf convert` of a damaged sentence-transformers folder: one line naming the file and the field, never a
traceback, and nothing read that sentence-transformers would not read (NaN weights, a module outside the folder)."""

import json
import shutil

import numpy as np
import pytest

import bert_tf
from bert_tf.tasks.embedding.sentence_transformers_folder import write_sentence_transformers_folder
from bert_tf_cli import main

BIAS_VALUE = 0.123456  # a wrong-shaped bias of this value must not be printed


def _edit_json(folder, name, edit):
    path = folder / name
    path.write_text(json.dumps(edit(json.loads(path.read_text()))))


def _module(index, **changes):
    def edit(modules):
        modules[index].update(changes)
        return modules
    return edit


def _without(index, field):
    def edit(modules):
        del modules[index][field]
        return modules
    return edit


def _edit_dense(folder, edit):
    from safetensors.numpy import load_file, save_file

    path = folder / "2_Dense" / "model.safetensors"
    tensors = edit(load_file(str(path)))
    save_file(tensors, str(path))


def _truncate(path):
    path.write_bytes(path.read_bytes()[:len(path.read_bytes()) // 2])


# name: (damage(folder), the file the error names, what it says)
DAMAGES = {
    "modules.json an object": (lambda f: _edit_json(f, "modules.json", lambda m: {"0": m[0]}),
                               "modules.json", "a list expected, got an object"),
    "modules.json a list of strings": (lambda f: _edit_json(f, "modules.json", lambda m: ["Transformer", "Pooling"]),
                                       "modules.json", "module 0 is a string"),
    "modules.json a numeric type": (lambda f: _edit_json(f, "modules.json", _module(1, type=5)),
                                    "modules.json", "module 1's type is a number"),
    "a Pooling entry without path": (lambda f: _edit_json(f, "modules.json", _without(1, "path")),
                                     "modules.json", "module 1 (Pooling) has no path"),
    "an absolute Transformer path": (lambda f: _edit_json(f, "modules.json", _module(0, path=str(f.parent / "other"))),
                                     "modules.json", "module 0's path"),
    "modules.json not JSON": (lambda f: (f / "modules.json").write_text('[{"idx": 0,'),
                              "modules.json", "not valid JSON"),
    "pooling_mode a list": (lambda f: _edit_json(f, "1_Pooling/config.json", lambda c: {"pooling_mode": ["mean"]}),
                            "1_Pooling/config.json", "pooling_mode is a list"),
    "pooling_mode null": (lambda f: _edit_json(f, "1_Pooling/config.json", lambda c: {"pooling_mode": None}),
                          "1_Pooling/config.json", "pooling_mode is null"),
    "a Pooling config that is a list": (lambda f: _edit_json(f, "1_Pooling/config.json", lambda c: [c]),
                                        "1_Pooling/config.json", "an object expected, got a list"),
    "1_Pooling/config.json not JSON": (lambda f: (f / "1_Pooling" / "config.json").write_text("{'mean': true}"),
                                       "1_Pooling/config.json", "not valid JSON"),
    "sentence_bert_config.json not JSON": (lambda f: (f / "sentence_bert_config.json").write_text("max_seq_length=8"),
                                           "sentence_bert_config.json", "not valid JSON"),
    "config.json not JSON": (lambda f: (f / "config.json").write_text('{"model_type": "bert",'),
                             "config.json", "not valid JSON"),
    "a 1-D Dense weight": (lambda f: _edit_dense(f, lambda t: {**t, "linear.weight": t["linear.weight"][0]}),
                           "2_Dense/model.safetensors", "linear.weight has shape [16]"),
    "a Dense without linear.weight": (lambda f: _edit_dense(f, lambda t: {"linear.bias": t["linear.bias"]}),
                                      "2_Dense/model.safetensors", "no linear.weight"),
    "a Dense without linear.bias": (lambda f: _edit_dense(f, lambda t: {"linear.weight": t["linear.weight"]}),
                                    "2_Dense/model.safetensors", "no linear.bias"),
    "truncated Dense safetensors": (lambda f: _truncate(f / "2_Dense" / "model.safetensors"),
                                    "2_Dense/model.safetensors", "not a readable safetensors file"),
    "a wrong-shaped bias": (lambda f: _edit_dense(f, lambda t: {**t, "linear.bias": np.full(5, BIAS_VALUE,
                                                                                            np.float32)}),
                            "2_Dense/model.safetensors", "linear.bias has shape [5]"),
    "NaN Dense weights": (lambda f: _edit_dense(f, lambda t: {**t, "linear.weight": t["linear.weight"] * np.nan}),
                          "2_Dense/model.safetensors", "linear.weight holds NaN or infinite values"),
    "no vocab.txt": (lambda f: (f / "vocab.txt").unlink(), "", "no vocab.txt"),
}


@pytest.fixture(scope="module")
def st_folder(embedder_dir, tmp_path_factory):
    """A sound sentence-transformers folder with every module bert-tf reads: Transformer, Pooling, Dense, Normalize."""
    import keras

    keras.utils.set_random_seed(5)
    model = bert_tf.BertEmbedder(bert_tf.load_model_directory(embedder_dir).encoder, embedding_size=24)
    return write_sentence_transformers_folder(model, tmp_path_factory.mktemp("st") / "sound",
                                              vocab_file=embedder_dir / "vocab.txt", seq_length=16)


def test_the_sound_folder_converts(st_folder, tmp_path):
    assert main(["convert", "--from", str(st_folder), "--out", str(tmp_path / "out")]) == 0


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_folder_is_refused_in_one_line_naming_the_file(damage, st_folder, tmp_path, capsys):
    damaged = shutil.copytree(st_folder, tmp_path / "damaged")
    shutil.copytree(st_folder, tmp_path / "other")  # where an absolute path would lead
    edit, file, words = DAMAGES[damage]
    edit(damaged)
    capsys.readouterr()
    assert main(["convert", "--from", str(damaged), "--out", str(tmp_path / "out")]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1, error
    assert error[0].startswith(f"bert-tf convert: error: {damaged / file}".rstrip("/") + ":"), error[0]
    assert words in error[0]
    assert str(BIAS_VALUE)[:5] not in error[0]
    assert not (tmp_path / "out").exists()
