import random
import re
import string
from collections import Counter

import pytest

from bert_tf.tasks.squad.metrics import exact_match, f1_score, normalize_answer, squad_scores


@pytest.mark.parametrize(
    "text, normalized",
    [
        ("The Eiffel Tower", "eiffel tower"),
        ("  a  cat, an owl & THE dog. ", "cat owl dog"),
        ("Theory of the atom", "theory of atom"),  # only whole-word articles go
        ("U.S.A.", "usa"),
        ("don't", "dont"),
        ("the-end", "theend"),  # punctuation goes first, so "the" is no longer a word
        ("Ça été", "ça été"),
    ],
)
def test_normalization_is_the_official_one(text, normalized):
    assert normalize_answer(text) == normalized


def test_exact_match_takes_the_best_ground_truth():
    assert exact_match("Denver Broncos", ["Denver Broncos", "The Broncos"]) == 1.0
    assert exact_match("the broncos!", ["Denver Broncos", "The Broncos"]) == 1.0
    assert exact_match("Broncos of Denver", ["Denver Broncos"]) == 0.0


def test_f1_is_word_overlap_after_normalization():
    assert f1_score("Denver Broncos", ["Broncos"]) == pytest.approx(2 / 3)  # p = 1/2, r = 1
    assert f1_score("the the cat", ["cat cat"]) == pytest.approx(2 / 3)  # "cat" vs "cat cat": p = 1, r = 1/2
    assert f1_score("a b b", ["b b c"]) == pytest.approx(0.8)  # "a" is an article: "b b" vs "b b c": p = 1, r = 2/3
    assert f1_score("nothing alike", ["different words"]) == 0.0
    assert f1_score("", ["answer"]) == 0.0
    assert f1_score("Super Bowl 50", ["Super Bowl", "Super Bowl 50 game"]) == pytest.approx(max(0.8, 6 / 7))


def test_totals_are_percentages_and_missing_predictions_score_zero():
    truths = {"q1": ["Denver Broncos"], "q2": ["Santa Clara, California", "Levi's Stadium"], "q3": ["2015"]}
    predictions = {"q1": "The Denver Broncos", "q2": "Levi's Stadium in Santa Clara"}
    scores = squad_scores(predictions, truths)
    # q2: "levis stadium in santa clara" vs "levis stadium": p = 2/5, r = 1 → 4/7;
    #     vs "santa clara california": p = 2/5, r = 2/3 → 1/2.
    assert scores["exact_match"] == pytest.approx(100 / 3)
    assert scores["f1"] == pytest.approx(100 * (1 + 4 / 7 + 0) / 3)


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(ValueError, match="list of answers"):
        f1_score("x", "x")
    with pytest.raises(ValueError, match="non-empty list"):
        exact_match("x", [])
    with pytest.raises(ValueError, match="no questions"):
        squad_scores({"q1": "x"}, {})


# The official scripts' algorithms, transcribed independently of bert_tf (evaluate-v1.1.py, evaluate-v2.0.py).

def official_normalize_answer(s):
    def remove_articles(text):
        return re.sub(r"\b(a|an|the)\b", " ", text)

    def white_space_fix(text):
        return " ".join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    return white_space_fix(remove_articles(remove_punc(s.lower())))


def official_v1_f1(prediction, ground_truth):
    prediction_tokens = official_normalize_answer(prediction).split()
    ground_truth_tokens = official_normalize_answer(ground_truth).split()
    common = Counter(prediction_tokens) & Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    return (2 * precision * recall) / (precision + recall)


def official_v1_exact(prediction, ground_truth):
    return official_normalize_answer(prediction) == official_normalize_answer(ground_truth)


def official_v1_evaluate(dataset, predictions):
    f1 = exact = total = 0
    for article in dataset:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                total += 1
                if qa["id"] not in predictions:
                    continue
                ground_truths = [answer["text"] for answer in qa["answers"]]
                prediction = predictions[qa["id"]]
                exact += max(official_v1_exact(prediction, truth) for truth in ground_truths)
                f1 += max(official_v1_f1(prediction, truth) for truth in ground_truths)
    return {"exact_match": 100.0 * exact / total, "f1": 100.0 * f1 / total}


def official_v2_tokens(s):
    if not s:
        return []
    return official_normalize_answer(s).split()


def official_v2_f1(a_gold, a_pred):
    gold_toks, pred_toks = official_v2_tokens(a_gold), official_v2_tokens(a_pred)
    num_same = sum((Counter(gold_toks) & Counter(pred_toks)).values())
    if len(gold_toks) == 0 or len(pred_toks) == 0:
        return int(gold_toks == pred_toks)
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(pred_toks)
    recall = 1.0 * num_same / len(gold_toks)
    return (2 * precision * recall) / (precision + recall)


def official_v2_evaluate(dataset, predictions):
    exact_scores, f1_scores = {}, {}
    for article in dataset:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                gold_answers = [a["text"] for a in qa["answers"] if official_normalize_answer(a["text"])] or [""]
                if qa["id"] not in predictions:
                    continue
                a_pred = predictions[qa["id"]]
                exact_scores[qa["id"]] = max(int(official_normalize_answer(a) == official_normalize_answer(a_pred))
                                             for a in gold_answers)
                f1_scores[qa["id"]] = max(official_v2_f1(a, a_pred) for a in gold_answers)
    total = len(exact_scores)
    return {"exact_match": 100.0 * sum(exact_scores.values()) / total, "f1": 100.0 * sum(f1_scores.values()) / total}


WORDS = ["Denver", "broncos", "the", "a", "an", "The", "cat", "cat.", "U.S.", "1889", "Paris", "it's", "!?", "Été"]
EMPTY_ANSWERS = [".", "the", "!?", "a an", " "]


def synthetic_squad(seed, version_2):
    """A SQuAD-shaped dataset with answers that normalize to "" (and, for v2.0, unanswerable questions), and
    predictions that are empty, ".", gold answers or random words, with some questions unanswered and some extra ids."""
    rng = random.Random(seed)

    def words():
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 5)))

    dataset, predictions, question_index = [], {}, 0
    for _ in range(6):
        paragraphs = []
        for _ in range(4):
            qas = []
            for _ in range(12):
                question_id = f"q{question_index}"
                question_index += 1
                answers = [rng.choice(EMPTY_ANSWERS) if rng.random() < 0.3 else words()
                           for _ in range(rng.randint(1, 3))]
                if version_2 and rng.random() < 0.25:
                    answers = []
                qas.append({"id": question_id, "answers": [{"text": text} for text in answers]})
                kind = rng.randrange(4 if version_2 else 5)  # v2.0's script needs every prediction
                if kind < 4:
                    predictions[question_id] = ["", ".", rng.choice(answers or [""]), words()][kind]
            paragraphs.append({"qas": qas})
        dataset.append({"paragraphs": paragraphs})
    for index in range(10):
        predictions[f"extra{index}"] = words()
    return dataset, predictions


def ground_truths_of(dataset):
    return {qa["id"]: [answer["text"] for answer in qa["answers"]]
            for article in dataset for paragraph in article["paragraphs"] for qa in paragraph["qas"]}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_squad_v1_scores_equal_the_official_script(seed):
    dataset, predictions = synthetic_squad(seed, version_2=False)
    truths = ground_truths_of(dataset)
    assert any(not normalize_answer(text) for answers in truths.values() for text in answers)
    assert truths.keys() - predictions.keys() and predictions.keys() - truths.keys()
    assert squad_scores(predictions, truths) == official_v1_evaluate(dataset, predictions)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_squad_v2_scores_equal_the_official_script(seed):
    dataset, predictions = synthetic_squad(seed, version_2=True)
    truths = ground_truths_of(dataset)
    assert any(not answers for answers in truths.values())
    assert squad_scores(predictions, truths, version_2=True) == official_v2_evaluate(dataset, predictions)


def test_empty_answers_follow_each_versions_rule():
    # v1.1: "." normalizes to "", which equals the empty prediction, but no word is shared.
    assert exact_match("", ["."]) == 1.0 and f1_score("", ["."]) == 0.0
    assert squad_scores({"q1": "", "q9": "x"}, {"q1": ["the"], "q2": ["x"]}) == {"exact_match": 50.0, "f1": 0.0}
    # v2.0: answers that normalize to "" are dropped; with none left, the question is unanswerable.
    assert exact_match("", ["."], version_2=True) == 1.0 and f1_score("", ["."], version_2=True) == 1.0
    assert f1_score("", [], version_2=True) == 1.0 and f1_score("x", [], version_2=True) == 0.0
    assert exact_match("", [".", "Paris"], version_2=True) == 0.0
