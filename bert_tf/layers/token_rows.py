"""A batch's real tokens as rows of one matrix, and the way back to the [batch, seq] grid.

Everything in a transformer block but attention acts on each token alone, so it can skip the
padding: the projections, feed-forward layers and LayerNorms run on the [tokens, hidden] rows
of the real tokens, and only attention sees the padded grid (the technique of "removing padding"
in FasterTransformer and ByteTransformer). On batches of short texts padded to a common length
this saves the matrix multiplies of every padded position. No library offers it for Keras, so
it is written here with gathers between the two layouts.

Example:
    >>> rows = TokenRows.from_mask(tf.constant([[1, 1, 0], [1, 0, 0]]))
    >>> rows.gather(tf.reshape(tf.range(6.0), [6, 1])).numpy().ravel().tolist()
    [0.0, 1.0, 3.0]
"""

from __future__ import annotations

import dataclasses

import tensorflow as tf


@dataclasses.dataclass(frozen=True)
class TokenRows:
    """Where the kept tokens of a [batch, seq] grid are: the real ones, and position 0 of every sequence.

    `grid_index` int32 [batch·seq]: each kept position's row in the flattened grid;
    `row_of_position` int32 [batch·seq]: each grid position's row, or `tokens` (a zero
    row) for a skipped one; `batch`, `seq`: the grid's shape.
    """

    grid_index: tf.Tensor
    row_of_position: tf.Tensor
    batch: tf.Tensor
    seq: tf.Tensor

    @classmethod
    def from_mask(cls, input_mask) -> TokenRows:
        """From the [batch, seq] padding mask (1 = real token). Position 0 ([CLS]) is always kept."""
        batch, seq = tf.shape(input_mask)[0], tf.shape(input_mask)[1]
        kept = tf.reshape(tf.logical_or(input_mask > 0, tf.range(seq)[tf.newaxis, :] == 0), [-1])
        grid_index = tf.cast(tf.where(kept)[:, 0], tf.int32)
        # A kept position's row is the number of kept positions before it.
        row_of_position = tf.where(kept, tf.cumsum(tf.cast(kept, tf.int32), exclusive=True), tf.shape(grid_index)[0])
        return cls(grid_index, row_of_position, batch, seq)

    def gather(self, grid_values):
        """[batch, seq, width] or [batch·seq, width] values → [tokens, width]: the kept positions' rows."""
        return tf.gather(tf.reshape(grid_values, [-1, grid_values.shape[-1]]), self.grid_index)

    def to_grid(self, row_values):
        """[tokens, width] rows → [batch, seq, width], zeros at the skipped positions."""
        padded = tf.concat([row_values, tf.zeros_like(row_values[:1])], axis=0)
        width = row_values.shape[-1] if row_values.shape[-1] is not None else -1
        return tf.reshape(tf.gather(padded, self.row_of_position), [self.batch, self.seq, width])

    def at_positions(self, row_values, positions):
        """The rows at int `positions` [batch, n] of the grid: [batch, n, width] (positions must be kept ones)."""
        grid_positions = positions + tf.range(self.batch)[:, tf.newaxis] * self.seq
        return tf.gather(row_values, tf.gather(self.row_of_position, grid_positions))
