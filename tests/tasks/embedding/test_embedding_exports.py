"""A sentence-embedding model's exports: a Matryoshka cut (`--dims`), and what other models refuse."""

import numpy as np
import pytest
import tensorflow as tf

import bert_tf
from bert_tf_cli import main

TEXTS = ["good film", "the plot was bad", "mary and john"]


def test_dims_cuts_the_served_vectors_to_their_first_values_renormalised(embedder_dir, tmp_path, capsys):
    assert main(["export", "--model", str(embedder_dir), "--out", str(tmp_path), "--name", "cut", "--dims", "8"]) == 0
    loaded = tf.saved_model.load(str(tmp_path / "cut" / "1"))
    served = loaded.signatures["serving_default"](text=tf.constant(TEXTS))["embedding"].numpy()
    whole = bert_tf.load_model_directory(embedder_dir).model.predict(TEXTS, verbose=0)
    cut = whole[:, :8] / np.linalg.norm(whole[:, :8], axis=-1, keepdims=True)
    np.testing.assert_allclose(served, cut, atol=1e-5)
    assert int(loaded.signatures["model_info"](request=tf.constant([""]))["embedding_size"][0]) == 8


def test_dims_is_refused_where_it_cannot_apply(embedder_dir, tmp_path):
    from serving.export.saved_model import export_saved_model

    with pytest.raises(ValueError, match="embedding_dims 64 is more than the model's 16 values"):
        export_saved_model(embedder_dir, tmp_path, "wide", embedding_dims=64)
    demo = bert_tf.BertClassifier(bert_tf.load_model_directory(embedder_dir).encoder, num_classes=2)
    classifier = bert_tf.save_pretrained(demo, tmp_path / "classifier", vocab_file=embedder_dir / "vocab.txt",
                                         seq_length=16)
    with pytest.raises(ValueError, match="embedding_dims cuts sentence vectors; a classify model makes none"):
        export_saved_model(classifier, tmp_path, "classifier", embedding_dims=8)
