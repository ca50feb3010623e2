"""Values across the replicas of the current distribution strategy, for losses that must be those of the global
batch: a value summed over the replicas (the denominators of losses averaged over a global batch, so that each
replica's loss is its share and the shares add up to the one-device loss); every replica's rows of a tensor (for
losses that compare each example with every other of the batch); and a replica's share of a loss that every
replica computes whole.

Example:
    >>> float(all_replicas_sum(tf.constant(3.0)))  # no strategy: one replica
    3.0
    >>> global_batch(tf.constant([1.0, 2.0])).shape, float(replica_share(tf.constant(3.0)))
    (TensorShape([2]), 3.0)
"""

from __future__ import annotations

import tensorflow as tf


def _several_replicas():
    """The replica context when several replicas run in sync; None on one replica, or in a cross-replica context."""
    context = tf.distribute.get_replica_context()
    return context if context is not None and context.num_replicas_in_sync > 1 else None


def all_replicas_sum(value):
    """The sum of `value` over every replica of the current strategy (itself on one replica, or in a cross-replica
    context). A synchronisation point between replicas: with several, call it outside any XLA-compiled function."""
    context = _several_replicas()
    return value if context is None else context.all_reduce(tf.distribute.ReduceOp.SUM, value)


def global_batch(tensor):
    """Every replica's rows of `tensor`, in replica order: the global batch (`tensor` itself on one replica, or in a
    cross-replica context). Gradients flow back to each replica's own rows."""
    context = _several_replicas()
    return tensor if context is None else context.all_gather(tensor, axis=0)


def replica_share(loss):
    """A loss of the whole global batch, which every replica computes, divided by the replicas: Keras sums the
    replicas' gradients, as it does for a per-example loss, which it divides so (`scale_loss_for_distribution`)."""
    context = _several_replicas()
    return loss if context is None else loss / tf.cast(context.num_replicas_in_sync, loss.dtype)
