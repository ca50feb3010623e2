"""`embed_file`: a text file (one text, or one tab-separated pair, per line) → sentence or token vectors.

Lines are streamed through tf.data, so files larger than memory work; a .npy output is filled
through a memory map. The output is written next to its final name and moved into place at the
end: an interrupted run leaves no half-written file. Row i of the output is line i + 1 of the
input (empty lines included, embedded as empty texts, with a warning). With `pairs=True`, each line
is a text pair, `first<TAB>second` (e.g. a question and a passage), embedded together.

Example:
    >>> embedder = TextEmbedder(load_embedder("models/sts"))              # doctest: +SKIP
    >>> embed_file(embedder, "sentences.txt", "vectors.npy")              # doctest: +SKIP
    1000
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import numpy as np
import tensorflow as tf

from bert_tf.tasks.embedding.text_embedder import TextEmbedder

logger = logging.getLogger(__name__)

OUTPUT_SUFFIXES = (".npy", ".jsonl")


def embed_file(embedder: TextEmbedder, in_path, out_path, tokens: bool = False, progress: bool = True,
               pairs: bool = False) -> int:
    """Embeds every line of `in_path` into `out_path`; returns the line count.

    `out_path` ending in .npy: float32 [lines, dim]. Ending in .jsonl: one JSON object per line,
    `{"text", "vector"}`, or with `tokens=True` `{"text", "tokens": [{"token", "word", "word_index",
    "start", "end", "vector"}, ...]}` (see `TokenVectors.to_json`).
    """
    in_path, out_path = Path(in_path), Path(out_path)
    suffix = out_path.suffix.lower()
    if suffix not in OUTPUT_SUFFIXES:
        raise ValueError(f"{out_path}: the output must end in .npy or .jsonl.")
    if tokens and suffix != ".jsonl":
        raise ValueError(f"{out_path}: token vectors have a different count per text; write them to a .jsonl file.")
    if tokens and pairs:
        raise ValueError("Token vectors are per text: embed text pairs as sentence vectors (without tokens).")
    num_lines = _count_lines(in_path, pairs)
    texts = tf.data.TextLineDataset(str(in_path))
    if pairs:
        texts = texts.map(_split_pair)
    staging = out_path.with_name(f".{out_path.name}.partial")
    out_path.parent.mkdir(parents=True, exist_ok=True)
    try:
        if suffix == ".npy":
            shape = (num_lines, embedder.dim())
            array = np.lib.format.open_memmap(staging, mode="w+", dtype=np.float32, shape=shape)
            row = 0
            for _, vectors in embedder.iter_sentence_vectors(texts, progress, num_lines):
                array[row:row + len(vectors)] = vectors
                row += len(vectors)
            array.flush()
            del array
        else:
            if tokens:
                records = (item.to_json() for item in embedder.iter_token_vectors(texts, progress, num_lines))
            else:
                batches = embedder.iter_sentence_vectors(texts, progress, num_lines)
                records = ({"text": text, "vector": np.round(vector.astype(np.float64), 6).tolist()}
                           for batch_texts, vectors in batches for text, vector in zip(batch_texts, vectors))
            with staging.open("w", encoding="utf-8") as file:
                for record in records:
                    file.write(json.dumps(record, ensure_ascii=False) + "\n")
        os.replace(staging, out_path)
    except BaseException:
        staging.unlink(missing_ok=True)
        raise
    return num_lines


def _split_pair(line):
    """`first<TAB>second` → (first, second); the second may hold more tabs."""
    parts = tf.strings.split(line, "\t", maxsplit=1)
    return parts[0], parts[1]


def _count_lines(path: Path, pairs: bool = False) -> int:
    """The number of lines (as tf.data.TextLineDataset reads them); an error when there is no text at all,
    or, for `pairs`, when a line has no tab."""
    if not path.is_file():
        raise FileNotFoundError(f"Input file not found: {path}")
    empty, untabbed = [], []
    count = 0
    with path.open("rb") as file:
        for count, line in enumerate(file, start=1):
            if not line.strip():
                empty.append(count)
            if pairs and b"\t" not in line:
                untabbed.append(count)
    if untabbed:
        raise ValueError(f"{path}: {len(untabbed)} line(s) have no tab between the two texts of a pair (lines "
                         f"{', '.join(map(str, untabbed[:10]))}{' ...' if len(untabbed) > 10 else ''}).")
    if len(empty) == count:
        raise ValueError(f"{path} has no text to embed ({'empty file' if count == 0 else 'only blank lines'}); "
                         "it should hold one text per line.")
    if empty:
        logger.warning("%s: %d blank line(s) (%s%s) are embedded as empty texts, to keep one row per line.", path,
                       len(empty), ", ".join(map(str, empty[:10])), " ..." if len(empty) > 10 else "")
    return count
