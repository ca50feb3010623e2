"""Cached in-batch negatives (GradCache, Gao et al. 2021; sentence-transformers' CachedMultipleNegativesRankingLoss):
a batch of any size trains in the memory of a small one, with the loss and gradients of the whole batch.

In-batch losses compare every text of a batch with every other, so a larger batch is a harder task, but the
encoder's activations for back-propagation grow with it. The cached step splits the batch into chunks of
`mini_batch_size` examples and
1. embeds every chunk without recording gradients, and joins the vectors ([batch, texts, size]);
2. computes the loss of the whole batch on them, and its gradient with respect to the vectors (small);
3. embeds each chunk again, recording this time, and back-propagates that chunk's share of the vector gradient
   through the encoder, summing the weights' gradients over the chunks.
The loss and gradients are those of one pass over the batch in chunks (with dropout off, of the plain batch:
tests/tasks/embedding/test_cached_step.py). Dropout: the second pass must drop what the first dropped; every
dropout layer draws its seed from a Keras `SeedGenerator` (a state variable advanced at each call), so the step
saves every generator's state before the first pass and restores it before the second, which then calls them in
the same order and draws the same seeds (sentence-transformers keeps torch's RNG state per chunk to the same end).
Memory: activations of one chunk, plus the batch's vectors and a second copy of the weights' gradients.

Example:
    >>> model.mini_batch_size = 32  # doctest: +SKIP
    >>> model.fit(batches_of_256)   # each step: BertEmbedder.train_step → cached_train_step  # doctest: +SKIP
"""

from __future__ import annotations

import keras
import tensorflow as tf


def seed_generators(model: keras.Model) -> list:
    """The `SeedGenerator`s of `model`'s layers (its dropout layers' random streams)."""
    return [layer.seed_generator for layer in model._flatten_layers()
            if isinstance(getattr(layer, "seed_generator", None), keras.random.SeedGenerator)]


def cached_gradients(model: keras.Model, x: dict, y, sample_weight, mini_batch_size: int, scale_loss=None):
    """`(loss, vectors, gradients)` of `model.compute_loss` on the batch `x` (id tensors [batch, texts, seq]),
    embedded `mini_batch_size` examples at a time (module docstring); the gradients are those of `scale_loss(loss)`
    (the optimizer's loss scaling; default: the loss) for `model.trainable_weights`, None where a weight has none."""
    size = tf.shape(x["input_word_ids"])[0]
    count = (size + mini_batch_size - 1) // mini_batch_size

    def chunk(index):
        return {name: value[index * mini_batch_size:(index + 1) * mini_batch_size] for name, value in x.items()}

    generators = seed_generators(model)
    states = [tf.identity(generator.state.value) for generator in generators]
    def embed(index, parts):
        return index + 1, parts.write(index, tf.cast(model(chunk(index), training=True), tf.float32))

    # One chunk after the other (parallel_iterations=1): the dropout layers' seeds are drawn in the chunks' order.
    _, parts = tf.while_loop(lambda index, _: index < count, embed,
                             (tf.constant(0), tf.TensorArray(tf.float32, size=count, infer_shape=False)),
                             parallel_iterations=1)
    vectors = tf.stop_gradient(parts.concat())
    with tf.GradientTape() as tape:
        tape.watch(vectors)
        loss = model.compute_loss(x=x, y=y, y_pred=vectors, sample_weight=sample_weight, training=True)
        scaled = loss if scale_loss is None else scale_loss(loss)
    vector_gradients = tape.gradient(scaled, vectors)
    for generator, state in zip(generators, states):  # the second pass draws the first pass's seeds
        generator.state.assign(state)
    weights = model.trainable_weights

    def chunk_gradients(index):
        with tf.GradientTape() as chunk_tape:
            chunk_vectors = tf.cast(model(chunk(index), training=True), tf.float32)
        share = vector_gradients[index * mini_batch_size:(index + 1) * mini_batch_size]
        return chunk_tape.gradient(chunk_vectors, weights, output_gradients=share)

    # The first chunk outside the loop: which weights get a gradient at all (the pooler's do not) is known from it.
    first = chunk_gradients(0)
    def add(index, totals):
        gradients = [gradient for gradient in chunk_gradients(index) if gradient is not None]
        return index + 1, [total + tf.convert_to_tensor(gradient) for total, gradient in zip(totals, gradients)]

    _, totals = tf.while_loop(lambda index, _: index < count, add,
                              (tf.constant(1), [tf.convert_to_tensor(gradient) for gradient in first
                                                if gradient is not None]), parallel_iterations=1)
    totals = iter(totals)
    return loss, vectors, [None if gradient is None else next(totals) for gradient in first]


def cached_train_step(model: keras.Model, data, mini_batch_size: int):
    """Keras' `train_step` (TensorFlow's) with the batch's gradients from `cached_gradients`: the optimizer's update,
    the loss tracker and the metrics as Keras' own step."""
    x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
    loss, vectors, gradients = cached_gradients(model, x, y, sample_weight, mini_batch_size,
                                                model.optimizer.scale_loss)
    # As Keras' step: the loss tracker reads the replica's loss times the replicas (Keras divides by them).
    replicas = tf.distribute.get_strategy().num_replicas_in_sync
    model._loss_tracker.update_state(loss * replicas, sample_weight=tf.shape(x["input_word_ids"])[0])
    model.optimizer.apply_gradients([(gradient, weight) for gradient, weight in zip(gradients, model.trainable_weights)
                                     if gradient is not None])
    return model.compute_metrics(x, y, vectors, sample_weight)
