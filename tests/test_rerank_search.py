"""A search index with a reranker (`bert-tf index --rerank`): in one call, the first stage's best documents reranked,
equal to the two stages run apart (the index without a reranker, then the reranker's Keras scores sorted), and
`bert-tf search` shows both scores."""

import json

import numpy as np
import pytest
import tensorflow as tf
from tiny_reranker import local_scores, registered_reranker

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


def search(version, mode):
    loaded = tf.saved_model.load(str(version))
    return {name: value.numpy() for name, value in loaded.signatures[mode](text=tf.constant(QUERIES)).items()}


@pytest.mark.parametrize("mode", ["lexical", "hybrid"])
def test_the_chained_top_n_equal_the_two_stages_run_apart(mode, reranker_dir, embedder_dir, corpus, tmp_path):
    model = None if mode == "lexical" else embedder_dir
    first_stage = search(export_search_index(model, corpus, tmp_path, "first", settings=SearchSettings(
        top_k=4, mode=mode), progress=False), mode)
    chained = search(export_search_index(model, corpus, tmp_path, "chained", settings=SearchSettings(
        top_k=2, mode=mode, rerank_top_k=4), progress=False, reranker=reranker_dir), mode)
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


def test_search_prints_both_scores(reranker_dir, corpus, tmp_path, capsys):
    assert main(["index", "--lexical-only", "--corpus", str(corpus), "--out", str(tmp_path), "--name", "chained",
                 "--top-k", "2", "--rerank", str(reranker_dir), "--rerank-top-k", "5", "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["search", "--model", str(tmp_path / "chained"), "--json", *QUERIES[:2]]) == 0
    answers = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    info = tf.saved_model.load(str(tmp_path / "chained" / "1")).signatures["model_info"](request=tf.constant([""]))
    assert int(info["rerank_top_k"][0]) == 5 and int(info["top_k"][0]) == 2
    for answer in answers:
        results = answer["results"]
        assert [set(result) for result in results] == [{"rank", "score", "first_stage_score", "id", "text"}] * 2
        expected = local_scores(reranker_dir, answer["query"], [DOCUMENTS[result["id"]] for result in results])
        assert [result["score"] for result in results] == pytest.approx(expected.tolist(), abs=1e-5)
        assert results[0]["score"] >= results[1]["score"]
    assert main(["search", "--model", str(tmp_path / "chained"), QUERIES[0]]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "first-stage score" in lines[0] and len(lines[1].split("\t")) == 5


def test_wrong_reranking_options_are_one_line(reranker_dir, embedder_dir, corpus, tmp_path, capsys):
    index = ["index", "--lexical-only", "--corpus", str(corpus), "--out", str(tmp_path), "--name", "search"]
    for args, message in [
        (["--top-k", "3", "--rerank", str(reranker_dir), "--rerank-top-k", "2"],
         "reorders the first stage's 2 best documents (rerank top k); a query returns 3 (top k)"),
        (["--rerank", str(embedder_dir)], "is a embed model, not a reranker"),
        (["--rerank", str(tmp_path / "missing")], "missing"),
        (["--rerank-top-k", "5"], "give --rerank RERANKER too"),
    ]:
        assert main(index + args) == 2
        error = capsys.readouterr().err
        assert message in error and len(error.strip().splitlines()) == 1, error
    assert not (tmp_path / "search").exists()
