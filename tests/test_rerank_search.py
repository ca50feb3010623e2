"""A search index with a reranker (`bert-tf index --rerank`): in one call, the first stage's best documents reranked,
equal to the two stages run apart (the index without a reranker, then the reranker's Keras scores sorted), and
`bert-tf search` shows both scores."""

import json

import numpy as np
import pytest
import tensorflow as tf
from tiny_reranker import local_scores, registered_reranker

from bert_tf.retrieval.bm25 import BM25Index
from bert_tf_cli import main
from serving.export.search_index import SearchSettings, export_search_index

DOCUMENTS = {"d1": "good film", "d2": "the plot was bad", "d3": "paris and london", "d4": "a very nice film",
             "d5": "mary and john", "d6": "the film in paris was good", "d7": "john lives in london"}
TEXTS = list(DOCUMENTS.values())
QUERIES = ["a good film", "london", "who lives in paris"]


@pytest.fixture(scope="module")
def reranker_dir(tmp_path_factory):
    with registered_reranker(tmp_path_factory.mktemp("reranker")) as model_dir:
        yield model_dir


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus") / "corpus.jsonl"
    path.write_text("".join(json.dumps({"_id": key, "text": text}) + "\n" for key, text in DOCUMENTS.items()))
    return path


@pytest.fixture(scope="module")
def chained(reranker_dir, corpus, tmp_path_factory):
    """A lexical index with the reranker, written by the command line: 2 of the first stage's best 4 per query."""
    out = tmp_path_factory.mktemp("chained")
    assert main(["index", "--lexical-only", "--corpus", str(corpus), "--out", str(out), "--name", "chained",
                 "--top-k", "2", "--rerank", str(reranker_dir), "--rerank-top-k", "4", "--no-progress"]) == 0
    return out / "chained"


def search(version, mode):
    loaded = tf.saved_model.load(str(version))
    return {name: value.numpy() for name, value in loaded.signatures[mode](text=tf.constant(QUERIES)).items()}


def assert_two_stages_apart(chained, first_stage, reranker_dir):
    """`chained` (2 per query) are the reranker's best 2 of `first_stage`'s answers (4 per query)."""
    assert chained["scores"].shape == chained["first_stage_scores"].shape == (3, 2)
    for row, query in enumerate(QUERIES):
        candidates = first_stage["indices"][row]
        rerank_scores = local_scores(reranker_dir, query, [TEXTS[index] for index in candidates])
        best = np.argsort(-rerank_scores, kind="stable")[:2]
        np.testing.assert_array_equal(chained["indices"][row], candidates[best])
        np.testing.assert_allclose(chained["scores"][row], rerank_scores[best], atol=1e-5)
        np.testing.assert_allclose(chained["first_stage_scores"][row], first_stage["scores"][row][best], atol=1e-6)
        assert [identifier.decode() for identifier in chained["ids"][row]] == [
            list(DOCUMENTS)[index] for index in candidates[best]]


def test_the_chained_top_n_equal_the_two_stages_run_apart(chained, reranker_dir, corpus, tmp_path):
    first_stage = export_search_index(None, corpus, tmp_path, "first", settings=SearchSettings(top_k=4, mode="lexical"),
                                      progress=False)
    assert_two_stages_apart(search(chained / "1", "lexical"), search(first_stage, "lexical"), reranker_dir)
    info = tf.saved_model.load(str(chained / "1")).signatures["model_info"](request=tf.constant([""]))
    assert int(info["rerank_top_k"][0]) == 4 and int(info["top_k"][0]) == 2


@pytest.mark.slow
def test_a_hybrid_first_stage_reranked_equals_the_two_stages_run_apart(reranker_dir, embedder_dir, corpus, tmp_path):
    first_stage = export_search_index(embedder_dir, corpus, tmp_path, "first", settings=SearchSettings(top_k=4),
                                      progress=False)
    chained = export_search_index(embedder_dir, corpus, tmp_path, "chained", settings=SearchSettings(
        top_k=2, rerank_top_k=4), progress=False, reranker=reranker_dir)
    assert_two_stages_apart(search(chained, "hybrid"), search(first_stage, "hybrid"), reranker_dir)


def test_search_prints_both_scores(chained, reranker_dir, capsys):
    capsys.readouterr()
    assert main(["search", "--model", str(chained), *QUERIES[:2]]) == 0
    lines = capsys.readouterr().out.splitlines()
    headers = [number for number, line in enumerate(lines) if not line.startswith("  ")]
    assert [lines[number] for number in headers] == [
        f"{query}\t(rank, reranker score, first-stage score, id, text)" for query in QUERIES[:2]]
    for query, start, end in zip(QUERIES[:2], headers, [*headers[1:], len(lines)]):
        rows = [line.strip().split("\t") for line in lines[start + 1:end]]
        bm25 = BM25Index(TEXTS).scores([query])[0]
        # the chained index's top 2, less what shares no word with the query (BM25 0: not found by a lexical stage)
        assert 1 <= len(rows) <= 2 and [row[0] for row in rows] == [str(rank) for rank in range(1, len(rows) + 1)]
        assert [row[4] for row in rows] == [DOCUMENTS[row[3]] for row in rows]
        expected = local_scores(reranker_dir, query, [DOCUMENTS[row[3]] for row in rows])
        assert [float(row[1]) for row in rows] == pytest.approx(expected.tolist(), abs=1e-4)
        assert [float(row[2]) for row in rows] == pytest.approx([bm25[list(DOCUMENTS).index(row[3])] for row in rows],
                                                                abs=1e-4)
        assert all(float(row[2]) > 0 for row in rows)


def test_wrong_reranking_options_are_one_line(reranker_dir, embedder_dir, corpus, tmp_path, capsys):
    index = ["index", "--lexical-only", "--corpus", str(corpus), "--out", str(tmp_path), "--name", "search"]
    for args, message in [
        (["--top-k", "3", "--rerank", str(reranker_dir), "--rerank-top-k", "2"],
         "reorders the first stage's 2 best documents (rerank top k); a query returns 3 (top k)"),
        (["--rerank", str(embedder_dir)], "is not a reranker: its task is embed"),
        (["--rerank", str(tmp_path / "missing")], "missing"),
        (["--rerank-top-k", "5"], "give --rerank RERANKER too"),
    ]:
        assert main(index + args) == 2
        error = capsys.readouterr().err
        assert message in error and len(error.strip().splitlines()) == 1, error
    assert not (tmp_path / "search").exists()
