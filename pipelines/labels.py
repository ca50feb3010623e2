"""Label vocabularies: the label names of a training file, in a fixed order, and label → id with clear errors.

The order is numeric when every label is an integer ("0", "1", "10"), else alphabetical,
so the same training data always gives the same ids.

Example:
    >>> names = label_vocabulary(["pos", "neg", "pos"])
    >>> names
    ['neg', 'pos']
    >>> encode_labels(["pos", "neg"], names, "train.tsv", [2, 3])
    [1, 0]
    >>> label_vocabulary(["10", "2", "1"])
    ['1', '2', '10']
"""

from __future__ import annotations

from typing import Iterable, Sequence


def _is_integer(text: str) -> bool:
    return text.lstrip("-").isdigit()


def label_vocabulary(labels: Iterable[str]) -> list[str]:
    """The distinct labels, sorted numerically if all are integers, else alphabetically."""
    names = set(labels)
    if not names:
        raise ValueError("No labels to build a label vocabulary from.")
    if all(_is_integer(name) for name in names):
        return sorted(names, key=int)
    return sorted(names)


def encode_labels(labels: Sequence[str], label_names: Sequence[str], source: str, lines: Sequence[int]) -> list[int]:
    """Ids of `labels`; a label not in `label_names` is an error naming `source` and its line."""
    ids = {name: index for index, name in enumerate(label_names)}
    encoded = []
    for label, line in zip(labels, lines):
        if label not in ids:
            raise ValueError(
                f"{source}, line {line}: unknown label {label!r}; the model knows {list(label_names)} "
                "(from its training file)."
            )
        encoded.append(ids[label])
    return encoded
