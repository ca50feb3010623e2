"""Retrieval scores on a BEIR folder (`corpus.jsonl`, `queries.jsonl`, `qrels/<split>.tsv`:
`bert_tf.retrieval.retrieval_set`) of a sentence-embedding model directory or of a search index (`bert-tf
index`, in any of its modes): nDCG@10, MRR@10 and Recall@k × 100 as BEIR reports them
(`bert_tf.retrieval_scores`).

A model directory embeds every query and document and ranks all documents. An index answers its `top_k` documents
per query, in the mode asked for: the documents it did not return rank below all it did, so Recall@k is given for
k up to its `top_k` (of 1, 10, 100; all where it returns every document), and it must return at least 10 (nDCG@10,
MRR@10). Its documents must be the folder's corpus (the same ids).

A reranker (a model whose task scores query and document pairs, `bert_tf.tasks.rerank_serving`) is scored after a
first stage, a search index: the index's best `top_k` documents per query, then the same documents ordered by the
reranker's scores (the pairs packed as its export packs them); both rankings are scored, the documents past `top_k`
ranking below in both, so that the two differ by the order of the same documents only.

Example:
    >>> evaluate_index_on_beir("models/served/search", "data/scifact", "test", mode="hybrid")  # doctest: +SKIP
    {'ndcg@10': 70.1, 'mrr@10': 66.2, 'recall@1': 55.0, 'recall@10': 85.3, 'queries': 300}
    >>> evaluate_reranker_on_beir("runs/reranker/model", "models/served/bm25", "data/scifact", "dev")["reranked"]
    ... # doctest: +SKIP
    {'ndcg@10': 72.4, 'mrr@10': 69.0, 'recall@1': 58.1, 'recall@10': 86.0, 'recall@100': 92.7, 'queries': 300}
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import tensorflow as tf

import bert_tf
from bert_tf import read_retrieval_set, retrieval_scores
from bert_tf.model_directory import exported_version
from bert_tf.progress import progress_bar
from bert_tf.tasks.registry import task_from_directory, task_named
from bert_tf.tasks.rerank_serving import SCORES, is_reranker
from bert_tf.tokenizer import BertTokenizer

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
    retrieval_set = read_retrieval_set(folder, split)
    loaded, info = open_index(index_path)
    top_k = int(info["top_k"])
    if top_k < min(CUTOFF, int(info["documents"])):
        raise ValueError(f"{index_path} returns {top_k} documents per query; nDCG@10 and MRR@10 need 10: write it "
                         "with bert-tf index --top-k 10 (or 100 for Recall@100).")
    found = index_answers(loaded, info, index_path, retrieval_set, folder, mode, fusion, dense_weight, batch_size,
                          progress)
    return _ranking_scores(found["indices"], found["scores"], retrieval_set, top_k)


def open_index(index_path):
    """(the loaded search index: its latest version, or the version given; its `model_info` as values)."""
    import tensorflow_text  # noqa: F401  (the tokenizer's ops, before the SavedModel loads)

    loaded = tf.saved_model.load(str(exported_version(Path(index_path))))
    return loaded, {name: value.numpy()[0]
                    for name, value in loaded.signatures["model_info"](request=tf.constant([""])).items()}


def index_answers(loaded, info: dict, index_path, retrieval_set, folder, mode: str | None = None,
                  fusion: str | None = None, dense_weight: float | None = None, batch_size: int = 32,
                  progress: bool = True) -> dict:
    """{"indices": the documents the search index `loaded` (`open_index`) answers for each query of `retrieval_set`
    (int [queries, its top_k], into the folder's corpus, best first), "scores": theirs}; the index's documents must
    be the folder's corpus."""
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
    search = loaded.signatures["serving_default"]
    indices, scores = [], []
    starts = range(0, len(retrieval_set.queries), batch_size)
    for start in progress_bar(starts, total=len(starts), desc="searching", unit="batch", disable=not progress):
        found = search(text=tf.constant(retrieval_set.queries[start:start + batch_size]), **inputs)
        indices.append(to_corpus[found["indices"].numpy()])
        scores.append(found["scores"].numpy())
    return {"indices": np.concatenate(indices), "scores": np.concatenate(scores)}


def _ranking_scores(indices: np.ndarray, scores: np.ndarray, retrieval_set, top_k: int) -> dict:
    """`retrieval_scores` of rankings of `top_k` documents per query (`indices` into the corpus, their `scores`),
    the other documents below them; Recall@k up to `top_k` (all k where the rankings hold every document)."""
    documents = len(retrieval_set.document_ids)
    every = np.full([len(indices), documents], -np.inf)
    np.put_along_axis(every, indices, scores, axis=1)
    recall_cutoffs = [k for k in RECALL_CUTOFFS if k <= top_k or top_k == documents]
    return retrieval_scores(every, retrieval_set.relevant, ks=recall_cutoffs)


def evaluate_reranker_on_beir(reranker_dir, index_path, folder, split: str, top_k: int = 100, mode: str | None = None,
                              fusion: str | None = None, dense_weight: float | None = None, batch_size: int = 32,
                              progress: bool = True) -> dict:
    """{"first_stage": scores, "reranked": scores} of the reranker directory `reranker_dir` reordering the `top_k`
    best documents the search index `index_path` answers (in `mode`, `fusion`, `dense_weight`: None, its own) for
    each query of the folder's `split` (module docstring)."""
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise ValueError(f"--top-k must be a positive integer, got {top_k!r}.")
    retrieval_set = read_retrieval_set(folder, split)
    pair_scores = _reranker(reranker_dir)
    loaded, info = open_index(index_path)
    if int(info.get("rerank_top_k", 0)):
        raise ValueError(f"{index_path} reranks its answers already (bert-tf index --rerank): give a first stage "
                         "without a reranker.")
    if int(info["top_k"]) < min(top_k, int(info["documents"])):
        raise ValueError(f"{index_path} returns {int(info['top_k'])} documents per query, fewer than --top-k {top_k}: "
                         f"write it with bert-tf index --top-k {top_k}.")
    found = index_answers(loaded, info, index_path, retrieval_set, folder, mode, fusion, dense_weight, batch_size,
                          progress)
    indices, first_stage = found["indices"][:, :top_k], found["scores"][:, :top_k]
    documents = np.array(retrieval_set.documents, dtype=object)
    reranked = np.stack([pair_scores(query, documents[row]) for query, row in progress_bar(
        zip(retrieval_set.queries, indices), total=len(indices), desc="reranking", unit="query",
        disable=not progress)]) if len(indices) else np.zeros_like(first_stage)
    kept = indices.shape[1]
    return {"first_stage": _ranking_scores(indices, first_stage, retrieval_set, kept),
            "reranked": _ranking_scores(indices, reranked, retrieval_set, kept)}


def _reranker(model_dir):
    """A function (query, documents) → the reranker's score of each (query, document) pair, float32 [documents]: its
    exported raw-text signature's computation (`bert_tf.tasks.rerank_serving`)."""
    directory = bert_tf.load_model_directory(model_dir)
    task = task_named(directory.task.task)
    if not is_reranker(task):
        raise ValueError(f"{model_dir} is not a reranker: its task is {task.name} (a reranker scores query and "
                         "document pairs: bert-tf finetune --task rerank).")
    tokenizer = BertTokenizer(directory.require_vocab_file(), directory.lower_case)
    text = task.text_serving(task.served_model(directory.model), directory.task, tokenizer)

    @tf.function(input_signature=text.input_specs(directory.task))
    def scores(query, documents):
        return text.outputs([query, documents])[SCORES]

    return lambda query, documents: scores(tf.constant([query]), tf.constant([list(documents)]))[0].numpy()
