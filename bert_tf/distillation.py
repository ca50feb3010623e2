"""`Distiller`: a small student learns a fine-tuned teacher's task from the teacher's soft targets and the labels.

The loss (Hinton et al., 2015; DistilBERT) is

    soft_weight · T² · KL(softmax(teacher / T) ‖ softmax(student / T)) + (1 − soft_weight) · the student's task loss

per task head: classification logits [batch, classes] (multi-label: the KL of each class's sigmoid;
regression: the squared difference, without T), NER logits [batch, seq, tags] over the labelled
positions (each word's first piece), SQuAD start and end logits [batch, seq] (their mean). `fit`
drives it with the task's own batches, so callbacks, distribution strategies and mixed precision
work as in fine-tuning; the teacher runs in inference mode and is not trained. `soft_loss` and
`hard_loss` are logged beside `loss`.

`student_from_teacher` makes a student encoder of every k-th layer of the teacher's (DistilBERT's
initialisation), its embeddings and pooler.

Example:
    >>> student = BertClassifier(student_from_teacher(teacher.encoder, num_layers=2), num_classes=2)  # doctest: +SKIP
    >>> distiller = Distiller(student, teacher, temperature=2.0, soft_weight=0.5)  # doctest: +SKIP
    >>> distiller.compile(optimizer)  # the student's own task loss is the hard loss  # doctest: +SKIP
    >>> distiller.fit(batches, epochs=3)  # doctest: +SKIP
    >>> bert_tf.save_pretrained(distiller.student, "student_model", vocab_file="vocab.txt")  # doctest: +SKIP
"""

from __future__ import annotations

import keras
import tensorflow as tf

from bert_tf.classifier import BertClassifier
from bert_tf.model import BertModel
from bert_tf.span_labeler import BertSpanLabeler
from bert_tf.token_classifier import BertTokenClassifier
from bert_tf.word_alignment import IGNORE_LABEL

TASK_MODELS = (BertClassifier, BertTokenClassifier, BertSpanLabeler)


class Distiller(keras.Model):
    """Trains `student` on its task's labels and on `teacher`'s outputs at `temperature` (module docstring)."""

    def __init__(self, student: keras.Model, teacher: keras.Model, temperature: float = 2.0,
                 soft_weight: float = 0.5, **kwargs):
        super().__init__(**kwargs)
        check_student(student, teacher)
        if temperature <= 0 or not 0 <= soft_weight <= 1:
            raise ValueError(f"Distiller: temperature must be > 0 and soft_weight in [0, 1], got {temperature} "
                             f"and {soft_weight}.")
        self.student, self.teacher = student, teacher
        self.teacher.trainable = False
        self.temperature, self.soft_weight = float(temperature), float(soft_weight)
        self.soft_loss_tracker = keras.metrics.Mean(name="soft_loss")
        self.hard_loss_tracker = keras.metrics.Mean(name="hard_loss")

    def call(self, inputs, training=None):
        return self.student(inputs, training=training)

    def compile(self, optimizer, loss="auto", **kwargs):
        """The hard loss is the student's task loss (`loss="auto"`: its default, as `BertTaskModel.compile`)."""
        self.student.compile(optimizer=optimizer, loss=loss, metrics=[], **kwargs)
        super().compile(optimizer=optimizer)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        hard = self.student.compute_loss(x, y, y_pred, sample_weight, training)
        soft = soft_target_loss(self.student, self.teacher(x, training=False), y_pred, y, self.temperature)
        self.soft_loss_tracker.update_state(soft)
        self.hard_loss_tracker.update_state(hard)
        return self.soft_weight * soft + (1.0 - self.soft_weight) * tf.cast(hard, tf.float32)


def soft_target_loss(student: keras.Model, teacher_outputs, student_outputs, labels, temperature: float) -> tf.Tensor:
    """The soft-target term for `student`'s kind of head (module docstring), float32."""
    if isinstance(student, BertSpanLabeler):
        return tf.add_n([_kl(teacher_outputs[name], student_outputs[name], temperature)
                         for name in ("start_logits", "end_logits")]) / 2
    if isinstance(student, BertTokenClassifier):
        return _kl(teacher_outputs, student_outputs, temperature, tf.not_equal(labels, IGNORE_LABEL))
    if student.mode == "multi_label":
        teacher_p = tf.sigmoid(tf.cast(teacher_outputs, tf.float32) / temperature)
        student_logits = tf.cast(student_outputs, tf.float32) / temperature
        cross = tf.nn.sigmoid_cross_entropy_with_logits(labels=teacher_p, logits=student_logits)
        entropy = tf.nn.sigmoid_cross_entropy_with_logits(labels=teacher_p, logits=tf.cast(teacher_outputs, tf.float32)
                                                          / temperature)
        return temperature**2 * tf.reduce_mean(cross - entropy)
    if student.mode == "regression":
        return tf.reduce_mean(tf.square(tf.cast(teacher_outputs, tf.float32) - tf.cast(student_outputs, tf.float32)))
    return _kl(teacher_outputs, student_outputs, temperature)


def _kl(teacher_logits, student_logits, temperature: float, mask=None) -> tf.Tensor:
    """T² · KL(softmax(teacher / T) ‖ softmax(student / T)) over the last axis, averaged over the rest (where `mask`)."""
    teacher_log_p = tf.nn.log_softmax(tf.cast(teacher_logits, tf.float32) / temperature)
    student_log_p = tf.nn.log_softmax(tf.cast(student_logits, tf.float32) / temperature)
    kl = tf.reduce_sum(tf.exp(teacher_log_p) * (teacher_log_p - student_log_p), axis=-1)
    if mask is None:
        return temperature**2 * tf.reduce_mean(kl)
    weights = tf.cast(mask, tf.float32)
    return temperature**2 * tf.reduce_sum(kl * weights) / tf.maximum(tf.reduce_sum(weights), 1.0)


def check_student(student: keras.Model, teacher: keras.Model) -> None:
    """ValueError, in one line, unless the student can learn the teacher's task: the same head, outputs and
    vocabulary size."""
    kind = type(teacher)
    if kind not in TASK_MODELS:
        raise ValueError(f"The teacher must be a fine-tuned task model ({', '.join(m.__name__ for m in TASK_MODELS)}), "
                         f"not a {kind.__name__}.")
    if type(student) is not kind:
        raise ValueError(f"The student is a {type(student).__name__}, the teacher a {kind.__name__}: they must match.")
    for setting in ("mode", "num_classes", "num_labels"):
        if getattr(student, setting, None) != getattr(teacher, setting, None):
            raise ValueError(f"The student's {setting} ({getattr(student, setting)}) differs from the teacher's "
                             f"({getattr(teacher, setting)}).")
    sizes = student.encoder.config.vocab_size, teacher.encoder.config.vocab_size
    if sizes[0] != sizes[1]:
        raise ValueError(f"The student's vocabulary has {sizes[0]} tokens, the teacher's {sizes[1]}: distillation needs "
                         "the same vocabulary (the student reads the teacher's token ids).")


def student_from_teacher(teacher: BertModel, num_layers: int) -> BertModel:
    """A `BertModel` of `num_layers` of `teacher`'s layers, evenly spaced (every k-th: 0, k, 2k, ...), with its
    embeddings and pooler: DistilBERT's initialisation."""
    total = teacher.config.num_hidden_layers
    if not 1 <= num_layers <= total:
        raise ValueError(f"A student from the teacher's layers takes 1 to {total} of them, not {num_layers}.")
    student = BertModel(teacher.config.replace(num_hidden_layers=num_layers))
    student.embeddings.set_weights(teacher.embeddings.get_weights())
    student.pooler.set_weights(teacher.pooler.get_weights())
    for block, index in zip(student.blocks, teacher_layers(total, num_layers)):
        block.set_weights(teacher.blocks[index].get_weights())
    return student


def teacher_layers(total: int, num_layers: int) -> list[int]:
    """The teacher layers a student of `num_layers` starts from: evenly spaced from the first (12 → 6: 0, 2, ..., 10)."""
    return [index * total // num_layers for index in range(num_layers)]
