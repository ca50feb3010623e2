"""The toy task's score: the mean absolute error of the predicted scores, negated (higher is better)."""

import numpy as np


def toy_scores(truths, predictions) -> dict:
    error = float(np.mean(np.abs(np.asarray(truths, np.float64) - np.asarray(predictions, np.float64))))
    return {"neg_mae": -error, "examples": len(truths)}
