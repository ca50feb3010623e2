"""`export_search_index`: a sentence-embedding model and a corpus → a SavedModel version that answers search queries.

The version holds the model and every document's vector (float32 [documents, size], embedded once, when it is
written) and ids. Its `serving_default` takes `text` (query strings [batch]) and returns the `top_k` documents
by inner product — the cosine, the vectors being of length 1 — exactly, over every stored vector, in the graph:
`ids` (string [batch, k]), `scores` (float32 [batch, k]) and `indices` (int32 [batch, k], rows of the corpus
file), best first. So TF Serving and `bert-tf serve` serve search as any model, and `bert-tf search` asks it.
`model_info` adds `documents` and `top_k` to the model's own settings.

Memory: the vectors take documents × size × 4 bytes in the server (1M documents of BERT-base's 768 values:
3.1 GB; BERT-Mini's 256: 1.0 GB), and a query scores every document. Past one machine's memory, or for
sub-linear search, hand the vectors to a library made for it, e.g. faiss (`index = faiss.IndexFlatIP(size);
index.add(vectors)`, or `IndexHNSWFlat` for approximate search) or ScaNN: `embedded_corpus` gives them.

A corpus is a `.jsonl` file (BEIR's `corpus.jsonl`: `{"_id", "title", "text"}`, title and text joined as BEIR's
sentence-transformers models read them; or `{"id", "text"}`) or a `.txt` file, a document per line (ids: the
line numbers).

Example:
    >>> export_search_index("models/sts", "docs.jsonl", "models/served", "search", top_k=3)  # doctest: +SKIP
    PosixPath('models/served/search/1')
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import tensorflow as tf

from bert_tf.model_directory import load_model_directory
from bert_tf.progress import progress_bar
from bert_tf.tasks.data_rows import json_object
from bert_tf.text_files import existing_file, utf8_lines
from bert_tf.tokenizer import BertTokenizer
from serving.export.saved_model import new_version_path, write_version
from serving.export.signatures import model_info_function, serving_spec, text_input_specs

logger = logging.getLogger(__name__)
EMBED_BATCH = 256  # documents embedded per call


def read_corpus(path: str | Path) -> tuple[list[str], list[str]]:
    """(ids, texts) of a corpus file (module docstring); one-line errors name the file and line."""
    path = existing_file(path, "Corpus", "--corpus")
    ids, texts = [], []
    for number, line in enumerate(utf8_lines(path), start=1):
        if not line.strip():
            continue
        if path.suffix.lower() == ".txt":
            ids.append(str(number))
            texts.append(line.strip())
            continue
        try:
            row = json_object(line)
        except ValueError as error:
            raise ValueError(f"{path}, line {number}: {error}.") from None
        identifier = row.get("_id", row.get("id"))
        if identifier is None or not isinstance(row.get("text"), str):
            raise ValueError(f"{path}, line {number}: a document needs an \"_id\" (or \"id\") and a \"text\".")
        ids.append(str(identifier))
        texts.append(f"{row.get('title') or ''} {row['text']}".strip())
    if not texts:
        raise ValueError(f"{path}: the corpus has no documents.")
    if len(set(ids)) != len(ids):
        repeated = next(identifier for identifier in ids if ids.count(identifier) > 1)
        raise ValueError(f"{path}: the document id {repeated!r} is there twice.")
    return ids, texts


def embedded_corpus(model, texts: list[str], progress: bool = True) -> np.ndarray:
    """The vectors of `texts` (float32 [documents, size]) by a sentence-embedding model (raw strings in)."""
    batches = [texts[start:start + EMBED_BATCH] for start in range(0, len(texts), EMBED_BATCH)]
    shown = progress_bar(batches, total=len(batches), desc="embedding the corpus", unit="batch", disable=not progress)
    return np.concatenate([model.predict(batch, batch_size=EMBED_BATCH, verbose=0) for batch in shown]).astype(
        np.float32)


def export_search_index(model_dir, corpus, base_path, name: str, version: int | None = None, top_k: int = 10,
                        progress: bool = True) -> Path:
    """Writes `base_path/name/<version>/`: the search SavedModel of `model_dir`'s vectors of `corpus`."""
    _check_top_k(top_k)
    final = new_version_path(base_path, name, version)
    ids, texts = read_corpus(corpus)
    directory = load_model_directory(model_dir)
    _check_embedding_model(serving_spec(directory), model_dir)
    write_search_index(directory, ids, embedded_corpus(directory.model, texts, progress), final, top_k)
    logger.info("Indexed %d documents of %s with %s in %s.", len(ids), corpus, model_dir, final)
    return final


def _check_top_k(top_k) -> None:
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise ValueError(f"top_k must be a positive integer, got {top_k!r}.")


def _check_embedding_model(spec, model_dir) -> None:
    if not spec.task_class.sentence_vectors(spec.task_spec):
        raise ValueError(f"{model_dir} is a {spec.task} model: a search index needs a sentence-embedding model "
                         "(bert-tf finetune --task embed).")


def write_search_index(directory, ids: list[str], vectors: np.ndarray, final: Path, top_k: int = 10) -> Path:
    """Writes the search SavedModel of a loaded model directory (`load_model_directory`) and the documents' `ids`
    and `vectors` (float32 [documents, size], of length 1) as the version folder `final`; `final`."""
    _check_top_k(top_k)
    spec = serving_spec(directory)
    _check_embedding_model(spec, directory.path)
    if len(ids) != len(vectors):
        raise ValueError(f"{len(ids)} document ids for {len(vectors)} vectors.")
    k = min(top_k, len(ids))

    def write(staging: Path) -> None:
        module = tf.Module(name="bert_tf_search")
        module.model_variables = [variable.value for variable in spec.model.variables]
        module.vectors = tf.Variable(vectors, trainable=False, name="document_vectors")
        module.ids = tf.Variable(ids, trainable=False, name="document_ids")
        text = spec.task_class.text_serving(spec.model, spec.task_spec, BertTokenizer(spec.vocabulary))

        @tf.function(input_signature=text_input_specs(spec))
        def search(queries):
            embedding = text.outputs([queries])["embedding"]
            scores, indices = tf.math.top_k(tf.matmul(embedding, module.vectors, transpose_b=True), k=k)
            return {"ids": tf.gather(module.ids, indices), "scores": scores, "indices": indices}

        info = model_info_function(spec, extra=lambda: {"documents": tf.constant(len(ids), tf.int32),
                                                        "top_k": tf.constant(k, tf.int32)})
        tf.saved_model.save(module, str(staging), signatures={"serving_default": search.get_concrete_function(),
                                                              "model_info": info.get_concrete_function()})

    write_version(final, write)
    return final
