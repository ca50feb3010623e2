"""Distilling a sentence-embedding teacher: the term against a hand computation, a narrower student's projection into
the teacher's space (built from the teacher's spec, saved and loaded with it), mismatched sizes refused in one
line, and `fit` bringing both a narrower and a same-width student's vectors towards the teacher's."""

import keras
import numpy as np
import pytest
import tensorflow as tf
from tiny_finetune_files import VOCAB, write_vocab

import bert_tf
from bert_tf.distillation import Distiller, soft_target_loss
from bert_tf.optimization import create_optimizer
from bert_tf.tasks.embedding.distillation import vector_distance
from bert_tf.tasks.embedding.losses import InBatchNegativesLoss
from bert_tf.tasks.embedding.model import BertEmbedder
from bert_tf.tasks.registry import task_from_spec
from bert_tf.tasks.spec import TaskSpec


def encoder(hidden_size, num_hidden_layers=1, seed=0):
    keras.utils.set_random_seed(seed)
    return bert_tf.BertModel(bert_tf.BertConfig(
        vocab_size=len(VOCAB), hidden_size=hidden_size, num_hidden_layers=num_hidden_layers, num_attention_heads=2,
        intermediate_size=2 * hidden_size, max_position_embeddings=32, initializer_range=0.5,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0))


def grouped_ids(batch=8, texts=2, length=6, seed=0):
    """A batch of groups of texts as the embedding task feeds them: ids [batch, texts, length]."""
    ids = np.random.default_rng(seed).integers(5, len(VOCAB), size=[batch, texts, length]).astype(np.int32)
    return {"input_word_ids": ids, "input_mask": np.ones_like(ids), "input_type_ids": np.zeros_like(ids)}


def test_the_term_is_the_squared_distance_to_the_teachers_vectors_and_mixes_with_the_students_loss():
    rng = np.random.default_rng(1)
    teacher, student = rng.normal(size=[3, 2, 5]), rng.normal(size=[3, 2, 5])
    expected = np.mean([np.sum((student[i, j] - teacher[i, j]) ** 2) for i in range(3) for j in range(2)])
    assert float(vector_distance(teacher, student)) == pytest.approx(expected, rel=1e-6)
    teacher_unit = teacher / np.linalg.norm(teacher, axis=-1, keepdims=True)
    student_unit = student / np.linalg.norm(student, axis=-1, keepdims=True)
    cosines = np.sum(teacher_unit * student_unit, axis=-1)
    assert float(vector_distance(teacher_unit, student_unit)) == pytest.approx(np.mean(2 - 2 * cosines), rel=1e-6)
    model = BertEmbedder(encoder(8))
    assert float(soft_target_loss(model, tf.constant(teacher), tf.constant(student), None, 2.0)) == pytest.approx(
        expected, rel=1e-6)  # the task's term, whatever the temperature

    teacher_model = BertEmbedder(encoder(8, seed=1))
    distiller = Distiller(model, teacher_model, soft_weight=0.25)
    distiller.compile(create_optimizer(1e-3, 10, 1))
    inputs, labels = grouped_ids(), tf.zeros([8])
    mine, theirs = model(inputs).numpy(), teacher_model(inputs).numpy()
    hard = float(InBatchNegativesLoss()(labels, mine))
    soft = np.mean(np.sum((mine - theirs) ** 2, axis=-1))
    assert float(distiller.compute_loss(inputs, labels, distiller(inputs))) == pytest.approx(
        0.25 * soft + 0.75 * hard, rel=1e-5)


def test_a_narrower_student_built_from_the_teachers_spec_projects_into_its_space(tmp_path):
    vocab = write_vocab(tmp_path)
    teacher = BertEmbedder(encoder(16, num_hidden_layers=2))
    teacher_dir = bert_tf.save_pretrained(teacher, tmp_path / "teacher", vocab_file=vocab,
                                          task=TaskSpec(task="embed", seq_length=16))
    spec = bert_tf.load_model_directory(teacher_dir).task
    assert spec.embedding_size == 16  # the loaded model's size, recorded with its task
    student = task_from_spec(spec, bert_tf.BertTokenizer(vocab)).build_model(encoder(8), dropout=0.0)
    assert student.embedding_size == 16 and student.projection.kernel.shape == (8, 16)
    vectors = student(grouped_ids()).numpy()
    assert vectors.shape == (8, 2, 16) and np.allclose(np.linalg.norm(vectors, axis=-1), 1.0, atol=1e-5)

    saved = bert_tf.load_model_directory(bert_tf.save_pretrained(student, tmp_path / "student", vocab_file=vocab,
                                                                 task=spec))
    assert saved.task == spec and saved.model.projection is not None
    np.testing.assert_allclose(saved.model(grouped_ids()), vectors, atol=1e-6)
    same_width = task_from_spec(spec, bert_tf.BertTokenizer(vocab)).build_model(encoder(16), dropout=0.0)
    assert same_width.projection is None and same_width.embedding_size == 16
    spec.replace(embedding_dims=12).check_fits(student.encoder.config)  # a Matryoshka cut of the 16 values
    with pytest.raises(ValueError, match="embedding_dims 17 is more than the model's 16 values"):
        spec.replace(embedding_dims=17).check_fits(student.encoder.config)


def test_a_student_of_another_size_or_layer_losses_are_refused_in_one_line():
    teacher = BertEmbedder(encoder(16))
    with pytest.raises(ValueError, match=r"^The student's embedding_size \(8\) differs from the teacher's \(16\)\.$"):
        Distiller(BertEmbedder(encoder(8)), teacher)
    from bert_tf.training.finetune_config import FinetuneConfig

    with pytest.raises(ValueError, match="hidden_weight and attention_weight match the layers of classification, NER "
                                         "and SQuAD students, not embed ones"):
        FinetuneConfig(task="embed", train_file="s.txt", output_dir="out", init="tiny", teacher="t", hidden_weight=1.0)


@pytest.mark.parametrize("width", [8, 16])  # a projection to the teacher's 16 values, and none
def test_fit_brings_the_students_vectors_towards_the_teachers(width):
    teacher = BertEmbedder(encoder(16, num_hidden_layers=2, seed=1))
    student = BertEmbedder(encoder(width, seed=2), embedding_size=16)
    assert (student.projection is None) == (width == 16)
    inputs = grouped_ids(batch=16)
    before = float(vector_distance(teacher(inputs), student(inputs)))
    distiller = Distiller(student, teacher, soft_weight=1.0)
    distiller.compile(create_optimizer(3e-3, 24, 0))
    history = distiller.fit(tf.data.Dataset.from_tensor_slices((inputs, np.zeros(16, np.float32))).batch(8),
                            epochs=12, verbose=0, shuffle=False).history
    after = float(vector_distance(teacher(inputs), student(inputs)))
    assert after < 0.7 * before and history["soft_loss"][-1] < 0.7 * history["soft_loss"][0], (before, after)
