"""Retrieval scores on a BEIR folder (`corpus.jsonl`, `queries.jsonl`, `qrels/<split>.tsv`:
`bert_tf.tasks.embedding.retrieval_data`) of a sentence-embedding model directory or of a search index (`bert-tf
index`, in any of its modes): nDCG@10, MRR@10 and Recall@k × 100 as BEIR reports them
(`bert_tf.retrieval_scores`).

A model directory embeds every query and document and ranks all documents. An index answers its `top_k` documents
per query, in the mode asked for: the documents it did not return rank below all it did, so Recall@k is given for
k up to its `top_k` (of 1, 10, 100; all where it returns every document), and it must return at least 10 (nDCG@10,
MRR@10). Its documents must be the folder's corpus (the same ids).

Example:
    >>> evaluate_index_on_beir("models/served/search", "data/scifact", "test", mode="hybrid")  # doctest: +SKIP
    {'ndcg@10': 70.1, 'mrr@10': 66.2, 'recall@1': 55.0, 'recall@10': 85.3, 'queries': 300}
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import tensorflow as tf

import bert_tf
from bert_tf import read_retrieval_set, retrieval_scores
from bert_tf.model_directory import exported_version
from bert_tf.progress import progress_bar
from bert_tf.tasks.registry import task_from_directory

RECALL_CUTOFFS = (1, 10, 100)
CUTOFF = 10  # nDCG@10 and MRR@10 (bert_tf.tasks.embedding.metrics.CUTOFF)
INDEX_ASSET = "bm25_vocabulary.txt"  # serving.export.search_index.VOCABULARY_ASSET: a search index's mark


def beir_split(folder: str | Path, split: str | None = None) -> str:
    """`split` if given; else "test" where there is one, else the folder's only split. A folder without
    corpus.jsonl is refused here, before any model loads."""
    if not (Path(folder) / "corpus.jsonl").is_file():
        raise ValueError(f"{folder} is a folder without corpus.jsonl: name the data file in it (--data), or give a "
                         "BEIR folder (corpus.jsonl, queries.jsonl, qrels/SPLIT.tsv).")
    if split is not None:
        return split
    splits = sorted(path.stem for path in (Path(folder) / "qrels").glob("*.tsv"))
    if "test" in splits or len(splits) != 1:
        return "test"  # read_retrieval_set names the splits there are when it is missing
    return splits[0]


def is_search_index(path: str | Path) -> bool:
    """Whether `path` is a search index's version folder or its model folder (`bert-tf index`)."""
    path = Path(path)
    return (path / "assets" / INDEX_ASSET).is_file() or any(
        (child / "assets" / INDEX_ASSET).is_file() for child in path.glob("[0-9]*"))


def evaluate_model_on_beir(model_dir, folder, split: str, batch_size: int = 32, progress: bool = True):
    """(task, scores) of a sentence-embedding model directory on the folder's `split`: every document ranked."""
    retrieval_set = read_retrieval_set(folder, split)
    directory = bert_tf.load_model_directory(model_dir)
    task = task_from_directory(directory)
    if task.name != "embed":
        raise ValueError(f"{model_dir} is a {task.name} model: a BEIR folder scores sentence-embedding models "
                         "(bert-tf finetune --task embed) and search indexes (bert-tf index).")
    data = task.prepare(retrieval_set, training=False)
    return task, task.evaluate(directory.model, data, batch_size, progress=progress)


def evaluate_index_on_beir(index_path, folder, split: str, mode: str | None = None, fusion: str | None = None,
                           dense_weight: float | None = None, batch_size: int = 32, progress: bool = True) -> dict:
    """Scores of a search index (its latest version, or the version given) on the folder's `split`, asked in `mode`
    with `fusion` and `dense_weight` (None: the index's own)."""
    import tensorflow_text  # noqa: F401  (the tokenizer's ops, before the SavedModel loads)

    retrieval_set = read_retrieval_set(folder, split)
    loaded = tf.saved_model.load(str(exported_version(Path(index_path))))
    info = {name: value.numpy()[0]
            for name, value in loaded.signatures["model_info"](request=tf.constant([""])).items()}
    top_k, documents = int(info["top_k"]), int(info["documents"])
    if top_k < min(CUTOFF, documents):
        raise ValueError(f"{index_path} returns {top_k} documents per query; nDCG@10 and MRR@10 need 10: write it "
                         "with bert-tf index --top-k 10 (or 100 for Recall@100).")
    document_index = {identifier: index for index, identifier in enumerate(retrieval_set.document_ids)}
    index_ids = [identifier.decode("utf-8") for identifier in loaded.ids.numpy()]
    if set(index_ids) != set(document_index):
        missing = next(iter(set(index_ids) ^ set(document_index)))
        raise ValueError(f"{index_path} indexes {len(index_ids)} documents, {folder}/corpus.jsonl holds "
                         f"{len(document_index)}, and document {missing!r} is in only one: index that corpus.")
    to_corpus = np.array([document_index[identifier] for identifier in index_ids])
    inputs = {"mode": tf.constant(mode or info["mode"].decode()),
              "fusion": tf.constant(fusion or info["fusion"].decode()),
              "dense_weight": tf.constant(info["dense_weight"] if dense_weight is None else dense_weight, tf.float32)}
    scores = np.full([len(retrieval_set.queries), len(document_index)], -np.inf)
    search = loaded.signatures["serving_default"]
    starts = range(0, len(retrieval_set.queries), batch_size)
    for start in progress_bar(starts, total=len(starts), desc="searching", unit="batch", disable=not progress):
        found = search(text=tf.constant(retrieval_set.queries[start:start + batch_size]), **inputs)
        rows = np.arange(start, start + len(found["indices"]))[:, None]
        scores[rows, to_corpus[found["indices"].numpy()]] = found["scores"].numpy()
    recall_cutoffs = [k for k in RECALL_CUTOFFS if k <= top_k or top_k == documents]
    return retrieval_scores(scores, retrieval_set.relevant, ks=recall_cutoffs)
