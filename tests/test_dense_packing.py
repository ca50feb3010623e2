"""`serving.dense_packing.segment_counts` keeps, for every pair of lengths, the tokens `BertPreprocessor` keeps:
the TFLite text model cuts pairs exactly as training and the SavedModel do, for each truncation."""

import numpy as np
import pytest
import tensorflow as tf

import bert_tf
from serving.dense_packing import segment_counts
from tiny_exports import write_vocab

SEQ_LENGTH = 9  # an odd budget of 6 for two segments: where the truncations differ


@pytest.mark.parametrize("truncation", ["longest_first", "round_robin", "waterfall"])
def test_counts_equal_the_preprocessor_on_every_pair_of_lengths(truncation, tmp_path):
    preprocessor = bert_tf.BertPreprocessor(bert_tf.BertTokenizer(write_vocab(tmp_path)), SEQ_LENGTH,
                                            truncation=truncation)
    lengths = [(first, second) for first in range(10) for second in range(10)]
    texts = [tf.constant([" ".join(["the"] * n) for n in column]) for column in zip(*lengths)]
    type_ids = preprocessor(texts)["input_type_ids"].numpy()
    mask = preprocessor(texts)["input_mask"].numpy()
    expected_second = ((type_ids == 1) & (mask == 1)).sum(axis=1) - 1  # minus its [SEP]
    expected_first = mask.sum(axis=1) - expected_second - 3  # minus [CLS] and two [SEP]
    first, second = (tf.constant(column, tf.int32) for column in zip(*lengths))
    counts = segment_counts([first, second], SEQ_LENGTH - 3, truncation)
    np.testing.assert_array_equal(counts[0].numpy(), expected_first)
    np.testing.assert_array_equal(counts[1].numpy(), expected_second)
