"""BERT as a feature extractor: sentence vectors and token vectors (with the word each token belongs to).

Texts go in batches through the in-graph `BertPreprocessor`, which pads each batch only to its
longest text (in a parallel tf.data pipeline when the texts come as a dataset, e.g. a file); the
encoder runs in one traced function, and only the requested vectors leave it.
Texts longer than `max_length` tokens are truncated, with one warning naming them. Sentence
vectors also take text pairs, `(first, second)`, encoded together as BERT's sentence-pair tasks
read them ([CLS] first [SEP] second [SEP], segment ids 0 and 1).

Layers are the transformer blocks: 0 is the first, -1 (default) the last, and `EMBEDDINGS`
("embeddings") the embeddings' output that the first block reads (context-free but for
position and segment); a tuple of layers is concatenated, `LAST_FOUR_LAYERS` being the paper's
best feature-based setting (Devlin et al., 2019, table 7).

Example (the contextual vector of "bank" depends on the sentence; the word embedding does not):
    >>> model = load_inspection_model("pretrained-mini/")                       # doctest: +SKIP
    >>> embedder = TextEmbedder(model.encoder, model.tokenizer)                  # doctest: +SKIP
    >>> money, river = embedder.embed_tokens(["I opened a bank account", "we sat on the river bank"],
    ...                                      EmbeddingConfig(layers=LAST_FOUR_LAYERS))  # doctest: +SKIP
    >>> float(cosine_similarity(money.word_vector("bank"), river.word_vector("bank"))) < 1.0  # doctest: +SKIP
    True
    >>> embedder.embed(["a cat sat", "a dog"], EmbeddingConfig(pooling="cls", normalize=True)).shape  # doctest: +SKIP
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

from bert_tf.config import check_sequence_length
from bert_tf.tasks.embedding.exported_embedder import ExportedEmbedder
from bert_tf.inspection.exported_encoder import ExportedEncoder
from bert_tf.layers.pooling import POOLINGS as TOKEN_POOLINGS
from bert_tf.layers.pooling import TokenPooling, pooled_width
from bert_tf.model import INPUT_NAMES, BertModel
from bert_tf.preprocessor import BertPreprocessor
from bert_tf.progress import progress_bar
from bert_tf.tokenizer import BertTokenizer
from bert_tf.vocabulary import SUFFIX_INDICATOR

logger = logging.getLogger(__name__)

POOLINGS = (*TOKEN_POOLINGS, "pooled")  # "pooled": the encoder's pooler (a tanh dense layer on [CLS])
LAST_FOUR_LAYERS = (-4, -3, -2, -1)
EMBEDDINGS = "embeddings"  # the layer before the first block
NO_WORD = -1  # word index of [CLS] and [SEP], as in bert_tf.tasks.ner.word_alignment


def _is_layer(layer) -> bool:
    """A block index (an int, not a bool) or EMBEDDINGS."""
    return layer == EMBEDDINGS or (isinstance(layer, int) and not isinstance(layer, bool))


@dataclasses.dataclass(frozen=True)
class EmbeddingConfig:
    """What vector to take from the encoder, and how."""

    pooling: str = "mean"  # "cls", "pooled" (the encoder's pooler), "mean", "max" or "mean_max"
    # Block index (negative from the end) or EMBEDDINGS, or several of them, concatenated.
    layers: int | str | tuple[int | str, ...] = -1
    normalize: bool = False  # scale every output vector to unit L2 length
    skip_special_tokens: bool = False  # leave [CLS] and [SEP] out of "mean"/"max" pooling
    batch_size: int = 32

    def __post_init__(self):
        layers = (self.layers,) if isinstance(self.layers, (int, str)) else tuple(self.layers)
        if not layers or not all(_is_layer(layer) for layer in layers):
            raise ValueError(f"layers must be block indices (ints) or {EMBEDDINGS!r}, one or a non-empty tuple; "
                             f"got {self.layers!r}.")
        object.__setattr__(self, "layers", layers)
        if self.pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {self.pooling!r}.")
        if self.pooling == "pooled" and layers != (-1,):
            raise ValueError(f"pooling='pooled' is the encoder's pooler output on the last layer; "
                             f"it cannot take layers {layers}. Use 'cls' for the [CLS] vector of another layer.")
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be positive, got {self.batch_size}.")


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
    """Sentence or token vectors of texts from a BERT encoder (see the module docstring).

    Args:
        encoder: a `BertModel`, an `ExportedEncoder` (last layer only), or an `ExportedEmbedder` (the vectors it
            was trained to give only).
        tokenizer: its `BertTokenizer`.
        config: the default `EmbeddingConfig`; each method takes another one too (the
            tokenizer's graph is traced once per embedder, the encoder's once per config).
        max_length: most tokens per text, [CLS] and [SEP] included (default: the encoder's
            `max_position_embeddings`); longer texts are truncated with a warning.
        projection: a layer every sentence vector goes through after pooling, before normalising (a distilled
            embedding student's map into its teacher's space, `InspectionModel.projection`: for the pooling and
            layer it was trained on); token vectors do not.
    """

    def __init__(self, encoder: BertModel | ExportedEncoder | ExportedEmbedder, tokenizer: BertTokenizer,
                 config: EmbeddingConfig = EmbeddingConfig(), max_length: int | None = None, projection=None):
        max_length = max_length or encoder.config.max_position_embeddings
        check_sequence_length(max_length, encoder.config.max_position_embeddings, "max_length")
        self.encoder = encoder
        self.tokenizer = tokenizer
        self.projection = projection
        self.max_length = max_length
        self.preprocessor = BertPreprocessor(tokenizer, seq_length=max_length, padding="longest")
        def traced_prepare(segments: int, with_offsets: bool):
            return tf.function(lambda *columns: self._prepare(columns, with_offsets),
                               input_signature=[tf.TensorSpec([None], tf.string)] * segments)

        # (segments per example, with character offsets) → traced preprocessing; offsets for single texts only.
        self._prepare_functions = {key: traced_prepare(*key) for key in ((1, False), (1, True), (2, False))}
        self._vector_functions = {}  # (config, per token) → traced encoder + pooling
        self.config = config
        self._vector_function(config, per_token=False)  # checks the config against the encoder now

    def dim(self, config: EmbeddingConfig | None = None) -> int:
        """The size of each output vector."""
        config = config or self.config
        if self.projection is not None:
            return self.projection.units
        return pooled_width(config.pooling, self.encoder.config.hidden_size * len(config.layers))

    def embed(self, texts: Sequence[str] | Sequence[tuple[str, str]], config: EmbeddingConfig | None = None,
              progress: bool = False) -> np.ndarray:
        """Sentence vectors, float32 [len(texts), dim]; `texts` are strings, or `(first, second)` pairs."""
        batches = [vectors for _, vectors in self.iter_sentence_vectors(texts, config, progress=progress)]
        return np.concatenate(batches) if batches else np.zeros((0, self.dim(config)), np.float32)

    def embed_tokens(self, texts: Sequence[str], config: EmbeddingConfig | None = None,
                     progress: bool = False) -> list[TokenVectors]:
        """Token vectors of each text ([CLS] and [SEP] included); the config's pooling does not apply."""
        return list(self.iter_token_vectors(texts, config, progress=progress))

    def iter_sentence_vectors(self, texts, config: EmbeddingConfig | None = None, progress: bool = False,
                              total: int | None = None) -> Iterator[tuple[list[str], np.ndarray]]:
        """(texts, vectors [batch, dim]) batch by batch; `texts` may be a list or a tf.data string dataset.

        Text pairs: a list of `(first, second)` or a dataset of string pairs; each is yielded back
        as `"first<TAB>second"`.
        """
        config = config or self.config
        vectors_of = self._vector_function(config, per_token=False)
        for batch in self._batches(texts, config.batch_size, with_offsets=False, progress=progress, total=total):
            vectors = vectors_of({name: batch[name] for name in INPUT_NAMES}).numpy()
            yield [text.decode("utf-8", errors="replace") for text in batch["text"].numpy()], vectors

    def iter_token_vectors(self, texts, config: EmbeddingConfig | None = None, progress: bool = False,
                           total: int | None = None) -> Iterator[TokenVectors]:
        """`TokenVectors` text by text; `texts` may be a list or a tf.data string dataset."""
        config = config or self.config
        vectors_of = self._vector_function(config, per_token=True)
        for batch in self._batches(texts, config.batch_size, with_offsets=True, progress=progress, total=total):
            vectors = vectors_of({name: batch[name] for name in INPUT_NAMES}).numpy()
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

    def _batches(self, texts, batch_size: int, with_offsets: bool, progress: bool, total: int | None) -> Iterable[dict]:
        """Preprocessed batches, with a progress bar and one warning about truncated texts.

        A tf.data dataset (a file, a large corpus) is batched and preprocessed in parallel, ahead of
        the encoder. A list goes batch by batch through the same traced preprocessing function:
        starting a tf.data iterator costs about a second here (it instantiates the tokenizer's
        tables), which would dominate interactive use on a few texts.
        """
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

    def _vector_function(self, config: EmbeddingConfig, per_token: bool):
        """The traced function ids → vectors for `config` (sentence vectors, or per token)."""
        key = (config, per_token)
        if key not in self._vector_functions:
            if isinstance(self.encoder, (ExportedEncoder, ExportedEmbedder)):
                self.encoder.check_config(config, per_token)
            layers = _layer_indices(config.layers, self.encoder.config.num_hidden_layers)
            compute = self._token_vectors if per_token else self._sentence_vectors
            signature = [{name: tf.TensorSpec([None, None], tf.int32) for name in INPUT_NAMES}]
            self._vector_functions[key] = tf.function(lambda inputs: compute(inputs, config, layers),
                                                      input_signature=signature)
        return self._vector_functions[key]

    def _sentence_vectors(self, inputs, config: EmbeddingConfig, layers: tuple[int, ...]):
        if isinstance(self.encoder, ExportedEmbedder):  # pooled, projected and normalised in the export
            return self.encoder.sentence_vectors(inputs)
        outputs = self.encoder(inputs, training=False)
        if config.pooling == "pooled":
            vectors = outputs["pooled_output"]
        else:
            token_mask = inputs["input_mask"]
            if config.skip_special_tokens:
                vocabulary = self.tokenizer.vocabulary
                ids = inputs["input_word_ids"]
                token_mask *= tf.cast((ids != vocabulary.cls_id) & (ids != vocabulary.sep_id), token_mask.dtype)
            vectors = TokenPooling(config.pooling)(_concatenated(outputs, layers), token_mask)
        if self.projection is not None:
            vectors = self.projection(tf.cast(vectors, tf.float32))
        return tf.math.l2_normalize(vectors, axis=-1) if config.normalize else vectors

    def _token_vectors(self, inputs, config: EmbeddingConfig, layers: tuple[int, ...]):
        hidden = _concatenated(self.encoder(inputs, training=False), layers)
        return tf.math.l2_normalize(hidden, axis=-1) if config.normalize else hidden


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


def _concatenated(outputs, layers: tuple[int | str, ...]):
    return tf.concat([outputs["embedding_output"] if layer == EMBEDDINGS else outputs["encoder_outputs"][layer]
                      for layer in layers], axis=-1)


def _layer_indices(layers: tuple[int | str, ...], num_layers: int) -> tuple[int | str, ...]:
    """Block indices in [0, num_layers), from indices that may count from the end; EMBEDDINGS as it is."""
    bad = [layer for layer in layers if layer != EMBEDDINGS and not -num_layers <= layer < num_layers]
    if bad:
        raise ValueError(f"layer(s) {bad} do not exist: the model has {num_layers} layers "
                         f"(use 0..{num_layers - 1}, -{num_layers}..-1 from the end, or {EMBEDDINGS!r}).")
    return tuple(layer if layer == EMBEDDINGS else layer % num_layers for layer in layers)


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


def cosine_similarity(a, b):
    """Cosine similarity: a number for two vectors, an [n, m] matrix for [n, dim] and [m, dim] arrays.

    Example:
        >>> round(float(cosine_similarity([1.0, 0.0], [1.0, 1.0])), 4)
        0.7071
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape[-1] != b.shape[-1]:
        raise ValueError(f"cosine_similarity: vectors of different sizes {a.shape[-1]} and {b.shape[-1]}.")
    a_unit = a / np.maximum(np.linalg.norm(a, axis=-1, keepdims=True), 1e-12)
    b_unit = b / np.maximum(np.linalg.norm(b, axis=-1, keepdims=True), 1e-12)
    return a_unit @ b_unit.T if a.ndim == 2 and b.ndim == 2 else np.sum(a_unit * b_unit, axis=-1)
