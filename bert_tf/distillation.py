"""`Distiller`: a small student learns a fine-tuned teacher's task from the teacher's soft targets and the labels.

The loss (Hinton et al., 2015; DistilBERT) is

    soft_weight · T² · KL(softmax(teacher / T) ‖ softmax(student / T)) + (1 − soft_weight) · the student's task loss

per task head: classification logits [batch, classes] (multi-label: the KL of each class's sigmoid;
regression: the squared difference, without T), NER logits [batch, seq, tags] over the labelled
positions (each word's first piece), SQuAD start and end logits [batch, seq] (their mean); for sentence
embeddings, the squared distance of the student's vectors to the teacher's, without T
(`bert_tf.tasks.embedding.distillation`). `fit`
drives it with the task's own batches, so callbacks, distribution strategies and mixed precision
work as in fine-tuning; the teacher runs in inference mode and is not trained. `soft_loss` and
`hard_loss` are logged beside `loss`.

Optionally, intermediate layers too (TinyBERT, MiniLM), each student layer matched to a teacher
layer (`layer_map`, 1-based; default TinyBERT's uniform map, student layer i → teacher layer
i·N/M, so the last matches the last):

    + hidden_weight · MSE(projection(student hidden states), teacher hidden states)   (embeddings too)
    + attention_weight · KL(teacher attention ‖ student attention)                    (same head count)

over the real tokens (`input_mask`). The projection, a learned dense layer per matched layer, exists
only where the widths differ, and is dropped with the Distiller (the student keeps none of it).

`student_from_teacher` makes a student encoder of every k-th layer of the teacher's (DistilBERT's
initialisation), its embeddings and pooler.

Example:
    >>> student = BertClassifier(student_from_teacher(teacher.encoder, num_layers=2), num_classes=2)  # doctest: +SKIP
    >>> distiller = Distiller(student, teacher, temperature=2.0, soft_weight=0.5, hidden_weight=1.0)  # doctest: +SKIP
    >>> distiller.compile(optimizer)  # the student's own task loss is the hard loss  # doctest: +SKIP
    >>> distiller.fit(batches, epochs=3)  # doctest: +SKIP
    >>> bert_tf.save_pretrained(distiller.student, "student_model", vocab_file="vocab.txt")  # doctest: +SKIP
"""

from __future__ import annotations

import keras
import tensorflow as tf

from bert_tf.model import BertModel
from bert_tf.replicas import all_replicas_sum
from bert_tf.tasks.registry import finetuned_tasks, task_named, task_of_model


class Distiller(keras.Model):
    """Trains `student` on its task's labels and on `teacher`'s outputs at `temperature` (module docstring)."""

    def __init__(self, student: keras.Model, teacher: keras.Model, temperature: float = 2.0,
                 soft_weight: float = 0.5, hidden_weight: float = 0.0, attention_weight: float = 0.0,
                 layer_map=None, **kwargs):
        super().__init__(**kwargs)
        check_student(student, teacher)
        if temperature <= 0 or not 0 <= soft_weight <= 1 or hidden_weight < 0 or attention_weight < 0:
            raise ValueError(f"Distiller: temperature must be > 0, soft_weight in [0, 1], hidden_weight and "
                             f"attention_weight >= 0; got {temperature}, {soft_weight}, {hidden_weight} and "
                             f"{attention_weight}.")
        self.student, self.teacher = student, teacher
        self.teacher.trainable = False
        self.temperature, self.soft_weight = float(temperature), float(soft_weight)
        mine, theirs = student.encoder.config, teacher.encoder.config
        self.layer_map = checked_layer_map(layer_map, mine.num_hidden_layers, theirs.num_hidden_layers)
        if attention_weight and mine.num_attention_heads != theirs.num_attention_heads:
            raise ValueError(f"Attention distillation needs the teacher's head count: the student has "
                             f"{mine.num_attention_heads} heads, the teacher {theirs.num_attention_heads}.")
        self.projections = []
        if hidden_weight and mine.hidden_size != theirs.hidden_size:
            for index in range(len(self.layer_map) + 1):  # the embeddings, then each matched layer
                projection = keras.layers.Dense(theirs.hidden_size, name=f"hidden_projection_{index}")
                projection.build((None, None, mine.hidden_size))
                self.projections.append(projection)
        self.soft_loss_tracker = keras.metrics.Mean(name="soft_loss")
        self.hard_loss_tracker = keras.metrics.Mean(name="hard_loss")
        self.layer_loss_weights = {name: float(weight) for name, weight in
                                   (("hidden", hidden_weight), ("attention", attention_weight)) if weight}
        self.layer_loss_trackers = {name: keras.metrics.Mean(name=f"{name}_loss") for name in self.layer_loss_weights}

    def call(self, inputs, training=None):
        """The student's outputs; in training with layer losses, `(outputs, student encoder outputs)`."""
        if not (training and self.layer_loss_weights):
            return self.student(inputs, training=training)
        return self._outputs_and_layers(self.student, inputs, training)

    def _outputs_and_layers(self, model, inputs, training):
        """`model`'s task outputs and its encoder's full outputs (hidden states, attention if asked), one pass."""
        encoded = model.encoder(inputs, training=training, output_attentions="attention" in self.layer_loss_weights)
        return model.head(encoded[model.encoder_output], inputs, training=training), encoded

    def compile(self, optimizer, loss="auto", jit_compile="auto", **kwargs):
        """The hard loss is the student's task loss (`loss="auto"`: its default, as `BertTaskModel.compile`);
        `jit_compile` as Keras' (XLA for the training step)."""
        self.student.compile(optimizer=optimizer, loss=loss, metrics=[], **kwargs)
        super().compile(optimizer=optimizer, jit_compile=jit_compile)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        student_layers = teacher_layers_out = None
        if isinstance(y_pred, tuple):  # training with layer losses (`call`)
            y_pred, student_layers = y_pred
            teacher_outputs, teacher_layers_out = self._outputs_and_layers(self.teacher, x, training=False)
        else:
            teacher_outputs = self.teacher(x, training=False)
        # Under a strategy of n replicas each returns its share of the global batch's loss, and the shares' gradients
        # are summed: Keras' losses are the replica's mean / n (the batch splits evenly), so is the soft loss, and the
        # layer losses are sums over the replica's tokens / the global batch's tokens.
        replicas = tf.distribute.get_strategy().num_replicas_in_sync
        hard = tf.cast(self.student.compute_loss(x, y, y_pred, sample_weight, training), tf.float32)
        soft = soft_target_loss(self.student, teacher_outputs, y_pred, y, self.temperature)
        self.soft_loss_tracker.update_state(soft)
        self.hard_loss_tracker.update_state(hard * replicas)
        loss = self.soft_weight * soft / replicas + (1.0 - self.soft_weight) * hard
        if student_layers is not None:
            real_tokens = tf.cast(x.get("input_mask", tf.ones_like(x["input_word_ids"])), tf.float32)
            tokens = all_replicas_sum(tf.reduce_sum(real_tokens))
            for name, share in self._layer_losses(student_layers, teacher_layers_out, real_tokens, tokens).items():
                self.layer_loss_trackers[name].update_state(share * replicas)
                loss += self.layer_loss_weights[name] * share
        return loss

    def _layer_losses(self, student_layers, teacher_layers_out, real_tokens, tokens) -> dict[str, tf.Tensor]:
        """The hidden-state and attention losses (module docstring), averaged over the matched layers and `tokens`
        real tokens."""
        losses = {}
        if "hidden" in self.layer_loss_weights:
            student_states = [student_layers["embedding_output"], *student_layers["encoder_outputs"]]
            teacher_states = [teacher_layers_out["embedding_output"], *teacher_layers_out["encoder_outputs"]]
            pairs = [(student_states[0], teacher_states[0])] + [
                (student_states[mine], teacher_states[theirs]) for mine, theirs in enumerate(self.layer_map, 1)]
            if self.projections:
                pairs = [(projection(mine), theirs) for projection, (mine, theirs) in zip(self.projections, pairs)]
            losses["hidden"] = tf.add_n([hidden_state_loss(mine, theirs, real_tokens, tokens)
                                         for mine, theirs in pairs]) / len(pairs)
        if "attention" in self.layer_loss_weights:
            losses["attention"] = tf.add_n([
                attention_loss(student_layers["attention_probs"][mine - 1],
                               teacher_layers_out["attention_probs"][theirs - 1], real_tokens, tokens)
                for mine, theirs in enumerate(self.layer_map, 1)]) / len(self.layer_map)
        return losses


def soft_target_loss(student: keras.Model, teacher_outputs, student_outputs, labels, temperature: float) -> tf.Tensor:
    """The soft-target term for `student`'s task (module docstring; each task's `soft_target_loss`), float32."""
    return task_of_model(student).soft_target_loss(student, teacher_outputs, student_outputs, labels, temperature)


def hidden_state_loss(student_states, teacher_states, real_tokens, tokens=None) -> tf.Tensor:
    """The mean squared difference of [batch, seq, hidden] states over the real tokens ([batch, seq] 0/1); `tokens`:
    the count to divide by (None: those of `real_tokens`; the global batch's, for a replica's share)."""
    squared = tf.reduce_mean(tf.square(tf.cast(student_states, tf.float32) - tf.cast(teacher_states, tf.float32)), -1)
    return tf.reduce_sum(squared * real_tokens) / tf.maximum(_count(real_tokens, tokens), 1.0)


def attention_loss(student_probs, teacher_probs, real_tokens, tokens=None) -> tf.Tensor:
    """KL(teacher ‖ student) of each attention distribution [batch, heads, query, key], averaged over the heads
    and the real query tokens (`tokens` of them, as in `hidden_state_loss`)."""
    teacher_probs, student_probs = tf.cast(teacher_probs, tf.float32), tf.cast(student_probs, tf.float32)
    kl = tf.reduce_sum(tf.math.xlogy(teacher_probs, teacher_probs)
                       - tf.math.xlogy(teacher_probs, tf.maximum(student_probs, 1e-12)), axis=-1)
    heads = tf.cast(tf.shape(kl)[1], tf.float32)
    return tf.reduce_sum(kl * real_tokens[:, None, :]) / tf.maximum(heads * _count(real_tokens, tokens), 1.0)


def _count(real_tokens, tokens):
    return tf.reduce_sum(real_tokens) if tokens is None else tokens


def checked_layer_map(layer_map, student_layers: int, teacher_layers: int) -> tuple[int, ...]:
    """The teacher layer (1-based) each student layer learns from: `layer_map`, or TinyBERT's uniform map
    (i → i·N/M); ValueError in one line unless one per student layer, each 1 to N."""
    if layer_map is None or len(layer_map) == 0:
        return tuple((index + 1) * teacher_layers // student_layers for index in range(student_layers))
    layer_map = tuple(int(layer) for layer in layer_map)
    if len(layer_map) != student_layers or not all(1 <= layer <= teacher_layers for layer in layer_map):
        raise ValueError(f"The layer map {list(layer_map)} must name one teacher layer (1 to {teacher_layers}) for "
                         f"each of the student's {student_layers} layers.")
    return layer_map


def check_student(student: keras.Model, teacher: keras.Model) -> None:
    """ValueError, in one line, unless the student can learn the teacher's task: the same head, outputs (classes,
    labels, vector size) and vocabulary size."""
    kind = type(teacher)
    task_models = [task_named(name).model_class for name in finetuned_tasks()]
    if kind not in task_models:
        raise ValueError(f"The teacher must be a fine-tuned task model ({', '.join(m.__name__ for m in task_models)}), "
                         f"not a {kind.__name__}.")
    if type(student) is not kind:
        raise ValueError(f"The student is a {type(student).__name__}, the teacher a {kind.__name__}: they must match.")
    for setting in ("mode", "num_classes", "num_labels", "embedding_size"):
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
