"""The task models and the optimizer under `tf.distribute.MirroredStrategy` with 2 logical CPUs,
in one subprocess (logical devices must be configured before TensorFlow runs any op)."""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def mirrored_results():
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE.parent), os.environ.get("PYTHONPATH", "")])}
    checks = ["global_clipnorm", "fused_adamw", "classifier", "token_classifier", "span_labeler"]
    process = subprocess.run(
        [sys.executable, str(HERE / "tiny_tasks.py"), *checks],
        capture_output=True,
        text=True,
        env=environment,
        timeout=300,
    )
    assert process.returncode == 0, process.stderr[-3000:]
    results = {line["name"]: line for line in map(json.loads, process.stdout.strip().splitlines())}
    assert sorted(results) == sorted(checks) and all(result["replicas"] == 2 for result in results.values())
    return results


@pytest.mark.slow
def test_global_clipnorm_clips_the_sum_of_the_replicas_gradients(mirrored_results):
    # [3, 0] + [0, 4] has norm 5 → [0.6, 0.8]; clipping each replica's share would give [1, 1].
    assert mirrored_results["global_clipnorm"]["sum"] == pytest.approx([0.6, 0.8])


@pytest.mark.slow
def test_fused_adamw_under_the_strategy_trains_as_on_one_device(mirrored_results):
    assert mirrored_results["fused_adamw"]["max_difference"] < 1e-5


@pytest.mark.slow
@pytest.mark.parametrize(
    "task, shapes",
    [
        ("classifier", [32, 2]),
        ("token_classifier", [32, 8, 2]),
        ("span_labeler", {"start_logits": [32, 8], "end_logits": [32, 8]}),
    ],
)
def test_task_models_fit_and_predict(mirrored_results, task, shapes):
    assert all(math.isfinite(loss) for loss in mirrored_results[task]["loss"])
    assert mirrored_results[task]["shapes"] == shapes
