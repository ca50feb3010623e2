"""The team data the benchmarks read (SST-2, the pre-training corpus), in the shapes they need.

Example:
    >>> texts, labels = sst2("/work/shared/data/sst2/train.tsv", 64)   # doctest: +SKIP
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

# Books of the team corpus used for pre-training data (quick mode: the first only).
CORPUS_BOOKS = ("84-0.txt", "1342-0.txt", "76-0.txt")


def sst2(path: str | Path, count: int | None = None) -> tuple[list[str], np.ndarray]:
    """(sentences, int32 labels) of the first `count` rows of a GLUE SST-2 TSV file (header `sentence<TAB>label`)."""
    lines = Path(path).read_text(encoding="utf-8").split("\n")[1:]
    rows = [line.split("\t") for line in lines if line][:count]
    return [row[0] for row in rows], np.array([int(row[1]) for row in rows], np.int32)


def prepared_corpus(corpus_dir: Path, out_dir: Path, quick: bool) -> list[str]:
    """Books of the team corpus written in BERT's pre-training text format (`pipelines.corpus.prepare_corpus`)."""
    from pipelines.corpus import prepare_corpus

    books = [corpus_dir / name for name in CORPUS_BOOKS[:1 if quick else None]]
    return [str(report.output) for report in prepare_corpus(books, out_dir, progress=False)]


def pretraining_batches(files: list[str], vocab_file: Path, batch_size: int, count: int, seq_length: int = 128,
                        max_predictions: int = 20) -> list[dict[str, np.ndarray]]:
    """`count` batches of BERT pre-training features from `pipelines.pretraining.pretraining_dataset` (seeded)."""
    from pipelines.pretraining import pretraining_dataset

    dataset = pretraining_dataset(files, str(vocab_file), seq_length=seq_length, max_predictions_per_seq=max_predictions,
                                  batch_size=batch_size, seed=0)
    return [{name: value.numpy() for name, value in batch.items()} for batch in dataset.take(count)]
