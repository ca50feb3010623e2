"""Hybrid search as `bert-tf serve` serves it: the index SavedModel of BM25 and all-MiniLM-L6-v2 at 5k, 100k and 1M
documents — its memory, its size on disk, the time to build it, and queries/s from 16 gRPC clients.

    python -m benchmarks.run --only search_speed           # ~30 minutes on 2 cores, 1M documents included
    python -m benchmarks.run --only search_speed --quick   # the 5k index alone, few requests

Documents: SciFact's 5,183 abstracts (`../shared/data/scifact/corpus.jsonl`); for 100k and 1M, texts made word by
word from the abstracts' word frequencies, each as long as an abstract drawn at random (seeded). Those words are not
clustered by topic as real text's are, so BM25's postings are longer than a real corpus of that size would give:
the lexical side's cost is an upper bound. Vectors: random unit vectors of the model's width, since a vector's
values do not change what its product costs (the index stores what it is given: `write_search_index`); the time to
embed the documents is measured on 256 abstracts and reported per document, not spent on 1M. Each
index is written by `serving.export.search_index.write_search_index`, the function `bert-tf index` ends in, with its
defaults but for the mode (hybrid, reciprocal rank over each side's top 100; top 10 returned).

Served: `benchmarks.serving_load` starts `bert-tf serve`'s server on the index (request batching off: each request
is a query) and sends 200 of SciFact's claims, one per request, over kept gRPC
connections from 1 and 16 clients to the `hybrid` signature; every answer is compared with the same query run
alone in-process. The section gives each size's queries/s, p50 and p99 latency, and the direct in-process call on
batches of 32 claims.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.report import BenchmarkResult, markdown_table
from benchmarks.settings import Settings

NAME = "search_speed"
SIZES = (5_183, 100_000, 1_000_000)
PRESET = "all-minilm-l6-v2"
SCIFACT = ("scifact",)
QUERIES = 200
CLIENTS = (1, 16)
EMBEDDED_SAMPLE = 256
REQUESTS, ROUNDS, MAX_SECONDS = 1600, 4, 240


def made_texts(real: list[str], count: int, seed: int = 0, chunk: int = 10_000) -> list[str]:
    """`count` texts of words drawn from `real`'s word frequencies, each as long (in words) as a text of `real`
    drawn at random; made `chunk` texts at a time (a million texts of abstracts' length are ~250 M words).

    >>> texts = made_texts(["a b b", "c"], 4)
    >>> len(texts), all(set(text.split()) <= {"a", "b", "c"} for text in texts)
    (4, True)
    """
    rng = np.random.default_rng(seed)
    split = [text.split() for text in real]
    words, counts = np.unique(np.array([word for words in split for word in words], dtype=object), return_counts=True)
    lengths = np.array([len(words) for words in split])
    texts = []
    for start in range(0, count, chunk):
        sizes = rng.choice(lengths, size=min(chunk, count - start))
        drawn = words[rng.choice(len(words), size=int(sizes.sum()), p=counts / counts.sum())]
        ends = np.cumsum(sizes)
        texts += [" ".join(drawn[end - size:end]) for end, size in zip(ends, sizes)]
    return texts


def embedding_seconds(spec, texts: list[str]) -> float:
    """Seconds per document to embed `texts` as `bert-tf index` does (`embedded_corpus`), after one warm-up batch."""
    from serving.export.search_index import embedded_corpus

    embedded_corpus(spec, texts[:32], progress=False)
    started = time.perf_counter()
    embedded_corpus(spec, texts, progress=False)
    return (time.perf_counter() - started) / len(texts)


def write_index(spec, size: int, texts: list[str], path: Path, reranker=None) -> dict:
    """The hybrid index of `texts` with random unit vectors at `path` (its first stage's top 100 reranked by
    `reranker`, a `reranker_spec`, if given); its BM25 build time and memory."""
    from bert_tf.retrieval.bm25 import BM25Index
    from serving.export.search_index import SearchSettings, write_search_index

    started = time.perf_counter()
    lexical = BM25Index(texts)
    bm25_seconds = time.perf_counter() - started
    vectors = np.random.default_rng(1).standard_normal([len(texts), size], dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=-1, keepdims=True)
    ids = [str(index) for index in range(len(texts))]
    started = time.perf_counter()
    write_search_index(spec, ids, texts, vectors, lexical, path, SearchSettings(mode="hybrid"), reranker=reranker)
    return {"bm25_seconds": bm25_seconds, "write_seconds": time.perf_counter() - started,
            "bm25_bytes": lexical.nbytes, "postings": len(lexical.weights), "words": len(lexical.vocabulary),
            "vector_bytes": vectors.nbytes,
            "disk_bytes": sum(file.stat().st_size for file in path.rglob("*") if file.is_file())}


def served(base_path: Path, queries_file: Path, scratch: Path, settings: Settings, extra: tuple = ()) -> list[dict]:
    """`benchmarks.serving_load`'s rows (`Row.summary`) for the index's `hybrid` signature: the direct call and
    `CLIENTS` kept gRPC clients; `extra`: more of its flags, which override these (e.g. fewer requests)."""
    scratch.mkdir(parents=True)
    command = [sys.executable, "-m", "benchmarks.serving_load", "--model_base_path", str(base_path),
               "--model_name", base_path.name, "--signature_name", "hybrid", "--sentences", str(queries_file),
               "--sentence_count", str(QUERIES), "--clients", *map(str, CLIENTS), "--modes", "grpc-kept",
               "--requests", "160" if settings.quick else str(REQUESTS), "--rounds", "2" if settings.quick else
               str(ROUNDS), "--max_seconds", "60" if settings.quick else str(MAX_SECONDS),
               "--results", str(scratch / "RESULTS.md"), *extra]
    completed = subprocess.run(command, capture_output=True, text=True)
    if completed.returncode != 0:
        raise RuntimeError(f"benchmarks.serving_load failed ({completed.returncode}): {completed.stderr[-2000:]}")
    return json.loads((scratch / "results" / "serving_load.json").read_text(encoding="utf-8"))["rows"]


def run(settings: Settings) -> BenchmarkResult:
    title = "## Hybrid search served: the index of BM25 + all-MiniLM-L6-v2 at 5k, 100k and 1M documents"
    if settings.data_file(*SCIFACT) is None:
        return BenchmarkResult(NAME, f"{title}\n\nSkipped: no SciFact folder.", {"skipped": "no SciFact folder"})
    import bert_tf
    from bert_tf.retrieval.retrieval_set import read_retrieval_set
    from serving.export.signatures import serving_spec

    scifact = read_retrieval_set(settings.data_file(*SCIFACT), "train")
    real, claims = scifact.documents, scifact.queries[:QUERIES]
    model = bert_tf.load_model_directory(PRESET)
    spec, size = serving_spec(model), model.encoder.config.hidden_size
    per_document = embedding_seconds(spec, real[:EMBEDDED_SAMPLE])
    rows, served_rows, data = [], [], {"embedding_seconds_per_document": per_document, "sizes": {}}
    with tempfile.TemporaryDirectory(prefix="search-speed-") as directory:
        scratch = Path(directory)
        queries_file = scratch / "claims.txt"
        queries_file.write_text("\n".join(claim.replace("\n", " ") for claim in claims) + "\n", encoding="utf-8")
        for documents in SIZES[:1] if settings.quick else SIZES:
            texts = real if documents == len(real) else made_texts(real, documents)
            base_path = scratch / f"index_{documents}"
            print(f"search_speed: writing the index of {documents:,} documents", flush=True)
            built = write_index(spec, size, texts, base_path / "1")
            del texts
            print(f"search_speed: serving it ({built['disk_bytes'] / 2**20:,.0f} MiB on disk)", flush=True)
            load = served(base_path, queries_file, scratch / str(documents), settings)
            data["sizes"][documents] = {**built, "serving_load": load}
            rows.append([f"{documents:,}", "SciFact's" if documents == len(real) else "made from their words",
                         f"{built['postings']:,}", f"{built['bm25_bytes'] / 2**20:,.0f} MiB",
                         f"{built['vector_bytes'] / 2**20:,.0f} MiB", f"{built['disk_bytes'] / 2**20:,.0f} MiB",
                         f"{built['bm25_seconds']:,.1f} s", f"{built['write_seconds']:,.1f} s",
                         f"{per_document * documents / 60:,.1f} min"])
            served_rows += [[f"{documents:,}", row["label"], f"{row['requests_per_s']:,.1f}", f"{row['p50_ms']:,.1f}",
                             f"{row['p99_ms']:,.1f}", str(row["errors"])] for row in load]
            shutil.rmtree(base_path)
    header = ["documents", "texts", "BM25 postings", "BM25 in memory", "vectors in memory", "SavedModel on disk",
              "BM25 built in", "SavedModel written in", "embedding them would take"]
    markdown = f"""{title}

{__doc__.split(chr(10) + chr(10))[2]}

{__doc__.split(chr(10) + chr(10))[3]}

Embedding a document (all-MiniLM-L6-v2, 256 tokens at most, batches of 256, measured on {EMBEDDED_SAMPLE} abstracts):
{per_document * 1e3:,.1f} ms.

{markdown_table(header, rows)}

{markdown_table(["documents", "what is timed", "queries/s", "p50 ms", "p99 ms", "errors"], served_rows)}
"""
    return BenchmarkResult(NAME, markdown, data)
