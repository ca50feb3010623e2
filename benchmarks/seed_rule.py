"""Scores over seeds, and the rule that two frameworks' means must meet: |Δmean| ≤ max(1 point, 2 × the larger std).

The quality benchmarks (`quality`, `embedding_quality`, `search_quality`) judge bert-tf against its reference with it.
"""

from __future__ import annotations

import statistics

RULE_POINTS = 1.0


def mean_std(values: list[float]) -> dict:
    """The values, their mean and sample standard deviation (0 for one value).

    >>> mean_std([1.0, 2.0, 3.0])
    {'values': [1.0, 2.0, 3.0], 'mean': 2.0, 'std': 1.0}
    """
    return {"values": values, "mean": statistics.mean(values),
            "std": statistics.stdev(values) if len(values) > 1 else 0.0}


def rule(ours: dict, theirs: dict) -> dict:
    """Whether two `mean_std` results agree: their difference (ours − theirs), the bound, and whether it holds.

    >>> rule(mean_std([70.0, 72.0]), mean_std([71.0]))["bound"] > 2, rule(mean_std([70.0]), mean_std([71.5]))["holds"]
    (True, False)
    """
    bound = max(RULE_POINTS, 2 * max(ours["std"], theirs["std"]))
    difference = ours["mean"] - theirs["mean"]
    return {"difference": difference, "bound": bound, "holds": abs(difference) <= bound}
