"""`serving.export.tflite.segment_counts` keeps, for every pair of lengths, the tokens `BertPreprocessor` keeps:
the TFLite text model cuts pairs exactly as training and the SavedModel do, for each truncation; and
`to_longest` pads a batch only to its longest row, as the SavedModel's raw-text signature does."""

import numpy as np
import pytest
import tensorflow as tf

import bert_tf
from serving.export.tflite import segment_counts, to_longest
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


def test_a_batch_is_padded_only_to_its_longest_row(tmp_path):
    preprocessor = bert_tf.BertPreprocessor(bert_tf.BertTokenizer(write_vocab(tmp_path)), 32)
    ids = {name: value.numpy() for name, value in preprocessor(tf.constant(["the film", "a very good movie !"])).items()}
    cut = to_longest(ids)
    assert all(value.shape == (2, 7) for value in cut.values())  # [CLS] a very good movie ! [SEP]
    for name, value in cut.items():
        np.testing.assert_array_equal(np.asarray(value), ids[name][:, :7])
    assert all(value.shape == (1, 1) for value in to_longest({name: value[:1] * 0 for name, value in ids.items()}).values())
