"""One training step under any distribution strategy, the workers of a multi-worker run agreeing on what to do next.

Keras 3's `fit` fails under `MultiWorkerMirroredStrategy` (keras-team/keras#20585,
tensorflow/tensorflow#72388); this step works under it, as under `MirroredStrategy` and on one
device. The pre-training loop (`bert_tf.training.pretraining`) and `distributed_fit`
(`bert_tf.training.distributed_fit`) train with it.

Example:
    >>> step = agreeing_step(strategy, train_one_batch)  # train_one_batch(batch) runs on each replica  # doctest: +SKIP
    >>> iterator = iter(strategy.distribute_datasets_from_function(dataset_fn))  # doctest: +SKIP
    >>> stop, save = step(iterator, tf.constant([0.0, 1.0])).numpy() > 0  # this worker asks to save  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Callable

import tensorflow as tf


def agreeing_step(strategy: tf.distribute.Strategy, replica_step: Callable) -> Callable:
    """A `tf.function(iterator, requests)` that runs `replica_step(batch)` on every replica with the next batch of the
    distributed `iterator`, and returns `requests` (a float vector, each entry 0 or 1: checkpoint, stop, ...) summed
    over every replica of every worker: an entry above 0 is one that some worker asked for, and every worker sees it,
    so that all of them save or stop at the same step."""

    def agree(requests):
        # tf.identity puts the value on this replica's device, which the all-reduce needs.
        return tf.distribute.get_replica_context().all_reduce(tf.distribute.ReduceOp.SUM, tf.identity(requests))

    @tf.function(reduce_retracing=True)
    def step(iterator, requests):
        strategy.run(replica_step, args=(next(iterator),))
        return strategy.experimental_local_results(strategy.run(agree, args=(requests,)))[0]

    return step
