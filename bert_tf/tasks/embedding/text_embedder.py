"""`TextEmbedder`: the sentence or token vectors of many texts (a list, or a tf.data dataset such as a file's lines)
from a `BertEmbedder` (`bert_tf.load_embedder` wraps any encoder in one) or an `ExportedEmbedder`, batch by batch.

Texts go in batches through the in-graph `BertPreprocessor` of the model (`text_preprocessor()`), padded each batch
only to its longest text (in a parallel tf.data pipeline when the texts come as a dataset, e.g. a file); the model runs
in one traced function, and only the vectors leave it. Texts longer than the preprocessor's `seq_length` are
truncated, with one warning naming them. Sentence vectors also take text pairs, `(first, second)`, encoded together as
BERT's sentence-pair tasks read them ([CLS] first [SEP] second [SEP], segment ids 0 and 1). Token vectors come with
the word each token belongs to (`TokenVectors`).

Example (the contextual vector of "bank" depends on the sentence):
    >>> embedder = TextEmbedder(load_embedder("pretrained-mini/", encoder_layers=LAST_FOUR_LAYERS))  # doctest: +SKIP
    >>> money, river = embedder.embed_tokens(["I opened a bank account", "we sat on the river bank"])  # doctest: +SKIP
    >>> float(cos_sim(money.word_vector("bank"), river.word_vector("bank"))[0, 0]) < 1.0  # doctest: +SKIP
    True
    >>> embedder.embed(["a cat sat", "a dog"]).shape  # doctest: +SKIP
    (2, 256)
    >>> embedder.embed([("who sat?", "a cat sat"), ("who ran?", "a dog")]).shape  # doctest: +SKIP
    (2, 256)
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Iterable, Iterator, Sequence

import numpy as np
import tensorflow as tf

from bert_tf.model import INPUT_NAMES
from bert_tf.preprocessor import BertPreprocessor
from bert_tf.progress import progress_bar
from bert_tf.vocabulary import SUFFIX_INDICATOR

logger = logging.getLogger(__name__)

NO_WORD = -1  # word index of [CLS] and [SEP], as in bert_tf.tasks.ner.word_alignment


@dataclasses.dataclass
class TokenVectors:
    """One text's tokens ([CLS] and [SEP] included), the word each belongs to, and their vectors."""

    text: str
    tokens: list[str]
    word_ids: list[int]  # index into `words` for each token; NO_WORD for [CLS]/[SEP]
    words: list[str]  # the words as written in `text` (one per run of a piece and its ## continuations)
    starts: list[int | None]  # each token's character span in `text` (None for [CLS]/[SEP])
    ends: list[int | None]
    vectors: np.ndarray  # [tokens, dim]

    def word_vector(self, word: str, occurrence: int = 0) -> np.ndarray:
        """The mean vector of the pieces of `word` (compared case-insensitively), its `occurrence`-th use."""
        matches = [index for index, written in enumerate(self.words) if written.casefold() == word.casefold()]
        if len(matches) <= occurrence:
            raise KeyError(f"{word!r} occurs {len(matches)} time(s) in {self.text!r}; words are {self.words}.")
        pieces = [position for position, word_id in enumerate(self.word_ids) if word_id == matches[occurrence]]
        return self.vectors[pieces].mean(axis=0)

    def to_json(self, decimals: int = 6) -> dict:
        """A JSON-ready dict: the text and, per token, its string, word, span and vector."""
        vectors = np.round(self.vectors.astype(np.float64), decimals).tolist()
        return {"text": self.text, "tokens": [
            {"token": token, "word": self.words[word_id] if word_id != NO_WORD else None, "word_index": word_id,
             "start": start, "end": end, "vector": vector}
            for token, word_id, start, end, vector in zip(self.tokens, self.word_ids, self.starts, self.ends, vectors)
        ]}


class TextEmbedder:
    """Sentence or token vectors of texts from `model` (see the module docstring), `batch_size` texts at a time.

    `model`: a `BertEmbedder` (its pooling, layers and normalisation: `BertEmbedder.with_options`), with the
    preprocessor of its texts (`set_preprocessor`; `bert_tf.load_embedder` sets one), or an `ExportedEmbedder`.
    """

    def __init__(self, model, batch_size: int = 32):
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}.")
        preprocessor = model.text_preprocessor()
        if not isinstance(preprocessor, BertPreprocessor):
            raise ValueError("TextEmbedder reads the tokenizer and length of the model's BertPreprocessor: give the "
                             "model one (set_preprocessor), or load it with bert_tf.load_embedder.")
        self.model, self.batch_size = model, batch_size
        self.tokenizer, self.max_length = preprocessor.tokenizer, preprocessor.seq_length
        self.preprocessor = BertPreprocessor(self.tokenizer, seq_length=self.max_length, padding="longest")

        def traced_prepare(segments: int, with_offsets: bool):
            return tf.function(lambda *columns: self._prepare(columns, with_offsets),
                               input_signature=[tf.TensorSpec([None], tf.string)] * segments)

        # (segments per example, with character offsets) → traced preprocessing; offsets for single texts only.
        self._prepare_functions = {key: traced_prepare(*key) for key in ((1, False), (1, True), (2, False))}
        self._signature = [{name: tf.TensorSpec([None, None], tf.int32) for name in INPUT_NAMES}]
        self._sentence_vectors = tf.function(lambda inputs: model(inputs, training=False),
                                             input_signature=self._signature)
        self._token_vectors = None  # made when first asked for: an exported embedding model has none

    def dim(self) -> int:
        """The size of each sentence vector."""
        return self.model.embedding_size

    def embed(self, texts: Sequence[str] | Sequence[tuple[str, str]], progress: bool = False) -> np.ndarray:
        """Sentence vectors, float32 [len(texts), dim]; `texts` are strings, or `(first, second)` pairs."""
        batches = [vectors for _, vectors in self.iter_sentence_vectors(texts, progress=progress)]
        return np.concatenate(batches) if batches else np.zeros((0, self.dim()), np.float32)

    def embed_tokens(self, texts: Sequence[str], progress: bool = False) -> list[TokenVectors]:
        """Token vectors of each text ([CLS] and [SEP] included): `BertEmbedder.token_vectors`, not pooled."""
        return list(self.iter_token_vectors(texts, progress=progress))

    def iter_sentence_vectors(self, texts, progress: bool = False,
                              total: int | None = None) -> Iterator[tuple[list[str], np.ndarray]]:
        """(texts, vectors [batch, dim]) batch by batch; `texts` may be a list or a tf.data string dataset.

        Text pairs: a list of `(first, second)` or a dataset of string pairs; each is yielded back
        as `"first<TAB>second"`.
        """
        for batch in self._batches(texts, with_offsets=False, progress=progress, total=total):
            vectors = self._sentence_vectors({name: batch[name] for name in INPUT_NAMES}).numpy()
            yield [text.decode("utf-8", errors="replace") for text in batch["text"].numpy()], vectors

    def iter_token_vectors(self, texts, progress: bool = False, total: int | None = None) -> Iterator[TokenVectors]:
        """`TokenVectors` text by text; `texts` may be a list or a tf.data string dataset."""
        if self._token_vectors is None:
            self._token_vectors = tf.function(self.model.token_vectors, input_signature=self._signature)
        for batch in self._batches(texts, with_offsets=True, progress=progress, total=total):
            vectors = self._token_vectors({name: batch[name] for name in INPUT_NAMES}).numpy()
            lengths = batch["input_mask"].numpy().sum(axis=1)
            token_ids = batch["input_word_ids"].numpy()
            for row, text in enumerate(batch["text"].numpy()):
                length = int(lengths[row])
                yield _token_vectors(
                    text.decode("utf-8", errors="replace"),
                    [self.tokenizer.vocabulary.tokens[i] for i in token_ids[row, :length]],
                    batch["starts"][row].numpy()[: length - 2].tolist(),
                    batch["ends"][row].numpy()[: length - 2].tolist(),
                    vectors[row, :length],
                )

    def _batches(self, texts, with_offsets: bool, progress: bool, total: int | None) -> Iterable[dict]:
        """Preprocessed batches, with a progress bar and one warning about truncated texts.

        A tf.data dataset (a file, a large corpus) is batched and preprocessed in parallel, ahead of
        the encoder. A list goes batch by batch through the same traced preprocessing function:
        starting a tf.data iterator costs about a second here (it instantiates the tokenizer's
        tables), which would dominate interactive use on a few texts.
        """
        batch_size = self.batch_size
        if isinstance(texts, tf.data.Dataset):
            segments = len(texts.element_spec) if isinstance(texts.element_spec, tuple) else 1
            prepare = self._prepare_function(segments, with_offsets)
            batches = (texts.batch(batch_size).map(prepare, num_parallel_calls=tf.data.AUTOTUNE)
                       .prefetch(tf.data.AUTOTUNE))
        else:
            texts = list(texts)
            total = len(texts)
            columns = _segment_columns(texts)
            prepare = self._prepare_function(len(columns), with_offsets)
            batches = (prepare(*(tf.constant(column[start:start + batch_size], tf.string) for column in columns))
                       for start in range(0, len(texts), batch_size))
        truncated, seen = [], 0
        with progress_bar(total=total, unit="text", desc="embedding", disable=not progress) as bar:
            for batch in batches:
                too_long = np.flatnonzero(batch["truncated"].numpy())
                truncated.extend((seen + too_long + 1).tolist())
                seen += len(batch["text"])
                yield batch
                bar.update(len(batch["text"]))
        if truncated:
            logger.warning(
                "%d text(s) longer than %d tokens were truncated (texts %s%s, counting from 1).", len(truncated),
                self.max_length, ", ".join(map(str, truncated[:10])), " ..." if len(truncated) > 10 else "")

    def _prepare_function(self, segments: int, with_offsets: bool):
        if (segments, with_offsets) not in self._prepare_functions:
            raise ValueError("Token vectors are per text: give single texts, not pairs." if segments == 2 and
                             with_offsets else f"Texts must be strings or pairs of strings, not {segments}-tuples.")
        return self._prepare_functions[segments, with_offsets]

    def _prepare(self, segments: tuple, with_offsets: bool) -> dict:
        """Ids of one batch (`segments`: (texts,) or (firsts, seconds)), its texts, and which were truncated."""
        texts = segments[0] if len(segments) == 1 else tf.strings.join(list(segments), separator="\t")
        batch = dict(self.preprocessor(list(segments)), text=texts)
        # The preprocessor truncates silently, so the full token counts come from tokenizing once more.
        if with_offsets:
            ids, batch["starts"], batch["ends"] = self.tokenizer.tokenize_with_offsets(texts, unit="UTF8_CHAR")
            num_tokens = ids.row_lengths()
        else:
            num_tokens = tf.add_n([self.tokenizer.tokenize(segment).row_lengths() for segment in segments])
        batch["truncated"] = num_tokens > self.max_length - 1 - len(segments)  # [CLS], and [SEP] after each
        return batch


def _segment_columns(texts: list) -> list[list[str]]:
    """[texts] for strings, [firsts, seconds] for (first, second) pairs; a clear error for anything else."""
    def is_pair(item) -> bool:
        return isinstance(item, (tuple, list)) and len(item) == 2 and all(isinstance(text, str) for text in item)

    if all(isinstance(text, str) for text in texts):
        return [texts]
    if all(is_pair(text) for text in texts):
        return [[first for first, _ in texts], [second for _, second in texts]]
    like_first = is_pair if is_pair(texts[0]) else (lambda item: isinstance(item, str))
    bad = next(index for index, text in enumerate(texts) if not like_first(text))
    raise ValueError(f"Texts must be all strings or all (first, second) pairs of strings; item {bad} is "
                     f"{texts[bad]!r} (item 0 is {texts[0]!r}).")


def _token_vectors(text: str, tokens: list[str], starts: list[int], ends: list[int], vectors) -> TokenVectors:
    """Groups the pieces between [CLS] and [SEP] into words: a `##` piece continues the word before it."""
    word_ids, spans = [NO_WORD], []
    for token, start, end in zip(tokens[1:-1], starts, ends):
        if token.startswith(SUFFIX_INDICATOR) and spans:
            spans[-1][1] = end
        else:
            spans.append([start, end])
        word_ids.append(len(spans) - 1)
    words = [text[start:end] for start, end in spans]
    return TokenVectors(text, tokens, word_ids + [NO_WORD], words, [None, *starts, None], [None, *ends, None], vectors)
