"""The checks every fine-tuning task runs (as KerasHub's `run_task_test`): registry, save and load, raw strings in,
the SavedModel against the Keras model, the distillation term, Hugging Face both ways, reports.

Each task's model directory is the small one of `tests/fixtures/previous_layout/` (random weights, spread out so
that outputs differ); a new task adds its directory and its example inputs there and runs the same checks.
"""

import json
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

import bert_tf
from bert_tf.distillation import soft_target_loss
from bert_tf.tasks.registry import FINETUNED_TASKS, TASKS, task_from_directory, task_named, task_of_model
from bert_tf.tasks.spec import TASKS as SPEC_TASKS
from serving.export.saved_model import export_saved_model

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "previous_layout"
INPUTS = json.loads((FIXTURES / "expected.json").read_text())["inputs"]


def text_inputs(task: str) -> list[list[str]]:
    """The fixture's texts of `task`, one list per text input of its model (`TaskSpec.text_inputs`)."""
    names = {"text": "texts", "question": "questions", "context": "contexts"}
    spec = bert_tf.load_model_directory(FIXTURES / task).task
    return [INPUTS[task][names[name]] for name in spec.text_inputs]


def input_fields(directory) -> list[dict]:
    """The fixture's examples as input fields (`FinetuneTask.examples_from_inputs`)."""
    columns = text_inputs(directory.task.task)
    return [dict(zip(directory.task.text_inputs, example)) for example in zip(*columns)]


@pytest.fixture(scope="module", params=FINETUNED_TASKS)
def directory(request):
    return bert_tf.load_model_directory(FIXTURES / request.param)


def test_the_registry_knows_every_task_a_spec_may_name():
    assert sorted(TASKS) == sorted(SPEC_TASKS)
    assert set(FINETUNED_TASKS) == {"classify", "ner", "squad"}
    with pytest.raises(ValueError, match="Unknown task 'tagging'; use one of"):
        task_named("tagging")


def test_a_model_is_looked_up_by_its_class(directory):
    task = task_of_model(directory.model)
    assert task.name == directory.task.task
    assert task_of_model(directory.encoder).name == "encoder"
    assert task_from_directory(directory).name == task.name


def test_save_and_load_keep_the_outputs(directory, tmp_path):
    ids = directory.model.text_preprocessor()([tf.constant(texts) for texts in text_inputs(directory.task.task)])
    saved = bert_tf.save_pretrained(directory.model, tmp_path / "model", vocab_file=directory.vocab_file,
                                    task=directory.task)
    loaded = bert_tf.load_model_directory(saved)
    assert loaded.task == directory.task
    tf.nest.map_structure(lambda mine, theirs: np.testing.assert_allclose(mine, theirs, atol=1e-6),
                          loaded.model(ids), directory.model(ids))


def test_raw_strings_in_predict_as_token_ids_do(directory):
    texts = text_inputs(directory.task.task)
    model = directory.model
    ids = model.text_preprocessor()([tf.constant(column) for column in texts])
    expected = model.probabilities(tf.nest.map_structure(np.asarray, model(ids)))
    predicted = model.predict(texts[0] if len(texts) == 1 else tuple(texts), verbose=0)
    tf.nest.map_structure(lambda mine, theirs: np.testing.assert_allclose(mine, theirs, atol=1e-5),
                          predicted, expected)


def test_the_saved_model_answers_as_the_keras_model(directory, tmp_path):
    task = task_of_model(directory.model)
    version = export_saved_model(directory.path, tmp_path, "model")
    served = tf.saved_model.load(str(version)).signatures["serving_default"]
    texts = [tf.constant(column) for column in text_inputs(directory.task.task)]
    local = task.text_serving(directory.model, directory.task, directory.tokenizer()).outputs(texts)
    answered = served(**dict(zip(directory.task.text_inputs, texts)))
    assert sorted(answered) == sorted(local)
    for name, value in local.items():
        if value.dtype == tf.string:
            assert answered[name].numpy().tolist() == value.numpy().tolist(), name
        else:
            np.testing.assert_allclose(answered[name].numpy(), value.numpy(), atol=1e-5, err_msg=name)


def test_a_student_equal_to_its_teacher_has_no_soft_target_loss(directory):
    task = task_from_directory(directory)
    data = task.prepare(task.examples_from_inputs(input_fields(directory)), training=False)
    features = next(iter(task.training_batches(data, batch_size=4, bucketing=False, seed=0)))
    ids, labels = features if isinstance(features, tuple) else (features, None)
    outputs = directory.model(ids)
    other = tf.nest.map_structure(lambda value: value + tf.random.normal(tf.shape(value)), outputs)
    if labels is None:  # squad's prediction batches have no labels; its term reads none
        labels = tf.zeros_like(ids["input_word_ids"])
    same = soft_target_loss(directory.model, outputs, outputs, labels, temperature=2.0)
    different = soft_target_loss(directory.model, outputs, other, labels, temperature=2.0)
    assert abs(float(same)) < 1e-6
    assert float(different) > 1e-3


def test_hugging_face_format_both_ways_keeps_the_model(directory, tmp_path):
    bert_tf.write_hf_task_model(directory.model, tmp_path / "hf", vocab_file=directory.vocab_file,
                                lower_case=directory.lower_case, task=directory.task)
    architecture = json.loads((tmp_path / "hf" / "config.json").read_text())["architectures"]
    assert architecture == [task_of_model(directory.model).hf_architecture]
    read = bert_tf.read_hf_task_model(tmp_path / "hf")
    assert type(read) is type(directory.model)
    ids = directory.model.text_preprocessor()([tf.constant(texts) for texts in text_inputs(directory.task.task)])
    tf.nest.map_structure(lambda mine, theirs: np.testing.assert_allclose(mine, theirs, atol=1e-5),
                          read(ids), directory.model(ids))


def test_predictions_print_one_line_or_more_each(directory):
    task = task_from_directory(directory)
    inputs = input_fields(directory)
    results = task.predict(directory.model, task.prepare(task.examples_from_inputs(inputs), training=False), 4)
    lines = task.prediction_lines(inputs, results)
    assert len(lines) >= len(inputs) and all(isinstance(line, str) and line for line in lines)
