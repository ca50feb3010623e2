"""`export_search_index`: a sentence-embedding model and a corpus → a SavedModel version that answers search queries,
by meaning (dense), by words (lexical, BM25) or both (hybrid), in one call of the graph.

The version holds the model, every document's vector (float32 [documents, size], embedded once, when it is
written), the corpus's BM25 statistics (`bert_tf.retrieval.bm25`: its word list is the asset
`bm25_vocabulary.txt`), the ids and the first `SNIPPET_CHARS` characters of each document. Its `serving_default`
takes `text` (query strings [batch]) and three optional scalar inputs, whose defaults are the index's settings
(`bert-tf index --mode --fusion --dense-weight`; TF Serving fills an input left out of a request with the
SignatureDef's default, as `bert-tf serve` does): `mode` ("lexical", "dense" or "hybrid"), `fusion` ("rrf" or
"weighted", for hybrid: `bert_tf.retrieval.fusion`) and `dense_weight` (weighted fusion's weight of the dense
score, 0 to 1). It returns the `top_k` documents, best first: `ids` (string [batch, k]), `scores` (float32
[batch, k]: cosines, BM25 scores or fused scores), `indices` (int32 [batch, k], documents counted from 0 in the
corpus file's order) and `texts` (their snippets). Dense search is exact: the inner product with every stored
vector (the cosine, the vectors being of length 1); lexical search sums the postings of the query's words.
Signatures `lexical`, `dense` and `hybrid` take `text` alone (batch-major: TF Serving's `--enable_batching` can
batch them). `model_info` adds `documents`, `top_k`, `mode`, `fusion`, `dense_weight`, `k1` and `b`. Without a
model (`bert-tf index --lexical-only`) the index holds BM25 alone: mode lexical, and `model_info` has the task
"search" and those settings.

Memory in the server: the vectors take documents × size × 4 bytes (1M documents of 384 values: 1.5 GB); BM25
takes (word, document) pairs × 8 bytes (a document id and a weight, 4 bytes each) + the vocabulary (words × ~16
bytes, and a hash table); the snippets up to documents × 200 bytes (more for non-Latin scripts). A query scores
every document: a [batch, documents] float32 matrix per retriever. Past one machine's memory, or for sub-linear
search, hand the vectors to a library made for it, e.g. faiss or ScaNN: `embedded_corpus` gives them.

Long documents are cut at the model's `seq_length` tokens for their vector (a warning counts them; BM25 reads
them whole); split them into passages before indexing where their ends matter.

With a reranker (`bert-tf index --rerank RERANKER --rerank-top-k K`: a model whose task scores (query, document)
pairs, `bert_tf.tasks.rerank_serving`), the same call goes on: the first stage (the mode's) finds its best K
documents, the reranker scores each (query, document) pair, tokenized in the graph as the reranker's own export
packs them, and the `top_k` best by that score are returned, best first: `scores` are then the reranker's, and
`first_stage_scores` (float32 [batch, top_k]) the first stage's for the same documents. The version then also holds
the reranker's weights and every document's whole text (cut to the reranker's `max_text_bytes`), and `model_info`
gives `rerank_top_k` (K; 0 without a reranker).

Example:
    >>> export_search_index("models/sts", "docs.jsonl", "models/served", "search")  # doctest: +SKIP
    PosixPath('models/served/search/1')
"""

from __future__ import annotations

import dataclasses
import logging
import tempfile
from pathlib import Path

import numpy as np
import tensorflow as tf

from bert_tf.model_directory import load_model_directory
from bert_tf.progress import progress_bar
from bert_tf.retrieval.bm25 import BM25Index, LexicalScorer
from bert_tf.retrieval.fusion import FUSIONS, fused_top_k
from bert_tf.tasks.rerank_serving import SCORES, is_reranker
from bert_tf.tokenizer import BertTokenizer
from serving.export.saved_model import new_version_path, write_version
from serving.export.search_corpus import read_corpus
from serving.export.signatures import ServingSpec, model_info_function, serving_spec

logger = logging.getLogger(__name__)
EMBED_BATCH = 256  # documents embedded per call
MODES = ("lexical", "dense", "hybrid")
FUSION_DEPTH = 100  # documents each retriever proposes to hybrid fusion (at least top_k)
SNIPPET_CHARS = 200  # characters of each document kept to show it
VOCABULARY_ASSET = "bm25_vocabulary.txt"
NO_WORDS = "No document has a word BM25 can index (two or more letters or digits, not a stop word)."


@dataclasses.dataclass(frozen=True)
class SearchSettings:
    """How the index searches when a request does not say: `top_k` documents, by `mode`, hybrid by `fusion` with
    `dense_weight`; BM25's `k1` and `b` (fixed when it is written); with a reranker, the first stage's
    `rerank_top_k` documents are reranked (at least `top_k`)."""

    top_k: int = 10
    mode: str = "hybrid"
    fusion: str = "rrf"
    dense_weight: float = 0.5
    k1: float = 1.5
    b: float = 0.75
    rerank_top_k: int = 100

    def __post_init__(self):
        for name in ("top_k", "rerank_top_k"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}.")
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {self.mode!r}.")
        if self.fusion not in FUSIONS:
            raise ValueError(f"fusion must be one of {', '.join(FUSIONS)}, got {self.fusion!r}.")
        if not 0 <= self.dense_weight <= 1:
            raise ValueError(f"dense_weight must be between 0 and 1, got {self.dense_weight!r}.")
        if self.k1 < 0 or not 0 <= self.b <= 1:
            raise ValueError(f"BM25 needs k1 >= 0 and b between 0 and 1, got k1 {self.k1!r}, b {self.b!r}.")


def export_search_index(model_dir, corpus, base_path, name: str, version: int | None = None,
                        settings: SearchSettings = SearchSettings(), seq_length: int | None = None,
                        progress: bool = True, reranker=None) -> Path:
    """Writes `base_path/name/<version>/`: the search SavedModel of `model_dir` over `corpus` (`read_corpus`);
    `seq_length`: the tokens of a document embedded (default: the model's; at most its position table).
    `model_dir` None: a lexical index (BM25 alone, `settings.mode` "lexical"). `reranker`: a reranker's model
    directory, which reorders the first stage's `settings.rerank_top_k` best documents (module docstring)."""
    if model_dir is None and settings.mode != "lexical":
        raise ValueError(f"An index without a model searches by words only: mode lexical, not {settings.mode}.")
    final = new_version_path(base_path, name, version)
    rerank_spec = None if reranker is None else reranker_spec(reranker, settings)
    ids, texts = read_corpus(corpus)
    spec = None
    if model_dir is not None:
        directory = load_model_directory(model_dir)
        _check_embedding_model(directory.task, model_dir)
        spec = serving_spec(directory, seq_length=seq_length)
    lexical = BM25Index(texts, k1=settings.k1, b=settings.b)  # seconds, before the minutes of embedding
    if not lexical.vocabulary:
        raise ValueError(NO_WORDS)
    vectors = None if spec is None else embedded_corpus(spec, texts, progress)
    write_search_index(spec, ids, texts, vectors, lexical, final, settings, rerank_spec)
    logger.info("Indexed %d documents of %s with %s%s in %s.", len(ids), corpus, model_dir,
                "" if reranker is None else f", reranked by {reranker}", final)
    return final


def reranker_spec(reranker, settings: SearchSettings = SearchSettings()) -> ServingSpec:
    """The `ServingSpec` of the reranker's model directory `reranker`, checked to be a reranker and to rerank at
    least the `settings.top_k` documents a query returns."""
    if settings.rerank_top_k < settings.top_k:
        raise ValueError(f"The reranker reorders the first stage's {settings.rerank_top_k} best documents (rerank top "
                         f"k); a query returns {settings.top_k} (top k): rerank at least as many.")
    spec = serving_spec(load_model_directory(reranker))
    if not is_reranker(spec.task_class):
        raise ValueError(f"{reranker} is not a reranker: its task is {spec.task} (a reranker scores query and "
                         "document pairs: bert-tf finetune --task rerank).")
    return spec


def _check_embedding_model(task_spec, model_dir) -> None:
    from bert_tf.tasks.registry import task_named

    if not task_named(task_spec.task).sentence_vectors(task_spec):
        raise ValueError(f"{model_dir} is a {task_spec.task} model: a search index needs a sentence-embedding model "
                         "(bert-tf finetune --task embed).")


def _text_serving(spec: ServingSpec):
    return spec.task_class.text_serving(spec.model, spec.task_spec, BertTokenizer(spec.vocabulary))


def embedded_corpus(spec: ServingSpec, texts: list[str], progress: bool = True) -> np.ndarray:
    """The vectors of `texts` (float32 [documents, size]) as the index embeds them: at `spec.seq_length` tokens,
    with one warning counting the texts cut there."""
    text = _text_serving(spec)
    tokenizer = BertTokenizer(spec.vocabulary)
    most = spec.seq_length - 2  # [CLS] and [SEP]

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def embed(batch):
        cut = tf.strings.substr(batch, 0, spec.task_spec.max_text_bytes)
        return text.outputs([batch])["embedding"], tokenizer.tokenize(cut).row_lengths() > most

    vectors, cut = [], 0
    batches = range(0, len(texts), EMBED_BATCH)
    for start in progress_bar(batches, total=len(batches), desc="embedding the corpus", unit="batch",
                              disable=not progress):
        embedding, too_long = embed(tf.constant(texts[start:start + EMBED_BATCH]))
        vectors.append(embedding.numpy())
        cut += int(too_long.numpy().sum())
    if cut:
        logger.warning("%d of %d documents are longer than %d tokens: their vectors read the first %d (BM25 reads "
                       "them whole). Split long documents into passages, or raise --seq-length (at most the model's "
                       "position table).", cut, len(texts), spec.seq_length, spec.seq_length)
    return np.concatenate(vectors).astype(np.float32)


def _snippet(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= SNIPPET_CHARS else line[:SNIPPET_CHARS - 1] + "…"


def write_search_index(spec: ServingSpec | None, ids: list[str], texts: list[str], vectors: np.ndarray | None,
                       lexical: BM25Index, final: Path, settings: SearchSettings = SearchSettings(),
                       reranker: ServingSpec | None = None) -> Path:
    """Writes the search SavedModel (module docstring) of a model's `spec` (`serving_spec`), the documents' `ids`,
    `texts`, `vectors` (float32 [documents, size], of length 1) and BM25 statistics as the version folder `final`;
    `final`. `spec` and `vectors` None: a lexical index. `reranker` (`reranker_spec`): the first stage's
    `settings.rerank_top_k` best documents reranked by it."""
    if spec is not None:
        _check_embedding_model(spec.task_spec, "The model")
    documents = len(ids) if vectors is None else len(vectors)
    if not len(ids) == len(texts) == documents == lexical.documents:
        raise ValueError(f"{len(ids)} document ids, {len(texts)} texts, {documents} vectors and "
                         f"{lexical.documents} documents in BM25: one of each per document.")
    if not lexical.vocabulary:
        raise ValueError(NO_WORDS)

    def write(staging: Path) -> None:
        with tempfile.TemporaryDirectory(prefix="bert_tf_index_") as scratch:
            vocabulary_file = Path(scratch) / VOCABULARY_ASSET
            vocabulary_file.write_text("".join(f"{word}\n" for word in lexical.vocabulary), encoding="utf-8")
            module, signatures = _search_module(spec, ids, texts, vectors,
                                                LexicalScorer(lexical, str(vocabulary_file)), settings, reranker)
            tf.saved_model.save(module, str(staging), signatures=signatures)

    write_version(final, write)
    return final


def _cut_utf8(text: str, max_bytes: int) -> str:
    """`text` cut to `max_bytes` UTF-8 bytes, a character it would split dropped (`bert_tf.tasks.text_budget`)."""
    return text.encode("utf-8")[:max_bytes].decode("utf-8", errors="ignore")


def _search_module(spec: ServingSpec | None, ids, texts, vectors, scorer: LexicalScorer, settings: SearchSettings,
                   reranker: ServingSpec | None = None):
    """The module to save and its signatures; without a model (`spec` None), lexical search only; with a `reranker`,
    the first stage's best `settings.rerank_top_k` reranked."""
    module = tf.Module(name="bert_tf_search")
    module.ids = tf.Variable(ids, trainable=False, name="document_ids")
    module.snippets = tf.Variable([_snippet(text) for text in texts], trainable=False, name="document_snippets")
    module.bm25 = scorer
    modes = MODES if spec is not None else MODES[:1]
    returned = min(settings.top_k, len(ids))
    k = returned if reranker is None else min(settings.rerank_top_k, len(ids))  # the first stage's documents
    depth = min(max(k, FUSION_DEPTH), len(ids))
    branches = [lambda queries, fusion, dense_weight: tf.math.top_k(module.bm25.scores(queries), k=k)]
    if spec is not None:
        module.model_variables = [variable.value for variable in spec.model.variables]
        module.vectors = tf.Variable(vectors, trainable=False, name="document_vectors")
        text = _text_serving(spec)

        def dense_scores(queries):
            return tf.matmul(text.outputs([queries])["embedding"], module.vectors, transpose_b=True)

        branches += [lambda queries, fusion, dense_weight: tf.math.top_k(dense_scores(queries), k=k),
                     lambda queries, fusion, dense_weight: fused_top_k(
                         dense_scores(queries), module.bm25.scores(queries), k, fusion, dense_weight, depth)]

    if reranker is not None:
        module.reranker_variables = [variable.value for variable in reranker.model.variables]
        module.documents = tf.Variable([_cut_utf8(text, reranker.task_spec.max_text_bytes) for text in texts],
                                       trainable=False, name="document_texts")
        pair_scores = _text_serving(reranker)

        def reranked(queries, first_stage_scores, first_stage_indices):
            """The `returned` best of the first stage's documents by the reranker's score, with both scores."""
            scores = pair_scores.outputs([queries, tf.gather(module.documents, first_stage_indices)])[SCORES]
            scores, order = tf.math.top_k(scores, k=returned)
            return {"scores": scores, "indices": tf.gather(first_stage_indices, order, batch_dims=1),
                    "first_stage_scores": tf.gather(first_stage_scores, order, batch_dims=1)}

    def ranked(queries, mode, fusion, dense_weight):
        """The outputs for `mode`: a string tensor (chosen in the graph), or a mode's name (that mode alone)."""
        tf.debugging.Assert(tf.reduce_any(tf.equal(mode, modes)), [
            "mode must be lexical, dense or hybrid, got" if spec is not None else
            "mode must be lexical (the index was written without a model), got", mode])
        tf.debugging.Assert(tf.reduce_any(tf.equal(fusion, FUSIONS)), ["fusion must be rrf or weighted, got", fusion])
        tf.debugging.Assert((dense_weight >= 0) & (dense_weight <= 1),
                            ["dense_weight must be between 0 and 1, got", dense_weight])
        if isinstance(mode, str) or len(branches) == 1:
            scores, indices = branches[MODES.index(mode) if isinstance(mode, str) else 0](queries, fusion, dense_weight)
        else:
            scores, indices = tf.switch_case(tf.argmax(tf.cast(tf.equal(mode, MODES), tf.int32), output_type=tf.int32),
                                             [lambda branch=branch: branch(queries, fusion, dense_weight)
                                              for branch in branches])
        found = {"scores": scores, "indices": indices} if reranker is None else reranked(queries, scores, indices)
        return {"ids": tf.gather(module.ids, found["indices"]), **found,
                "texts": tf.gather(module.snippets, found["indices"])}

    queries_spec = tf.TensorSpec([None], tf.string, name="text")

    @tf.function(input_signature=[queries_spec, tf.TensorSpec([], tf.string, name="mode"),
                                  tf.TensorSpec([], tf.string, name="fusion"),
                                  tf.TensorSpec([], tf.float32, name="dense_weight")])
    def search(text, mode=tf.constant(settings.mode), fusion=tf.constant(settings.fusion),
               dense_weight=tf.constant(settings.dense_weight, tf.float32)):
        return ranked(text, mode, fusion, dense_weight)

    def fixed_mode(mode):
        return tf.function(lambda text: ranked(text, mode, settings.fusion, settings.dense_weight),
                           input_signature=[queries_spec])

    settings_info = {"documents": (len(ids), tf.int32), "top_k": (returned, tf.int32),
                     "mode": (settings.mode, tf.string), "fusion": (settings.fusion, tf.string),
                     "dense_weight": (settings.dense_weight, tf.float32), "k1": (settings.k1, tf.float32),
                     "b": (settings.b, tf.float32), "rerank_top_k": (0 if reranker is None else k, tf.int32)}
    extra = lambda: {name: tf.constant(value, dtype) for name, (value, dtype) in settings_info.items()}  # noqa: E731
    info = model_info_function(spec, extra) if spec is not None else _lexical_info(extra)
    return module, {"serving_default": search, **{mode: fixed_mode(mode) for mode in modes},
                    "model_info": info.get_concrete_function()}


def _lexical_info(extra):
    """A lexical index's `model_info`: `task` "search" and the settings, a row per request (`model_info_function`'s
    form)."""

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="request")])
    def model_info(request):
        values = {"task": tf.constant("search"), **extra()}
        return {name: tf.fill(tf.shape(request)[:1], value) for name, value in values.items()}

    return model_info
