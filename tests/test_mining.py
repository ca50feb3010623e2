"""Hard-negative mining: the negatives sentence-transformers' mine_hard_negatives chooses from the same candidates,
and `bert-tf mine` → `bert-tf finetune --task embed` with several negatives and cached in-batch negatives."""

import json

import numpy as np
import pytest

from bert_tf.retrieval.dense import DenseIndex
from bert_tf.retrieval.mining import MiningSettings, mine_hard_negatives, pairs_to_mine
from bert_tf_cli import main

DOCUMENTS = [
    "Vitamin D deficiency is linked to loss of bone density.", "Calcium and vitamin D keep bones strong.",
    "Bone fractures are common in older women.", "Sunlight lets the skin make vitamin D.",
    "Statins lower cholesterol in the blood.", "High cholesterol raises the risk of heart attacks.",
    "Aspirin thins the blood and prevents clots.", "Heart disease is the leading cause of death.",
    "Insulin controls the level of sugar in the blood.", "Type 2 diabetes follows from insulin resistance.",
    "Obesity raises the risk of diabetes.", "Exercise improves the response to insulin.",
    "Antibiotics kill bacteria but not viruses.", "Vaccines train the immune system against viruses.",
    "Measles spreads through the air.", "Hand washing prevents the spread of infections.",
    "Calcium and vitamin D keep bones strong.",  # a repeated text: a candidate once
]
QUERIES = ["Low vitamin D weakens bones.", "Cholesterol drugs prevent heart attacks.",
           "Insulin resistance causes diabetes.", "Vaccines protect against viral disease."]
POSITIVES = [[0], [4, 5], [9], [13]]


@pytest.fixture(scope="module")
def st_model():
    sentence_transformers = pytest.importorskip("sentence_transformers")
    from bert_tf.checkpoints.installed import installed_model_folder

    return sentence_transformers.SentenceTransformer(str(installed_model_folder("all-minilm-l6-v2")), device="cpu")


def their_rows(st_model, **settings) -> list[tuple]:
    """sentence-transformers' n-tuples of (query, positive, negatives) for QUERIES / POSITIVES over DOCUMENTS."""
    from sentence_transformers.util import mine_hard_negatives as theirs

    from benchmarks.in_memory_datasets import Dataset, mining_datasets

    pairs = [(query, DOCUMENTS[index]) for query, group in zip(QUERIES, POSITIVES) for index in group]
    with mining_datasets():
        mined = theirs(Dataset.from_dict({"anchor": [q for q, _ in pairs], "positive": [p for _, p in pairs]}),
                       st_model, corpus=DOCUMENTS, output_format="n-tuple", output_scores=True, verbose=False,
                       **settings)
    negatives = [name for name in mined.column_names if name.startswith("negative_")]
    return [(anchor, positive, *(mined[name][row] for name in negatives), np.round(mined["scores"][row], 4).tolist())
            for row, (anchor, positive) in enumerate(zip(mined["anchor"], mined["positive"]))]


def our_rows(index, **settings) -> list[tuple]:
    rows = mine_hard_negatives(QUERIES, POSITIVES, DOCUMENTS, index, MiningSettings(**settings))
    return [(row.query, row.positive, *row.negatives, np.round(row.scores, 4).tolist()) for row in rows]


SETTINGS = [dict(num_negatives=3), dict(num_negatives=2, range_min=1, relative_margin=0.05),
            dict(num_negatives=2, absolute_margin=0.1, range_max=6), dict(num_negatives=4, max_score=0.5)]


@pytest.mark.parametrize("settings", SETTINGS)
def test_the_negatives_are_those_sentence_transformers_mines_from_the_same_vectors(st_model, settings):
    index = DenseIndex(lambda texts: st_model.encode(texts, convert_to_numpy=True), DOCUMENTS)
    theirs = their_rows(st_model, sampling_strategy="top", **settings)
    ours = our_rows(index, **{"sampling": "top", **settings})
    assert len(ours) >= 3 and ours == theirs  # texts, and the positive's and negatives' scores to 4 decimals


def test_a_bert_tf_model_mines_as_sentence_transformers_with_the_same_weights(st_model):
    from bert_tf.retrieval.dense import model_embedder

    index = DenseIndex(model_embedder("all-minilm-l6-v2"), DOCUMENTS)
    assert our_rows(index, num_negatives=2, relative_margin=0.05) == their_rows(
        st_model, num_negatives=2, relative_margin=0.05, sampling_strategy="top")


class Lexical:
    """A retriever with `search` only (as BM25Index): word overlap."""

    def __init__(self, documents):
        self.documents = [set(text.lower().split()) for text in documents]

    def search(self, queries, top_k):
        scores = np.array([[len(set(query.lower().split()) & words) for words in self.documents] for query in queries],
                          np.float32)
        order = np.argsort(-scores, axis=1, kind="stable")[:, :top_k]
        return order, np.take_along_axis(scores, order, axis=1)


def test_a_retriever_without_pair_scores_mines_without_margins_and_few_documents_pad():
    rows = mine_hard_negatives(QUERIES[:1], [[0]], DOCUMENTS[:4], Lexical(DOCUMENTS[:4]), MiningSettings(num_negatives=2))
    assert [(row.negatives, row.scores) for row in rows] == [
        (["Calcium and vitamin D keep bones strong.", "Sunlight lets the skin make vitamin D."], [2.0, 2.0, 1.0])]
    # (words shared with the query: "vitamin" and "d" with the positive and the first, "vitamin" with the second)
    assert mine_hard_negatives(QUERIES[:1], [[0]], DOCUMENTS[:3], Lexical(DOCUMENTS[:3]),
                               MiningSettings(num_negatives=3)) == []  # two candidates only: no row
    with pytest.raises(ValueError, match="Margins compare each candidate with the positive's score, which Lexical"):
        mine_hard_negatives(QUERIES, POSITIVES, DOCUMENTS, Lexical(DOCUMENTS), MiningSettings(relative_margin=0.05))
    with pytest.raises(ValueError, match="range_max 3 leaves 2 candidates after range_min 1"):
        MiningSettings(num_negatives=3, range_min=1, range_max=3)


def test_mined_rows_train_with_several_negatives_and_cached_in_batch_negatives(tmp_path, embedder_dir, capsys):
    from bert_tf.tasks.embedding.data import read_embedding_file

    folder = tmp_path / "beir"
    (folder / "qrels").mkdir(parents=True)
    words = ["good film", "bad plot", "mary lives in paris", "john works at acme", "the great film",
             "a sad plot", "mary and john", "who lives in london", "the film was nice", "an awful plot"]
    (folder / "corpus.jsonl").write_text("".join(json.dumps({"_id": f"d{i}", "text": text}) + "\n"
                                                 for i, text in enumerate(words)))
    (folder / "queries.jsonl").write_text("".join(json.dumps({"_id": f"q{i}", "text": text}) + "\n"
                                                  for i, text in enumerate(["good", "plot", "mary", "john", "film",
                                                                            "sad", "london", "awful"])))
    (folder / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"q{q}\td{d}\t1\n" for q, d in [(0, 0), (1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (6, 7), (7, 9), (4, 8)]))
    assert pairs_to_mine(folder).positives[4] == [4, 8]
    mined = tmp_path / "mined.jsonl"
    assert main(["mine", "--data", str(folder), "--candidates", str(embedder_dir), "--out", str(mined),
                 "--num-negatives", "3", "--no-progress"]) == 0
    assert "Wrote 9 rows of 3 hard negatives" in capsys.readouterr().out
    rows = [json.loads(line) for line in mined.read_text().splitlines()]
    assert list(rows[0]) == ["query", "positive", "negative_1", "negative_2", "negative_3", "scores"]
    assert all(row["positive"] not in (row["negative_1"], row["negative_2"], row["negative_3"]) for row in rows)
    assert all(row["scores"][1] >= row["scores"][2] >= row["scores"][3] for row in rows)
    examples = read_embedding_file(mined)
    assert examples.kind == "pairs" and {len(texts) for texts in examples.texts} == {5}

    assert main(["finetune", "--task", "embed", "--train", str(mined), "--init", str(embedder_dir),
                 "--out", str(tmp_path / "trained"), "--epochs", "1", "--batch-size", "8", "--mini-batch-size", "3",
                 "--learning-rate", "1e-3", "--seq-length", "16"]) == 0
    history = json.loads((tmp_path / "trained" / "bert_tf.json").read_text())["training"]["history"]
    assert np.isfinite(history["loss"]).all()


def test_bm25_candidates_are_bm25s_best_documents_after_the_positive(tmp_path, capsys):
    """`bert-tf mine --candidates bm25` from the command line: no model, and each row's negatives are bm25s's best
    scored documents for the query (stop words removed, as the index's BM25), the positives and repeats left out."""
    bm25s = pytest.importorskip("bm25s")
    folder = tmp_path / "beir"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps({"_id": f"d{i}", "text": text}) + "\n"
                                                 for i, text in enumerate(DOCUMENTS[:-1])))
    (folder / "queries.jsonl").write_text("".join(json.dumps({"_id": f"q{i}", "text": text}) + "\n"
                                                  for i, text in enumerate(QUERIES)))
    (folder / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"q{q}\td{d}\t1\n" for q, group in enumerate(POSITIVES) for d in group))
    mined = tmp_path / "mined.jsonl"
    assert main(["mine", "--data", str(folder), "--candidates", "bm25", "--out", str(mined), "--num-negatives", "2",
                 "--no-progress"]) == 0
    assert "Wrote 5 rows of 2 hard negatives" in capsys.readouterr().out
    index = bm25s.BM25(k1=1.5, b=0.75)
    index.index(bm25s.tokenize(DOCUMENTS[:-1], stopwords="en", show_progress=False), show_progress=False)
    for row in (json.loads(line) for line in mined.read_text().splitlines()):
        query = QUERIES.index(row["query"])
        scores = index.get_scores(bm25s.tokenize([row["query"]], stopwords="en", return_ids=False,
                                                 show_progress=False)[0])
        order = [d for d in np.argsort(-scores, kind="stable") if d not in POSITIVES[query]]
        assert [row["negative_1"], row["negative_2"]] == [DOCUMENTS[d] for d in order[:2]]
        np.testing.assert_allclose(row["scores"][1:], scores[order[:2]], rtol=1e-4)
