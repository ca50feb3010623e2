"""An embedding model scores the same however it is asked: `evaluate` on the directory, on its export (served for
the run) and through a gRPC server; `embed` gives the same vectors from the directory and from its export."""

import json
import re

import keras
import numpy as np
import pytest

import bert_tf
from bert_tf.tasks.spec import TaskSpec
from bert_tf_cli import main
from serving.export.saved_model import export_saved_model
from serving.server.model_server import ModelServer
from tiny_finetune_files import VOCAB, write_vocab

PAIRS = [("good film", "a good film", 4.5), ("the plot was bad", "bad plot", 3.8), ("mary and john", "good film", 0.4),
         ("john was good", "mary was good", 2.6), ("a bad film", "the plot", 1.2), ("mary", "john and mary", 2.0)]


def cli_json(capsys, *argv):
    capsys.readouterr()
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("kind", ["sts", "retrieval"])
def test_evaluate_scores_the_directory_its_export_and_the_served_model_alike(embedder_dir, tmp_path, capsys, kind):
    data = tmp_path / ("dev.tsv" if kind == "sts" else "pairs.tsv")
    if kind == "sts":
        data.write_text("sentence1\tsentence2\tscore\n" + "".join(f"{a}\t{b}\t{s}\n" for a, b, s in PAIRS))
    else:
        data.write_text("anchor\tpositive\n" + "".join(f"{a}\t{b}\n" for a, b, _ in PAIRS))
    local = cli_json(capsys, "evaluate", "--model", str(embedder_dir), "--data", str(data))
    assert ("spearman" if kind == "sts" else "ndcg@10") in local
    version = export_saved_model(embedder_dir, tmp_path / "models", "embed")
    exported = cli_json(capsys, "evaluate", "--model", str(version), "--data", str(data))
    with ModelServer("embed", tmp_path / "models" / "embed", poll_wait_s=0) as server:
        served = cli_json(capsys, "evaluate", "--server", f"127.0.0.1:{server.grpc_port}", "--model", "embed",
                          "--data", str(data))
    for scores in (exported, served):
        assert scores.keys() == local.keys()
        for key, value in local.items():
            assert scores[key] == pytest.approx(value, abs=1e-6), key


def embed_vectors(tmp_path, name, *argv):
    out = tmp_path / f"{name}.npy"
    assert main(["embed", "--in", str(tmp_path / "texts.txt"), "--out", str(out), "--no-progress", *argv]) == 0
    return np.load(out)


@pytest.mark.parametrize("width", [16, 8])  # 8: a distilled student, its projection into its teacher's 16 values
@pytest.mark.slow
def test_embed_gives_the_same_vectors_from_the_directory_and_from_its_export(tmp_path, capsys, width):
    vocab = write_vocab(tmp_path)
    keras.utils.set_random_seed(5)
    encoder = bert_tf.BertModel(bert_tf.BertConfig(vocab_size=len(VOCAB), hidden_size=width, num_hidden_layers=1,
                                                   num_attention_heads=2, intermediate_size=32,
                                                   max_position_embeddings=32, initializer_range=0.5))
    spec = TaskSpec.of("embed", seq_length=16, embedding_size=16)
    directory = bert_tf.save_pretrained(bert_tf.BertEmbedder(encoder, embedding_size=16), tmp_path / "model",
                                        vocab_file=vocab, task=spec)
    (tmp_path / "texts.txt").write_text("".join(f"{a}\n{b}\n" for a, b, _ in PAIRS), encoding="utf-8")
    version = export_saved_model(directory, tmp_path / "models", "embed")
    local = embed_vectors(tmp_path, "local", "--model", str(directory))
    assert local.shape == (2 * len(PAIRS), 16)
    np.testing.assert_allclose(embed_vectors(tmp_path, "exported", "--model", str(version)), local, atol=1e-5)
    for flags, wrong in ((["--pooling", "cls"], "pooling cls"), (["--tokens"], "token vectors"),
                         (["--layer", "0"], r"layers \[0\]")):
        capsys.readouterr()
        assert main(["embed", "--model", str(version), "--out", str(tmp_path / "x.jsonl"), "good film", *flags]) == 2
        [line] = capsys.readouterr().err.strip().splitlines()
        assert re.search(f"exported sentence-embedding model.*{wrong}.*use its model directory", line), line
