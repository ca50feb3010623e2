"""`finetune --task rerank`: a tiny reranker trained on mined groups, scored after each epoch by reranking BM25's top
candidates of a BEIR folder written here (the best epoch kept), saved with only its task's settings, loaded with the
same scores; its options come from its settings, and a loss without the data it needs is refused in one line."""

import json

import numpy as np
import pytest
import tensorflow as tf
from tiny_finetune_files import write_bert_config, write_vocab

import bert_tf
from bert_tf.tasks.rerank.model import BertReranker
from bert_tf.training.finetune import evaluate, finetune
from bert_tf.training.finetune_config import FinetuneConfig
from bert_tf_cli import main

CORPUS = {"d1": "mary lives in paris .", "d2": "john works at acme .", "d3": "acme is in london .",
          "d4": "john lives in berlin .", "d5": "the film was good", "d6": "mary works at acme in paris ."}
QUERIES = {"q1": "who lives in paris ?", "q2": "where is acme ?", "q3": "where does john work ?"}
QRELS = {"q1": "d1", "q2": "d3", "q3": "d2"}
GROUPS = [("who lives in paris ?", "mary lives in paris .", "john lives in berlin .", "mary works at acme in paris ."),
          ("where is acme ?", "acme is in london .", "john works at acme .", "the film was good"),
          ("where does john work ?", "john works at acme .", "john lives in berlin .", "acme is in london ."),
          ("who lives in london ?", "john lives in london .", "mary lives in paris .", "acme is in london .")]


def write_beir(folder):
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps({"_id": key, "title": "", "text": text}) + "\n"
                                                 for key, text in CORPUS.items()))
    (folder / "queries.jsonl").write_text("".join(json.dumps({"_id": key, "text": text}) + "\n"
                                                  for key, text in QUERIES.items()))
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{query}\t{document}\t1\n" for query, document in QRELS.items()))
    return folder


def write_groups(path, copies=2, scores=True):
    rows = [{"query": query, "positive": positive, "negative_1": first, "negative_2": second,
             **({"scores": [3.0, 1.0, 0.5]} if scores else {})} for query, positive, first, second in GROUPS * copies]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def config(base, **changes):
    fields = dict(task="rerank", train_file=str(write_groups(base / "train.jsonl")), dev_file=str(base / "beir"),
                  init=str(write_bert_config(base)), vocab_file=str(write_vocab(base)), output_dir=str(base / "model"),
                  seq_length=32, batch_size=4, epochs=2, learning_rate=2e-3, settings={"rerank_top_k": 4})
    return FinetuneConfig(**{**fields, **changes})


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    base = tmp_path_factory.mktemp("rerank")
    write_beir(base / "beir")
    run = config(base)
    return base, finetune(run, progress=False)


def test_the_dev_set_is_scored_after_each_epoch_and_the_best_epoch_kept(trained):
    base, result = trained
    epochs = result.history["val_ndcg@10"]
    assert len(epochs) == 2 and result.best_epoch == int(np.argmax(epochs)) + 1
    assert result.metrics["ndcg@10"] == max(epochs) and result.metrics["queries"] == 3
    assert "first_stage_ndcg@10" in result.metrics  # BM25's own order, reported beside
    # The saved model is the best epoch's: scoring the dev folder again gives its numbers.
    _, scores = evaluate(base / "model", base / "beir", progress=False)
    assert scores["ndcg@10"] == pytest.approx(result.metrics["ndcg@10"], abs=1e-4)


def test_the_model_directory_holds_only_the_rerank_settings_and_scores_as_trained(trained):
    base, result = trained
    task = json.loads((base / "model" / "bert_tf.json").read_text())["task"]
    assert task["task"] == "rerank"
    assert task["settings"] == {"loss": "listwise", "listwise_scale": 10.0, "listwise_sigmoid": True,
                                "rerank_top_k": 4, "dev_split": "test"}
    model = bert_tf.load_model_directory(base / "model").model
    assert isinstance(model, BertReranker)
    documents = list(CORPUS.values())
    scores = model.score("who lives in paris ?", documents)
    ids = model.text_preprocessor()([tf.constant(["who lives in paris ?"] * len(documents)), tf.constant(documents)])
    np.testing.assert_allclose(scores, result.model(ids), atol=1e-5)  # the trained model's, on the same ids
    ranked = model.rerank("who lives in paris ?", documents, top_k=3)
    assert [hit["corpus_id"] for hit in ranked] == np.argsort(-scores, kind="stable")[:3].tolist()
    assert [hit["score"] for hit in ranked] == pytest.approx(np.sort(scores)[::-1][:3].tolist())


def test_a_loss_without_its_data_is_refused_in_one_line(tmp_path):
    write_beir(tmp_path / "beir")
    write_groups(tmp_path / "no_scores.jsonl", scores=False)
    with pytest.raises(ValueError, match="The margin_mse loss needs a teacher's scores of each document"):
        finetune(config(tmp_path, train_file=str(tmp_path / "no_scores.jsonl"), settings={"loss": "margin_mse"}),
                 progress=False)
    (tmp_path / "pairs.tsv").write_text("query\tdocument\tlabel\nwho ?\tmary\t1\n")
    with pytest.raises(ValueError, match="holds labelled pairs: use --loss bce"):
        finetune(config(tmp_path, train_file=str(tmp_path / "pairs.tsv"), overwrite=True), progress=False)


def test_the_command_line_takes_the_rerank_options(capsys):
    with pytest.raises(SystemExit):
        main(["finetune", "--task", "rerank", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "the rerank task's own settings (--task rerank)" in help_text
    assert "--loss {listwise,bce,margin_mse}" in help_text
    assert "--rerank-top-k K dev: BM25's top K of each query reranked (default: 100)" in help_text
