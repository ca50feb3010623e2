"""`ToyTask`: a text → score task, built on the library's task interface (`bert_tf.tasks.base.FinetuneTask`)."""

import dataclasses
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from bert_tf.tasks.base import FinetuneTask
from bert_tf.tasks.bucketing import rows_dataset
from bert_tf.tasks.text_serving import text_packer
from toy.metrics import toy_scores
from toy.model import BertScorer
from toy.settings import ToySettings


@dataclasses.dataclass
class ToyExamples:
    texts: list
    scores: list | None

    def __len__(self):
        return len(self.texts)


@dataclasses.dataclass
class ToyData:
    examples: ToyExamples
    features: dict
    labels: np.ndarray | None


class ToyTask(FinetuneTask):
    name = "toy"
    model_class = BertScorer
    settings_class = ToySettings
    default_seq_length = 16
    primary_metric = "neg_mae"
    distils_layers = False

    @classmethod
    def serving_outputs(cls, model, spec, ids):
        return {"score": model(ids, training=False) + spec.offset}

    @classmethod
    def format_scores(cls, scores):
        return f"MAE {-scores['neg_mae']:.4f} ({scores['examples']} examples)"

    @classmethod
    def prediction_lines(cls, inputs, predictions):
        return [f"{prediction['score']:.4f}\t{example['text']}" for example, prediction in zip(inputs, predictions)]

    @classmethod
    def soft_target_loss(cls, student, teacher_outputs, student_outputs, labels, temperature):
        return tf.reduce_mean(tf.square(tf.cast(teacher_outputs, tf.float32) - tf.cast(student_outputs, tf.float32)))

    @classmethod
    def model_from_hf(cls, encoder, settings):
        raise ValueError("The toy task has no Hugging Face class.")

    def read(self, path, fit_labels=False, need_labels=True):
        rows = [line.split("\t") for line in Path(path).read_text().splitlines() if line.strip()]
        return ToyExamples([row[0] for row in rows], [float(row[1]) for row in rows] if need_labels else None)

    def prepare(self, examples, training):
        ids = text_packer(self.tokenizer, self.spec)([tf.constant(examples.texts)])
        lengths = tf.reduce_sum(ids["input_mask"], axis=1)
        features = {name: tf.RaggedTensor.from_tensor(value, lengths=lengths) for name, value in ids.items()}
        labels = None if examples.scores is None else np.asarray(examples.scores, np.float32)
        return ToyData(examples, features, labels)

    def dataset(self, data):
        lengths = data.features["input_word_ids"].row_lengths().numpy()
        columns = data.features if data.labels is None else (data.features, data.labels)
        return rows_dataset(columns), lengths

    def build_model(self, encoder, dropout):
        return BertScorer(encoder)

    def loss(self, config, data):
        return {"mse": keras.losses.MeanSquaredError, "mae": keras.losses.MeanAbsoluteError}[config.settings.loss]()

    def predictions(self, data, outputs):
        return [{"score": float(output) + self.spec.offset} for output in outputs]

    def prediction_scores(self, examples, predictions):
        return toy_scores(examples.scores, [prediction["score"] for prediction in predictions])

    def inputs_of(self, examples):
        return [{"text": text} for text in examples.texts]

    def examples_from_texts(self, texts, text_pairs=None):
        return ToyExamples(list(texts), None)
