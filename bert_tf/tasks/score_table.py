r"""The per-class (or per-entity-type) table of precision, recall, F1 and support that score reports print.

Example:
    >>> print("\n".join(score_table("type", {"PER": {"precision": 0.9, "recall": 0.8, "f1": 0.847, "support": 10}})))
    type          precision  recall      F1  support
    PER              0.9000  0.8000  0.8470       10
"""

from __future__ import annotations


def score_table(title: str, rows: dict[str, dict]) -> list[str]:
    """The table's lines: a heading, then one line per row name."""
    lines = [f"{title:<12}  precision  recall      F1  support"]
    for name, scores in rows.items():
        lines.append(f"{name:<12}  {scores['precision']:9.4f}  {scores['recall']:6.4f}  {scores['f1']:6.4f}  "
                     f"{scores['support']:7d}")
    return lines
