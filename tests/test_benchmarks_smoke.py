"""Smoke test of the benchmark suite (`python -m benchmarks.run --quick`): the code runs and writes its results.

It measures nothing: speed figures come from `python -m benchmarks.run` (benchmarks/RESULTS.md), never from tests.
"""

import json

import pytest

import bert_tf
from benchmarks import run as benchmark_suite
from benchmarks.inference import OURS_PROJECTIONS, encoder_gflops
from benchmarks.report import portable_command, replace_section


def test_a_section_is_replaced_and_the_others_are_kept():
    text = "# Benchmark results\n\n## Written by another script\n\nkept\n"
    first = replace_section(text, "inference", "## Encoder inference\n\nfirst run")
    second = replace_section(first, "inference", "## Encoder inference\n\nsecond run")
    assert second.startswith(text.rstrip("\n"))
    assert "second run" in second and "first run" not in second and second.count("## Encoder inference") == 1


@pytest.mark.slow
def test_quick_inference_benchmark_writes_its_section_and_json(tmp_path):
    assert benchmark_suite.main(["--quick", "--only", "inference", "--output-dir", str(tmp_path)]) == 0
    results = (tmp_path / "RESULTS.md").read_text(encoding="utf-8")
    assert "## Encoder inference" in results and "Machine: " in results and "| batch | contender |" in results
    data = json.loads((tmp_path / "results" / "inference.json").read_text(encoding="utf-8"))
    assert data["quick"] and data["command"] == portable_command(
        ["python", "-m", "benchmarks.run", "--quick", "--only", "inference", "--output-dir", str(tmp_path)])
    assert data["machine"]["cpu_model"] and data["machine"]["versions"]["tensorflow"]
    assert set(data["results"]) == {"1", "2"} == set(data["peak_same_rounds"])
    for batch, timings in data["results"].items():
        assert all(len(timing["seconds"]) == 2 for timing in timings.values())
        # The sweep's fastest chain is timed again with the models, and the shares divide by it.
        assert data["peak_chain"] in timings
        assert data["peak_same_rounds"][batch]["best"] == timings[data["peak_chain"]]["max_per_s"] > 0
        assert timings[OURS_PROJECTIONS]["max_per_s"] > 0
    assert "ceiling, bert_tf's dense products alone" in (tmp_path / "RESULTS.md").read_text(encoding="utf-8")


def test_the_ceiling_counts_every_dense_product_of_the_blocks_and_nothing_else():
    config = bert_tf.BertConfig.preset("tiny", vocab_size=100)
    kernels = [weight for block in bert_tf.BertModel(config).blocks for weight in block.weights
               if weight.name == "kernel"]
    assert len(kernels) == 6 * config.num_hidden_layers
    seq_length = 16
    dense_flops = sum(2 * seq_length * kernel.shape[0] * kernel.shape[1] for kernel in kernels)
    assert encoder_gflops(config, seq_length, attention_core=False) == pytest.approx(dense_flops / 1e9)
    attention_core = config.num_hidden_layers * 2 * (2 * seq_length**2 * config.hidden_size)
    pooler = 2 * config.hidden_size**2
    assert encoder_gflops(config, seq_length) == pytest.approx((dense_flops + attention_core + pooler) / 1e9)


@pytest.mark.slow  # 75 s on 2 cores: every technique is swapped in and timed
def test_quick_techniques_benchmark_times_every_variant_and_restores_the_originals(tmp_path):
    from benchmarks.techniques import DEFAULT, INFERENCE_ONLY, KERAS_DENSE_BIAS, KERAS_LAYER_NORM, PADDED_GRID, REPLACEMENTS

    originals = [getattr(owner, attribute) for patches in REPLACEMENTS.values() for owner, attribute, _ in patches]
    assert benchmark_suite.main(["--quick", "--only", "techniques", "--output-dir", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "results" / "techniques.json").read_text(encoding="utf-8"))
    assert set(data["pretraining"]) == ({DEFAULT, *REPLACEMENTS, "keras.optimizers.AdamW", "whole step with XLA"}
                                        - set(INFERENCE_ONLY))
    assert set(data["inference"]) == {DEFAULT, "attention as einsums", KERAS_DENSE_BIAS, KERAS_LAYER_NORM}
    assert set(data["classifier"]) == {DEFAULT, PADDED_GRID, "whole last block"}
    assert [set(timings) for timings in data["token_classifier"].values()] == [{DEFAULT, PADDED_GRID}] * 2
    assert all(timing["median_per_s"] > 0 for timing in [*data["pretraining"].values(), *data["classifier"].values()])
    restored = [getattr(owner, attribute) for patches in REPLACEMENTS.values() for owner, attribute, _ in patches]
    assert all(now is then for now, then in zip(restored, originals))


def test_serving_load_writes_the_direct_call_and_one_row_per_transport(tmp_path):
    from benchmarks import serving_load

    results_md = tmp_path / "RESULTS.md"
    argv = ["--modes", "rest-new", "grpc-kept", "--clients", "2", "--requests", "4", "--rounds", "2", "--warmup", "1",
            "--results", str(results_md)]
    assert serving_load.main(argv) == 0
    assert "| direct call (in process) | 4 | 0 |" in results_md.read_text(encoding="utf-8")
    rows = json.loads((tmp_path / "results" / "serving_load.json").read_text(encoding="utf-8"))["rows"]
    assert [(row["transport"], row["connections"], row["clients"]) for row in rows] == [
        ("direct", "", 1), ("rest", "new", 2), ("grpc", "kept", 2)]
    assert all(row["requests"] == 4 and row["errors"] == 0 and row["requests_per_s"] > 0 for row in rows)


def test_serving_load_gives_each_request_the_deadline_it_is_told(tmp_path):
    import grpc

    from benchmarks import serving_load

    argv = ["--modes", "grpc-kept", "--clients", "1", "--requests", "2", "--rounds", "1", "--warmup", "1",
            "--timeout_s", "0.000001", "--results", str(tmp_path / "RESULTS.md")]
    with pytest.raises((TimeoutError, grpc.RpcError)) as raised:  # the warm-up's first request, past its deadline
        serving_load.main(argv)
    assert not isinstance(raised.value, grpc.RpcError) or raised.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert not (tmp_path / "RESULTS.md").exists()


@pytest.mark.slow
def test_serving_load_of_a_preset_with_batching_has_its_own_section_and_the_target_line(tmp_path):
    from benchmarks import serving_load
    from benchmarks.settings import Settings

    if not Settings().vocab_file.exists():
        pytest.skip("the team's vocabulary is absent")
    sentences = tmp_path / "dev.tsv"
    sentences.write_text("a fine day\t1\nthe film was long and dull\t0\n", encoding="utf-8")
    results_md = tmp_path / "RESULTS.md"
    argv = ["--preset", "tiny", "--sentences", str(sentences), "--modes", "grpc-kept", "inprocess-kept", "--clients", "64",
            "--requests", "4", "--rounds", "1", "--warmup", "1", "--enable_batching", "--results", str(results_md)]
    assert serving_load.main(argv) == 0
    text = results_md.read_text(encoding="utf-8")
    assert "BERT-tiny classifier" in text and "server batching on (TF Serving defaults)" in text
    assert "- Target, gRPC, kept alive, 64 clients: " in text
    rows = json.loads((tmp_path / "results" / "serving_load_tiny_none_batching.json").read_text("utf-8"))["rows"]
    assert [(row["transport"], row["errors"]) for row in rows] == [("direct", 0), ("grpc", 0), ("inprocess", 0)]


def test_learning_rates_records_accuracy_majority_share_and_the_collapse_warning(tmp_path):
    from benchmarks import learning_rates
    from tiny_finetune_files import write_sentiment_tsv, write_vocab

    results_md = tmp_path / "RESULTS.md"
    argv = ["--presets", "tiny", "--rates", "1e-3", "--train", str(write_sentiment_tsv(tmp_path / "train.tsv", 32, 0)),
            "--dev", str(write_sentiment_tsv(tmp_path / "dev.tsv", 8, 1)), "--vocab", str(write_vocab(tmp_path)),
            "--examples", "24", "--epochs", "1", "--batch-size", "8", "--seq-length", "16",
            "--work", str(tmp_path / "work"), "--results", str(results_md)]
    assert learning_rates.main(argv) == 0
    assert "## Learning rates by model size" in results_md.read_text(encoding="utf-8")
    data = json.loads((tmp_path / "results" / "learning_rates.json").read_text(encoding="utf-8"))
    run = data["results"]["tiny/0.001"]
    assert run["train_examples"] == 24 and run["dev_examples"] == 8 and 0 <= run["dev_accuracy"] <= 1
    assert 0.5 <= run["majority_share"] <= 1 and run["collapse_warning"] == (run["majority_share"] == 1.0)


def test_learning_rates_skips_without_the_data(tmp_path, capsys):
    from benchmarks import learning_rates

    results_md = tmp_path / "RESULTS.md"
    assert learning_rates.main(["--train", str(tmp_path / "absent.tsv"), "--results", str(results_md)]) == 0
    assert "skipped" in capsys.readouterr().out and not results_md.exists()
