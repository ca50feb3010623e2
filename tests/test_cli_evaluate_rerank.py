"""`bert-tf evaluate --model RERANKER --data BEIR --first-stage INDEX --top-k K`: the first stage's K best documents per
query scored as they come and as the reranker orders them, as `retrieval_scores` scores the same rankings."""

import json

import numpy as np
import pytest
from tiny_reranker import local_scores, registered_reranker

from bert_tf.retrieval.bm25 import BM25Index
from bert_tf.retrieval.ranking_metrics import retrieval_scores
from bert_tf_cli import main

DOCUMENTS = {"d1": "a good film", "d2": "the plot was bad", "d3": "paris and london", "d4": "a very nice film",
             "d5": "mary and john", "d6": "the film in paris was good", "d7": "john lives in london"}
QUERIES = {"q1": "good film", "q2": "london", "q3": "who lives in paris", "q4": "nothing judged"}
JUDGED = [("q1", "d4", 1), ("q1", "d1", 2), ("q2", "d7", 1), ("q3", "d6", 1), ("q3", "d2", 0)]
RELEVANT = [{3: 1, 0: 2}, {6: 1}, {5: 1}]  # q4 has no judgment, d2 is judged not relevant
TEXTS = list(DOCUMENTS.values())
TOP_K = 3


@pytest.fixture(scope="module")
def reranker_dir(tmp_path_factory):
    with registered_reranker(tmp_path_factory.mktemp("reranker")) as model_dir:
        yield model_dir


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("beir")
    (folder / "corpus.jsonl").write_text("".join(json.dumps({"_id": key, "title": "", "text": text}) + "\n"
                                                 for key, text in DOCUMENTS.items()))
    (folder / "queries.jsonl").write_text("".join(json.dumps({"_id": key, "text": text}) + "\n"
                                                  for key, text in QUERIES.items()))
    (folder / "qrels").mkdir()
    (folder / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{query}\t{document}\t{score}\n" for query, document, score in JUDGED))
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td2\t1\n")
    return folder


@pytest.fixture(scope="module")
def first_stage(folder, tmp_path_factory):
    out = tmp_path_factory.mktemp("index")
    assert main(["index", "--lexical-only", "--corpus", str(folder / "corpus.jsonl"), "--out", str(out), "--name",
                 "bm25", "--top-k", "4", "--no-progress"]) == 0
    return out / "bm25"


def test_the_first_stage_and_the_reranked_scores(reranker_dir, folder, first_stage, capsys):
    capsys.readouterr()
    assert main(["evaluate", "--model", str(reranker_dir), "--data", str(folder), "--split", "dev", "--first-stage",
                 str(first_stage), "--top-k", str(TOP_K), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    queries = list(QUERIES.values())[:3]
    bm25 = BM25Index(TEXTS).scores(queries)
    candidates = np.argsort(-bm25, axis=1, kind="stable")[:, :TOP_K]
    first, reranked = np.full(bm25.shape, -np.inf), np.full(bm25.shape, -np.inf)
    for row, (query, documents) in enumerate(zip(queries, candidates)):
        first[row, documents] = bm25[row, documents]
        reranked[row, documents] = local_scores(reranker_dir, query, [TEXTS[index] for index in documents])
    assert printed["first_stage"]["ndcg@10"] != printed["reranked"]["ndcg@10"]  # the order changed the scores
    assert printed == {"first_stage": pytest.approx(retrieval_scores(first, RELEVANT, ks=(1,)), abs=1e-6),
                       "reranked": pytest.approx(retrieval_scores(reranked, RELEVANT, ks=(1,)), abs=1e-6)}
    assert main(["evaluate", "--model", str(reranker_dir), "--data", str(folder), "--split", "dev", "--first-stage",
                 str(first_stage), "--top-k", str(TOP_K)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[:2] for line in lines] == [["first", "stage"], ["reranked", "nDCG@10"]]
    assert f"nDCG@10 {printed['reranked']['ndcg@10']:.2f}" in lines[1]


def test_wrong_reranker_options_are_one_line(reranker_dir, embedder_dir, folder, first_stage, capsys):
    beir = ["--data", str(folder), "--split", "dev"]
    for args, message in [
        (["--model", embedder_dir, *beir, "--first-stage", first_stage], "is not a reranker: its task is embed"),
        (["--model", reranker_dir, *beir, "--first-stage", first_stage, "--top-k", "5"],
         "returns 4 documents per query, fewer than --top-k 5"),
        (["--model", reranker_dir, *beir, "--top-k", "5"], "give --first-stage INDEX too"),
        (["--model", reranker_dir, *beir, "--first-stage", folder], "is not a search index"),
        (["--model", reranker_dir, "--data", folder / "corpus.jsonl", "--first-stage", first_stage],
         "--first-stage is for a reranker on a BEIR folder"),
    ]:
        assert main(["evaluate", *map(str, args)]) == 2
        error = capsys.readouterr().err
        assert message in error and len(error.strip().splitlines()) == 1, error
