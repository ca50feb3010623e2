"""Parity with KerasHub's BertBackbone given the same weights."""

import numpy as np
import pytest

keras_hub = pytest.importorskip("keras_hub")

import bert_tf  # noqa: E402


@pytest.fixture(scope="module")
def backbone():
    model = keras_hub.models.BertBackbone(vocabulary_size=150, num_layers=2, num_heads=4, hidden_dim=64,
                                          intermediate_dim=96, max_sequence_length=32, num_segments=3)
    rng = np.random.default_rng(0)
    for variable in model.weights:
        variable.assign(rng.normal(0.0, 0.2, variable.shape).astype(np.float32))
    return model


def compare(ours, backbone, atol=1e-4):
    ids = np.array([[2, 10, 11, 12, 3, 0, 0], [2, 40, 3, 50, 60, 3, 0]], dtype=np.int32)
    mask = (ids > 0).astype(np.int32)
    types = np.array([[0] * 7, [0, 0, 0, 1, 2, 1, 0]], dtype=np.int32)
    theirs = backbone({"token_ids": ids, "padding_mask": mask, "segment_ids": types})
    mine = ours({"input_word_ids": ids, "input_mask": mask, "input_type_ids": types})
    np.testing.assert_allclose(mine["sequence_output"].numpy(), np.asarray(theirs["sequence_output"]), atol=atol)
    np.testing.assert_allclose(mine["pooled_output"].numpy(), np.asarray(theirs["pooled_output"]), atol=atol)


def test_live_backbone_matches(backbone):
    ours = bert_tf.from_pretrained(backbone)
    assert ours.config.hidden_act == "gelu_tanh" and ours.config.type_vocab_size == 3
    compare(ours, backbone)


def test_preset_directory_matches(tmp_path, backbone):
    backbone.save_to_preset(str(tmp_path / "preset"))
    compare(bert_tf.from_pretrained(tmp_path / "preset"), backbone)
