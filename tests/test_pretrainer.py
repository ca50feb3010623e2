"""BertPretrainer: heads, loss, metrics and model.fit."""

import numpy as np
import pytest
import keras
import tensorflow as tf

import bert_tf
from bert_tf import BertConfig, BertModel, BertPretrainer

CONFIG = BertConfig(vocab_size=40, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=48,
                    max_position_embeddings=16, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


def features(count=16, seq=10, predictions=3, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, 40, (count, seq)).astype(np.int32)
    return {
        "input_word_ids": ids, "input_mask": np.ones_like(ids), "input_type_ids": np.zeros_like(ids),
        "masked_lm_positions": np.tile(np.arange(1, 1 + predictions), (count, 1)).astype(np.int32),
        "masked_lm_ids": (ids[:, 1:1 + predictions] % 5).astype(np.int32),
        "masked_lm_weights": np.array([[1.0] * (predictions - 1) + [0.0]] * count, dtype=np.float32),
        "next_sentence_labels": (ids[:, 0] % 2).astype(np.int32),
    }


def test_outputs_and_tied_embeddings():
    pretrainer = BertPretrainer(BertModel(CONFIG))
    outputs = pretrainer(features())
    assert outputs["mlm_logits"].shape == (16, 3, 40) and outputs["nsp_logits"].shape == (16, 2)
    word_embeddings = pretrainer.encoder.embeddings.word_embeddings.embeddings
    assert sum(w is word_embeddings for w in pretrainer.weights) == 1  # the output projection reuses it
    assert len(pretrainer.weights) == len(pretrainer.encoder.weights) + 7


def test_loss_matches_numpy_reference():
    pretrainer = BertPretrainer(BertModel(CONFIG))
    x = features()
    outputs = pretrainer(x)
    loss = float(pretrainer.compute_loss(x=x, y_pred=outputs))

    def cross_entropy(logits, labels):
        logits = logits - logits.max(-1, keepdims=True)
        log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
        return -np.take_along_axis(log_probs, labels[..., None], axis=-1)[..., 0]

    mlm = cross_entropy(outputs["mlm_logits"].numpy(), x["masked_lm_ids"])
    weights = x["masked_lm_weights"]
    expected = (mlm * weights).sum() / (weights.sum() + 1e-5)
    expected += cross_entropy(outputs["nsp_logits"].numpy(), x["next_sentence_labels"]).mean()
    assert loss == pytest.approx(expected, rel=1e-5)


def test_fit_learns_and_reports_metrics(tmp_path):
    pretrainer = BertPretrainer(BertModel(CONFIG))
    pretrainer.compile(optimizer=keras.optimizers.Adam(3e-3))
    dataset = tf.data.Dataset.from_tensor_slices(features(64)).batch(16)
    history = pretrainer.fit(dataset, epochs=12, verbose=0).history
    assert set(history) >= {"loss", "mlm_loss", "nsp_loss", "mlm_accuracy", "nsp_accuracy"}
    assert history["mlm_loss"][-1] < 0.5 * history["mlm_loss"][0]
    assert history["mlm_accuracy"][-1] > 0.6
    pretrainer.save(tmp_path / "pretrainer.keras")
    loaded = keras.saving.load_model(tmp_path / "pretrainer.keras")
    np.testing.assert_allclose(loaded(features())["mlm_logits"], pretrainer(features())["mlm_logits"], atol=1e-6)


def test_from_pretrained_without_heads_warns(tmp_path, caplog):
    bert_tf.save_pretrained(BertModel(CONFIG), tmp_path)
    with caplog.at_level("WARNING", logger="bert_tf"):
        pretrainer = BertPretrainer.from_pretrained(tmp_path)
    assert "no pre-training heads" in caplog.text
    assert pretrainer.encoder.config == CONFIG


def test_pretrainer_directory_keeps_heads_and_metadata(tmp_path):
    pretrainer = BertPretrainer(BertModel(CONFIG))
    bert_tf.save_pretrained(pretrainer, tmp_path / "model", lower_case=True, seq_length=12)
    loaded = bert_tf.load_model_directory(tmp_path / "model")
    assert loaded.lower_case is True and loaded.metadata == {}
    assert (loaded.task.task, loaded.task.seq_length) == ("pretrainer", 12)
    reloaded = BertPretrainer.from_pretrained(tmp_path / "model")
    np.testing.assert_allclose(reloaded(features())["mlm_logits"], pretrainer(features())["mlm_logits"], atol=1e-6)
    bert_tf.save_pretrained(pretrainer, tmp_path / "model")  # replaces the directory whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]
    # Readable as a plain mkdir would make it (not private to its owner), e.g. by a server running as another user.
    (tmp_path / "plain").mkdir()
    assert (tmp_path / "model").stat().st_mode == (tmp_path / "plain").stat().st_mode
