import keras
import numpy as np
import pytest
import tensorflow as tf
from tiny_tasks import compiled_task, span_data, tiny_encoder

from bert_tf.layers.attention import MASKED_SCORE
from bert_tf.tasks.squad.model import BertSpanLabeler


def test_outputs_start_and_end_logits_with_padding_masked():
    model = BertSpanLabeler(tiny_encoder())
    inputs, _ = span_data(n=3)  # positions 6 and 7 are padding
    outputs = model(inputs)
    assert set(outputs) == {"start_logits", "end_logits"}
    for logits in outputs.values():
        assert tuple(logits.shape) == (3, 8) and logits.dtype == "float32"
        np.testing.assert_array_equal(logits[:, 6:], MASKED_SCORE)
        assert np.all(np.abs(logits[:, :6]) < 100)
    unmasked = model({"input_word_ids": inputs["input_word_ids"]})  # no input_mask: every position is real
    assert np.all(np.abs(unmasked["start_logits"]) < 100)


def test_loss_is_the_mean_of_start_and_end_cross_entropies():
    model, inputs, labels = compiled_task("span_labeler")
    outputs = model(inputs)
    cross_entropy = {
        name: tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels[name], logits=outputs[name]).numpy().mean()
        for name in outputs
    }
    expected = (cross_entropy["start_logits"] + cross_entropy["end_logits"]) / 2
    assert float(model.compute_loss(inputs, labels, outputs)) == pytest.approx(expected, rel=1e-5)


def test_fit_learns_a_separable_task_and_saves_and_loads(tmp_path):
    keras.utils.set_random_seed(0)
    model, inputs, labels = compiled_task("span_labeler", learning_rate=1e-2, num_train_steps=20)
    before = model.evaluate(inputs, labels, verbose=0, return_dict=True)
    model.fit(inputs, labels, batch_size=8, epochs=3, verbose=0)
    after = model.evaluate(inputs, labels, verbose=0, return_dict=True)
    assert after["loss"] < 0.5 * before["loss"]
    assert after["start_logits_accuracy"] > 0.9 and after["end_logits_accuracy"] > 0.9

    path = tmp_path / "span_labeler.keras"
    model.save(path)
    loaded = keras.models.load_model(path)
    assert isinstance(loaded, BertSpanLabeler)
    expected, restored = model.predict(inputs, verbose=0), loaded.predict(inputs, verbose=0)
    for name in ("start_logits", "end_logits"):
        np.testing.assert_allclose(restored[name], expected[name], atol=1e-5)
    assert int(loaded.optimizer.iterations) == 12  # compiled again, with the optimizer state
