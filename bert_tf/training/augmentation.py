"""More text for a distillation student: copies of sentences with words replaced by a masked-LM's guesses.

TinyBERT's augmentation (Jiao et al., 2020): each word of one word piece is masked on its own and
the masked-LM's `top_k` most probable word starts (not the word itself, no special tokens) are its
candidates; each copy of a text replaces each such word, with `probability`, by one of them drawn
at random. Words of several pieces stay as they are (TinyBERT takes their GloVe neighbours; bert-tf
has no word vectors). The rest of the text, spacing and case included, is kept. The copies carry no
labels: the teacher labels them (`bert-tf distill --augment N`).

A line "text<TAB>second text" (a sentence pair) is augmented field by field.

Example:
    >>> mlm = load_inspection_model("bert-mini-uncased-books")   # doctest: +SKIP
    >>> augment_texts(["the film was great fun"], mlm.require_pretrainer(), mlm.tokenizer, copies=2, seed=0)  # doctest: +SKIP
    ['the film was pure fun', 'the show was great fun']   # doctest: +SKIP
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from bert_tf.inspection.fill_mask import mask_probabilities
from bert_tf.pretrainer import BertPretrainer
from bert_tf.progress import TextProgress
from bert_tf.tokenizer import BertTokenizer
from bert_tf.vocabulary import SUFFIX_INDICATOR, is_bracketed

COPIES, PROBABILITY, TOP_K = 20, 0.4, 15  # TinyBERT's N_a, p_t and K


def augment_texts(texts: list[str], pretrainer: BertPretrainer, tokenizer: BertTokenizer, copies: int = COPIES,
                  probability: float = PROBABILITY, top_k: int = TOP_K, seed: int = 0, max_length: int = 128,
                  batch_size: int = 256, progress: bool = False) -> list[str]:
    """Up to `copies` new texts per text, in the texts' order; each new text once, none equal to a text given."""
    fields = [text.split("\t") for text in texts]
    flat = [field for line in fields for field in line]
    candidates = word_candidates(flat, pretrainer, tokenizer, top_k, max_length, batch_size, progress)
    rng = np.random.default_rng(seed)
    augmented, index, seen = [], 0, set(texts)
    for line in fields:
        parts = [_copies(field, candidates[index + offset], copies, probability, rng) for offset, field in enumerate(line)]
        index += len(line)
        for copy in zip(*parts):
            text = "\t".join(copy)
            if text not in seen:
                seen.add(text)
                augmented.append(text)
    return augmented


def word_candidates(texts: list[str], pretrainer: BertPretrainer, tokenizer: BertTokenizer, top_k: int,
                    max_length: int, batch_size: int, progress: bool = False) -> list[list[tuple[int, int, list[str]]]]:
    """Per text, `(start, end, candidates)` of each word of one piece within `max_length` tokens: its span in
    the text (code points) and the masked-LM's `top_k` replacements when it alone is masked."""
    vocabulary = tokenizer.vocabulary
    tokens = vocabulary.tokens
    allowed = np.array([not token.startswith(SUFFIX_INDICATOR) and not is_bracketed(token)
                        and any(char.isalpha() for char in token) for token in tokens])
    top_k = min(top_k, int(allowed.sum()) - 1)  # the word itself is never its own candidate
    words, starts, ends = (part.to_list() for part in tokenizer.words(tf.constant(texts, tf.string)))
    every_word = [word for text_words in words for word in text_words]
    pieces = iter(tokenizer.tokenize(tf.constant(every_word, tf.string)).to_list() if every_word else [])
    queries, rows = [], []  # one masked input per word to replace; which text and word it is
    for row, text_words in enumerate(words):
        word_pieces = [next(pieces) for _ in text_words]
        ids = [vocabulary.cls_id] + [piece for word in word_pieces for piece in word][:max_length - 2]
        ids.append(vocabulary.sep_id)
        position = 1
        for index, word in enumerate(word_pieces):
            if position + len(word) > max_length - 1:
                break
            if len(word) == 1 and allowed[word[0]]:
                masked = list(ids)
                masked[position] = vocabulary.mask_id
                queries.append((masked, position, word[0]))
                rows.append((row, index))
            position += len(word)
    found = [[] for _ in texts]
    if top_k < 1:
        return found
    steps = -(-len(queries) // batch_size)
    say = TextProgress(steps, batch_size) if progress and steps else None
    for begin in range(0, len(queries), batch_size):
        batch = queries[begin:begin + batch_size]
        scores = mask_probabilities(pretrainer, _padded(batch, vocabulary.pad_id),
                                    [[position] for _, position, _ in batch], vocabulary.pad_id)[:, 0, :len(tokens)]
        scores[:, ~allowed] = -1.0
        scores[np.arange(len(batch)), [original for _, _, original in batch]] = -1.0
        best = np.argpartition(-scores, top_k - 1, axis=-1)[:, :top_k]  # the top_k, then in order
        best = np.take_along_axis(best, np.argsort(-np.take_along_axis(scores, best, -1), -1, kind="stable"), -1)
        for (row, index), choices in zip(rows[begin:begin + batch_size], best):
            found[row].append((starts[row][index], ends[row][index], [tokens[choice] for choice in choices]))
        if say:
            say.update(begin // batch_size + 1)
    return found


def _padded(batch, pad_id: int) -> np.ndarray:
    """The queries' ids as one [len(batch), longest] array, padded with `pad_id`."""
    word_ids = np.full([len(batch), max(len(ids) for ids, _, _ in batch)], pad_id, np.int32)
    for row, (ids, _, _) in enumerate(batch):
        word_ids[row, :len(ids)] = ids
    return word_ids


def _copies(text: str, candidates, copies: int, probability: float, rng: np.random.Generator) -> list[str]:
    """`copies` versions of `text`, each word of `candidates` replaced with `probability` by one of them."""
    versions = []
    for _ in range(copies):
        version = text
        for start, end, choices in reversed(candidates):  # from the end, so the earlier spans stay valid
            if rng.random() < probability:
                version = version[:start] + choices[rng.integers(len(choices))] + version[end:]
        versions.append(version)
    return versions
