"""Models whose every weight is loaded next are built without random draws (issue 27, item 15)."""

import keras
import numpy as np
import pytest

import bert_tf
from bert_tf.inspection import load_inspection_model
from bert_tf.layers import weight_initializer, weights_loaded_next
from tiny_exports import tiny_encoder


def forbid_random_draws(monkeypatch):
    """Every draw of BERT's initializer fails from here on."""

    def draw(self, shape, dtype=None):
        raise AssertionError(f"a random initial value of shape {shape} was drawn")

    monkeypatch.setattr(keras.initializers.TruncatedNormal, "__call__", draw)


def assert_same_weights(loaded, original):
    assert len(loaded.weights) == len(original.weights)
    for mine, theirs in zip(loaded.get_weights(), original.get_weights()):
        np.testing.assert_array_equal(mine, theirs)


@pytest.fixture
def saved_classifier(tmp_path):
    classifier = bert_tf.BertClassifier(tiny_encoder(), num_classes=3)
    directory = bert_tf.save_pretrained(classifier, tmp_path / "model", task="classify", seq_length=8)
    return classifier, directory


def test_a_model_directory_loads_without_drawing(saved_classifier, monkeypatch):
    classifier, directory = saved_classifier
    forbid_random_draws(monkeypatch)
    assert_same_weights(bert_tf.load_model_directory(directory).model, classifier)


def test_from_pretrained_builds_without_drawing(saved_classifier, monkeypatch):
    classifier, directory = saved_classifier
    forbid_random_draws(monkeypatch)
    assert_same_weights(bert_tf.from_pretrained(directory), classifier.encoder)


def test_with_precision_copies_without_drawing(monkeypatch):
    encoder = tiny_encoder()
    forbid_random_draws(monkeypatch)
    assert_same_weights(bert_tf.with_precision(encoder, "mixed_bfloat16"), encoder)


def test_the_zeros_are_only_for_what_is_built_inside():
    config = bert_tf.BertConfig()
    with weights_loaded_next():
        inside = weight_initializer(config)
    assert isinstance(inside, keras.initializers.Zeros)
    assert isinstance(weight_initializer(config), keras.initializers.TruncatedNormal)


def hf_checkpoint(directory, cls_name: str):
    """A small random transformers checkpoint of class `cls_name` saved in `directory`."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=60, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                     intermediate_size=64, max_position_embeddings=32)
    model = getattr(transformers, cls_name)(config).eval()
    model.save_pretrained(directory)
    return model


def test_a_pretrainer_with_both_heads_loads_without_drawing(tmp_path, monkeypatch):
    hf_checkpoint(tmp_path, "BertForPreTraining")
    forbid_random_draws(monkeypatch)
    pretrainer = bert_tf.BertPretrainer.from_pretrained(tmp_path)
    assert not np.all(pretrainer.next_sentence.get_weights()[0] == 0)


def test_what_a_checkpoint_lacks_still_starts_random(tmp_path):
    hf_checkpoint(tmp_path, "BertForMaskedLM")  # no pooler, no next-sentence head
    (tmp_path / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
                                                  + [f"w{index}" for index in range(55)]) + "\n")
    inspected = load_inspection_model(tmp_path)
    assert np.std(inspected.encoder.pooler.get_weights()[0]) > 0.01
