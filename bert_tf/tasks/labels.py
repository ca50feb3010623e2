"""Label vocabularies: the label names of a training file, in a fixed order, and label → id with clear errors.

The order is numeric when every label is an integer ("0", "1", "10"), else alphabetical,
so the same training data always gives the same ids. Classes named by the user (`finetune
--label-names negative,positive`) may be written in the files by name or by id ("0", "1").

Example:
    >>> names = label_vocabulary(["pos", "neg", "pos"])
    >>> names
    ['neg', 'pos']
    >>> encode_labels(["pos", "neg"], names, "train.tsv", [2, 3])
    [1, 0]
    >>> label_vocabulary(["10", "2", "1"])
    ['1', '2', '10']
    >>> encode_labels(["1", "neg"], names, "train.tsv", [2, 3], accept_ids=True)
    [1, 0]
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


def encode_labels(labels: Sequence[str], label_names: Sequence[str], source: str, lines: Sequence[int],
                  accept_ids: bool = False) -> list[int]:
    """Ids of `labels`; a label not in `label_names` is an error naming `source` and its line.

    With `accept_ids`, a label may also be a class id ("0" .. "n-1"), unless the class names are
    integers themselves (then "0" is only ever a name).
    """
    ids = {name: index for index, name in enumerate(label_names)}
    by_id = accept_ids and not any(_is_integer(name) for name in label_names)
    if by_id:
        ids.update({str(index): index for index in range(len(label_names))})
    known = f"{list(label_names)} or their ids 0 to {len(label_names) - 1}" if by_id else f"{list(label_names)}"
    encoded = []
    for label, line in zip(labels, lines):
        if label not in ids:
            raise ValueError(f"{source}, line {line}: unknown label {label!r}; the model knows {known}.")
        encoded.append(ids[label])
    return encoded
