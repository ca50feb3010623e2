"""`bert_tf.inference`: the traced-once inference function and raw text → predictions in input order."""

import numpy as np
import pytest
import tensorflow as tf

import bert_tf
from bert_tf.inference import TextPredictor, inference_function

TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "fine", "film", "dull", "one", "the", "plot", "is", "thin"]
TEXTS = ["a fine film", "dull", "the plot is thin , the film is dull", "a fine one", "thin", "the film"]


@pytest.fixture(scope="module")
def classifier():
    config = bert_tf.BertConfig(vocab_size=len(TOKENS), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                intermediate_size=64, max_position_embeddings=64)
    return bert_tf.BertClassifier(bert_tf.BertModel(config), num_classes=3)


@pytest.fixture(scope="module")
def tokenizer():
    return bert_tf.BertTokenizer(TOKENS, lower_case=True)


def test_inference_function_traces_once_for_every_shape(classifier):
    run = inference_function(classifier)
    for batch, seq in [(1, 4), (3, 9), (2, 17)]:
        ids = tf.fill([batch, seq], 5)
        inputs = {"input_word_ids": ids, "input_mask": tf.ones_like(ids), "input_type_ids": tf.zeros_like(ids)}
        np.testing.assert_allclose(run(inputs).numpy(), classifier(inputs, training=False).numpy(), atol=1e-6)
    assert run.experimental_get_tracing_count() == 1


@pytest.mark.parametrize("sort_by_length", [True, False])
def test_predictions_are_in_input_order_and_equal_to_padding_to_max_length(classifier, tokenizer, sort_by_length):
    predict = TextPredictor(classifier, bert_tf.BertPreprocessor(tokenizer, seq_length=16, padding="longest"),
                            batch_size=4, sort_by_length=sort_by_length)
    fixed = classifier(bert_tf.BertPreprocessor(tokenizer, seq_length=16)(tf.constant(TEXTS)), training=False)
    np.testing.assert_allclose(predict(TEXTS), fixed.numpy(), atol=1e-5)
    np.testing.assert_allclose(predict(TEXTS[::-1]), fixed.numpy()[::-1], atol=1e-5)


def test_text_pairs_and_named_outputs_of_a_dict_model(classifier, tokenizer):
    preprocessor = bert_tf.BertPreprocessor(tokenizer, seq_length=16, padding="longest")
    pairs = list(zip(TEXTS, TEXTS[::-1]))
    outputs = TextPredictor(classifier.encoder, preprocessor, batch_size=4, output_names=["pooled_output"])(pairs)
    fixed = classifier.encoder(bert_tf.BertPreprocessor(tokenizer, seq_length=16)(
        (tf.constant(TEXTS), tf.constant(TEXTS[::-1]))), training=False)
    np.testing.assert_allclose(outputs["pooled_output"], fixed["pooled_output"].numpy(), atol=1e-5)


def test_per_token_outputs_and_bad_arguments_are_refused(classifier, tokenizer):
    preprocessor = bert_tf.BertPreprocessor(tokenizer, seq_length=16, padding="longest")
    with pytest.raises(ValueError, match="sequence dimension"):
        TextPredictor(classifier.encoder, preprocessor, batch_size=2)(TEXTS)
    with pytest.raises(ValueError, match="batch_size"):
        TextPredictor(classifier, preprocessor, batch_size=0)
    with pytest.raises(ValueError, match="no texts"):
        TextPredictor(classifier, preprocessor)([])
