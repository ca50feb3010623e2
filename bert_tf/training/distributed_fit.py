"""`distributed_fit`: Keras' `fit` for a model built and compiled under a distribution strategy, any strategy.

Keras 3's `fit` stops at its first step under `MultiWorkerMirroredStrategy` (keras-team/keras#20585,
tensorflow/tensorflow#72388: per-replica values reach `_maybe_symbolic_build` and `reduce_per_replica`),
and under `MirroredStrategy` its model build draws a batch from a pass over the data that it then
drops, so a dataset that reshuffles every pass (fine-tuning's) trains on other orders than on one
device. This loop runs the model's own `train_step` (its loss, gradients, optimizer update and
metrics; with `jit_compile`, the same step with the forward pass and its gradient compiled by XLA and what
synchronises replicas outside it: `xla_train_step`) on every replica with the pre-training loop's step
(`bert_tf.training.replica_step`), on the data's passes in order, and calls the Keras callbacks
(progress bar, `ModelCheckpoint`, `EarlyStopping`, `History`) as `fit` does. SIGTERM or SIGINT on
any worker stops every worker after the same step (`TrainingStopped`); `StopOnSignal` stops Keras' own `fit` so on
one device.

Example:
    >>> with strategy.scope():  # doctest: +SKIP
    ...     model = bert_tf.BertClassifier(encoder, num_classes=2)
    ...     model.compile(optimizer=bert_tf.create_optimizer(1e-4, num_train_steps=300))
    >>> history = distributed_fit(model, batches, strategy, epochs=3, steps_per_epoch=100)  # doctest: +SKIP
    >>> history.history["loss"]  # doctest: +SKIP
    [0.69, 0.52, 0.41]
"""

from __future__ import annotations

import signal

import keras
import tensorflow as tf

from bert_tf.training.replica_step import agreeing_step
from bert_tf.training.stop_signals import STOP_SIGNALS, StopSignals


class TrainingStopped(Exception):
    """SIGTERM or SIGINT reached a worker: every worker stopped after the same step, with nothing saved."""

    def __init__(self, stopped_by: signal.Signals, epoch: int, step: int):
        super().__init__(f"{stopped_by.name} stopped training in epoch {epoch + 1} after step {step}.")
        self.stopped_by, self.epoch, self.step = stopped_by, epoch, step


class StopOnSignal(keras.callbacks.Callback):
    """Stops `fit` after the step in which `signals` (a `StopSignals`) received SIGTERM or SIGINT; `stopped`: that stop
    (a `TrainingStopped`), else None."""

    def __init__(self, signals: StopSignals):
        super().__init__()
        self.signals, self.epoch, self.stopped = signals, 0, None

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if self.signals.received is not None and self.stopped is None:
            self.stopped = TrainingStopped(self.signals.received, self.epoch, batch + 1)
            self.model.stop_training = True


def distributed_fit(model: keras.Model, batches: tf.data.Dataset, strategy: tf.distribute.Strategy, epochs: int,
                    steps_per_epoch: int, callbacks=(), verbose: int = 1,
                    class_weight: dict[int, float] | None = None) -> keras.callbacks.History:
    """`model.fit(batches, epochs=..., steps_per_epoch=..., callbacks=..., verbose=..., class_weight=...)` under any
    `strategy`, which built and compiled `model`; every batch of `batches` is a global batch, split over the replicas.

    Each worker of a multi-worker run runs the same loop on the same (seeded) `batches`, and takes its own share of
    every batch.
    """
    if class_weight:
        weights = tf.constant([class_weight.get(index, 1.0) for index in range(max(class_weight) + 1)], tf.float32)
        batches = batches.map(lambda x, y: (x, y, tf.gather(weights, tf.cast(y, tf.int32))))
    step = distributed_train_step(model, strategy, batches.element_spec)
    callback_list = keras.callbacks.CallbackList(list(callbacks), add_history=True, add_progbar=verbose != 0,
                                                 model=model, verbose=verbose, epochs=epochs, steps=steps_per_epoch)
    distributed = strategy.experimental_distribute_dataset(batches)
    model.stop_training, logs = False, {}
    callback_list.on_train_begin()
    with StopSignals() as signals:
        for epoch in range(epochs):
            model.reset_metrics()
            callback_list.on_epoch_begin(epoch)
            iterator = iter(distributed)  # one pass: the next epoch's order
            for batch in range(steps_per_epoch):
                callback_list.on_train_batch_begin(batch)
                requests = tf.constant([float(signals.received == s) for s in STOP_SIGNALS])
                stopped_by = [s for s, asked in zip(STOP_SIGNALS, step(iterator, requests).numpy() > 0) if asked]
                logs = {name: float(value) for name, value in model.get_metrics_result().items()}
                callback_list.on_train_batch_end(batch, logs)
                if stopped_by:
                    raise TrainingStopped(stopped_by[0], epoch, batch + 1)
            callback_list.on_epoch_end(epoch, logs)
            if model.stop_training:
                break
    callback_list.on_train_end(logs)
    return model.history


def distributed_train_step(model: keras.Model, strategy: tf.distribute.Strategy, batch_spec):
    """The step `distributed_fit` trains with: `agreeing_step` running `model.train_step` (XLA-compiled with the
    model's `jit_compile`) on every replica. Builds the optimizer's and metrics' variables first, as `fit` does, from
    `batch_spec` (a dataset's `element_spec`: no batch is drawn).

    Example:
        >>> step = distributed_train_step(model, strategy, batches.element_spec)  # doctest: +SKIP
        >>> step(iter(strategy.experimental_distribute_dataset(batches)), tf.constant([0.0]))  # doctest: +SKIP
    """
    with strategy.scope():
        model._symbolic_build(data_batch=batch_spec)  # Keras' own build, which `fit` runs first
    return agreeing_step(strategy, xla_train_step(model) if model.jit_compile else model.train_step)


def xla_train_step(model: keras.Model):
    """Keras' `train_step` (TensorFlow's) with the model's forward pass, and so its gradient, compiled by XLA, and the
    rest not: the loss, which may all-gather or all-reduce across replicas (`bert_tf.replicas`), and the optimizer's
    update, which sums the replicas' gradients. XLA's CPU backend compiles no collective op (b/194942685), so Keras'
    step compiled whole fails on CPU workers; the pre-training loop keeps them outside its compiled step too."""
    forward = tf.function(lambda x: model(x, training=True), jit_compile=True)

    def step(data):
        x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
        with tf.GradientTape() as tape:
            y_pred = forward(x)
            loss = model.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight, training=True)
            # As Keras' step: the loss tracker reads the replica's loss times the replicas (Keras divides by them).
            replicas = tf.distribute.get_strategy().num_replicas_in_sync
            model._loss_tracker.update_state(loss * replicas, sample_weight=tf.shape(tf.nest.flatten(x)[0])[0])
            scaled_loss = model.optimizer.scale_loss(loss)
        gradients = tape.gradient(scaled_loss, model.trainable_weights)
        model.optimizer.apply_gradients(zip(gradients, model.trainable_weights))
        return model.compute_metrics(x, y, y_pred, sample_weight)

    return step
