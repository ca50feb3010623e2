"""`NerTask`: named-entity recognition on CoNLL files, scored per entity as conlleval does.

Tags are read as BIO or IOB1 and trained as BIO (`bert_tf.tasks.ner.conll.to_bio`); the label
names are the BIO tags of the training file. Scores (`bert_tf.metrics.ner_scores`):
entity-level precision, recall and F1 (micro over all entities), token accuracy, and per
entity type. Predictions are one tag per word and the entities they make (Hugging Face's
`aggregation_strategy="simple"`, `bert_tf.tasks.ner.ops.word_entities`): `{"type", "text", "start",
"end", "score"}`, with character offsets into the text (a file's sentence is its words joined by
spaces). Raw text is split into words as BERT's basic tokenizer does (`BertTokenizer.words`).

Example:
    >>> task = NerTask(tokenizer, TaskSpec(task="ner", seq_length=128))  # doctest: +SKIP
    >>> train = task.prepare(task.read("conll2003/train.txt", fit_labels=True), training=True)  # doctest: +SKIP
    >>> task.label_names  # doctest: +SKIP
    ['B-LOC', 'B-MISC', 'B-ORG', 'B-PER', 'I-LOC', 'I-MISC', 'I-ORG', 'I-PER', 'O']
"""

from __future__ import annotations

import dataclasses

import numpy as np
import tensorflow as tf

from bert_tf.tasks.base import FinetuneTask, hf_label_names, served_text
from bert_tf.tasks.labels import encode_labels, label_vocabulary
from bert_tf.tasks.ner.conll import Sentence, read_conll, to_bio
from bert_tf.tasks.ner.features import NerFeatures, ner_features, sentence_word_logits
from bert_tf.tasks.ner.metrics import ner_scores
from bert_tf.tasks.ner.model import BertTokenClassifier
from bert_tf.tasks.ner.ops import NerTextServing, token_outputs, word_entities
from bert_tf.tasks.ner.settings import NerSettings
from bert_tf.tasks.ner.word_alignment import IGNORE_LABEL
from bert_tf.tasks.score_table import score_table
from bert_tf.tasks.soft_targets import softened_kl
from bert_tf.tasks.text_budget import cut_text


@dataclasses.dataclass
class NerExamples:
    source: str  # the file (named in errors)
    sentences: list[Sentence]  # tags in BIO
    texts: list[str] | None = None  # the raw texts the words come from (None: the words joined by spaces)
    spans: list[list[tuple[int, int]]] | None = None  # each word's character start and end in its text

    def __len__(self) -> int:
        return len(self.sentences)

    def __post_init__(self):
        if self.texts is None:
            self.texts = [" ".join(sentence.words) for sentence in self.sentences]
            starts = [np.cumsum([0] + [len(word) + 1 for word in sentence.words[:-1]]) for sentence in self.sentences]
            self.spans = [[(int(start), int(start) + len(word)) for start, word in zip(row, sentence.words)]
                          for row, sentence in zip(starts, self.sentences)]


@dataclasses.dataclass
class NerData:
    examples: NerExamples
    features: NerFeatures

    @property
    def sentences(self) -> list[Sentence]:
        return self.examples.sentences


class NerTask(FinetuneTask):
    name = "ner"
    served_outputs = ("words", "word_tags", "entity_type", "entity_text", "entity_char_start", "entity_char_end",
                      "entity_score")
    model_class = BertTokenClassifier
    windowed = True
    text_serving_class = NerTextServing
    primary_metric = "f1"
    hf_architecture, hf_head_name = "BertForTokenClassification", "classifier"
    learns_from_unlabeled_text = True
    settings_class = NerSettings

    # ----- exports, loading, reports ---------------------------------------------------------

    @classmethod
    def serving_outputs(cls, model, spec, ids):
        """Per token: `probabilities` [b, s, k], `tag_ids` [b, s] and `tags` [b, s] ("" on padding)."""
        return token_outputs(model(ids, training=False), ids["input_mask"], spec.label_names)

    @classmethod
    def format_scores(cls, scores):
        """Entity precision, recall and F1 (and token accuracy), then the per-type table.

        Example:
            >>> print(NerTask.format_scores({"precision": 0.9, "recall": 0.8, "f1": 0.847, "accuracy": 0.97,
            ...     "per_type": {"PER": {"precision": 0.9, "recall": 0.8, "f1": 0.847, "support": 10}}}))
            entities: precision 0.9000  recall 0.8000  F1 0.8470  (token accuracy 0.9700)
            type          precision  recall      F1  support
            PER              0.9000  0.8000  0.8470       10
        """
        head = (f"entities: precision {scores['precision']:.4f}  recall {scores['recall']:.4f}  F1 {scores['f1']:.4f}  "
                f"(token accuracy {scores['accuracy']:.4f})")
        return "\n".join([head, *score_table("type", scores["per_type"])])

    @classmethod
    def prediction_lines(cls, inputs, predictions):
        """`word/TAG ...` per text, then one indented `TYPE<TAB>text<TAB>score` line per entity."""
        lines = []
        for result in predictions:
            lines.append(" ".join(f"{word}/{tag}" for word, tag in zip(result["words"], result["tags"])))
            lines.extend(f"  {entity['type']}\t{entity['text']}\t{entity['score']:.4f}"
                         for entity in result["entities"])
        return lines

    @classmethod
    def served_predictions(cls, outputs, info):
        """`{"entities": [{"type", "text", "start", "end", "score"}, ...], "words", "tags"}` per text."""
        results = []
        for row, words in enumerate(outputs["words"]):
            count = sum(1 for word in words if word)  # "" only after the last word
            entities = [{"type": served_text(kind), "text": served_text(text), "start": int(start), "end": int(end),
                         "score": float(score)}
                        for kind, text, start, end, score in zip(*(outputs[name][row] for name in (
                            "entity_type", "entity_text", "entity_char_start", "entity_char_end", "entity_score")))
                        if kind]
            results.append({"entities": entities, "words": [served_text(word) for word in words[:count]],
                            "tags": [served_text(tag) for tag in outputs["word_tags"][row][:count]]})
        return results

    @classmethod
    def soft_target_loss(cls, student, teacher_outputs, student_outputs, labels, temperature):
        """The softened KL of the tag logits over the labelled positions (each word's first piece)."""
        return softened_kl(teacher_outputs, student_outputs, temperature, tf.not_equal(labels, IGNORE_LABEL))

    @classmethod
    def model_from_hf(cls, encoder, settings):
        labels = hf_label_names(settings)
        return BertTokenClassifier(encoder, num_labels=len(labels) or settings.get("num_labels", 2),
                                   label_names=labels or None)

    # ----- fine-tuning -----------------------------------------------------------------------
    per_position = True
    label_padding = IGNORE_LABEL

    @property
    def label_names(self) -> list[str] | None:
        return list(self.spec.label_names) or None

    def read(self, path, fit_labels=False, need_labels=True) -> NerExamples:
        sentences = read_conll(path, need_tags=need_labels)
        for sentence in sentences:
            if sentence.tags is not None:
                sentence.tags = to_bio(sentence.tags)
        if fit_labels:
            label_names = label_vocabulary(tag for sentence in sentences for tag in sentence.tags)
            if len(label_names) < 2:
                raise ValueError(f"{path}: only the tag {label_names[0]!r}; NER needs two or more tags.")
            self.spec = self.spec.replace(label_names=label_names)
        elif self.label_names is None:
            raise ValueError("NerTask: learn the tags from the training file first (fit_labels=True).")
        return NerExamples(str(path), sentences)

    def subset(self, examples: NerExamples, indices) -> NerExamples:
        return NerExamples(examples.source, [examples.sentences[index] for index in indices],
                           [examples.texts[index] for index in indices], [examples.spans[index] for index in indices])

    def prepare(self, examples: NerExamples, training: bool) -> NerData:
        sentences = examples.sentences
        word_labels = None
        if all(sentence.tags is not None for sentence in sentences):
            word_labels = [encode_labels(sentence.tags, self.label_names, examples.source, sentence.word_lines)
                           for sentence in sentences]
        features = ner_features([sentence.words for sentence in sentences], self.tokenizer, self.seq_length,
                                word_labels)
        return NerData(examples, features)

    def dataset(self, data: NerData):
        return data.features.dataset(), data.features.lengths

    def build_model(self, encoder, dropout):
        return BertTokenClassifier(encoder, num_labels=len(self.label_names), label_names=self.label_names,
                                   dropout=dropout)

    def _word_logits(self, data: NerData, outputs) -> list[np.ndarray]:
        return sentence_word_logits(data.features, outputs, [len(sentence.words) for sentence in data.sentences])

    def prediction_scores(self, examples: NerExamples, predictions) -> dict:
        """Entity scores of the predicted tags of each example's words: a predicted word's tag is the tag of the
        example's word it starts (a served model splits the text into words itself, also at punctuation within a
        word); a word no predicted word starts (cut off with the text) is "O"."""
        predicted = []
        for text, spans, prediction in zip(examples.texts, examples.spans, predictions):
            starts, position = {}, 0
            for word, tag in zip(prediction["words"], prediction["tags"]):
                start = text.find(word, position)  # each word as written in the text, in order
                if start >= 0:
                    starts.setdefault(start, tag)
                    position = start + len(word)
            predicted.append([starts.get(start, "O") for start, _ in spans])
        return ner_scores([sentence.tags for sentence in examples.sentences], predicted)

    def predictions(self, data: NerData, outputs) -> list[dict]:
        """Per sentence: `{"entities": [{"type", "text", "start", "end", "score"}, ...], "words", "tags"}`."""
        word_logits = self._word_logits(data, outputs)
        lengths = [len(logits) for logits in word_logits]
        logits = np.concatenate(word_logits) if word_logits else np.zeros([0, len(self.label_names)], np.float32)
        probabilities = np.exp(logits - logits.max(axis=-1, keepdims=True))
        probabilities /= probabilities.sum(axis=-1, keepdims=True)
        tag_ids = logits.argmax(axis=-1)
        spans = np.array([span for spans in data.examples.spans for span in spans], np.int32).reshape([-1, 2])

        def per_sentence(values):
            return tf.RaggedTensor.from_row_lengths(values, lengths)

        entities = word_entities(per_sentence(tag_ids.astype(np.int32)), per_sentence(probabilities.max(axis=-1)),
                                 per_sentence(spans[:, 0]), per_sentence(spans[:, 1]), self.label_names)
        results = []
        for row, (sentence, text) in enumerate(zip(data.sentences, data.examples.texts)):
            found = [{"type": kind.decode("utf-8"), "text": text[start:end], "start": start, "end": end,
                      "score": score}
                     for kind, start, end, score in zip(*(values[row].numpy().tolist() for values in entities))]
            results.append({"entities": found, "words": sentence.words,
                            "tags": [self.label_names[index] for index in word_logits[row].argmax(axis=-1)]})
        return results

    def labelled_by(self, model, texts: list[str], source: str, batch_size: int, progress: bool = False) -> NerExamples:
        """`texts`, split into words, with the tags `model` predicts for them."""
        examples = self.examples_from_texts(texts)
        predicted = self.predict(model, self.prepare(examples, False), batch_size, progress)
        for sentence, result in zip(examples.sentences, predicted):
            sentence.tags, sentence.word_lines = result["tags"], [sentence.line] * len(sentence.words)
        return dataclasses.replace(examples, source=source)

    def texts(self, examples: NerExamples) -> list[str]:
        """The sentences' texts (a file's words joined by spaces), as `labelled_by` reads them."""
        return list(examples.texts)

    def joined(self, examples: NerExamples, more: NerExamples) -> NerExamples:
        return NerExamples(examples.source, examples.sentences + more.sentences, examples.texts + more.texts,
                           examples.spans + more.spans)

    def inputs_of(self, examples: NerExamples) -> list[dict]:
        return [{"text": text} for text in examples.texts]

    def examples_from_texts(self, texts) -> NerExamples:
        """Sentences to tag from strings: each cut to `max_text_bytes`, split into words as BERT's basic
        tokenizer splits them (`BertTokenizer.words`, as the SavedModel splits them)."""
        cut = cut_text(tf.constant(list(texts), tf.string), self.spec.max_text_bytes)
        texts = [text.decode("utf-8") for text in cut.numpy().tolist()]
        words, starts, ends = (part.to_list() for part in self.tokenizer.words(cut))
        sentences = [Sentence([word.decode("utf-8") for word in sentence], None, line)
                     for line, sentence in enumerate(words, start=1)]
        empty = [sentence.line for sentence in sentences if not sentence.words]
        if empty:
            raise ValueError(f"Text {empty[0]} has no words to tag.")
        return NerExamples("<texts>", sentences, texts,
                           [list(zip(row_starts, row_ends)) for row_starts, row_ends in zip(starts, ends)])
