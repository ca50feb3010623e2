"""Evaluation scores as a short text report: classification report, entity scores, or SQuAD EM/F1.

Example:
    >>> print(format_scores("squad", {"exact_match": 61.25, "f1": 70.5}))
    exact match 61.25  F1 70.50
    >>> print(format_scores("ner", {"precision": 0.9, "recall": 0.8, "f1": 0.847, "accuracy": 0.97,
    ...                             "per_type": {"PER": {"precision": 0.9, "recall": 0.8, "f1": 0.847, "support": 10}}}))
    entities: precision 0.9000  recall 0.8000  F1 0.8470  (token accuracy 0.9700)
    type          precision  recall      F1  support
    PER              0.9000  0.8000  0.8470       10
"""

from __future__ import annotations


def _table(title: str, rows: dict[str, dict]) -> list[str]:
    lines = [f"{title:<12}  precision  recall      F1  support"]
    for name, scores in rows.items():
        lines.append(f"{name:<12}  {scores['precision']:9.4f}  {scores['recall']:6.4f}  {scores['f1']:6.4f}  "
                     f"{scores['support']:7d}")
    return lines


def format_scores(task: str, scores: dict) -> str:
    """The report of `task`'s scores (as `FinetuneTask.evaluate` returns them)."""
    if task == "squad":
        return f"exact match {scores['exact_match']:.2f}  F1 {scores['f1']:.2f}"
    if task == "ner":
        head = (f"entities: precision {scores['precision']:.4f}  recall {scores['recall']:.4f}  F1 {scores['f1']:.4f}  "
                f"(token accuracy {scores['accuracy']:.4f})")
        return "\n".join([head, *_table("type", scores["per_type"])])
    head = [f"accuracy {scores['accuracy']:.4f}", f"macro-F1 {scores['macro_f1']:.4f}"]
    if "mcc" in scores:
        head.append(f"MCC {scores['mcc']:.4f}")
    if "f1" in scores:
        head.append(f"F1 {scores['f1']:.4f} (second class)")
    if "micro_f1" in scores:
        head.append(f"micro-F1 {scores['micro_f1']:.4f}")
    return "\n".join(["  ".join(head), *_table("class", scores["per_class"])])
