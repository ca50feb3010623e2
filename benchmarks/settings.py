"""`Settings`: what every benchmark of the suite reads — full or quick (smoke) mode, data, time bounds.

Example:
    >>> Settings(quick=True).config("base").num_hidden_layers
    2
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import bert_tf

DATA_DIR = Path(os.environ.get("BERT_TF_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data")
# Quick (smoke-test) mode replaces every model by this one: seconds, not minutes.
QUICK_CONFIG = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                    max_position_embeddings=128)


@dataclasses.dataclass
class Settings:
    """`quick=True`: tiny models, few rounds, little data — checks that the code runs, measures nothing."""

    quick: bool = False
    data_dir: Path = DATA_DIR
    rounds: int = 10  # timed rounds per comparison (fewer when max_seconds runs out)
    max_seconds: float = 90.0  # bound on the timed rounds of one comparison
    command: str = "python -m benchmarks.run"

    def __post_init__(self):
        self.data_dir = Path(self.data_dir)
        if self.quick:
            self.rounds, self.max_seconds = 2, 5.0

    def config(self, preset: str, **overrides) -> bert_tf.BertConfig:
        """The BERT config of `preset` ("mini", "base"), or the tiny smoke-test config in quick mode."""
        if self.quick:
            return bert_tf.BertConfig(**{**QUICK_CONFIG, **overrides})
        return bert_tf.BertConfig.preset(preset, **overrides)

    @property
    def vocab_file(self) -> Path:
        return self.data_dir / "vocab" / "bert-base-uncased-vocab.txt"

    def data_file(self, *parts: str) -> Path | None:
        """A file of the team data folder, or None when it is absent (the benchmark needing it is skipped)."""
        path = self.data_dir.joinpath(*parts)
        return path if path.exists() else None
