"""Fill-mask: ask the pre-training masked-LM head what belongs at each `[MASK]` of a text.

The tokenizer reads the text "[MASK]" as ordinary text (on purpose, see `bert_tf.tokenizer`), so the
text is split on "[MASK]", each part is tokenized, and the mask id is put between the parts.

How masks are read:
- A `[MASK]` on its own is one word piece: its candidates are the model's distribution over the
  whole vocabulary as it is (the reference fill-mask pipelines do the same, so a `##` piece or
  `[UNK]` can appear).
- Several masks written together, "[MASK][MASK]", are one word of that many pieces. It is filled
  left to right by beam search (beam width = top_k): the first piece is a word start, the others
  `##` continuations, no special tokens; the probability of a word is the product of each piece's
  probability given the pieces chosen before it. Other masks in the text stay masked meanwhile.
- Masks separated by anything, even a space ("[MASK] [MASK]"), are separate words, predicted
  independently in one pass.
A mask inside a word ("[MASK]s") is still a separate token: "s" is tokenized as a word of its own.

Example:
    >>> result = fill_mask(model.require_pretrainer(), model.tokenizer,              # doctest: +SKIP
    ...                    "The woman went to the store and bought a [MASK] of shoes.")
    >>> [(c.text, round(c.probability, 2)) for c in result.spans[0].candidates]     # doctest: +SKIP
    [('pair', ...), ...]                    # the top_k candidates, most probable first
    >>> result.filled_text()                                                         # doctest: +SKIP
    'The woman went to the store and bought a pair of shoes.'   # each span's best candidate in place
"""

from __future__ import annotations

import dataclasses
import logging

import numpy as np
import tensorflow as tf

from bert_tf.pretrainer import BertPretrainer
from bert_tf.tokenizer import BertTokenizer
from bert_tf.vocabulary import SUFFIX_INDICATOR, is_bracketed

logger = logging.getLogger(__name__)

MASK_TEXT = "[MASK]"


@dataclasses.dataclass(frozen=True)
class Candidate:
    """One filling of a masked span: the word (pieces glued), its pieces and its probability."""

    text: str
    tokens: tuple[str, ...]
    probability: float


@dataclasses.dataclass(frozen=True)
class MaskedSpan:
    """Consecutive `[MASK]` tokens filled as one word, with the best candidates first."""

    positions: tuple[int, ...]  # token positions in the packed input ([CLS] is 0)
    candidates: tuple[Candidate, ...]


@dataclasses.dataclass(frozen=True)
class FillMaskResult:
    text: str
    spans: tuple[MaskedSpan, ...]  # in text order

    def filled_text(self, rank: int = 0) -> str:
        """The text with every span replaced by its candidate of this rank (0: the best)."""
        parts = self.text.split(MASK_TEXT)
        filled, mask_count = [parts[0]], 0
        for span in self.spans:
            mask_count += len(span.positions)
            filled += [span.candidates[rank].text, parts[mask_count]]
        return "".join(filled)


def encode_masked_text(tokenizer: BertTokenizer, text: str, max_length: int) -> tuple[list[int], list[list[int]]]:
    """`[CLS] text [SEP]` as ids with the mask id at each "[MASK]", and the positions of each span of masks.

    A text longer than `max_length` tokens is cut at the end (with a warning) when every mask
    stays in; otherwise it is an error.
    """
    parts = text.split(MASK_TEXT)
    if len(parts) == 1:
        raise ValueError(f"No {MASK_TEXT} in {text!r}: write {MASK_TEXT} where a word should be predicted.")
    vocabulary = tokenizer.vocabulary
    ids, spans = [vocabulary.cls_id], []
    for index, part_ids in enumerate(tokenizer.tokenize(parts).to_list()):
        ids += part_ids
        if index == len(parts) - 1:
            break
        if index > 0 and not parts[index]:  # nothing between this mask and the one before: same word
            spans[-1].append(len(ids))
        else:
            spans.append([len(ids)])
        ids.append(vocabulary.mask_id)
    if len(ids) + 1 > max_length:
        last_mask = spans[-1][-1]
        if last_mask >= max_length - 1:
            raise ValueError(
                f"The text has {len(ids) - 1} tokens, more than fit in {max_length} with [CLS] and [SEP], and its "
                f"{MASK_TEXT} at token {last_mask} would be cut off; shorten the text around it."
            )
        logger.warning("The text has %d tokens; cut to %d to fit max_length %d (every %s kept).",
                       len(ids) - 1, max_length - 2, max_length, MASK_TEXT)
        ids = ids[:max_length - 1]
    return ids + [vocabulary.sep_id], spans


def mask_probabilities(pretrainer: BertPretrainer, word_ids, positions, pad_id: int | None = None) -> np.ndarray:
    """Softmax of the masked-LM logits: word_ids [batch, seq], positions [batch, P] → [batch, P, vocab].
    With `pad_id`, rows padded with it to the longest attend to their own tokens only."""
    word_ids = tf.constant(word_ids, tf.int32)
    outputs = pretrainer({
        "input_word_ids": word_ids,
        "input_mask": tf.ones_like(word_ids) if pad_id is None else tf.cast(word_ids != pad_id, tf.int32),
        "input_type_ids": tf.zeros_like(word_ids),
        "masked_lm_positions": tf.constant(positions, tf.int32),
    }, training=False)
    return tf.nn.softmax(outputs["mlm_logits"], axis=-1).numpy()


def fill_mask(pretrainer: BertPretrainer, tokenizer: BertTokenizer, text: str, top_k: int = 5,
              max_length: int | None = None) -> FillMaskResult:
    """The `top_k` candidates for every `[MASK]` span of `text` (see the module docstring)."""
    if top_k < 1:
        raise ValueError(f"top_k must be at least 1, got {top_k}.")
    max_length = max_length or pretrainer.encoder.config.max_position_embeddings
    ids, spans = encode_masked_text(tokenizer, text, max_length)
    tokens = tokenizer.vocabulary.tokens
    top_k = min(top_k, len(tokens))
    single = [span[0] for span in spans if len(span) == 1]
    single_probs = iter(mask_probabilities(pretrainer, [ids], [single])[0] if single else [])
    results = []
    for span in spans:
        if len(span) == 1:
            probs = next(single_probs)[:len(tokens)]  # a model may have more rows than its vocab.txt has tokens
            best = np.argsort(-probs, kind="stable")[:top_k]
            candidates = tuple(Candidate(tokens[i], (tokens[i],), float(probs[i])) for i in best)
        else:
            candidates = _fill_word(pretrainer, tokens, ids, span, top_k)
        results.append(MaskedSpan(tuple(span), candidates))
    return FillMaskResult(text, tuple(results))


def _fill_word(pretrainer, tokens, ids, span, beam_width) -> tuple[Candidate, ...]:
    """Beam search over the pieces of one word at the positions `span`, left to right."""
    is_continuation = np.array([token.startswith(SUFFIX_INDICATOR) for token in tokens])
    is_word_start = ~is_continuation & np.array([not is_bracketed(token) for token in tokens])
    if not is_continuation.any():
        raise ValueError(f"{len(span)} adjacent {MASK_TEXT}s ask for a word of several pieces, but the vocabulary "
                         f"has no '{SUFFIX_INDICATOR}' pieces; separate the masks with a space.")
    beams = [((), 0.0)]  # (piece ids, log probability)
    for step, position in enumerate(span):
        batch = np.tile(np.array(ids, np.int32), (len(beams), 1))
        for row, (pieces, _) in enumerate(beams):
            batch[row, span[:step]] = pieces
        probs = mask_probabilities(pretrainer, batch, [[position]] * len(beams))[:, 0, :len(tokens)]
        allowed = is_continuation if step else is_word_start
        with np.errstate(divide="ignore"):
            scores = np.where(allowed, np.log(probs), -np.inf) + np.array([score for _, score in beams])[:, None]
        best = np.argsort(-scores, axis=None, kind="stable")[:beam_width]
        beams = [(beams[flat // len(tokens)][0] + (int(flat % len(tokens)),), float(scores.flat[flat]))
                 for flat in best if np.isfinite(scores.flat[flat])]
    return tuple(
        Candidate("".join(tokens[i].removeprefix(SUFFIX_INDICATOR) for i in pieces),
                  tuple(tokens[i] for i in pieces), float(np.exp(score)))
        for pieces, score in beams
    )
