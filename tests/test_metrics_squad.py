import pytest

from bert_tf.metrics import exact_match, f1_score, normalize_answer, squad_scores


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
    with pytest.raises(ValueError, match="non-empty list"):
        f1_score("x", "x")
    with pytest.raises(ValueError, match="non-empty list"):
        exact_match("x", [])
    with pytest.raises(ValueError, match="unknown question ids"):
        squad_scores({"q9": "x"}, {"q1": ["x"]})
