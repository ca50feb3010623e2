"""The checks every fine-tuning task runs (as KerasHub's `run_task_test`): registry, save and load, raw strings in,
the SavedModel against the Keras model, the distillation term, Hugging Face both ways, printing.

Each task gets a small model directory built through the registry (`directory`); a new task adds its settings to
`SETTINGS` and runs the same checks.
"""

import json
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

import bert_tf
from bert_tf.distillation import soft_target_loss
from bert_tf.tasks.registry import TASKS, finetuned_tasks, task_from_directory, task_from_spec, task_named
from bert_tf.tasks.registry import task_of_model
from bert_tf.tasks.settings import SETTINGS_CLASSES
from bert_tf.tasks.spec import TaskSpec
from serving.export.saved_model import export_saved_model

VOCAB = Path(__file__).resolve().parents[1] / "fixtures" / "previous_layout" / "vocab.txt"
# Each task's settings for a small model, and the texts of its inputs (`TaskSpec.text_inputs`); a new task adds its own.
SETTINGS = {"classify": dict(label_names=("negative", "positive")), "ner": dict(label_names=("B-PER", "I-PER", "O")),
            "squad": dict(max_query_length=8, doc_stride=8), "embed": dict(pooling="mean"),
            "rerank": dict(rerank_top_k=10)}
TEXTS = {"text": ["mary lives in paris .", "the plot is dull", "a fine film"],
         "question": ["where does mary live ?", "who lives in paris ?", "where is the city ?"],
         "context": ["mary lives in new york city , the city .", "mary lives in paris .", "the city is paris ."],
         "query": ["where does mary live ?", "who lives in paris ?", "where does mary live ?"],
         "document": ["mary lives in paris .", "the plot is dull", "a fine film"]}


def text_inputs(spec) -> list[list[str]]:
    """The texts of `spec`'s inputs, one list per text input (`TaskSpec.text_inputs`)."""
    return [TEXTS[name] for name in spec.text_inputs]


def input_fields(directory) -> list[dict]:
    """The examples as input fields (`FinetuneTask.examples_from_inputs`)."""
    return [dict(zip(directory.task.text_inputs, example)) for example in zip(*text_inputs(directory.task))]


@pytest.fixture(scope="module", params=finetuned_tasks())
def directory(request, tmp_path_factory):
    """A model directory of the task: a 1-layer encoder of width 8, random weights spread out so outputs differ."""
    keras.utils.set_random_seed(7)
    config = bert_tf.BertConfig(vocab_size=len(VOCAB.read_text().split()), hidden_size=8, num_hidden_layers=1,
                                num_attention_heads=2, intermediate_size=16, max_position_embeddings=32,
                                hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, initializer_range=0.5)
    spec = TaskSpec.of(request.param, seq_length=32, **SETTINGS[request.param])
    model = task_from_spec(spec, bert_tf.BertTokenizer(VOCAB)).build_model(bert_tf.BertModel(config), dropout=0.0)
    path = bert_tf.save_pretrained(model, tmp_path_factory.mktemp(request.param) / "model", vocab_file=VOCAB, task=spec)
    return bert_tf.load_model_directory(path)


def test_the_registry_knows_every_task_a_spec_may_name():
    assert sorted(TASKS) == sorted(SETTINGS_CLASSES)
    assert set(finetuned_tasks()) == set(SETTINGS)
    with pytest.raises(ValueError, match="Unknown task 'tagging'; use one of"):
        task_named("tagging")


def test_a_model_is_looked_up_by_its_class(directory):
    task = task_of_model(directory.model)
    assert task.name == directory.task.task
    assert task_of_model(directory.encoder).name == "encoder"
    assert task_from_directory(directory).name == task.name


def test_save_and_load_keep_the_outputs(directory, tmp_path):
    ids = directory.model.text_preprocessor()([tf.constant(texts) for texts in text_inputs(directory.task)])
    saved = bert_tf.save_pretrained(directory.model, tmp_path / "model", vocab_file=directory.vocab_file,
                                    task=directory.task)
    loaded = bert_tf.load_model_directory(saved)
    assert loaded.task == directory.task
    tf.nest.map_structure(lambda mine, theirs: np.testing.assert_allclose(mine, theirs, atol=1e-6),
                          loaded.model(ids), directory.model(ids))


def test_raw_strings_in_predict_as_token_ids_do(directory):
    texts = text_inputs(directory.task)
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
    specs = task.text_serving_class.input_specs(directory.task)  # a reranker's documents: [batch, documents]
    texts = [tf.constant(column if spec.shape.rank == 1 else [[text] for text in column])
             for column, spec in zip(text_inputs(directory.task), specs)]
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
    if not task_of_model(directory.model).hf_architecture:
        pytest.skip(f"the {directory.task.task} task has no transformers task class")
    bert_tf.write_hf_task_model(directory.model, tmp_path / "hf", vocab_file=directory.vocab_file,
                                lower_case=directory.lower_case, task=directory.task)
    architecture = json.loads((tmp_path / "hf" / "config.json").read_text())["architectures"]
    assert architecture == [task_of_model(directory.model).hf_architecture]
    read = bert_tf.read_hf_task_model(tmp_path / "hf")
    assert type(read) is type(directory.model)
    ids = directory.model.text_preprocessor()([tf.constant(texts) for texts in text_inputs(directory.task)])
    tf.nest.map_structure(lambda mine, theirs: np.testing.assert_allclose(mine, theirs, atol=1e-5),
                          read(ids), directory.model(ids))


def test_predictions_print_one_line_or_more_each(directory):
    task = task_from_directory(directory)
    inputs = input_fields(directory)
    results = task.predict(directory.model, task.prepare(task.examples_from_inputs(inputs), training=False), 4)
    lines = task.prediction_lines(inputs, results)
    assert len(lines) >= len(inputs) and all(isinstance(line, str) and line for line in lines)
