"""`bert-tf evaluate --data FOLDER` on a BEIR folder: a sentence-embedding model directory (every document ranked) and
a search index (its mode), scored as `retrieval_scores` scores the same rankings."""

import json

import numpy as np
import pytest

import bert_tf
from bert_tf.retrieval.bm25 import BM25Index
from bert_tf.retrieval.ranking_metrics import retrieval_scores
from bert_tf_cli import main
from serving.export.search_index import SearchSettings, export_search_index

DOCUMENTS = {"d1": ("Films", "a good film"), "d2": ("", "the plot was bad"), "d3": ("Cities", "paris and london"),
             "d4": ("", "a very nice film"), "d5": ("People", "mary and john")}
QUERIES = {"q1": "good film", "q2": "london", "q3": "who is mary", "q4": "nothing judged"}
JUDGED = [("q1", "d1", 1), ("q1", "d4", 2), ("q2", "d3", 1), ("q3", "d5", 1), ("q3", "d2", 0)]
RELEVANT = [{0: 1, 3: 2}, {2: 1}, {4: 1}]  # q4 has no judgment, d2 is judged not relevant
TEXTS = [f"{title} {text}".strip() for title, text in DOCUMENTS.values()]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("beir")
    (folder / "corpus.jsonl").write_text("".join(json.dumps({"_id": key, "title": title, "text": text}) + "\n"
                                                 for key, (title, text) in DOCUMENTS.items()))
    (folder / "queries.jsonl").write_text("".join(json.dumps({"_id": key, "text": text}) + "\n"
                                                  for key, text in QUERIES.items()))
    (folder / "qrels").mkdir()
    (folder / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{query}\t{document}\t{score}\n" for query, document, score in JUDGED))
    return folder


def printed_scores(capsys, *args):
    capsys.readouterr()
    assert main(["evaluate", *map(str, args), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_model_directory_on_the_only_split(embedder_dir, folder, capsys):
    scores = printed_scores(capsys, "--model", embedder_dir, "--data", folder)
    model = bert_tf.load_model_directory(embedder_dir).model
    queries = model.predict(list(QUERIES.values())[:3], verbose=0).astype(np.float64)
    documents = model.predict(TEXTS, verbose=0).astype(np.float64)
    unit = lambda vectors: vectors / np.linalg.norm(vectors, axis=-1, keepdims=True)  # noqa: E731
    expected = retrieval_scores(unit(queries) @ unit(documents).T, RELEVANT)
    assert scores == {**{name: pytest.approx(value, abs=1e-6) for name, value in expected.items()},
                      "score": pytest.approx(expected["ndcg@10"], abs=1e-6)}


def test_a_search_index_in_each_mode(embedder_dir, folder, tmp_path, capsys):
    export_search_index(embedder_dir, folder / "corpus.jsonl", tmp_path, "search", progress=False)
    lexical = printed_scores(capsys, "--model", tmp_path / "search", "--data", folder, "--mode", "lexical")
    expected = retrieval_scores(BM25Index(TEXTS).scores(list(QUERIES.values())[:3]), RELEVANT)
    assert lexical == pytest.approx(expected, abs=1e-6)
    hybrid = printed_scores(capsys, "--model", tmp_path / "search", "--data", folder, "--split", "dev")
    assert set(hybrid) == set(expected) and hybrid["queries"] == 3 and 0 < hybrid["ndcg@10"] <= 100


def test_wrong_splits_and_options_are_named(embedder_dir, folder, capsys):
    for args, message in [
        (["--model", embedder_dir, "--data", folder, "--split", "test"], "no split 'test' (splits found: dev)"),
        (["--model", embedder_dir, "--data", folder, "--mode", "dense"], "--mode is for a search index"),
        (["--model", embedder_dir, "--data", folder / "corpus.jsonl", "--split", "dev"],
         "--split is for a BEIR folder"),
    ]:
        assert main(["evaluate", *map(str, args)]) == 2
        assert message in capsys.readouterr().err


@pytest.mark.slow
def test_scifact_lexical_scores_equal_bm25s(embedder_dir, shared_data, tmp_path, capsys):
    """The served BM25 of an index of SciFact scores its 809 train claims as bm25s's own ranking does (top 100)."""
    bm25s = pytest.importorskip("bm25s")
    folder = shared_data / "scifact"
    if not (folder / "qrels" / "train.tsv").is_file():
        pytest.skip("no SciFact in the team data")
    export_search_index(embedder_dir, folder / "corpus.jsonl", tmp_path, "scifact",
                        settings=SearchSettings(top_k=100), progress=False)
    served = printed_scores(capsys, "--model", tmp_path / "scifact", "--data", folder, "--mode", "lexical")
    claims = bert_tf.read_retrieval_set(folder, "train")
    reference = bm25s.BM25()
    reference.index(bm25s.tokenize(claims.documents, stopwords="en", show_progress=False), show_progress=False)
    documents, scores = reference.retrieve(bm25s.tokenize(claims.queries, stopwords="en", show_progress=False), k=100,
                                           show_progress=False)
    ranked = np.full([len(claims.queries), len(claims.documents)], -np.inf)
    ranked[np.arange(len(claims.queries))[:, None], documents] = scores
    assert served == pytest.approx(retrieval_scores(ranked, claims.relevant), abs=1e-9)
    assert round(served["ndcg@10"], 2) == 66.68 and served["queries"] == 809
