"""`ClassificationTask`: sentence and sentence-pair classification (GLUE), single- or multi-label.

Text is tokenized in the graph (`BertPreprocessor` in a `tf.function`, see
`bert_tf.tasks.classification.data.TextPacker`), once per file. Scores:
accuracy, macro-F1, Matthews correlation and per-class precision/recall/F1; for two
classes also `f1`, the F1 of the second class (GLUE's positive class "1" for MRPC and QQP), reported by its name.
Multi-label: a class is predicted when its sigmoid is at least `multi_label_threshold` (0.5);
`accuracy` is the share of examples with exactly the right set of labels. The settings (columns,
labels, truncation of pairs) are the task's `bert_tf.TaskSpec`, saved with the model.

Example:
    >>> task = ClassificationTask(tokenizer, TaskSpec(task="classify", seq_length=128))  # doctest: +SKIP
    >>> train = task.prepare(task.read("sst2/train.tsv", fit_labels=True), training=True)  # doctest: +SKIP
    >>> task.label_names  # doctest: +SKIP
    ['0', '1']
"""

from __future__ import annotations

import dataclasses

import numpy as np
import tensorflow as tf

from bert_tf.metrics import SparseCategoricalFocalLoss
from bert_tf.tasks.base import FinetuneTask, hf_label_names
from bert_tf.tasks.bucketing import rows_dataset
from bert_tf.tasks.classification.data import ClassificationExamples, TextPacker, read_classification_file
from bert_tf.tasks.classification.metrics import class_weights, classification_report, precision_recall_f1
from bert_tf.tasks.classification.model import BertClassifier
from bert_tf.tasks.classification.ops import classifier_outputs
from bert_tf.tasks.classification.settings import ClassificationSettings
from bert_tf.tasks.labels import encode_labels, label_vocabulary
from bert_tf.tasks.score_table import score_table
from bert_tf.tasks.soft_targets import softened_kl
from bert_tf.tasks.text_serving import repeated

PROBLEM_TYPES = {"single_label": "single_label_classification", "multi_label": "multi_label_classification",
                 "regression": "regression"}  # transformers' `problem_type` of each mode


@dataclasses.dataclass
class ClassificationData:
    examples: ClassificationExamples
    labels: np.ndarray | None  # class ids [n] (int32), or 0/1 [n, classes] (float32, multi-label)
    features: dict  # the model inputs, {name: int32 RaggedTensor [n, (length)]}


def class_predictions(probabilities: np.ndarray, label_names: list[str], multi_label_threshold: float | None = None
                      ) -> list[dict]:
    """Each row's prediction: `{"label", "probability", "probabilities": {label: p}}`, or with a multi-label threshold
    `{"labels": [labels with p ≥ it], "probabilities"}`."""
    if multi_label_threshold is not None:
        return [{"labels": [name for name, p in zip(label_names, row) if p >= multi_label_threshold],
                 "probabilities": dict(zip(label_names, row.tolist()))} for row in probabilities]
    return [{"label": label_names[int(row.argmax())], "probability": float(row.max()),
             "probabilities": dict(zip(label_names, row.tolist()))} for row in probabilities]


class ClassificationTask(FinetuneTask):
    name = "classify"
    served_outputs = ("probabilities",)
    model_class = BertClassifier
    reads_text_pairs = True
    text_padding = BertClassifier.text_padding  # a short request costs a short call
    primary_metric = "accuracy"
    hf_architecture, hf_head_name = "BertForSequenceClassification", "classifier"
    settings_class = ClassificationSettings
    learns_from_unlabeled_text = True
    input_fields = (("text",), ("text_b",))

    # ----- exports, loading, reports ---------------------------------------------------------

    @classmethod
    def serving_outputs(cls, model, spec, ids):
        """`probabilities`, `logits` and `label_names` [batch, k] (regression: `predictions` only)."""
        outputs = classifier_outputs(model(ids, training=False), model.mode)
        if model.mode != "regression":
            outputs["label_names"] = repeated(tf.constant(spec.label_names), tf.shape(ids["input_word_ids"])[0])
        return outputs

    @classmethod
    def serving_info(cls, model, spec):
        info = {**super().serving_info(model, spec), "classifier_mode": tf.constant(model.mode)}
        if model.mode == "multi_label":
            info["multi_label_threshold"] = tf.constant(spec.multi_label_threshold, tf.float32)
        return info

    @classmethod
    def primary_metric_for(cls, settings):
        """Macro-F1 for multi-label classification (no accuracy of one label), else accuracy."""
        return "macro_f1" if settings.multi_label else cls.primary_metric

    @classmethod
    def spec_for_model(cls, model, spec):
        return spec.replace(multi_label=model.mode == "multi_label")

    @classmethod
    def format_scores(cls, scores):
        """Accuracy, macro-F1, MCC, F1 of the second class by its name (two classes), micro-F1 (multi-label), then the
        per-class table (its rows in the classes' order).

        Example:
            >>> print(ClassificationTask.format_scores({"accuracy": 0.9, "macro_f1": 0.85, "per_class": {}}))
            accuracy 0.9000  macro-F1 0.8500
            class         precision  recall      F1  support
        """
        head = [f"accuracy {scores['accuracy']:.4f}", f"macro-F1 {scores['macro_f1']:.4f}"]
        if "mcc" in scores:
            head.append(f"MCC {scores['mcc']:.4f}")
        if "f1" in scores:
            head.append(f"F1 of {list(scores['per_class'])[1]!r} {scores['f1']:.4f}")
        if "micro_f1" in scores:
            head.append(f"micro-F1 {scores['micro_f1']:.4f}")
        return "\n".join(["  ".join(head), *score_table("class", scores["per_class"])])

    @classmethod
    def prediction_lines(cls, inputs, predictions):
        """`label<TAB>probability<TAB>text` per text (multi-label: the labels, comma-separated, and the text)."""
        lines = []
        for example, result in zip(inputs, predictions):
            label = ",".join(result["labels"]) if "labels" in result else result["label"]
            probability = "" if "labels" in result else f"\t{result['probability']:.4f}"
            lines.append(f"{label}{probability}\t{example['text']}")
        return lines

    @classmethod
    def soft_target_loss(cls, student, teacher_outputs, student_outputs, labels, temperature):
        """The softened KL of the logits; multi-label: of each class's sigmoid; regression: the squared difference."""
        if student.mode == "multi_label":
            teacher_p = tf.sigmoid(tf.cast(teacher_outputs, tf.float32) / temperature)
            student_logits = tf.cast(student_outputs, tf.float32) / temperature
            cross = tf.nn.sigmoid_cross_entropy_with_logits(labels=teacher_p, logits=student_logits)
            entropy = tf.nn.sigmoid_cross_entropy_with_logits(
                labels=teacher_p, logits=tf.cast(teacher_outputs, tf.float32) / temperature)
            return temperature**2 * tf.reduce_mean(cross - entropy)
        if student.mode == "regression":
            difference = tf.cast(teacher_outputs, tf.float32) - tf.cast(student_outputs, tf.float32)
            return tf.reduce_mean(tf.square(difference))
        return softened_kl(teacher_outputs, student_outputs, temperature)

    @classmethod
    def hf_config(cls, model):
        return {**super().hf_config(model), "problem_type": PROBLEM_TYPES[model.mode]}

    @classmethod
    def model_from_hf(cls, encoder, settings):
        """The classifier of `id2label`, its mode from `problem_type` (else regression for one label, as
        transformers)."""
        labels = hf_label_names(settings)
        count = len(labels) or settings.get("num_labels", 2)
        modes = {problem_type: mode for mode, problem_type in PROBLEM_TYPES.items()}
        problem_type = settings.get("problem_type")
        if problem_type is not None and problem_type not in modes:
            raise ValueError(f"problem_type {problem_type!r} is none of transformers' ({', '.join(modes)}).")
        mode = modes.get(problem_type, "regression" if count == 1 else "single_label")
        return BertClassifier(encoder, num_classes=count, label_names=labels or None, mode=mode)

    # ----- fine-tuning -----------------------------------------------------------------------

    def __init__(self, tokenizer, spec):
        super().__init__(tokenizer, spec)
        self._packer = None  # made when the columns are known (they say whether examples are pairs)

    @property
    def text_pair(self) -> bool:
        return self.spec.text_pair

    @property
    def label_names(self) -> list[str] | None:
        return list(self.spec.label_names) or None

    def read(self, path, fit_labels=False, need_labels=True) -> ClassificationExamples:
        text, pair, label = self.spec.columns
        examples = read_classification_file(path, text, pair, label, multi_label=self.spec.multi_label,
                                            label_separator=self.spec.label_separator, need_labels=need_labels)
        if self.label_names is None and not fit_labels:
            raise ValueError("ClassificationTask: learn the labels from the training file first (fit_labels=True).")
        if fit_labels:
            labels = [name for labels in examples.labels for name in labels] if self.spec.multi_label else examples.labels
            label_names = self.label_names or label_vocabulary(labels)  # named by the user, or the file's
            if not self.spec.multi_label and len(label_names) < 2:
                raise ValueError(f"{path}: only one label ({label_names[0]!r}); classification needs two or more.")
            # The dev file and the saved model use the same columns.
            self.spec = self.spec.replace(columns=examples.columns, text_pair=examples.columns[1] is not None,
                                          label_names=label_names)
        return examples

    def subset(self, examples: ClassificationExamples, indices) -> ClassificationExamples:
        return examples.subset(indices)

    def prepare(self, examples: ClassificationExamples, training: bool) -> ClassificationData:
        if self.text_pair and examples.text_pairs is None:
            raise ValueError(f"{examples.source}: the model classifies text pairs; name the second text's column.")
        labels = None if examples.labels is None else self._encode(examples)
        pairs = examples.text_pairs if self.text_pair else None
        if self._packer is None:
            self._packer = TextPacker(self.tokenizer, self.spec)
        return ClassificationData(examples, labels, self._packer(examples.texts, pairs))

    def _encode(self, examples: ClassificationExamples) -> np.ndarray:
        if not self.spec.multi_label:
            return np.array(encode_labels(examples.labels, self.label_names, examples.source, examples.lines,
                                          accept_ids=True), np.int32)
        multi_hot = np.zeros([len(examples), len(self.label_names)], np.float32)
        for row, (labels, line) in enumerate(zip(examples.labels, examples.lines)):
            ids = encode_labels(labels, self.label_names, examples.source, [line] * len(labels), accept_ids=True)
            multi_hot[row, ids] = 1.0
        return multi_hot

    def dataset(self, data: ClassificationData):
        lengths = data.features["input_word_ids"].row_lengths().numpy()
        if data.labels is None:
            return rows_dataset(data.features), lengths
        return rows_dataset((data.features, data.labels)), lengths

    def build_model(self, encoder, dropout):
        return BertClassifier(encoder, num_classes=len(self.label_names), dropout=dropout,
                              mode="multi_label" if self.spec.multi_label else "single_label",
                              label_names=self.label_names)

    def loss(self, config, data):
        if not config.settings.focal_loss:
            return "auto"
        alpha = None
        if config.settings.class_weights:
            weights = class_weights(data.labels)
            alpha = [weights.get(index, 1.0) for index in range(len(self.label_names))]
        return SparseCategoricalFocalLoss(gamma=config.settings.focal_gamma, alpha=alpha)

    def class_weight(self, config, data):
        # With focal loss the weights are its alpha instead (see `loss`), not applied twice.
        return class_weights(data.labels) if config.settings.class_weights and not config.settings.focal_loss else None

    def prediction_scores(self, examples: ClassificationExamples, predictions) -> dict:
        truth = self._encode(examples)
        if self.spec.multi_label:
            chosen = np.array([[name in prediction["labels"] for name in self.label_names] for prediction in predictions])
            return self._multi_label_scores(truth.astype(bool), chosen.reshape(truth.shape))
        predicted = [self.label_names.index(prediction["label"]) for prediction in predictions]
        report = classification_report(truth, predicted, self.label_names)
        if len(self.label_names) == 2:
            report["f1"] = report["per_class"][self.label_names[1]]["f1"]
        return report

    def _multi_label_scores(self, truth: np.ndarray, predicted: np.ndarray) -> dict:
        per_class = {}
        for index, name in enumerate(self.label_names):
            scores = precision_recall_f1(truth[:, index], predicted[:, index], classes=[True])
            per_class[name] = {key: (int if key == "support" else float)(value[0]) for key, value in scores.items()}
        true_positives = float((truth & predicted).sum())
        micro_precision = true_positives / max(predicted.sum(), 1)
        micro_recall = true_positives / max(truth.sum(), 1)
        return {
            "accuracy": float((truth == predicted).all(axis=1).mean()),
            "macro_f1": float(np.mean([scores["f1"] for scores in per_class.values()])),
            "micro_f1": 2 * micro_precision * micro_recall / (micro_precision + micro_recall)
            if micro_precision + micro_recall else 0.0,
            "per_class": per_class,
        }

    def predictions(self, data: ClassificationData, outputs) -> list[dict]:
        logits = np.stack(outputs).astype(np.float64)
        if self.spec.multi_label:
            return class_predictions(1.0 / (1.0 + np.exp(-logits)), self.label_names, self.spec.multi_label_threshold)
        exp = np.exp(logits - logits.max(axis=1, keepdims=True))
        return class_predictions(exp / exp.sum(axis=1, keepdims=True), self.label_names)

    @classmethod
    def served_predictions(cls, outputs, info):
        if info.get("classifier_mode") == "regression":
            raise ValueError("This is a regression model; it has no classes.")
        threshold = info.get("multi_label_threshold") if info.get("classifier_mode") == "multi_label" else None
        return class_predictions(np.asarray(outputs["probabilities"]), info["label_names"], threshold)

    def only_prediction(self, model, data: ClassificationData, batch_size: int) -> str | None:
        logits = np.stack(self.outputs(model, data, batch_size))
        predicted = self._chosen(logits) if self.spec.multi_label else logits.argmax(axis=1)
        if len(np.unique(predicted, axis=0)) > 1 or len(np.unique(data.labels, axis=0)) < 2:
            return None
        if self.spec.multi_label:
            return str([name for name, chosen in zip(self.label_names, predicted[0]) if chosen])
        return repr(self.label_names[predicted[0]])

    def _chosen(self, logits: np.ndarray) -> np.ndarray:
        """Multi-label: which classes are predicted (sigmoid at least the spec's threshold)."""
        return 1.0 / (1.0 + np.exp(-logits.astype(np.float64))) >= self.spec.multi_label_threshold

    def labelled_by(self, model, texts: list[str], source: str, batch_size: int,
                    progress: bool = False) -> ClassificationExamples:
        """`texts` (pair models: "text<TAB>second text") with the classes `model` predicts for them."""
        if getattr(model, "mode", None) == "regression":
            raise ValueError("Unlabeled text teaches classifiers, not regression models.")
        pairs = None
        if self.text_pair:
            split = [text.split("\t", 1) for text in texts]
            missing = next((line for line, parts in enumerate(split, start=1) if len(parts) < 2), None)
            if missing is not None:
                raise ValueError(f"{source}, line {missing}: the teacher classifies text pairs: put a tab between "
                                 "the two texts.")
            texts, pairs = [parts[0] for parts in split], [parts[1] for parts in split]
        examples = self.examples_from_texts(texts, pairs)
        predicted = self.predict(model, self.prepare(examples, training=False), batch_size, progress)
        labels = [result["labels"] if self.spec.multi_label else result["label"] for result in predicted]
        return dataclasses.replace(examples, source=source, labels=labels)

    def texts(self, examples: ClassificationExamples) -> list[str]:
        """The examples as `labelled_by` reads them: each text (pairs: "text<TAB>second text")."""
        if examples.text_pairs is None:
            return list(examples.texts)
        return [f"{text}\t{pair}" for text, pair in zip(examples.texts, examples.text_pairs)]

    def joined(self, examples: ClassificationExamples, more: ClassificationExamples) -> ClassificationExamples:
        pairs = None if examples.text_pairs is None else examples.text_pairs + more.text_pairs
        return dataclasses.replace(examples, texts=examples.texts + more.texts, text_pairs=pairs,
                                   labels=examples.labels + more.labels, lines=examples.lines + more.lines)

    def inputs_of(self, examples: ClassificationExamples) -> list[dict]:
        columns = [examples.texts, examples.text_pairs] if self.text_pair else [examples.texts]
        return [dict(zip(self.spec.text_inputs, texts)) for texts in zip(*columns)]

    def examples_from_texts(self, texts, text_pairs=None) -> ClassificationExamples:
        """Examples to predict, from strings (one per text, and a second text each for pair models)."""
        if self.text_pair != (text_pairs is not None):
            raise ValueError("This model classifies text pairs: give a second text for each text."
                             if self.text_pair else "This model classifies single texts; it takes no second text.")
        if text_pairs is not None and len(text_pairs) != len(texts):
            raise ValueError(f"Got {len(texts)} texts but {len(text_pairs)} second texts.")
        return ClassificationExamples("<texts>", self.spec.columns, list(texts),
                                      None if text_pairs is None else list(text_pairs), None,
                                      list(range(1, len(texts) + 1)))
