"""`bert_tf.tasks.squad.ops`: doc-stride windows and the best answer over them, against plain-Python references
of google-research/bert's rules; and the SavedModel answering exactly as `bert-tf predict` does."""

import numpy as np
import pytest
import tensorflow as tf
from tiny_exports import VOCAB, tiny_encoder, write_vocab

import bert_tf
from bert_tf.tasks.squad.ops import WindowLayout, _max_context_window, best_answers, squad_windows
from serving.export.saved_model import export_saved_model

VOCABULARY = bert_tf.Vocabulary(("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"), lower_case=True)
CLS, SEP = VOCABULARY.cls_id, VOCABULARY.sep_id


def ragged(rows):
    values = np.array([token for row in rows for token in row], np.int32)
    return tf.RaggedTensor.from_row_lengths(values, [len(row) for row in rows])


def reference_spans(num_tokens, max_tokens, doc_stride):
    """(start, length) of each window, as run_squad.py's loop makes them."""
    spans, start = [], 0
    while True:
        length = min(num_tokens - start, max_tokens)
        spans.append((start, length))
        if start + length >= num_tokens:
            return spans
        start += min(length, doc_stride)


def reference_max_context(spans, window, token):
    """run_squad.py's _check_is_max_context: is `window` the best of the windows holding `token`?"""
    best_score, best_window = None, None
    for index, (start, length) in enumerate(spans):
        if start <= token < start + length:
            score = min(token - start, start + length - 1 - token) + 0.01 * length
            if best_score is None or score > best_score:
                best_score, best_window = score, index
    return best_window == window


def random_case(rng, examples):
    """Random settings, questions (0 to 7 tokens) and contexts (0 to 59 tokens)."""
    settings = {"seq_length": int(rng.integers(10, 30)), "max_query_length": int(rng.integers(1, 5)),
                "doc_stride": int(rng.integers(1, 12))}
    questions = [list(rng.integers(10, 99, rng.integers(0, 8))) for _ in range(examples)]
    contexts = [list(rng.integers(100, 199, rng.integers(0, 60))) for _ in range(examples)]
    return settings, questions, contexts


def test_windows_are_run_squads_windows():
    rng = np.random.default_rng(0)
    for _ in range(20):
        settings, questions, contexts = random_case(rng, 4)
        windows = squad_windows(ragged(questions), ragged(contexts), vocabulary=VOCABULARY, **settings)
        expected, counts = [], []
        for index, (question, context) in enumerate(zip(questions, contexts)):
            question = question[:settings["max_query_length"]]
            spans = reference_spans(len(context), settings["seq_length"] - len(question) - 3, settings["doc_stride"])
            counts.append(len(spans))
            for start, length in spans:
                expected.append(([CLS, *question, SEP, *context[start:start + length], SEP],
                                 [0] * (len(question) + 2) + [1] * (length + 1),
                                 [index, start, length, len(question) + 2]))
        layout = windows.layout
        fields = np.stack([layout.example_index, layout.doc_start, layout.doc_length, layout.context_offset], axis=1)
        got = zip(windows.input_word_ids.to_list(), windows.input_type_ids.to_list(), fields.tolist())
        assert list(got) == expected
        assert layout.num_windows.numpy().tolist() == counts


def test_too_short_seq_length_is_an_error():
    with pytest.raises(ValueError, match="leaves no room for context tokens"):
        squad_windows(ragged([[5]]), ragged([[6]]), seq_length=8, max_query_length=5, doc_stride=2,
                      vocabulary=VOCABULARY)


def test_max_context_in_closed_form_equals_run_squads_check():
    cases = [(n, m, stride) for n in range(40) for m in range(1, 12) for stride in range(1, 14)]
    spans = [reference_spans(*case) for case in cases]
    windows = [(example, number, start, length) for example, example_spans in enumerate(spans)
               for number, (start, length) in enumerate(example_spans)]
    example_index, _, doc_start, doc_length = (tf.constant(column, tf.int32) for column in zip(*windows))
    layout = WindowLayout(example_index, doc_start, doc_length, tf.zeros_like(doc_start),
                          tf.constant([len(example_spans) for example_spans in spans], tf.int32))
    best = _max_context_window(tf.tile(tf.range(40)[tf.newaxis], [len(windows), 1]), layout).numpy()
    for row, (example, number, start, length) in enumerate(windows):
        for token in range(start, start + length):
            is_best = best[row, token] == number
            assert is_best == reference_max_context(spans[example], number, token), (cases[example], number, token)


def reference_answer(starts, ends, spans, offsets, n_best_size, max_answer_length, version_2, threshold):
    """One example's (first token, last token, score, probability) by the rules, in plain Python."""
    candidates, null = [], min(s[0] + e[0] for s, e in zip(starts, ends))
    for window, ((doc_start, doc_length), offset) in enumerate(zip(spans, offsets)):
        in_window = range(offset + doc_length + 1)
        best_starts = sorted(in_window, key=lambda p: -starts[window][p])[:n_best_size]
        best_ends = sorted(in_window, key=lambda p: -ends[window][p])[:n_best_size]
        for start in best_starts:
            for end in best_ends:
                first, last = doc_start + start - offset, doc_start + end - offset
                if (offset <= start < offset + doc_length and offset <= end < offset + doc_length
                        and reference_max_context(spans, window, first) and 0 <= last - first < max_answer_length):
                    candidates.append((starts[window][start] + ends[window][end], first, last))
    candidates = sorted(candidates, key=lambda candidate: -candidate[0])[:n_best_size]
    scores = np.array([score for score, _, _ in candidates] + ([null] if version_2 else []))
    probabilities = np.exp(scores - scores.max(initial=-np.inf)) / np.exp(scores - scores.max(initial=-np.inf)).sum()
    if candidates and not (version_2 and null - candidates[0][0] > threshold):
        return candidates[0][1], candidates[0][2], candidates[0][0], probabilities[0]
    return -1, -1, null if version_2 else 0.0, probabilities[-1] if version_2 else 0.0


@pytest.mark.parametrize("version_2", [False, True])
def test_best_answers_follow_the_rules(version_2):
    rng = np.random.default_rng(1)
    for _ in range(15):
        settings, questions, contexts = random_case(rng, 3)
        n_best_size, max_answer_length, threshold = int(rng.integers(1, 25)), int(rng.integers(1, 8)), rng.normal()
        windows = squad_windows(ragged(questions), ragged(contexts), vocabulary=VOCABULARY, **settings)
        layout = [value.numpy() for value in windows.layout]
        starts, ends = (3 * rng.normal(size=(len(layout[0]), settings["seq_length"])).astype(np.float32)
                        for _ in range(2))
        answers = best_answers(starts, ends, windows.layout, max_answer_length, n_best_size, version_2, threshold)
        for example in range(3):
            rows = np.flatnonzero(layout[0] == example)
            expected = reference_answer(starts[rows].astype(np.float64), ends[rows].astype(np.float64),
                                        list(zip(layout[1][rows], layout[2][rows])), layout[3][rows], n_best_size,
                                        max_answer_length, version_2, threshold)
            got = [value.numpy()[example] for value in answers]
            assert got[:2] == list(expected[:2])
            np.testing.assert_allclose(got[2:], expected[2:], atol=1e-5, rtol=0)


def test_an_answer_in_a_later_window_is_found():
    """The best span is in window 4 of 9; the first window alone (what the SavedModel read before) gives another."""
    context = list(range(100, 140))
    windows = squad_windows(ragged([[5, 6]]), ragged([context]), seq_length=16, max_query_length=4, doc_stride=4,
                            vocabulary=VOCABULARY)
    layout = windows.layout
    assert layout.num_windows.numpy().tolist() == [9]  # 11 context tokens each, 4 apart
    starts, ends = np.zeros((9, 16), np.float32), np.zeros((9, 16), np.float32)
    window, offset = 3, int(layout.context_offset[3])  # tokens 12..22: its max-context tokens include 17
    starts[window, offset + 5], ends[window, offset + 6] = 4.0, 3.0  # context tokens 17, 18
    starts[0, offset + 1] = 1.0  # the first window's best start: a weaker answer
    answers = best_answers(starts, ends, layout, max_answer_length=5, n_best_size=20, version_2=False)
    assert (int(answers.first_token[0]), int(answers.last_token[0])) == (17, 18)
    assert float(answers.score[0]) == pytest.approx(7.0)
    first_window = WindowLayout(*(value[:1] for value in layout[:4]), num_windows=tf.constant([1]))
    first_only = best_answers(starts[:1], ends[:1], first_window, max_answer_length=5, n_best_size=20, version_2=False)
    assert int(first_only.first_token[0]) == 1


WORDS = ["the", "film", "was", "great", "Pàris", "is", "not", "dull", "!", "who", "lives", "in", ",", "movies",
         "🎬", "Ünïcode", "very", "good", "bad", "."]
SEQ_LENGTH = 32


def squad_texts():
    """Questions of 0 to 11 tokens; contexts of up to 14 windows, one empty; "berlin" far into the first."""
    rng = np.random.default_rng(2)
    contexts = [" ".join(rng.choice(WORDS, size)) for size in (100, 60, 120, 3, 20, 90)] + ["", "Pàris 🎬 berlin"]
    words = contexts[0].split()
    contexts[0] = " ".join(words[:70] + ["berlin"] + words[70:])
    questions = ["who lives in Pàris ?", "", "where is the very good film that was not dull ?", "🎬", "the",
                 "is it great", "who", "where"]
    return questions, contexts


def berlin_span_labeler() -> bert_tf.BertSpanLabeler:
    """A tiny random span labeler whose start and end logits peak on "berlin" (about 17, the others below 5)."""
    model = bert_tf.BertSpanLabeler(tiny_encoder(seed=21))
    direction = np.tile([1.0, -1.0], 16) / np.sqrt(32)
    embeddings, kernel = (next(w for w in model.weights if w.path.endswith(name))
                          for name in ("word_embeddings/embeddings", "span_logits/kernel"))
    embeddings.assign(embeddings.numpy() + 10 * np.outer(np.array(VOCAB) == "berlin", direction))
    kernel.assign(kernel.numpy() + 3 * direction[:, np.newaxis])
    return model


@pytest.mark.parametrize("version_2", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_saved_model_answers_as_bert_tf_predict(version_2, tmp_path):
    from bert_tf.prediction import Predictor

    vocab_file = write_vocab(tmp_path)
    settings = {"max_query_length": 6, "doc_stride": 8, "max_answer_length": 5, "n_best_size": 7,
                "version_2": version_2, "null_score_threshold": 0.5}
    model_dir = bert_tf.save_pretrained(berlin_span_labeler(), tmp_path / "squad", vocab_file=vocab_file, task="squad",
                                        seq_length=SEQ_LENGTH, settings=settings)
    signatures = tf.saved_model.load(str(export_saved_model(model_dir, tmp_path / "models", "squad"))).signatures
    questions, contexts = squad_texts()
    outputs = signatures["serving_default"](question=tf.constant(questions), context=tf.constant(contexts))
    expected = Predictor(model_dir).answer(questions, contexts)
    served = [{"text": text.decode(), "start": int(start), "end": int(end)} for text, start, end in zip(
        outputs["answer_text"].numpy(), outputs["answer_char_start"].numpy(), outputs["answer_char_end"].numpy())]
    assert served == [{key: answer[key] for key in ("text", "start", "end")} for answer in expected]
    np.testing.assert_allclose(outputs["answer_score"].numpy(), [a["score"] for a in expected], atol=1e-5, rtol=0)
    np.testing.assert_allclose(outputs["answer_probability"].numpy(), [a["probability"] for a in expected], atol=1e-5,
                               rtol=0)
    assert served[0]["text"] == "berlin" and served[0]["start"] == contexts[0].index("berlin")
    assert served[6] == {"text": "", "start": 0, "end": 0}  # the empty context

    ids = signatures["preprocess"](question=tf.constant(questions), context=tf.constant(contexts))
    windows = ids["input_mask"].numpy()[:, :, 0].sum(axis=1)
    assert windows.tolist() == [12, 6, 14, 1, 1, 10, 1, 1]
    assert ids["input_word_ids"].shape == outputs["start_logits"].shape == (len(questions), 14, SEQ_LENGTH)
    # serve_ids on each first window (what the SavedModel read before): the same answer where that is the only
    # window; "berlin" is far beyond the first window of context 0.
    first_window = signatures["serve_ids"](**{name: value[:, 0] for name, value in ids.items()})
    single = windows == 1
    for name in ("answer_score", "answer_probability"):
        np.testing.assert_allclose(first_window[name].numpy()[single], outputs[name].numpy()[single], atol=1e-5)
    assert first_window["answer_score"].numpy()[0] < outputs["answer_score"].numpy()[0] - 10
