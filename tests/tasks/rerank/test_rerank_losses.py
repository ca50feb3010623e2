"""The reranker's losses against a hand computation, and against sentence-transformers' CrossEncoder losses on the same
logits (its MultipleNegativesRankingLoss, BinaryCrossEntropyLoss and MarginMSELoss)."""

import math

import numpy as np
import pytest
from tiny_cross_encoder import make_cross_encoder

from bert_tf.tasks.rerank.losses import ListwiseLoss, MarginMSELoss, PairBinaryCrossEntropyLoss

LOGITS = np.array([[2.0, -1.0, 0.5], [0.3, 1.2, -0.7]], np.float32)  # two queries: the positive, two negatives
TEACHER = np.array([[9.0, 1.0, 4.0], [2.0, 3.5, -1.0]], np.float32)


def _sigmoid(value):
    return 1 / (1 + math.exp(-value))


def test_listwise_is_the_cross_entropy_of_the_positive_over_sigmoid_times_scale():
    expected = []
    for row in LOGITS.tolist():
        scores = [10 * _sigmoid(value) for value in row]
        expected.append(-math.log(math.exp(scores[0]) / sum(math.exp(score) for score in scores)))
    assert float(ListwiseLoss(scale=10.0)(np.zeros_like(LOGITS), LOGITS)) == pytest.approx(np.mean(expected), 1e-6)
    raw = [-math.log(math.exp(row[0]) / sum(math.exp(value) for value in row)) for row in LOGITS.tolist()]
    assert float(ListwiseLoss(sigmoid=False)(np.zeros_like(LOGITS), LOGITS)) == pytest.approx(np.mean(raw), 1e-6)


def test_binary_cross_entropy_averages_every_pair():
    labels = np.array([[1.0, 0.0, 0.0], [1.0, 0.0, 0.25]], np.float32)
    terms = [-(y * math.log(_sigmoid(x)) + (1 - y) * math.log(1 - _sigmoid(x)))
             for row_x, row_y in zip(LOGITS.tolist(), labels.tolist()) for x, y in zip(row_x, row_y)]
    assert float(PairBinaryCrossEntropyLoss()(labels, LOGITS)) == pytest.approx(np.mean(terms), 1e-6)


def test_margin_mse_compares_each_margin_with_the_teachers():
    terms = [((x[0] - x[i]) - (t[0] - t[i])) ** 2 for x, t in zip(LOGITS.tolist(), TEACHER.tolist()) for i in (1, 2)]
    assert float(MarginMSELoss()(TEACHER, LOGITS)) == pytest.approx(np.mean(terms), 1e-6)


@pytest.fixture(scope="module")
def cross_encoder(tmp_path_factory):
    pytest.importorskip("sentence_transformers")
    return make_cross_encoder(tmp_path_factory.mktemp("losses") / "model")


def test_the_losses_equal_sentence_transformers_on_the_same_logits(cross_encoder):
    import torch
    from sentence_transformers.cross_encoder import losses

    columns = [torch.tensor(LOGITS[:, column]) for column in range(LOGITS.shape[1])]
    for sigmoid, theirs in ((True, losses.MultipleNegativesRankingLoss(cross_encoder, num_negatives=0)),
                            (False, losses.MultipleNegativesRankingLoss(cross_encoder, num_negatives=0, scale=1.0,
                                                                        activation_fn=None))):
        expected = float(theirs.calculate_loss(columns, len(LOGITS)))
        ours = float(ListwiseLoss(scale=theirs.scale or 1.0, sigmoid=sigmoid)(np.zeros_like(LOGITS), LOGITS))
        assert ours == pytest.approx(expected, abs=1e-6)

    labels = np.array([[1.0, 0.0, 0.0], [1.0, 0.0, 0.25]], np.float32)
    bce = losses.BinaryCrossEntropyLoss(cross_encoder)
    expected = float(bce.bce_with_logits_loss(torch.tensor(LOGITS).view(-1), torch.tensor(labels).view(-1)))
    assert float(PairBinaryCrossEntropyLoss()(labels, LOGITS)) == pytest.approx(expected, abs=1e-6)

    # MarginMSELoss's own forward, its model's logits replaced by LOGITS (each document text names its column).
    margin = losses.MarginMSELoss(cross_encoder)
    margin.logits_from_pairs = lambda pairs, **_: torch.tensor([LOGITS[int(query), int(document)]
                                                                for query, document in pairs])
    inputs = [["0", "1"], ["0", "0"], ["1", "1"], ["2", "2"]]  # queries, positives, negatives 1 and 2
    expected = float(margin(inputs, torch.tensor(TEACHER)))
    assert float(MarginMSELoss()(TEACHER, LOGITS)) == pytest.approx(expected, abs=1e-6)
