"""A value summed over the replicas of the current distribution strategy: the denominators of losses averaged over
a global batch, so that each replica's loss is its share and the shares add up to the one-device loss.

Example:
    >>> float(all_replicas_sum(tf.constant(3.0)))  # no strategy: one replica
    3.0
"""

from __future__ import annotations

import tensorflow as tf


def all_replicas_sum(value):
    """The sum of `value` over every replica of the current strategy (itself on one replica, or in a cross-replica
    context). A synchronisation point between replicas: with several, call it outside any XLA-compiled function."""
    context = tf.distribute.get_replica_context()
    if context is None or context.num_replicas_in_sync == 1:
        return value
    return context.all_reduce(tf.distribute.ReduceOp.SUM, value)
