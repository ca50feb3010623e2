"""Reranker data: bert-tf mine's rows (with a teacher's scores), labelled pairs, and the lists a reranker is scored on
(BM25's candidates of a BEIR folder, a relevant document outside them never found)."""

import json

import numpy as np
import pytest

from bert_tf.retrieval.retrieval_set import RetrievalSet
from bert_tf.tasks.rerank.data import read_rerank_file
from bert_tf.tasks.rerank.metrics import ranking_scores
from bert_tf.tasks.rerank.ranking import first_stage_candidates, listed_pairs


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_mined_rows_read_as_groups_with_the_teachers_scores(tmp_path):
    rows = [{"query": "q1", "positive": "p1", "negative_1": "n1", "negative_2": "n2", "scores": [0.9, 0.5, 0.1]},
            {"query": "q2", "positive": "p2", "negative_1": "n3", "negative_2": "n4", "scores": [0.8, 0.7, 0.2]}]
    examples = read_rerank_file(_jsonl(tmp_path / "mined.jsonl", rows))
    assert examples.kind == "groups" and examples.queries == ["q1", "q2"]
    assert examples.documents == [("p1", "n1", "n2"), ("p2", "n3", "n4")]
    assert examples.teacher_scores == [(0.9, 0.5, 0.1), (0.8, 0.7, 0.2)] and examples.labels is None
    rows[1]["scores"] = [None, 0.7, 0.2]  # mine's row whose retriever gave the positive no score
    with pytest.raises(ValueError, match=r"mined.jsonl, line 2: scores is null, not a number"):
        read_rerank_file(_jsonl(tmp_path / "mined.jsonl", rows))
    assert read_rerank_file(tmp_path / "mined.jsonl", teacher_scores=False).teacher_scores is None  # other losses


def test_score_columns_of_a_tsv_are_the_teachers_scores(tmp_path):
    path = tmp_path / "triples.tsv"
    path.write_text("query\tpositive\tnegative\tscore_positive\tscore_negative\nq\tp\tn\t3.5\t-1\n")
    examples = read_rerank_file(path)
    assert examples.documents == [("p", "n")] and examples.teacher_scores == [(3.5, -1.0)]


def test_labelled_pairs_and_their_errors(tmp_path):
    path = tmp_path / "pairs.tsv"
    path.write_text("query\tdocument\tlabel\nq\td1\t1\nq\td2\t0.25\n")
    examples = read_rerank_file(path)
    assert examples.kind == "pairs" and examples.documents == [("d1",), ("d2",)] and examples.labels == [1.0, 0.25]
    path.write_text("query\tdocument\tlabel\nq\td1\t1\nq\td2\t2\n")
    with pytest.raises(ValueError, match=r"pairs.tsv, line 3: the label 2 is outside 0 to 1"):
        read_rerank_file(path)
    path.write_text("query\tdocument\nq\td1\n")
    with pytest.raises(ValueError, match=r"pairs \(query, document\) without a label column"):
        read_rerank_file(path)
    assert read_rerank_file(path, need_labels=False).labels is None
    path.write_text("sentence\tlabel\na\t1\n")
    with pytest.raises(ValueError, match=r"no reranking columns among \['sentence', 'label'\]"):
        read_rerank_file(path)


def test_bm25_candidates_keep_a_relevant_document_outside_them_for_the_ideal_ranking():
    documents = ["cats purr", "dogs bark", "cats and dogs", "fish swim"]
    retrieval_set = RetrievalSet(["d0", "d1", "d2", "d3"], documents, ["q0", "q1"], ["cats", "dogs"],
                                 [{0: 1, 3: 1}, {1: 2}])
    data = first_stage_candidates(retrieval_set, top_k=2)
    assert data.queries == ["cats", "cats", "dogs", "dogs"]
    assert set(data.documents[:2]) == {"cats purr", "cats and dogs"} and set(data.documents[2:]) == {"dogs bark",
                                                                                                    "cats and dogs"}
    first = data.documents.index("cats purr")
    assert data.relevant[0] == {first: 1, 2: 1}  # fish swim: not among the candidates, placed after them
    assert data.width == 3 + 100 and np.isneginf(data.first_stage[:, 2:]).all()
    # The reranker puts each query's relevant candidate first: query 0 finds 1 of its 2, query 1 its one.
    scores = [1.0 if document in ("cats purr", "dogs bark") else 0.0 for document in data.documents]
    result = ranking_scores(data, scores)
    ideal_0 = 1 + 1 / np.log2(3)
    assert result["ndcg@10"] == pytest.approx(100 * (1 / ideal_0 + 1) / 2)
    assert result["recall@1"] == pytest.approx(100 * (0.5 + 1) / 2) and result["queries"] == 2


def test_pairs_are_listed_per_query_in_their_order():
    data = listed_pairs(["a", "b", "a"], [("x",), ("y",), ("z",)], [1.0, 0.0, 0.2])
    assert data.rows.tolist() == [0, 1, 0] and data.columns.tolist() == [0, 0, 1]
    assert data.relevant == [{0: 1}, {}] and data.width == 2 + 100
    groups = listed_pairs(["a", "b"], [("p", "n"), ("p2", "n2")], None)
    assert groups.documents == ["p", "n", "p2", "n2"] and groups.relevant == [{0: 1}, {0: 1}]
