"""STS correlations checked against scipy, retrieval scores against pytrec_eval, and the reader of BEIR's layout."""

import json

import numpy as np
import pytest

from bert_tf.retrieval import ranking_metrics
from bert_tf.tasks.embedding.metrics import sts_scores
from bert_tf.retrieval.ranking_metrics import retrieval_scores
from bert_tf.retrieval.retrieval_set import read_retrieval_set


@pytest.mark.parametrize("seed, pairs, levels", [(0, 2, 100), (1, 10, 3), (2, 1500, 26), (3, 200, 1000)])
def test_sts_scores_are_scipys_correlations(seed, pairs, levels):
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(seed)
    gold = rng.integers(0, levels, size=pairs) / (levels / 5)  # few levels: many ties
    predicted = np.round(0.1 * gold + rng.normal(0, 0.3, size=pairs), 1)
    if pairs == 2:
        gold, predicted = np.array([1.0, 4.0]), np.array([0.8, 0.2])
    scores = sts_scores(predicted, gold)
    assert scores["spearman"] == pytest.approx(100 * stats.spearmanr(predicted, gold).statistic, abs=1e-9)
    assert scores["pearson"] == pytest.approx(100 * stats.pearsonr(predicted, gold).statistic, abs=1e-9)
    assert scores["examples"] == pairs


@pytest.mark.parametrize("predicted, gold, message", [
    ([0.1, 0.2, 0.3], [1.0, 2.0], r"shape \(3,\) but gold scores of shape \(2,\)"),
    ([[0.1, 0.2]], [[1.0, 2.0]], r"shape \(1, 2\)"),
    ([0.5], [3.0], "at least 2 pairs, got 1"),
    ([], [], "at least 2 pairs, got 0"),
    ([0.7, 0.7, 0.7], [1.0, 2.0, 3.0], "predicted similarities are all 0.7; a correlation needs them to vary"),
    ([0.1, 0.2, 0.3], [2.0, 2.0, 2.0], "gold scores are all 2;"),
    ([0.1, float("nan"), 0.3], [1.0, 2.0, 3.0], "predicted similarities include NaN"),
])
def test_sts_scores_refuse_what_has_no_correlation(predicted, gold, message):
    with pytest.raises(ValueError, match=message):
        sts_scores(predicted, gold)


def trec_eval_scores(scores, relevant, ks=(1, 10, 100)) -> dict:
    """The same scores by pytrec_eval (ids whose string order is the index order), averaged as BEIR and MTEB do."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels = {f"q{query:05d}": {f"d{document:06d}": grade for document, grade in grades.items()}
             for query, grades in enumerate(relevant) if grades}
    run = {query_id: {f"d{document:06d}": float(score) for document, score in enumerate(scores[int(query_id[1:])])}
           for query_id in qrels}
    measures = {"ndcg_cut.10", "recip_rank", "recall." + ",".join(map(str, ks))}
    per_query = list(pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run).values())
    return {
        "ndcg@10": 100 * np.mean([query["ndcg_cut_10"] for query in per_query]),
        # trec_eval's recip_rank has no cutoff: MRR@10 counts a first relevant document at rank 10 or better only.
        "mrr@10": 100 * np.mean([query["recip_rank"] if query["recip_rank"] >= 1 / 10 else 0.0 for query in per_query]),
        **{f"recall@{k}": 100 * np.mean([query[f"recall_{k}"] for query in per_query]) for k in ks},
        "queries": len(per_query),
    }


def assert_matches_trec_eval(scores, relevant, ks=(1, 10, 100)) -> dict:
    ours = retrieval_scores(scores, relevant, ks)
    assert ours == pytest.approx(trec_eval_scores(np.asarray(scores), relevant, ks), abs=1e-9)
    return ours


def test_ties_rank_the_larger_index_first_as_trec_eval_does():
    scores = [[0.5, 0.5, 0.5, 0.5, 0.5],  # ranked 4, 3, 2, 1, 0
              [0.9, 0.2, 0.9, 0.1, 0.2]]  # ranked 2, 0, 4, 1, 3
    ours = assert_matches_trec_eval(scores, [{0: 1, 4: 1}, {0: 1, 1: 1}], ks=(1, 2, 3))
    assert ours["recall@1"] == 25.0  # query 0 finds document 4 first, query 1 document 2 (not relevant)
    assert ours["recall@2"] == 50.0  # query 1: document 0 second
    assert ours["mrr@10"] == pytest.approx(100 * (1 + 1 / 2) / 2)


def test_graded_relevance_is_the_gain():
    scores = [[0.9, 0.8, 0.7, 0.6]]
    ours = assert_matches_trec_eval(scores, [{0: 1, 2: 3}])
    ideal = 3 + 1 / np.log2(3)
    assert ours["ndcg@10"] == pytest.approx(100 * (1 + 3 / np.log2(4)) / ideal)
    assert ours["recall@1"] == 50.0 and ours["mrr@10"] == 100.0


def test_relevant_documents_below_the_cutoffs_score_nothing():
    scores = -np.arange(300, dtype=float)[None, :].repeat(3, axis=0)  # document i ranks i + 1
    ours = assert_matches_trec_eval(scores, [{150: 1, 299: 2}, {100: 1}, {10: 1}])  # ranks 151 and 300, 101, 11
    assert ours == {"ndcg@10": 0.0, "mrr@10": 0.0, "recall@1": 0.0, "recall@10": 0.0, "recall@100": 100 / 3,
                    "queries": 3}


def test_more_than_100_relevant_documents_cap_recall_at_100_of_them():
    scores = np.linspace(1, 0, 300)[None, :]
    ours = assert_matches_trec_eval(scores, [{document: 1 + document % 3 for document in range(0, 300, 2)}])
    assert ours["recall@100"] == pytest.approx(100 * 50 / 150)


def test_fewer_documents_than_k_rank_them_all():
    ours = assert_matches_trec_eval([[0.1, 0.3, 0.2]], [{0: 1}])
    assert ours["recall@1"] == 0.0 and ours["recall@10"] == ours["recall@100"] == 100.0


@pytest.mark.parametrize("seed, dtype", [(0, np.float64), (1, np.float32), (2, np.float64)])
def test_random_queries_match_trec_eval(seed, dtype):
    rng = np.random.default_rng(seed)
    scores = (rng.integers(0, 40, size=(50, 300)) / 8).astype(dtype)  # 40 levels: ties everywhere, at the cutoffs too
    relevant = [{int(document): int(rng.integers(1, 4))
                 for document in rng.choice(300, rng.integers(0, 12), replace=False)} for _ in range(50)]
    relevant[7] = {}  # a query without relevant documents is left out
    ours = assert_matches_trec_eval(scores, relevant, ks=(1, 5, 10, 100))
    assert ours["queries"] == sum(bool(grades) for grades in relevant)


def test_chunks_of_queries_give_the_same_scores(monkeypatch):
    rng = np.random.default_rng(3)
    scores = rng.normal(size=(9, 200)).round(1)
    relevant = [{int(rng.integers(200)): 1, int(rng.integers(200)): 2} for _ in range(9)]
    whole = retrieval_scores(scores, relevant)
    monkeypatch.setattr(ranking_metrics, "SCORES_PER_CHUNK", 400)  # two queries a chunk
    assert retrieval_scores(scores, relevant) == pytest.approx(whole, abs=1e-12)


@pytest.mark.parametrize("scores, relevant, ks, message", [
    ([0.1, 0.2], [{0: 1}], (1,), r"expected a float matrix \[queries, documents\], got float64 of shape \(2,\)"),
    ([[1, 2]], [{0: 1}], (1,), "got int64 of shape"),
    ([[0.1, 0.2]], [{0: 1}, {1: 1}], (1,), "1 queries in the scores but 2 in `relevant`"),
    ([[0.1, 0.2]], [{2: 1}], (1,), "query 0: document 2 is not an index of the 2 documents"),
    ([[0.1, 0.2]], [{"d1": 1}], (1,), "query 0: document 'd1' is not an index"),
    ([[0.1, 0.2]], [{1: 0}], (1,), "query 0, document 1: relevance 0 is not a positive integer"),
    ([[0.1, 0.2]], [{1: 1.5}], (1,), "relevance 1.5 is not a positive integer"),
    ([[0.1, 0.2]], [{}], (1,), "no query has a relevant document"),
    ([[0.1, 0.2]], [{0: 1}], (0, 10), r"ks must be positive integers, got \(0, 10\)"),
    ([[0.1, 0.2], [0.3, float("nan")]], [{0: 1}, {0: 1}], (1,), "query 1 has a NaN score"),
])
def test_retrieval_scores_refuse_bad_input(scores, relevant, ks, message):
    with pytest.raises(ValueError, match=message):
        retrieval_scores(scores, relevant, ks)


CORPUS = [{"_id": "d1", "title": "Paris", "text": "The capital of France. "},
          {"_id": "d2", "title": "", "text": " Berlin is in Germany."},
          {"_id": "d3", "text": "Rome is in Italy."}]
QUERIES = [{"_id": "q1", "text": "capital of France"}, {"_id": "q2", "text": "Germany"},
           {"_id": "q3", "text": "Italy"}, {"_id": "q4", "text": "Spain"}]
QRELS_HEADER = "query-id\tcorpus-id\tscore\n"
QRELS = QRELS_HEADER + "q2\td2\t2\nq2\td1\t1\nq1\td1\t1\nq3\td3\t0\n"


def json_lines(records) -> str:
    return "".join(json.dumps(record) + "\n" for record in records)


def write_set(folder, corpus=json_lines(CORPUS), queries=json_lines(QUERIES), qrels=QRELS, split="test"):
    folder.mkdir(exist_ok=True)
    (folder / "corpus.jsonl").write_text(corpus)
    (folder / "queries.jsonl").write_text(queries)
    (folder / "qrels").mkdir(exist_ok=True)
    (folder / "qrels" / f"{split}.tsv").write_text(qrels)
    return folder


def test_reads_a_set_as_beir_does(tmp_path):
    retrieval_set = read_retrieval_set(write_set(tmp_path))
    assert retrieval_set.document_ids == ["d1", "d2", "d3"]
    assert retrieval_set.documents == ["Paris The capital of France.", "Berlin is in Germany.", "Rome is in Italy."]
    assert retrieval_set.query_ids == ["q1", "q2"]  # q3's only pair scores 0, q4 has none
    assert retrieval_set.queries == ["capital of France", "Germany"]
    assert retrieval_set.relevant == [{0: 1}, {1: 2, 0: 1}]


def test_a_set_read_back_scores_as_its_qrels_say(tmp_path):
    retrieval_set = read_retrieval_set(write_set(tmp_path, split="dev"), split="dev")
    perfect = np.array([[1.0, 0.0, 0.0], [0.5, 1.0, 0.0]])
    assert retrieval_scores(perfect, retrieval_set.relevant)["ndcg@10"] == pytest.approx(100.0)
    reversed_scores = perfect[:, ::-1]  # q1 ranks d3, d2, d1 (the tie broken by the larger index), q2 ranks d2 first
    assert retrieval_scores(reversed_scores, retrieval_set.relevant)["mrr@10"] == pytest.approx(100 * (1 / 3 + 1) / 2)


@pytest.mark.parametrize("files, message", [
    ({"corpus": ""}, r"corpus.jsonl has no documents"),
    ({"queries": ""}, r"queries.jsonl has no queries"),
    ({"corpus": '{"_id": "d1", "text": "a"}\n{"_id": "d2", "text": }\n'}, r"corpus.jsonl, line 2: not a JSON object"),
    ({"corpus": '{"_id": "d1", "text": "a"}\n["d2", "b"]\n'}, r"line 2: expected a JSON object, got list"),
    ({"corpus": '{"_id": "d1", "text": "a"}\n\n{"text": "b"}\n'}, r"corpus.jsonl, line 3: missing key '_id'"),
    ({"corpus": '{"_id": "d1", "title": "a"}\n'}, r"corpus.jsonl, line 1: missing key 'text'"),
    ({"corpus": '{"_id": 1, "text": "a"}\n'}, r"corpus.jsonl, line 1: '_id' must be a string, got int"),
    ({"corpus": '{"_id": "d1", "title": null, "text": "a"}\n'}, r"line 1: 'title' must be a string, got NoneType"),
    ({"corpus": '{"_id": "d1", "text": "a"}\n{"_id": "d1", "text": "b"}\n'}, r"line 2: _id 'd1' is already on line 1"),
    ({"queries": '{"_id": "q1"}\n'}, r"queries.jsonl, line 1: missing key 'text'"),
    ({"qrels": "qid\tdocid\tscore\nq1\td1\t1\n"},
     r"test.tsv, line 1: expected the header query-id<TAB>corpus-id<TAB>score, got qid<TAB>docid<TAB>score"),
    ({"qrels": QRELS_HEADER + "q1\td1\n"}, r"test.tsv, line 2: 2 fields, but the header has 3"),
    ({"qrels": QRELS_HEADER + "q1\td1\t1\nq9\td1\t1\n"}, r"test.tsv, line 3: query 'q9' is not in queries.jsonl"),
    ({"qrels": QRELS_HEADER + "q1\td9\t1\n"}, r"test.tsv, line 2: document 'd9' is not in corpus.jsonl"),
    ({"qrels": QRELS_HEADER + "q1\td1\t0.5\n"}, r"test.tsv, line 2: score '0.5' is not an integer"),
    ({"qrels": QRELS_HEADER + "q1\td1\t0\n"}, r"test.tsv: no query has a relevant document"),
    ({"qrels": ""}, r"test.tsv: the file is empty"),
])
def test_malformed_files_are_errors_naming_file_and_line(tmp_path, files, message):
    write_set(tmp_path, **files)
    with pytest.raises(ValueError, match=message):
        read_retrieval_set(tmp_path)


def test_a_file_that_is_not_utf8_names_its_line(tmp_path):
    write_set(tmp_path)
    (tmp_path / "queries.jsonl").write_bytes(b'{"_id": "q1", "text": "a"}\n{"_id": "q2", "text": "caf\xe9"}\n')
    with pytest.raises(ValueError, match=r"queries.jsonl, line 2, byte offset 53: the file is not UTF-8"):
        read_retrieval_set(tmp_path)


@pytest.mark.parametrize("missing, message", [
    ("corpus.jsonl", r"no corpus.jsonl in the folder \(it has: qrels/, queries.jsonl\)"),
    ("queries.jsonl", r"no queries.jsonl in the folder \(it has: corpus.jsonl, qrels/\)"),
    ("qrels", r"no qrels/ in the folder \(it has: corpus.jsonl, queries.jsonl\)"),
])
def test_missing_files_are_named_with_what_the_folder_has(tmp_path, missing, message):
    write_set(tmp_path)
    if missing == "qrels":
        (tmp_path / "qrels" / "test.tsv").unlink()
        (tmp_path / "qrels").rmdir()
    else:
        (tmp_path / missing).unlink()
    with pytest.raises(FileNotFoundError, match=message):
        read_retrieval_set(tmp_path)


def test_a_split_that_is_not_there_names_the_splits_found(tmp_path):
    write_set(tmp_path, split="dev")
    (tmp_path / "qrels" / "train.tsv").write_text(QRELS)
    with pytest.raises(FileNotFoundError, match=r"qrels: no split 'test' \(splits found: dev, train\)"):
        read_retrieval_set(tmp_path)


def test_a_folder_that_is_not_there(tmp_path):
    with pytest.raises(NotADirectoryError, match=r"nowhere is not a folder"):
        read_retrieval_set(tmp_path / "nowhere")
