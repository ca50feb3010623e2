"""SQuAD reading, windowing, answer ↔ token mapping and n-best post-processing, on hand-made data."""

import json

import numpy as np
import pytest
from tiny_finetune_files import squad_json, write_squad, write_vocab

import bert_tf
from bert_tf.tasks.squad.data import Answer, SquadExample, read_squad
from bert_tf.tasks.squad.features import answer_token_span, squad_features, token_span_text, tokenize_contexts
from bert_tf.tasks.squad.metrics import squad_scores
from bert_tf.tasks.squad.postprocess import answer_predictions


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    return bert_tf.BertTokenizer(write_vocab(tmp_path_factory.mktemp("vocab")))


def write_json(path, data):
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return path


def test_reads_questions_with_checked_answers(tmp_path):
    examples = read_squad(write_squad(tmp_path / "train.json"))
    assert len(examples) == 5
    first = examples[0]
    assert (first.question_id, first.question, first.title) == ("q0-0-0", "who lives in paris ?", "tiny")
    assert first.context[first.answers[0].start:first.answers[0].end] == "mary"


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["data"][0]["paragraphs"][0]["qas"][1]["answers"][0].update(answer_start=3),
     r"article 0 \('tiny'\), paragraph 0, question 'q0-0-1': answer 'acme' does not match the context at character 3"),
    (lambda d: d["data"][0]["paragraphs"][1].pop("context"), r"paragraph 1: missing field 'context'"),
    (lambda d: d["data"][0]["paragraphs"][0]["qas"][0].update(answers=[]), r"question 'q0-0-0': no answers"),
    (lambda d: d["data"][0]["paragraphs"][0]["qas"][1].update(id="q0-0-0"), r"1 question ids appear more than once"),
    (lambda d: d.update(data=[]), r"no questions"),
])
def test_bad_squad_files_are_errors_naming_the_question(tmp_path, edit, message):
    data = squad_json()
    edit(data)
    with pytest.raises(ValueError, match=message):
        read_squad(write_json(tmp_path / "bad.json", data))


def test_empty_and_invalid_json(tmp_path):
    with pytest.raises(ValueError, match=r"empty.json: the file is empty"):
        read_squad(write_json(tmp_path / "empty.json", ""))
    with pytest.raises(ValueError, match=r"broken.json, line 2, column 1: not valid JSON"):
        read_squad(write_json(tmp_path / "broken.json", '{"data": [\n'))


def test_a_file_that_is_not_utf8_is_an_error_naming_line_and_byte(tmp_path):
    text = json.dumps(squad_json(), indent=1).replace("mary lives", "m\u00e4ry lives", 1)
    path = tmp_path / "latin1.json"
    path.write_bytes(text.encode("latin-1"))
    line = text[:text.index("\u00e4")].count("\n") + 1
    with pytest.raises(ValueError, match=rf"latin1.json, line {line}, byte offset {text.index(chr(0xe4))}: the file "
                                         r"is not UTF-8 \(re-save it as UTF-8\)"):
        read_squad(path)


def test_windows_cover_the_context_with_the_stride(tokenizer):
    def spans(num_tokens, max_tokens, doc_stride):
        example = SquadExample("q", "", " ".join(["mary"] * num_tokens), [])  # no question: max_tokens + 3 tokens
        features = squad_features([example], tokenizer, max_tokens + 3, 1, doc_stride, with_labels=False)
        return [(window.doc_start, window.doc_length) for window in features.windows]

    assert spans(10, 4, 2) == [(0, 4), (2, 4), (4, 4), (6, 4)]
    assert spans(3, 4, 2) == [(0, 3)]
    assert spans(9, 4, 3) == [(0, 4), (3, 4), (6, 3)]
    assert spans(0, 4, 3) == [(0, 0)]


def test_answers_map_to_tokens_and_back_to_the_exact_text_even_with_accents(tokenizer):
    context = "Mary lives in Zürich, at “Café Paris”."
    (tokens,) = tokenize_contexts([context], tokenizer)
    for text in ("Zürich", "Café Paris", "Mary lives", "Paris"):
        first, last = answer_token_span(tokens, Answer(text, context.index(text)))
        assert token_span_text(context, tokens, first, last) == text


def test_windows_hold_the_answer_positions_or_point_at_cls(tokenizer):
    examples = read_squad_examples()
    features = squad_features(examples, tokenizer, seq_length=16, max_query_length=5, doc_stride=3, with_labels=True)
    assert all(len(ids) <= 16 for ids in features.input_word_ids)
    assert len(features.windows) > len(examples)  # the contexts need several windows
    for index, window in enumerate(features.windows):
        example, tokens = examples[window.example_index], features.contexts[window.example_index]
        start, end = features.start_positions[index], features.end_positions[index]
        type_ids = features.input_type_ids[index]
        assert type_ids[window.context_offset] == 1 and type_ids[window.context_offset - 1] == 0
        if start == 0:
            first, last = answer_token_span(tokens, example.answers[0])
            assert not window.doc_start <= first <= last < window.doc_start + window.doc_length
        else:
            text = token_span_text(example.context, tokens, window.context_token(start), window.context_token(end))
            assert text == example.answers[0].text
    assert {features.windows[i].example_index for i in np.flatnonzero(features.start_positions)} == set(range(5))


def read_squad_examples():
    data = squad_json()
    return [SquadExample(qa["id"], qa["question"], paragraph["context"],
                         [Answer(a["text"], a["answer_start"]) for a in qa["answers"]])
            for paragraph in data["data"][0]["paragraphs"] for qa in paragraph["qas"]]


def oracle_logits(features, examples, spans):
    """Logits that favour, in each window, the tokens of the given (first, last) context-token span per example."""
    starts, ends = [], []
    for window, ids in zip(features.windows, features.input_word_ids):
        start_logits, end_logits = np.zeros(len(ids)), np.zeros(len(ids))
        first, last = spans[window.example_index]
        for position in range(len(ids)):
            token = window.context_token(position)
            start_logits[position] += 5.0 if token == first else 0.0
            end_logits[position] += 5.0 if token == last else 0.0
        starts.append(start_logits)
        ends.append(end_logits)
    return starts, ends


def test_postprocessing_recovers_the_answers_from_oracle_logits(tokenizer):
    examples = read_squad_examples()
    features = squad_features(examples, tokenizer, seq_length=16, max_query_length=5, doc_stride=3, with_labels=False)
    spans = [answer_token_span(features.contexts[i], example.answers[0]) for i, example in enumerate(examples)]
    starts, ends = oracle_logits(features, examples, spans)
    answers = answer_predictions(examples, features, starts, ends, n_best_size=3, max_answer_length=5)
    assert [answer.text for answer in answers] == [example.answers[0].text for example in examples]
    assert all(example.context[a.start:a.end] == a.text and 0 < a.probability <= 1 for example, a in zip(examples, answers))
    scores = squad_scores({e.question_id: a.text for e, a in zip(examples, answers)},
                          {e.question_id: [x.text for x in e.answers] for e in examples})
    assert scores == {"exact_match": 100.0, "f1": 100.0}


def test_spans_longer_than_max_answer_length_are_not_chosen(tokenizer):
    examples = read_squad_examples()[:1]  # "mary lives in paris . john works at acme ."
    features = squad_features(examples, tokenizer, seq_length=32, max_query_length=8, doc_stride=8, with_labels=False)
    starts, ends = oracle_logits(features, examples, {0: (0, 9)})  # "mary ... ." would be 10 tokens
    ends[0][features.windows[0].context_offset + 1] = 1.0  # a weaker end after "lives"
    (answer,) = answer_predictions(examples, features, starts, ends, max_answer_length=4)
    assert answer.text == "mary lives"


def test_squad_v2_predicts_no_answer_when_the_null_score_wins(tokenizer):
    examples = [SquadExample("impossible", "who works at acme ?", "mary lives in paris .", [], is_impossible=True)]
    features = squad_features(examples, tokenizer, seq_length=32, max_query_length=8, doc_stride=8, with_labels=True)
    assert features.start_positions.tolist() == [0] and features.end_positions.tolist() == [0]
    starts, ends = oracle_logits(features, examples, {0: (0, 0)})
    starts[0][0] = ends[0][0] = 6.0  # [CLS] beats "mary" (5 + 5 < 6 + 6)
    (answer,) = answer_predictions(examples, features, starts, ends, version_2=True)
    assert answer.text == "" and answer.probability > 0.5
    scores = squad_scores({"impossible": answer.text}, {"impossible": []}, version_2=True)
    assert scores == {"exact_match": 100.0, "f1": 100.0}
    (answer,) = answer_predictions(examples, features, starts, ends, version_2=True, null_score_threshold=5.0)
    assert answer.text == "mary"
