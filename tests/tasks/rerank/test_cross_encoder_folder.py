"""Sentence-transformers' CrossEncoder folders, both ways: a folder it saves reads as a `BertReranker` with the same
scores, and a reranker bert-tf writes reads there with the same scores (both within 1e-5)."""

import json

import numpy as np
import pytest
from tiny_cross_encoder import PAIRS, logits, make_cross_encoder

import bert_tf
from bert_tf.tasks.registry import task_of_folder
from bert_tf.tasks.rerank.cross_encoder_folder import is_cross_encoder_folder
from bert_tf.tasks.rerank.task import RerankTask
from bert_tf.tasks.rerank.model import BertReranker

sentence_transformers = pytest.importorskip("sentence_transformers")


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cross_encoder") / "saved"
    return folder, make_cross_encoder(folder)


def _scores(model, pairs=PAIRS):
    """The reranker's scores of `pairs`: those of one query through `score`, the rest in one `predict`."""
    first = model.score(pairs[0][0], [document for query, document in pairs if query == pairs[0][0]])
    rest = model.predict([pair for pair in pairs if pair[0] != pairs[0][0]], verbose=0)
    return np.concatenate([first, rest])


def test_a_cross_encoder_saved_by_sentence_transformers_reads_as_a_reranker_with_its_scores(saved):
    folder, cross_encoder = saved
    assert (folder / "modules.json").is_file()  # version 6's layout, which a SentenceTransformer's also has
    assert task_of_folder(folder).name == "rerank"
    directory = bert_tf.load_model_directory(folder)
    assert isinstance(directory.model, BertReranker)
    assert directory.task.task == "rerank" and directory.task.seq_length == 48
    expected = logits(cross_encoder)
    assert np.ptp(expected) > 0.05  # the pairs' scores differ, so equal scores say something
    np.testing.assert_allclose(_scores(directory.model), expected, atol=1e-5)


@pytest.mark.slow
def test_a_reranker_written_by_bert_tf_reads_in_sentence_transformers_with_the_same_scores(saved, tmp_path):
    folder, _ = saved
    model = bert_tf.load_model_directory(folder).model
    out = RerankTask.folder_format.write(model, tmp_path / "written", seq_length=40)
    config = json.loads((out / "config.json").read_text())
    assert config["architectures"] == ["BertForSequenceClassification"] and config["id2label"] == {"0": "LABEL_0"}
    assert is_cross_encoder_folder(out)
    theirs = sentence_transformers.CrossEncoder(str(out), device="cpu")
    assert theirs.max_length == 40 and type(theirs.activation_fn).__name__ == "Sigmoid"
    ours = _scores(model)
    np.testing.assert_allclose(logits(theirs), ours, atol=1e-5)
    probabilities = theirs.predict(PAIRS, convert_to_numpy=True)  # its default: the sigmoid of the scores
    np.testing.assert_allclose(probabilities, 1 / (1 + np.exp(-ours)), atol=1e-5)


def test_a_plain_transformers_folder_of_one_label_is_not_taken_for_a_cross_encoder(saved):
    folder, _ = saved
    assert not is_cross_encoder_folder(folder.parent / f"{folder.name}_base")
