"""`NerTask`: named-entity recognition on CoNLL files, scored per entity as conlleval does.

Tags are read as BIO or IOB1 and trained as BIO (`pipelines.conll.to_bio`); the label
names are the BIO tags of the training file. Scores (`bert_tf.metrics.ner_scores`):
entity-level precision, recall and F1 (micro over all entities), token accuracy, and per
entity type. Predictions are one tag per word.

Example:
    >>> task = NerTask(tokenizer, TaskSpec(task="ner", seq_length=128))  # doctest: +SKIP
    >>> train = task.prepare(task.read("conll2003/train.txt", fit_labels=True), training=True)  # doctest: +SKIP
    >>> task.label_names  # doctest: +SKIP
    ['B-LOC', 'B-MISC', 'B-ORG', 'B-PER', 'I-LOC', 'I-MISC', 'I-ORG', 'I-PER', 'O']
"""

from __future__ import annotations

import dataclasses

import tensorflow as tf

from bert_tf.metrics import ner_scores
from bert_tf.tasks.ner import split_words
from bert_tf.tasks.text_budget import cut_text
from bert_tf.token_classifier import BertTokenClassifier
from bert_tf.word_alignment import IGNORE_LABEL
from pipelines.conll import Sentence, read_conll, to_bio
from pipelines.finetune_task import FinetuneTask
from pipelines.labels import encode_labels, label_vocabulary
from pipelines.ner_features import NerFeatures, ner_features, sentence_predictions


@dataclasses.dataclass
class NerExamples:
    source: str  # the file (named in errors)
    sentences: list[Sentence]  # tags in BIO

    def __len__(self) -> int:
        return len(self.sentences)


@dataclasses.dataclass
class NerData:
    sentences: list[Sentence]
    features: NerFeatures


class NerTask(FinetuneTask):
    name = "ner"
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
        return NerExamples(examples.source, [examples.sentences[index] for index in indices])

    def prepare(self, examples: NerExamples, training: bool) -> NerData:
        sentences = examples.sentences
        word_labels = None
        if all(sentence.tags is not None for sentence in sentences):
            word_labels = [encode_labels(sentence.tags, self.label_names, examples.source, sentence.word_lines)
                           for sentence in sentences]
        features = ner_features([sentence.words for sentence in sentences], self.tokenizer, self.seq_length,
                                word_labels)
        return NerData(sentences, features)

    def dataset(self, data: NerData):
        return data.features.dataset(), data.features.lengths

    def build_model(self, encoder, dropout):
        return BertTokenClassifier(encoder, num_labels=len(self.label_names), label_names=self.label_names,
                                   dropout=dropout)

    def _predicted_tags(self, data: NerData, outputs) -> list[list[str]]:
        ids = sentence_predictions(data.features, outputs, [len(sentence.words) for sentence in data.sentences])
        return [[self.label_names[index] for index in sentence] for sentence in ids]

    def scores(self, data: NerData, outputs) -> dict:
        return ner_scores([sentence.tags for sentence in data.sentences], self._predicted_tags(data, outputs))

    def predictions(self, data: NerData, outputs) -> list[list[tuple[str, str]]]:
        return [list(zip(sentence.words, tags))
                for sentence, tags in zip(data.sentences, self._predicted_tags(data, outputs))]

    def examples_from_texts(self, texts) -> NerExamples:
        """Sentences to tag from strings: each cut to `max_text_bytes`, split into words at whitespace
        (`bert_tf.tasks.ner.split_words`, as the SavedModel splits them)."""
        words = split_words(cut_text(tf.constant(list(texts), tf.string), self.spec.max_text_bytes)).to_list()
        sentences = [Sentence([word.decode("utf-8") for word in sentence], None, line)
                     for line, sentence in enumerate(words, start=1)]
        empty = [sentence.line for sentence in sentences if not sentence.words]
        if empty:
            raise ValueError(f"Text {empty[0]} has no words to tag.")
        return NerExamples("<texts>", sentences)
