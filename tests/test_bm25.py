"""BM25Index: the word tokenizer in the graph and the scores equal `bm25s` (its default "lucene" method, English stop
words, no stemmer): by hand on small corpora, and on the SciFact corpus with its claims."""

import json
import math

import numpy as np
import pytest

from bert_tf.retrieval.bm25 import BM25Index
from bert_tf.retrieval.word_tokens import word_tokens

TRICKY = ["Hello, World!", "a b2 x_y 3.14 naïve ÉTÉ", "l'été—été co-operate", "ΟΔΟΣ Straße İstanbul", "",
          "  ", "re-run RE_RUN 2024-01-02", "日本語のテキスト 123", "the THE The"]


def words(texts):
    return [[word.decode() for word in row] for row in word_tokens(texts).to_list()]


def test_the_words_are_bm25s_words():
    bm25s = pytest.importorskip("bm25s")
    assert words(TRICKY) == bm25s.tokenize(TRICKY, stopwords=None, return_ids=False, show_progress=False)


def test_scores_by_hand():
    index = BM25Index(["the cat sat", "a dog and a cat", "dogs bark loudly today"], k1=1.2, b=0.75)
    # Words after the stop words: [cat, sat], [dog, cat], [dogs, bark, loudly, today]: lengths 2, 2, 4, mean 8/3.
    idf_cat, idf_dog = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5)), math.log(1 + (3 - 1 + 0.5) / (1 + 0.5))
    short = 1.2 * (1 - 0.75 + 0.75 * 2 / (8 / 3))
    expected_cat = idf_cat * 1 / (1 + short)
    scores = index.scores(["cat", "dog cat cat", "the and", "bark"])
    np.testing.assert_allclose(scores[0], [expected_cat, expected_cat, 0], rtol=1e-6)
    # A word given twice counts twice, as in bm25s.
    np.testing.assert_allclose(scores[1], [2 * expected_cat, 2 * expected_cat + idf_dog / (1 + short), 0], rtol=1e-6)
    assert not scores[2].any()  # stop words only
    long = 1.2 * (1 - 0.75 + 0.75 * 4 / (8 / 3))
    np.testing.assert_allclose(scores[3], [0, 0, idf_dog / (1 + long)], rtol=1e-6)
    assert index.vocabulary == ["cat", "sat", "dog", "dogs", "bark", "loudly", "today"]
    assert index.term_starts.tolist() == [0, 2, 3, 4, 5, 6, 7, 8]
    assert index.document_indices.tolist() == [0, 1, 0, 1, 2, 2, 2, 2]


def test_search_is_best_first_and_ties_keep_the_lower_index():
    index = BM25Index(["cat one", "cat two", "cat cat three"], stopwords=None)
    indices, scores = index.search(["cat", "four"], top_k=5)
    assert indices.tolist() == [[2, 0, 1], [0, 1, 2]] and scores.shape == (2, 3)
    assert scores[0, 0] > scores[0, 1] == scores[0, 2] and not scores[1].any()
    assert indices.dtype == np.int32 and scores.dtype == np.float32


def test_own_stop_words_and_bad_input():
    index = BM25Index(["Cat on a mat", "dog"], stopwords=["cat"])
    assert index.vocabulary == ["on", "mat", "dog"]
    with pytest.raises(ValueError, match="top_k must be a positive integer"):
        index.search(["x"], top_k=0)
    with pytest.raises(ValueError, match="a list of texts"):
        BM25Index("one text")
    with pytest.raises(ValueError, match="stopwords must be 'en', None or a list"):
        BM25Index(["x"], stopwords="klingon")


def test_scifact_equals_bm25s(shared_data):
    bm25s = pytest.importorskip("bm25s")
    folder = shared_data / "scifact"
    if not (folder / "corpus.jsonl").is_file():
        pytest.skip("no SciFact corpus in the team data")
    documents = [json.loads(line) for line in (folder / "corpus.jsonl").open()]
    texts = [f"{document.get('title') or ''} {document['text']}".strip() for document in documents]
    claims = [json.loads(line)["text"] for line in (folder / "queries.jsonl").open()][::16]  # 51 claims
    indices, scores = BM25Index(texts).search(claims, top_k=10)
    reference = bm25s.BM25()
    reference.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
    expected_indices, expected_scores = reference.retrieve(bm25s.tokenize(claims, stopwords="en", show_progress=False),
                                                           k=10, show_progress=False)
    np.testing.assert_allclose(scores, expected_scores, atol=1e-4)
    # The same documents at every rank; documents of equal score (bm25s orders them arbitrarily) as a set.
    for row, expected_row, row_scores in zip(indices, expected_indices, expected_scores):
        groups = np.unique(row_scores.round(4), return_inverse=True)[1]
        for group in np.unique(groups):
            tied = groups == group
            assert set(row[tied]) == set(expected_row[tied]) or row_scores[tied][0] == 0  # zeros: any documents
