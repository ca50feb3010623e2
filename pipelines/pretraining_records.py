"""Pre-built pre-training examples in TFRecord files, in google-research/bert's format.

For users who want static data (masks fixed at writing time): `write_pretraining_records`
stores batches from `pipelines.pretraining.pretraining_dataset`; `read_pretraining_records`
reads them back, and also reads the files of google-research/bert's
`create_pretraining_data.py` (same feature names: input_ids, input_mask, segment_ids,
masked_lm_positions, masked_lm_ids, masked_lm_weights, next_sentence_labels).

Example:
    >>> write_pretraining_records(dataset.take(100), "shard-0.tfrecord")      # doctest: +SKIP
    >>> read_pretraining_records(["shard-0.tfrecord"], seq_length=128,
    ...                          max_predictions_per_seq=20, batch_size=32)  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import tensorflow as tf

from bert_tf.progress import progress_bar

# Our feature name → google-research/bert's.
GOOGLE_NAMES = {
    "input_word_ids": "input_ids",
    "input_mask": "input_mask",
    "input_type_ids": "segment_ids",
    "masked_lm_positions": "masked_lm_positions",
    "masked_lm_ids": "masked_lm_ids",
    "masked_lm_weights": "masked_lm_weights",
    "next_sentence_labels": "next_sentence_labels",
}


def write_pretraining_records(dataset: tf.data.Dataset, path: str, progress: bool = True) -> int:
    """Writes every example of a (batched) features dataset to one TFRecord file; returns the count."""
    count = 0
    with tf.io.TFRecordWriter(str(path)) as writer:
        batches = progress_bar(dataset.as_numpy_iterator(), desc=f"writing {path}", unit="batch", disable=not progress)
        for batch in batches:
            for row in range(len(batch["input_word_ids"])):
                feature = {}
                for name, google_name in GOOGLE_NAMES.items():
                    values = np.reshape(batch[name][row], [-1])
                    if name == "masked_lm_weights":
                        feature[google_name] = tf.train.Feature(float_list=tf.train.FloatList(value=values))
                    else:
                        feature[google_name] = tf.train.Feature(int64_list=tf.train.Int64List(value=values))
                writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
                count += 1
    return count


def read_pretraining_records(
    files: Sequence[str],
    seq_length: int,
    max_predictions_per_seq: int,
    batch_size: int,
    seed: int | None = None,
    repeat: bool = True,
    input_context: tf.distribute.InputContext | None = None,
) -> tf.data.Dataset:
    """Batches of features from TFRecord files of pre-built examples (ours or google-research/bert's)."""
    spec = {
        "input_ids": tf.io.FixedLenFeature([seq_length], tf.int64),
        "input_mask": tf.io.FixedLenFeature([seq_length], tf.int64),
        "segment_ids": tf.io.FixedLenFeature([seq_length], tf.int64),
        "masked_lm_positions": tf.io.FixedLenFeature([max_predictions_per_seq], tf.int64),
        "masked_lm_ids": tf.io.FixedLenFeature([max_predictions_per_seq], tf.int64),
        "masked_lm_weights": tf.io.FixedLenFeature([max_predictions_per_seq], tf.float32),
        "next_sentence_labels": tf.io.FixedLenFeature([1], tf.int64),
    }

    def parse(records):
        parsed = tf.io.parse_example(records, spec)
        features = {name: parsed[google_name] for name, google_name in GOOGLE_NAMES.items()}
        features["next_sentence_labels"] = features["next_sentence_labels"][:, 0]
        return {name: value if value.dtype == tf.float32 else tf.cast(value, tf.int32) for name, value in features.items()}

    dataset = tf.data.Dataset.from_tensor_slices(list(files))
    if input_context and input_context.num_input_pipelines > 1:
        dataset = dataset.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    if repeat:
        dataset = dataset.repeat()
    dataset = dataset.shuffle(len(files), seed=seed).interleave(
        tf.data.TFRecordDataset, cycle_length=min(len(files), 8), num_parallel_calls=tf.data.AUTOTUNE)
    dataset = dataset.shuffle(4096, seed=seed).batch(batch_size, drop_remainder=repeat)
    return dataset.map(parse, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)
