import pytest

from bert_tf.tasks.ner.metrics import extract_entities, ner_scores


@pytest.mark.parametrize(
    "tags, entities",
    [
        # BIO (IOB2)
        (["B-PER", "I-PER", "O", "B-LOC"], [("PER", 0, 1), ("LOC", 3, 3)]),
        (["B-PER", "B-PER", "I-PER"], [("PER", 0, 0), ("PER", 1, 2)]),  # B- always starts a new entity
        (["O", "O"], []),
        ([], []),
        # I- without B-: starts an entity (conlleval), at the sentence start or after O
        (["I-PER", "I-PER", "O", "I-LOC"], [("PER", 0, 1), ("LOC", 3, 3)]),
        # type change inside a span: the span splits
        (["B-PER", "I-LOC", "I-LOC"], [("PER", 0, 0), ("LOC", 1, 2)]),
        (["B-PER", "I-PER", "B-LOC", "I-PER"], [("PER", 0, 1), ("LOC", 2, 2), ("PER", 3, 3)]),
        # IOB1: B- only where an entity follows one of the same type
        (["I-ORG", "I-ORG", "B-ORG", "I-ORG", "O"], [("ORG", 0, 1), ("ORG", 2, 3)]),
        (["I-ORG", "I-MISC", "B-MISC"], [("ORG", 0, 0), ("MISC", 1, 1), ("MISC", 2, 2)]),
        # an entity running to the end of the sentence
        (["O", "B-MISC", "I-MISC"], [("MISC", 1, 2)]),
        # types with dashes
        (["B-geo-loc", "I-geo-loc"], [("geo-loc", 0, 1)]),
    ],
)
def test_entities_are_decoded_as_conlleval_does(tags, entities):
    assert extract_entities(tags) == entities


def test_seqeval_readme_example():
    true = [["O", "O", "O", "B-MISC", "I-MISC", "I-MISC", "O"], ["B-PER", "I-PER", "O"]]
    predicted = [["O", "O", "B-MISC", "I-MISC", "I-MISC", "I-MISC", "O"], ["B-PER", "I-PER", "O"]]
    scores = ner_scores(true, predicted)
    assert (scores["precision"], scores["recall"], scores["f1"]) == (0.5, 0.5, 0.5)
    assert scores["accuracy"] == pytest.approx(8 / 10)  # tokens 2 and 3 of the first sentence differ
    assert scores["per_type"] == {
        "MISC": {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 1},
        "PER": {"precision": 1.0, "recall": 1.0, "f1": 1.0, "support": 1},
    }


def test_counts_by_hand_with_iob1_and_boundary_errors():
    true = [["I-PER", "I-PER", "B-PER", "O", "I-LOC"], ["I-ORG", "O", "I-MISC"]]
    predicted = [["I-PER", "I-PER", "I-PER", "O", "I-LOC"], ["I-ORG", "O", "I-LOC"]]
    # true: PER(0-1), PER(2-2), LOC(4), ORG(0), MISC(2) = 5
    # predicted: PER(0-2), LOC(4), ORG(0), LOC(2) = 4; correct: LOC(4), ORG(0) = 2
    scores = ner_scores(true, predicted)
    assert scores["precision"] == pytest.approx(2 / 4)
    assert scores["recall"] == pytest.approx(2 / 5)
    assert scores["f1"] == pytest.approx(2 * 0.5 * 0.4 / 0.9)
    assert scores["per_type"]["LOC"] == pytest.approx({"precision": 0.5, "recall": 1.0, "f1": 2 / 3, "support": 1})
    assert scores["per_type"]["PER"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 2}
    assert scores["per_type"]["MISC"]["support"] == 1 and scores["per_type"]["MISC"]["precision"] == 0.0


def test_nothing_to_find_scores_zero_not_nan():
    assert ner_scores([["O"]], [["O"]]) == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "accuracy": 1.0, "per_type": {}}


@pytest.mark.parametrize(
    "true, predicted, message",
    [
        ([["O"]], [["O"], ["O"]], "1 true sentences but 2 predicted"),
        ([["O", "O"]], [["O"]], "sentence 0 has 2 true tags but 1 predicted"),
        ([["E-PER"]], [["O"]], "Unsupported tag 'E-PER'"),
        ([["B"]], [["O"]], "Unsupported tag 'B'"),
    ],
)
def test_bad_inputs_raise_clear_errors(true, predicted, message):
    with pytest.raises(ValueError, match=message):
        ner_scores(true, predicted)
