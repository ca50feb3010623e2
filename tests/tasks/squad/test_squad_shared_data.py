"""Every answer of the shared SQuAD subset → token positions → back to its text (and through post-processing)."""

import numpy as np
import pytest

import bert_tf
from bert_tf.tasks.squad.data import read_squad
from bert_tf.tasks.squad.features import answer_token_span, squad_features, token_span_text
from bert_tf.tasks.squad.postprocess import answer_predictions


@pytest.fixture(scope="module")
def subset(shared_data):
    examples = read_squad(shared_data / "squad" / "train-v1.1-subset.json")
    tokenizer = bert_tf.BertTokenizer(shared_data / "vocab" / "bert-base-uncased-vocab.txt")
    features = squad_features(examples, tokenizer, seq_length=384, max_query_length=64, doc_stride=128,
                              with_labels=True)
    return examples, features


def test_every_answer_maps_to_tokens_and_back(subset):
    examples, features = subset
    assert len(examples) == 3807
    inside_a_token = []
    for index, example in enumerate(examples):
        tokens, answer = features.contexts[index], example.answers[0]
        first, last = answer_token_span(tokens, answer)
        text = token_span_text(example.context, tokens, first, last)
        # The smallest token span that covers the answer...
        assert tokens.starts[first] <= answer.start < tokens.ends[first], example.question_id
        assert tokens.starts[last] < answer.end <= tokens.ends[last], example.question_id
        # ...gives back the exact answer text whenever the answer starts and ends on token boundaries.
        if tokens.starts[first] == answer.start and tokens.ends[last] == answer.end:
            assert text == answer.text, example.question_id
        else:  # the annotation cuts a word piece: "Tibet" in "Tibetan", "7" in "1817"
            assert answer.text in text
            inside_a_token.append((answer.text, text))
    assert len(inside_a_token) <= 0.01 * len(examples), inside_a_token


def test_window_labels_and_postprocessing_give_the_answers_back(subset):
    examples, features = subset
    starts, ends = [], []
    for index, window in enumerate(features.windows):
        start_logits, end_logits = np.zeros(len(features.input_word_ids[index])), np.zeros(len(features.input_word_ids[index]))
        start_logits[features.start_positions[index]] = end_logits[features.end_positions[index]] = 10.0
        starts.append(start_logits)
        ends.append(end_logits)
    answered = {features.windows[i].example_index for i in np.flatnonzero(features.start_positions)}
    assert answered == set(range(len(examples)))  # every question has a window that holds its answer
    predictions = answer_predictions(examples, features, starts, ends, max_answer_length=30)
    too_long = 0
    for index, (example, prediction) in enumerate(zip(examples, predictions)):
        tokens = features.contexts[index]
        first, last = answer_token_span(tokens, example.answers[0])
        if last - first + 1 > 30:  # longer than max_answer_length: never predicted
            too_long += 1
            continue
        assert prediction.text == token_span_text(example.context, tokens, first, last), example.question_id
    assert too_long == 2
