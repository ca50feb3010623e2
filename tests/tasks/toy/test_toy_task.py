"""A task defined in the test tree (`toy`: text → a score, with its own settings, model and metrics) is added through
the registry alone, and then fine-tunes, saves, loads, predicts, exports and is served like the built-in tasks."""

import dataclasses
import json

import numpy as np
import pytest
import tensorflow as tf
from tiny_finetune_files import write_bert_config, write_vocab
from toy.task import ToyTask

import bert_tf
from bert_tf.prediction import Predictor
from bert_tf.tasks import registry
from bert_tf.tasks.settings import SETTINGS_CLASSES, TaskSettings
from bert_tf.training.finetune import finetune
from bert_tf.training.finetune_config import FinetuneConfig
from bert_tf_cli import main
from serving.client.grpc_client import GrpcClient
from serving.export.saved_model import export_saved_model
from serving.server.model_server import ModelServer

TEXTS = ["the film was great", "a dull plot", "great acting", "the plot was dull", "a great film", "dull"]
SCORES = [1.0, 0.0, 1.0, 0.0, 1.0, 0.0]


@pytest.fixture(scope="module")
def toy_registered():
    """The toy task registered for this module's tests, the registry as it was afterwards."""
    saved = [dict(table) for table in (registry.TASKS, registry.FOLDER_FORMATS, SETTINGS_CLASSES)]
    registry.register_task(ToyTask)
    yield ToyTask
    for table, before in zip((registry.TASKS, registry.FOLDER_FORMATS, SETTINGS_CLASSES), saved):
        table.clear()
        table.update(before)


@pytest.fixture(scope="module")
def model_dir(toy_registered, tmp_path_factory):
    base = tmp_path_factory.mktemp("toy")
    data = base / "train.tsv"
    data.write_text("".join(f"{text}\t{score}\n" for text, score in zip(TEXTS, SCORES)))
    config = FinetuneConfig(task="toy", train_file=str(data), dev_file=str(data), init=str(write_bert_config(base)),
                            vocab_file=str(write_vocab(base)), output_dir=str(base / "model"), seq_length=16,
                            batch_size=3, epochs=2, learning_rate=1e-3, settings={"offset": 0.5, "loss": "mae"})
    result = finetune(config, progress=False)
    assert result.epochs_run == 2 and set(result.metrics) == {"neg_mae", "examples"}
    return base / "model"


def test_registering_a_task_adds_it_everywhere_and_a_taken_name_is_an_error(toy_registered):
    assert registry.task_named("toy") is ToyTask and "toy" in registry.finetuned_tasks()
    assert registry.register_task(ToyTask) is ToyTask  # the same class again: nothing changes
    other = type("OtherToy", (ToyTask,), {})
    with pytest.raises(ValueError, match="The task name 'toy' is taken by ToyTask"):
        registry.register_task(other)
    clashing = dataclasses.make_dataclass("Clashing", [("truncation", str, "none")], bases=(TaskSettings,), frozen=True)
    with pytest.raises(ValueError, match=r"Clashing names \['truncation'\], which every task's TaskSpec has already"):
        registry.register_task(type("ClashTask", (ToyTask,), {"name": "clash", "settings_class": clashing}))
    assert "clash" not in registry.TASKS
    with pytest.raises(ValueError, match=r"\['doc_stride'\] are not settings of task 'toy'"):
        FinetuneConfig(task="toy", train_file="t", output_dir="o", init="tiny", settings={"doc_stride": 8})


def test_the_model_directory_records_only_the_toy_settings(model_dir):
    task = json.loads((model_dir / "bert_tf.json").read_text())["task"]
    assert task["task"] == "toy" and task["settings"] == {"offset": 0.5, "loss": "mae"}
    assert set(task) == {"task", "seq_length", "label_names", "max_text_bytes", "text_pair", "truncation", "settings"}


def test_loaded_predictions_are_the_model_outputs_with_the_saved_offset(model_dir):
    directory = bert_tf.load_model_directory(model_dir)
    assert directory.task.offset == 0.5
    predictions = Predictor(model_dir).predict([{"text": text} for text in TEXTS])
    ids = directory.model.text_preprocessor()([tf.constant(TEXTS)])
    expected = directory.model(ids).numpy() + 0.5
    np.testing.assert_allclose([prediction["score"] for prediction in predictions], expected, atol=1e-5)


def test_the_export_is_served_with_the_same_scores(model_dir, tmp_path):
    expected = [prediction["score"] for prediction in Predictor(model_dir).predict([{"text": t} for t in TEXTS])]
    assert export_saved_model(model_dir, tmp_path, "toy") == tmp_path / "toy" / "1"
    with ModelServer("toy", tmp_path / "toy", poll_wait_s=0) as server:
        with GrpcClient(f"127.0.0.1:{server.grpc_port}", model_name="toy", timeout_s=30) as client:
            answer = client.predict({"text": TEXTS})
    np.testing.assert_allclose(answer["score"], expected, atol=1e-5)


def test_the_command_line_takes_the_toy_task_options(toy_registered, capsys):
    with pytest.raises(SystemExit):
        main(["finetune", "--task", "toy", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "the toy task's own settings (--task toy)" in help_text
    assert "--offset OFFSET added to every predicted score (default: 0.0)" in help_text
    assert "--toy-loss {mse,mae}" in help_text
