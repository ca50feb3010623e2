"""`BM25Index`: Okapi BM25 over a corpus, as `bm25s` scores it (its default method, "lucene"), scored in the graph.

A document's words are `word_tokens`' (lower-cased runs of two or more letters, digits or `_`), less the stop words
(`stopwords.ENGLISH` by default): `bm25s.tokenize(texts, stopwords="en")` without a stemmer. A query scores a
document by the sum, over the query's words (a word given twice counts twice), of

    idf(word) × tf / (tf + k1 × (1 − b + b × length / mean length)),   idf = ln(1 + (N − df + 0.5) / (df + 0.5))

with tf the word's count in the document, df the documents holding it, N the documents, lengths in words after
the stop words are left out: `bm25s.BM25()`'s scores, precomputed per (word, document) as `bm25s` does.

The index is a sparse matrix by word (CSC): `term_starts` (int64 [words + 1]), and per (word, document) pair, in
word order, `document_indices` (int32) and `weights` (float32, the score above). Its memory: pairs × 8 bytes +
(words + 1) × 8 bytes + the vocabulary's strings. `LexicalScorer` holds it as TensorFlow variables and a lookup
table and scores queries in the graph; `BM25Index.search` runs it, and the search SavedModel (`bert-tf index`)
saves it.

>>> index = BM25Index(["the cat sat", "a dog and a cat", "dogs bark"])
>>> indices, scores = index.search(["cat", "dog cat", "fish"], top_k=2)
>>> indices.tolist(), [[round(float(score), 4) for score in row] for row in scores]
([[0, 1], [1, 0], [0, 1]], [[0.188, 0.188], [0.5803, 0.188], [0.0, 0.0]])
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from bert_tf.retrieval.stopwords import stop_words
from bert_tf.retrieval.word_tokens import word_tokens

TOKENIZE_CHUNK = 10_000  # texts split per graph call while an index is built


class BM25Index:
    """BM25 term statistics of `texts` (module docstring) and the search over them."""

    def __init__(self, texts: list[str], k1: float = 1.5, b: float = 0.75, stopwords="en"):
        if isinstance(texts, str) or not all(isinstance(text, str) for text in texts):
            raise ValueError("BM25Index takes a list of texts (strings).")
        if not texts:
            raise ValueError("BM25Index: no texts to index.")
        self.k1, self.b, self.documents = float(k1), float(b), len(texts)
        stop = {word.encode() for word in stop_words(stopwords)}
        term_ids: dict[bytes, int] = {}  # the vocabulary, in the order of first use
        self.document_lengths = np.zeros(self.documents, np.int64)
        terms, documents, counts = [], [], []
        for start in range(0, self.documents, TOKENIZE_CHUNK):  # a chunk's (word, document) pairs and their counts
            split = word_tokens(texts[start:start + TOKENIZE_CHUNK])
            words, word_index = tf.unique(split.flat_values, out_idx=tf.int64)
            term_of_word = np.array([-1 if word in stop else term_ids.setdefault(word, len(term_ids))
                                     for word in words.numpy()], np.int64)[word_index.numpy()]
            size = len(split.row_lengths())
            document_of_word = np.repeat(np.arange(size, dtype=np.int64), split.row_lengths().numpy())
            kept = term_of_word >= 0
            term_of_word, document_of_word = term_of_word[kept], document_of_word[kept]
            self.document_lengths[start:start + size] = np.bincount(document_of_word, minlength=size)
            pairs, pair_counts = np.unique(term_of_word * size + document_of_word, return_counts=True)
            terms.append(pairs // size)
            documents.append(start + pairs % size)
            counts.append(pair_counts)
        order = np.argsort(np.concatenate(terms), kind="stable")  # by word, then document (chunks come in order)
        terms, documents, counts = (np.concatenate(values)[order] for values in (terms, documents, counts))
        self.vocabulary = [word.decode("utf-8") for word in term_ids]
        document_frequency = np.bincount(terms, minlength=len(self.vocabulary))
        idf = np.log(1 + (self.documents - document_frequency + 0.5) / (document_frequency + 0.5))
        mean_length = self.document_lengths.mean()
        norm = self.k1 * (1 - self.b + self.b * self.document_lengths[documents] / max(mean_length, 1e-12))
        self.weights = (idf[terms] * counts / (counts + norm)).astype(np.float32)
        self.document_indices = documents.astype(np.int32)
        self.term_starts = np.concatenate([[0], np.cumsum(document_frequency)]).astype(np.int64)
        self._lexical_scorer, self._search = None, None

    @property
    def nbytes(self) -> int:
        """Bytes of the term statistics: pairs × 8 + (words + 1) × 8 + the vocabulary's UTF-8 (and a byte a word)."""
        return (self.weights.nbytes + self.document_indices.nbytes + self.term_starts.nbytes
                + sum(len(word.encode()) + 1 for word in self.vocabulary))

    def scores(self, queries: list[str]) -> np.ndarray:
        """float32 [queries, documents]: every document's BM25 score for each query."""
        return self._scorer().scores(tf.constant(queries, tf.string)).numpy()

    def pair_scores(self, queries: list[str], indices: np.ndarray) -> np.ndarray:
        """The BM25 score of each query for the document of the same row of `indices` (int [queries]), float32."""
        indices = np.asarray(indices, np.int64)
        return np.take_along_axis(self.scores(list(queries)), indices[:, None], axis=1)[:, 0]

    def search(self, queries: list[str], top_k: int) -> tuple[np.ndarray, np.ndarray]:
        """(indices int32 [queries, k], scores float32 [queries, k]) of the best `top_k` documents (all, if fewer),
        best first; of equal scores, the lower index first."""
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
            raise ValueError(f"top_k must be a positive integer, got {top_k!r}.")
        if isinstance(queries, str):
            raise ValueError("BM25Index.search takes a list of queries.")
        if self._search is None:
            scorer = self._scorer()
            self._search = tf.function(lambda texts, k: tf.math.top_k(scorer.scores(texts), k=k),
                                       input_signature=[tf.TensorSpec([None], tf.string), tf.TensorSpec([], tf.int32)])
        scores, indices = self._search(tf.constant(queries, tf.string), min(top_k, self.documents))
        return indices.numpy(), scores.numpy()

    def _scorer(self) -> LexicalScorer:
        if self._lexical_scorer is None:
            self._lexical_scorer = LexicalScorer(self)
        return self._lexical_scorer


class LexicalScorer(tf.Module):
    """A `BM25Index`'s statistics as TensorFlow variables, its vocabulary as a lookup table (in memory, or read
    from `vocabulary_file`, a word a line in the index's order: a SavedModel asset), and `scores` in the graph."""

    def __init__(self, index: BM25Index, vocabulary_file: str | None = None):
        super().__init__(name="bm25")
        if vocabulary_file is None:
            initializer = tf.lookup.KeyValueTensorInitializer(
                tf.constant(index.vocabulary, tf.string), tf.range(len(index.vocabulary), dtype=tf.int64))
        else:
            initializer = tf.lookup.TextFileInitializer(
                vocabulary_file, tf.string, tf.lookup.TextFileIndex.WHOLE_LINE, tf.int64,
                tf.lookup.TextFileIndex.LINE_NUMBER)
        self.table = tf.lookup.StaticHashTable(initializer, default_value=-1)
        self.term_starts = tf.Variable(index.term_starts, trainable=False, name="term_starts")
        self.document_indices = tf.Variable(index.document_indices, trainable=False, name="document_indices")
        self.weights = tf.Variable(index.weights, trainable=False, name="weights")
        self.documents = index.documents

    def scores(self, queries: tf.Tensor) -> tf.Tensor:
        """float32 [queries, documents]: BM25 scores of string [queries], summed over the postings of their words."""
        terms = tf.ragged.map_flat_values(self.table.lookup, word_tokens(queries))
        known = tf.ragged.boolean_mask(terms, terms >= 0)
        postings = tf.ragged.range(tf.gather(self.term_starts, known.flat_values),
                                   tf.gather(self.term_starts, known.flat_values + 1))
        positions = postings.flat_values
        query_of_posting = tf.gather(known.value_rowids(), postings.value_rowids())
        documents = tf.constant(self.documents, tf.int64)
        cells = query_of_posting * documents + tf.cast(tf.gather(self.document_indices, positions), tf.int64)
        batch = tf.shape(queries, out_type=tf.int64)[0]
        summed = tf.math.unsorted_segment_sum(tf.gather(self.weights, positions), cells, batch * documents)
        return tf.reshape(summed, tf.stack([batch, documents]))
