"""`bert_tf.distillation`: the soft-target and layer losses against hand computations, a student from the teacher's
layers, bad pairs refused in one line, and `fit` on a few batches lowering the loss for each kind of head."""

import numpy as np
import pytest
import tensorflow as tf

import bert_tf
from bert_tf.distillation import (Distiller, attention_loss, checked_layer_map, hidden_state_loss,
                                  soft_target_loss, student_from_teacher, teacher_layers)
from bert_tf.optimization import create_optimizer
from tiny_exports import tiny_encoder


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def test_the_soft_loss_is_t_squared_kl_at_temperature_and_mixes_with_the_hard_loss():
    rng = np.random.default_rng(0)
    teacher_logits, student_logits = rng.normal(size=[4, 3]) * 3, rng.normal(size=[4, 3]) * 3
    labels = np.array([0, 2, 1, 1])
    p, q = softmax(teacher_logits / 2.0), softmax(student_logits / 2.0)
    expected_soft = 4.0 * np.mean(np.sum(p * (np.log(p) - np.log(q)), axis=-1))
    student = bert_tf.BertClassifier(tiny_encoder(), num_classes=3)
    soft = soft_target_loss(student, tf.constant(teacher_logits, tf.float32), tf.constant(student_logits, tf.float32),
                            labels, temperature=2.0)
    assert float(soft) == pytest.approx(expected_soft, rel=1e-5)

    teacher = bert_tf.BertClassifier(tiny_encoder(seed=1), num_classes=3)
    distiller = Distiller(student, teacher, temperature=2.0, soft_weight=0.3)
    distiller.compile(create_optimizer(1e-3, 10, 1))
    inputs = {"input_word_ids": tf.constant([[2, 5, 6, 3]]), "input_mask": tf.ones([1, 4], tf.int32),
              "input_type_ids": tf.zeros([1, 4], tf.int32)}
    s, t = student(inputs).numpy(), teacher(inputs).numpy()
    hard = -np.log(softmax(s)[0, 1])
    p, q = softmax(t / 2.0), softmax(s / 2.0)
    soft = 4.0 * np.sum(p * (np.log(p) - np.log(q)))
    loss = distiller.compute_loss(inputs, tf.constant([1]), distiller(inputs))
    assert float(loss) == pytest.approx(0.3 * soft + 0.7 * hard, rel=1e-5)


def test_ner_soft_loss_counts_the_labelled_positions_only():
    rng = np.random.default_rng(1)
    teacher_logits, student_logits = rng.normal(size=[2, 5, 3]), rng.normal(size=[2, 5, 3])
    labels = np.array([[-100, 1, -100, 2, -100], [-100, 0, -100, -100, -100]])
    keep = labels != -100
    p, q = softmax(teacher_logits), softmax(student_logits)
    expected = np.sum(p * (np.log(p) - np.log(q)), axis=-1)[keep].mean()
    student = bert_tf.BertTokenClassifier(tiny_encoder(), num_labels=3)
    soft = soft_target_loss(student, tf.constant(teacher_logits, tf.float32), tf.constant(student_logits, tf.float32),
                            tf.constant(labels), temperature=1.0)
    assert float(soft) == pytest.approx(expected, rel=1e-5)


def test_layer_losses_are_masked_mse_and_kl_over_real_tokens():
    rng = np.random.default_rng(3)
    real = np.array([[1, 1, 1, 0], [1, 1, 0, 0]], np.float32)
    mine, theirs = rng.normal(size=[2, 4, 5]), rng.normal(size=[2, 4, 5])
    expected = ((mine - theirs) ** 2).mean(-1)[real > 0].mean()
    assert float(hidden_state_loss(tf.constant(mine), tf.constant(theirs), tf.constant(real))) == pytest.approx(expected)
    scores = rng.normal(size=[2, 2, 2, 4, 4]) * 2 + np.where(real > 0, 0, -1e4)[None, :, None, None, :]
    q, p = softmax(scores[0]), softmax(scores[1])  # student, teacher: [batch, heads, query, key]
    kl = np.sum(np.where(p > 0, p * (np.log(np.maximum(p, 1e-30)) - np.log(q)), 0), axis=-1)
    expected = kl.transpose(0, 2, 1)[real > 0].mean()
    assert float(attention_loss(tf.constant(q), tf.constant(p), tf.constant(real))) == pytest.approx(expected, rel=1e-5)


def test_the_distiller_adds_the_mapped_layers_losses_through_the_projection():
    teacher = bert_tf.BertTokenClassifier(tiny_encoder(seed=1, num_hidden_layers=4), num_labels=3)
    student = bert_tf.BertTokenClassifier(tiny_encoder(hidden_size=16), num_labels=3)
    distiller = Distiller(student, teacher, soft_weight=0.5, hidden_weight=2.0, attention_weight=3.0)
    assert distiller.layer_map == (2, 4) and len(distiller.projections) == 3
    inputs = {"input_word_ids": tf.constant([[2, 5, 6, 3, 0], [2, 7, 3, 0, 0]]),
              "input_mask": tf.constant([[1, 1, 1, 1, 0], [1, 1, 1, 0, 0]]), "input_type_ids": tf.zeros([2, 5], tf.int32)}
    labels = tf.constant([[-100, 1, 2, -100, -100], [-100, 0, -100, -100, -100]])
    distiller.compile(create_optimizer(1e-3, 10, 1))
    ours = student.encoder(inputs, output_attentions=True)
    theirs = teacher.encoder(inputs, output_attentions=True)
    real = inputs["input_mask"].numpy().astype(np.float32)
    states = [ours["embedding_output"], *ours["encoder_outputs"]]
    targets = [theirs["embedding_output"], theirs["encoder_outputs"][1], theirs["encoder_outputs"][3]]
    hidden = np.mean([float(hidden_state_loss(projection(state), target, real))
                      for projection, state, target in zip(distiller.projections, states, targets)])
    attention = np.mean([float(attention_loss(ours["attention_probs"][mine], theirs["attention_probs"][their], real))
                         for mine, their in ((0, 1), (1, 3))])
    plain = Distiller(student, teacher, soft_weight=0.5)
    plain.compile(create_optimizer(1e-3, 10, 1))
    expected = float(plain.compute_loss(inputs, labels, student(inputs))) + 2.0 * hidden + 3.0 * attention
    with_layers = distiller._outputs_and_layers(student, inputs, training=False)
    assert float(distiller.compute_loss(inputs, labels, with_layers)) == pytest.approx(expected, rel=1e-5)


def test_layer_maps_and_head_counts_are_checked_in_one_line():
    assert checked_layer_map(None, 6, 12) == (2, 4, 6, 8, 10, 12) and checked_layer_map([1, 1], 2, 4) == (1, 1)
    with pytest.raises(ValueError, match=r"layer map \[1, 5\] must name one teacher layer \(1 to 4\) for each"):
        checked_layer_map([1, 5], 2, 4)
    with pytest.raises(ValueError, match="for each of the student's 2 layers"):
        checked_layer_map([1], 2, 4)
    teacher = bert_tf.BertClassifier(tiny_encoder(), num_classes=2)
    student = bert_tf.BertClassifier(tiny_encoder(num_attention_heads=4), num_classes=2)
    with pytest.raises(ValueError, match="needs the teacher's head count: the student has 4 heads, the teacher 2"):
        Distiller(student, teacher, attention_weight=1.0)
    with pytest.raises(ValueError, match="attention_weight >= 0"):
        Distiller(bert_tf.BertClassifier(tiny_encoder(), num_classes=2), teacher, hidden_weight=-1.0)


def test_a_student_from_the_teachers_layers_starts_with_exactly_those_weights():
    teacher = tiny_encoder(num_hidden_layers=4)
    student = student_from_teacher(teacher, num_layers=2)
    assert teacher_layers(4, 2) == [0, 2] and teacher_layers(12, 6) == [0, 2, 4, 6, 8, 10]
    assert student.config.num_hidden_layers == 2
    for block, index in zip(student.blocks, [0, 2]):
        for mine, theirs in zip(block.get_weights(), teacher.blocks[index].get_weights()):
            np.testing.assert_array_equal(mine, theirs)
    for mine, theirs in zip(student.embeddings.get_weights(), teacher.embeddings.get_weights()):
        np.testing.assert_array_equal(mine, theirs)
    with pytest.raises(ValueError, match="takes 1 to 4 of them, not 5"):
        student_from_teacher(teacher, 5)


def test_pairs_that_cannot_distil_are_refused_in_one_line():
    teacher = bert_tf.BertClassifier(tiny_encoder(), num_classes=3)
    with pytest.raises(ValueError, match="num_classes \\(2\\) differs from the teacher's \\(3\\)"):
        Distiller(bert_tf.BertClassifier(tiny_encoder(), num_classes=2), teacher)
    with pytest.raises(ValueError, match="The student is a BertTokenClassifier, the teacher a BertClassifier"):
        Distiller(bert_tf.BertTokenClassifier(tiny_encoder(), num_labels=3), teacher)
    with pytest.raises(ValueError, match="vocabulary has 40 tokens, the teacher's"):
        Distiller(bert_tf.BertClassifier(tiny_encoder(vocab_size=40), num_classes=3), teacher)
    with pytest.raises(ValueError, match="must be a fine-tuned task model"):
        Distiller(tiny_encoder(), tiny_encoder())


@pytest.mark.parametrize("head", ["classify", "ner", "squad"])
def test_fit_lowers_the_distillation_loss(head):
    rng = np.random.default_rng(2)
    ids = rng.integers(5, 30, size=[16, 8]).astype(np.int32)
    inputs = {"input_word_ids": ids, "input_mask": np.ones_like(ids), "input_type_ids": np.zeros_like(ids)}
    make = {"classify": lambda encoder: bert_tf.BertClassifier(encoder, num_classes=3),
            "ner": lambda encoder: bert_tf.BertTokenClassifier(encoder, num_labels=3),
            "squad": lambda encoder: bert_tf.BertSpanLabeler(encoder)}[head]
    labels = {"classify": rng.integers(0, 3, 16), "ner": np.where(rng.random([16, 8]) < 0.5, -100, 1),
              "squad": {"start_logits": rng.integers(0, 8, 16), "end_logits": rng.integers(0, 8, 16)}}[head]
    teacher = make(tiny_encoder(seed=1))
    distiller = Distiller(make(student_from_teacher(teacher.encoder, 1)), teacher, temperature=2.0)
    distiller.compile(create_optimizer(3e-3, 40, 0))
    history = distiller.fit(tf.data.Dataset.from_tensor_slices((inputs, labels)).batch(8), epochs=20, verbose=0,
                            shuffle=False)
    losses = history.history["loss"]
    assert losses[-1] < 0.7 * losses[0] and {"soft_loss", "hard_loss"} <= set(history.history)


@pytest.mark.slow
def test_fit_brings_a_narrower_students_layers_towards_the_teachers():
    rng = np.random.default_rng(2)
    ids = rng.integers(5, 30, size=[16, 8]).astype(np.int32)
    inputs = {"input_word_ids": ids, "input_mask": np.ones_like(ids), "input_type_ids": np.zeros_like(ids)}
    teacher = bert_tf.BertClassifier(tiny_encoder(seed=1), num_classes=3)
    for block in teacher.encoder.blocks:  # peaked attention: a random start's is nearly uniform, nothing to learn
        block.attention.query.kernel.assign(block.attention.query.kernel * 100)
    student = bert_tf.BertClassifier(tiny_encoder(seed=2, hidden_size=16, num_hidden_layers=1), num_classes=3)
    distiller = Distiller(student, teacher, hidden_weight=1.0, attention_weight=1.0)
    distiller.compile(create_optimizer(3e-3, 40, 0))
    batches = tf.data.Dataset.from_tensor_slices((inputs, rng.integers(0, 3, 16))).batch(8)
    history = distiller.fit(batches, epochs=20, verbose=0, shuffle=False).history
    assert history["hidden_loss"][-1] < 0.5 * history["hidden_loss"][0]
    assert history["attention_loss"][-1] < 0.9 * history["attention_loss"][0]
    assert history["loss"][-1] < 0.7 * history["loss"][0]
