"""Cached in-batch negatives: the loss and every gradient of the whole batch, embedded a chunk at a time."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import bert_tf
from bert_tf.tasks.embedding.cached_step import cached_gradients, seed_generators
from bert_tf.tasks.embedding.losses import InBatchNegativesLoss

BATCH, TEXTS, SEQ, CHUNK = 16, 4, 7, 4  # anchor, positive, two hard negatives


def tiny_embedder(dropout: float) -> bert_tf.BertEmbedder:
    keras.utils.set_random_seed(1)
    encoder = bert_tf.BertModel(bert_tf.BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=2,
                                                   num_attention_heads=2, intermediate_size=32,
                                                   max_position_embeddings=16, hidden_dropout_prob=dropout,
                                                   attention_probs_dropout_prob=dropout))
    model = bert_tf.BertEmbedder(encoder)
    model.compile(optimizer=keras.optimizers.SGD(0.5), loss=InBatchNegativesLoss(scale=20.0))
    return model


def batch(seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    lengths = rng.integers(3, SEQ + 1, size=(BATCH, TEXTS))
    mask = (np.arange(SEQ) < lengths[..., None]).astype(np.int32)
    ids = rng.integers(5, 50, size=(BATCH, TEXTS, SEQ)).astype(np.int32) * mask
    return {"input_word_ids": tf.constant(ids), "input_mask": tf.constant(mask),
            "input_type_ids": tf.zeros_like(tf.constant(ids))}


def reference_gradients(model, x, chunk=None):
    """Loss and gradients with every activation recorded: the batch whole, or embedded `chunk` examples at a time."""
    y = tf.zeros([BATCH])
    with tf.GradientTape() as tape:
        if chunk is None:
            vectors = model(x, training=True)
        else:
            vectors = tf.concat([model({name: value[start:start + chunk] for name, value in x.items()}, training=True)
                                 for start in range(0, BATCH, chunk)], axis=0)
        loss = model.compute_loss(x=x, y=y, y_pred=vectors, training=True)
    return loss, tape.gradient(loss, model.trainable_weights)


def assert_same(cached, reference):
    (loss, _, gradients), (reference_loss, reference_grads) = cached, reference
    np.testing.assert_allclose(float(loss), float(reference_loss), rtol=0, atol=1e-6)
    assert [g is None for g in gradients] == [g is None for g in reference_grads]
    assert sum(g is not None for g in gradients) > 30  # every encoder weight but the pooler's
    for gradient, expected in zip(gradients, reference_grads):
        if gradient is not None:  # to float32's rounding of sums taken in another order: 1e-6 of the largest value
            expected = tf.convert_to_tensor(expected).numpy()
            np.testing.assert_allclose(tf.convert_to_tensor(gradient).numpy(), expected, rtol=0,
                                       atol=1e-6 * max(1.0, np.abs(expected).max()))


def test_cached_loss_and_gradients_equal_the_plain_batch():
    model, x = tiny_embedder(dropout=0.0), batch()
    cached = cached_gradients(model, x, tf.zeros([BATCH]), None, CHUNK)
    assert_same(cached, reference_gradients(model, x))


@pytest.mark.parametrize("chunk", [5, 16, 40])  # a last chunk smaller than the others; one chunk; more than the batch
def test_any_chunk_size_gives_the_same_gradients(chunk):
    model, x = tiny_embedder(dropout=0.0), batch(1)
    assert_same(cached_gradients(model, x, tf.zeros([BATCH]), None, chunk), reference_gradients(model, x))


def test_with_dropout_the_second_pass_drops_what_the_first_did():
    model, x = tiny_embedder(dropout=0.3), batch(2)
    generators = seed_generators(model)
    assert len(generators) == 1 + 2 * 3  # the embeddings' dropout, and three per layer
    start = [generator.state.numpy().copy() for generator in generators]
    cached = cached_gradients(model, x, tf.zeros([BATCH]), None, CHUNK)
    after = [generator.state.numpy().copy() for generator in generators]
    for generator, state in zip(generators, start):
        generator.state.assign(state)
    reference = reference_gradients(model, x, chunk=CHUNK)  # the same chunks, the same seeds, recorded in one pass
    assert_same(cached, reference)
    assert all((mine == theirs).all() for mine, theirs in zip(after, [g.state.numpy() for g in generators]))
    # dropout did act: without it the loss differs
    no_dropout = model.compute_loss(x=x, y=tf.zeros([BATCH]), y_pred=model(x, training=False), training=True)
    assert abs(float(no_dropout) - float(cached[0])) > 1e-3


def test_fit_with_a_mini_batch_size_trains_as_the_plain_batch():
    x = batch(3)
    data = tf.data.Dataset.from_tensors((x, tf.zeros([BATCH]))).repeat(2)
    plain, cached = tiny_embedder(dropout=0.0), tiny_embedder(dropout=0.0)
    cached.mini_batch_size = CHUNK
    plain_history = plain.fit(data, epochs=1, verbose=0).history["loss"]
    cached_history = cached.fit(data, epochs=1, verbose=0).history["loss"]
    np.testing.assert_allclose(cached_history, plain_history, atol=1e-6)
    for mine, theirs in zip(cached.get_weights(), plain.get_weights()):
        np.testing.assert_allclose(mine, theirs, rtol=0, atol=2e-6 * max(1.0, np.abs(theirs).max()))
    assert not np.allclose(plain.get_weights()[0], tiny_embedder(dropout=0.0).get_weights()[0])  # it did train


def test_the_mini_batch_size_is_a_sentence_embedding_setting_without_xla_or_teacher():
    from bert_tf.tasks.embedding.task import EmbeddingTask
    from bert_tf.training.finetune_config import FinetuneConfig

    paths = dict(train_file="t.jsonl", output_dir="o", init="tiny")
    assert FinetuneConfig(task="embed", settings={"mini_batch_size": 4}, **paths).settings.mini_batch_size == 4
    with pytest.raises(ValueError, match="mini_batch_size"):
        FinetuneConfig(task="classify", settings={"mini_batch_size": 4}, **paths)
    with pytest.raises(ValueError, match="mini_batch_size must be a positive integer, got 0"):
        FinetuneConfig(task="embed", settings={"mini_batch_size": 0}, **paths)
    model = tiny_embedder(dropout=0.0)
    with pytest.raises(ValueError, match="trains without XLA"):
        EmbeddingTask.configure_training(None, model, FinetuneConfig(
            task="embed", settings={"mini_batch_size": 4}, jit_compile=True, **paths))
    EmbeddingTask.configure_training(None, model, FinetuneConfig(task="embed", settings={"mini_batch_size": 4}, **paths))
    assert model.mini_batch_size == 4
