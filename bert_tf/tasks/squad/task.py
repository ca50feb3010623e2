"""`SquadTask`: extractive question answering on SQuAD v1.1 / v2.0 files, scored as the official scripts do.

Training uses each question's first answer (SQuAD's training files have one); evaluation
scores the predicted text against all of a question's answers (`bert_tf.metrics.squad_scores`:
exact match and F1 in percent). SQuAD 2.0 is recognised from the training data (questions
marked `is_impossible`); its unanswerable questions train toward `[CLS]` and score 1 when
the prediction is "".

The settings (doc_stride, max_query_length, max_answer_length, n_best_size, null_score_threshold,
version_2) are the task's `bert_tf.TaskSpec`, saved with the model and used by its exports.

Example:
    >>> task = SquadTask(tokenizer, TaskSpec(task="squad", seq_length=384))  # doctest: +SKIP
    >>> dev = task.prepare(task.read("dev-v1.1.json"), training=False)  # doctest: +SKIP
    >>> task.evaluate(model, dev, batch_size=32)  # doctest: +SKIP
    {'exact_match': 80.9, 'f1': 88.2}
"""

from __future__ import annotations

import dataclasses

import tensorflow as tf

from bert_tf.tasks.base import FinetuneTask, served_text
from bert_tf.tasks.soft_targets import softened_kl
from bert_tf.tasks.squad.data import SquadExample, is_squad_v2, read_squad
from bert_tf.tasks.squad.features import SquadFeatures, squad_features
from bert_tf.tasks.squad.metrics import squad_scores
from bert_tf.tasks.squad.model import BertSpanLabeler
from bert_tf.tasks.squad.ops import SquadTextServing, row_answers
from bert_tf.tasks.squad.postprocess import AnswerPrediction, answer_predictions
from bert_tf.tasks.squad.settings import SquadSettings


@dataclasses.dataclass
class SquadData:
    examples: list[SquadExample]
    features: SquadFeatures


class SquadTask(FinetuneTask):
    name = "squad"
    served_outputs = ("answer_text", "answer_char_start", "answer_char_end", "answer_score", "answer_probability")
    model_class = BertSpanLabeler
    windowed = True
    input_fields = (("question", "context"), ())
    text_serving_class = SquadTextServing
    primary_metric = "f1"
    hf_architecture, hf_head_name = "BertForQuestionAnswering", "qa_outputs"
    settings_class = SquadSettings
    default_seq_length = 384

    # ----- exports, loading, reports ---------------------------------------------------------

    @classmethod
    def serving_outputs(cls, model, spec, ids):
        """`start_logits`, `end_logits` [b, s] and the best span of each row taken as one whole window
        (`row_answers`): `answer_start`, `answer_end`, `answer_score`, `answer_probability` [b]."""
        outputs = model(ids, training=False)
        start_logits, end_logits = (tf.cast(outputs[name], tf.float32) for name in ("start_logits", "end_logits"))
        return {"start_logits": start_logits, "end_logits": end_logits,
                **row_answers(start_logits, end_logits, ids["input_type_ids"], ids["input_mask"],
                              max_answer_length=spec.max_answer_length, n_best_size=spec.n_best_size,
                              version_2=spec.version_2, null_score_threshold=spec.null_score_threshold)}

    @classmethod
    def serving_info(cls, model, spec):
        """`version_2`: whether a question may have no answer (SQuAD 2.0), which scoring needs."""
        return {**super().serving_info(model, spec), "version_2": tf.constant(spec.version_2)}

    @classmethod
    def format_scores(cls, scores):
        """Exact match and F1 (percent).

        Example:
            >>> print(SquadTask.format_scores({"exact_match": 61.25, "f1": 70.5}))
            exact match 61.25  F1 70.50
        """
        return f"exact match {scores['exact_match']:.2f}  F1 {scores['f1']:.2f}"

    @classmethod
    def prediction_lines(cls, inputs, predictions):
        """`answer<TAB>probability<TAB>question` per question ("(no answer)" for none)."""
        return [f"{answer['text'] or '(no answer)'}\t{answer['probability']:.4f}\t{example['question']}"
                for example, answer in zip(inputs, predictions)]

    @classmethod
    def served_predictions(cls, outputs, info):
        """`{"text", "start", "end", "score", "probability"}` per question: character offsets into its context."""
        return [{"text": served_text(text), "start": int(start), "end": int(end), "score": float(score),
                 "probability": float(probability)}
                for text, start, end, score, probability in zip(*(outputs[name] for name in cls.served_outputs))]

    @classmethod
    def soft_target_loss(cls, student, teacher_outputs, student_outputs, labels, temperature):
        """The mean of the softened KLs of the start and end logits."""
        return tf.add_n([softened_kl(teacher_outputs[name], student_outputs[name], temperature)
                         for name in ("start_logits", "end_logits")]) / 2

    @classmethod
    def hf_head(cls, model):
        return model.span_logits

    @classmethod
    def hf_config(cls, model):
        return {}

    @classmethod
    def model_from_hf(cls, encoder, settings):
        return BertSpanLabeler(encoder)

    # ----- fine-tuning -----------------------------------------------------------------------
    per_position = True

    def read(self, path, fit_labels=False, need_labels=True) -> list[SquadExample]:
        examples = read_squad(path, need_answers=need_labels)
        if fit_labels:
            self.spec = self.spec.replace(version_2=is_squad_v2(examples))
        elif is_squad_v2(examples) and not self.spec.version_2:
            raise ValueError(f"{path} has unanswerable questions (SQuAD 2.0), but the model was trained on SQuAD 1.1.")
        return examples

    def prepare(self, examples: list[SquadExample], training: bool) -> SquadData:
        features = squad_features(examples, self.tokenizer, self.seq_length, self.spec.max_query_length,
                                  self.spec.doc_stride, with_labels=training, max_text_bytes=self.spec.max_text_bytes)
        return SquadData(examples, features)

    def dataset(self, data: SquadData):
        return data.features.dataset(), data.features.lengths

    def build_model(self, encoder, dropout):
        return BertSpanLabeler(encoder)

    def answers(self, data: SquadData, outputs) -> list[AnswerPrediction]:
        return answer_predictions(
            data.examples, data.features,
            [output["start_logits"] for output in outputs], [output["end_logits"] for output in outputs],
            n_best_size=self.spec.n_best_size, max_answer_length=self.spec.max_answer_length,
            version_2=self.spec.version_2, null_score_threshold=self.spec.null_score_threshold,
        )

    def prediction_scores(self, examples: list[SquadExample], predictions) -> dict:
        answers = {example.question_id: prediction["text"] for example, prediction in zip(examples, predictions)}
        # SQuAD 2.0's official script scores an unanswerable question against the answer "".
        truths = {example.question_id: [answer.text for answer in example.answers] or [""] for example in examples}
        return squad_scores(answers, truths, version_2=self.spec.version_2)

    def predictions(self, data: SquadData, outputs) -> list[dict]:
        return [dataclasses.asdict(answer) for answer in self.answers(data, outputs)]

    def inputs_of(self, examples: list[SquadExample]) -> list[dict]:
        return [{"question": example.question, "context": example.context} for example in examples]

    def examples_from_texts(self, questions, contexts) -> list[SquadExample]:
        """Questions to answer, each with its context."""
        if len(questions) != len(contexts):
            raise ValueError(f"Got {len(questions)} questions but {len(contexts)} contexts.")
        return [SquadExample(str(index), question, context, []) for index, (question, context)
                in enumerate(zip(questions, contexts), start=1)]
