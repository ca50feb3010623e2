"""What sentence-transformers' `mine_hard_negatives` reads of Hugging Face `datasets` (not installed here: nothing
else in the project uses it, nor pandas), so that the reference runs as published: a table of named columns.

`with mining_datasets():` puts this stand-in where `import datasets` finds it and tells sentence-transformers that
`datasets` is available; `Dataset.from_dict`, `column_names`, `len`, `dataset[column]` and the one pandas chain the
function runs (`to_pandas().groupby(anchor).count().to_dict()[positive]`: the positives per anchor) are all it uses.

Example:
    >>> rows = Dataset.from_dict({"anchor": ["q", "q", "r"], "positive": ["a", "b", "c"]})
    >>> rows.column_names, len(rows), rows.to_pandas().groupby("anchor").count().to_dict()["positive"]
    (['anchor', 'positive'], 3, {'q': 2, 'r': 1})
"""

from __future__ import annotations

import contextlib
import importlib.machinery
import sys
import types
from collections import Counter


class Dataset:
    """Columns of equal length, by name."""

    def __init__(self, columns: dict):
        self.columns = {name: list(values) for name, values in columns.items()}

    @classmethod
    def from_dict(cls, columns: dict) -> "Dataset":
        return cls(columns)

    @property
    def column_names(self) -> list[str]:
        return list(self.columns)

    def __len__(self) -> int:
        return len(next(iter(self.columns.values()), []))

    def __getitem__(self, name: str) -> list:
        return self.columns[name]

    def to_pandas(self) -> "Dataset":
        return self

    def groupby(self, column: str) -> "_Groups":
        return _Groups(self, column)


class _Groups:
    def __init__(self, dataset: Dataset, column: str):
        self.dataset, self.column = dataset, column

    def count(self) -> "_Groups":
        return self

    def to_dict(self) -> dict:
        counts = dict(Counter(self.dataset[self.column]))
        return {name: counts for name in self.dataset.column_names if name != self.column}


@contextlib.contextmanager
def mining_datasets():
    """`datasets` importable (this stand-in) and reported available to sentence-transformers, within the block."""
    from sentence_transformers.util import hard_negatives

    module = types.ModuleType("datasets")
    module.Dataset = Dataset
    module.__spec__ = importlib.machinery.ModuleSpec("datasets", None)
    previous_module, previous_check = sys.modules.get("datasets"), hard_negatives.is_datasets_available
    sys.modules["datasets"] = module
    hard_negatives.is_datasets_available = lambda: True
    try:
        yield
    finally:
        hard_negatives.is_datasets_available = previous_check
        if previous_module is None:
            sys.modules.pop("datasets", None)
        else:
            sys.modules["datasets"] = previous_module
