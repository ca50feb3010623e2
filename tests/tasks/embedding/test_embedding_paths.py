"""An embedding model scores the same however it is asked: `evaluate` on the directory, on its export (served for
the run) and through a gRPC server."""

import json

import pytest

from bert_tf_cli import main
from serving.export.saved_model import export_saved_model
from serving.server.model_server import ModelServer

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
