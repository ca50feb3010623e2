"""The WordPiece vocabulary: reading `vocab.txt`, special tokens, casing, and learning one from a corpus.

A vocabulary's casing is part of it: an uncased vocabulary has no upper-case letters, because it
was learned from lower-cased text. `Vocabulary` infers the casing when it is not given and refuses
`lower_case=True` for a vocabulary with upper-case tokens, the mistake that silently turns every
capitalized word into pieces the model never saw. `resolve_lower_case` is the stricter check for
commands and training runs: it also refuses cased tokenization of an uncased vocabulary.

Example:
    >>> vocab = Vocabulary(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "##s"])
    >>> vocab.cls_id, vocab.lower_case, len(vocab)
    (2, True, 7)
    >>> check_casing(tokenizer_lower_case=True, checkpoint_lower_case=False)
    Traceback (most recent call last):
    ...
    ValueError: Casing mismatch: ...
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import os
import re
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import tensorflow as tf
from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib
from tqdm.auto import tqdm

from bert_tf.text_normalization import character_table, split_words

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
SUFFIX_INDICATOR = "##"
_BRACKETED = re.compile(r"\[[^\]]*\]")  # [PAD], [unused12], ...: never text


def read_vocab_file(path: str | os.PathLike) -> list[str]:
    """The tokens of a `vocab.txt` (UTF-8, one token per line, line number = id)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"Vocabulary file not found: {path}")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as error:
        raise ValueError(f"{path} is not UTF-8 text: {error}") from error
    # Only "\n" ends a line (str.splitlines would also split on U+2028, U+0085, ...).
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def _has_upper_case(token: str) -> bool:
    """True for a token with an upper-case letter, bracketed special tokens aside."""
    return token != token.lower() and not _BRACKETED.fullmatch(token)


def infer_lower_case(tokens: Iterable[str]) -> bool:
    """True when no token (other than bracketed special tokens) has an upper-case letter."""
    return not any(map(_has_upper_case, tokens))


def resolve_lower_case(
    vocab_file: str | os.PathLike,
    requested: bool | None,
    flag_names: tuple[str, str] = ("lower_case=False", "lower_case=True"),
) -> bool:
    """The casing to tokenize with for `vocab_file`: its own (see `infer_lower_case`), which `requested` must match.

    `requested` None takes the vocabulary's casing. A contradiction is a ValueError in either
    direction: cased tokenization of an uncased vocabulary turns every capitalized word into
    [UNK]; lower-casing for a cased vocabulary makes its upper-case tokens unreachable.
    `flag_names` (cased, uncased) is how the message names the two choices, e.g.
    `("--cased", "--uncased")` for a command.
    """
    tokens = read_vocab_file(vocab_file)
    lower_case = infer_lower_case(tokens)
    if requested is None or bool(requested) == lower_case:
        return lower_case
    cased_flag, uncased_flag = flag_names
    if lower_case:
        raise ValueError(f"{cased_flag} contradicts {vocab_file}, an uncased vocabulary (no upper-case tokens): "
                         f"every capitalized word would become [UNK]. Drop {cased_flag} (the casing is taken from "
                         "the vocabulary) or use a cased vocabulary.")
    examples = [token for token in tokens if _has_upper_case(token)][:3]
    raise ValueError(f"{uncased_flag} contradicts {vocab_file}, a cased vocabulary (upper-case tokens such as "
                     f"{examples}): lower-casing would make them unreachable. Drop {uncased_flag} (the casing is "
                     "taken from the vocabulary) or use an uncased vocabulary.")


def check_casing(tokenizer_lower_case: bool, checkpoint_lower_case: bool) -> None:
    """Raises a clear ValueError when a tokenizer's casing differs from its checkpoint's."""
    if bool(tokenizer_lower_case) != bool(checkpoint_lower_case):
        cased = {True: "lower-cases (uncased)", False: "keeps case (cased)"}
        raise ValueError(
            f"Casing mismatch: the tokenizer {cased[bool(tokenizer_lower_case)]} but the checkpoint was trained "
            f"on a tokenizer that {cased[bool(checkpoint_lower_case)]}. The model would see token ids it was not "
            f"trained on and lose accuracy without any other error. Build the tokenizer with "
            f"lower_case={bool(checkpoint_lower_case)}, or use the checkpoint that matches the vocabulary."
        )


@dataclasses.dataclass(frozen=True)
class Vocabulary:
    """WordPiece tokens (index = id) and the casing they were learned with.

    `lower_case=None` infers the casing (see `infer_lower_case`). The five special tokens
    `[PAD] [UNK] [CLS] [SEP] [MASK]` must be present; their ids are read from the tokens.
    """

    tokens: tuple[str, ...]
    lower_case: bool | None = None

    def __post_init__(self):
        tokens = tuple(self.tokens)
        object.__setattr__(self, "tokens", tokens)
        if not tokens:
            raise ValueError("The vocabulary is empty.")
        bad = [(i, t) for i, t in enumerate(tokens) if not t or any(c in t for c in " \t\r\n")]
        if bad:
            raise ValueError(
                f"Vocabulary tokens must be non-empty and contain no whitespace; bad (id, token): {bad[:5]}"
            )
        duplicates = [t for t, n in collections.Counter(tokens).items() if n > 1]
        if duplicates:
            raise ValueError(f"The vocabulary has duplicate tokens (ids would be ambiguous): {duplicates[:5]}")
        missing = [t for t in SPECIAL_TOKENS if t not in self.token_ids]
        if missing:
            raise ValueError(
                f"The vocabulary lacks the special tokens {missing}; BERT needs all of {list(SPECIAL_TOKENS)}."
            )
        inferred = infer_lower_case(tokens)
        if self.lower_case is None:
            object.__setattr__(self, "lower_case", inferred)
        elif self.lower_case and not inferred:
            examples = [t for t in tokens if _has_upper_case(t)][:5]
            raise ValueError(
                f"lower_case=True, but this is a cased vocabulary (tokens with upper-case letters, e.g. {examples}): "
                "lower-casing would make them unreachable. Pass lower_case=False (or None to infer it)."
            )
        object.__setattr__(self, "lower_case", bool(self.lower_case))

    @classmethod
    def from_file(cls, path: str | os.PathLike, lower_case: bool | None = None) -> "Vocabulary":
        """Reads a `vocab.txt`; `lower_case=None` infers the casing from the tokens."""
        try:
            return cls(tuple(read_vocab_file(path)), lower_case)
        except ValueError as error:
            raise ValueError(f"{path}: {error}") from error

    def write(self, path: str | os.PathLike) -> None:
        """Writes `vocab.txt`: one token per line, UTF-8, LF."""
        Path(path).write_text("".join(f"{token}\n" for token in self.tokens), encoding="utf-8")

    def __len__(self) -> int:
        return len(self.tokens)

    @functools.cached_property
    def token_ids(self) -> dict[str, int]:
        return {token: i for i, token in enumerate(self.tokens)}

    def token_id(self, token: str) -> int:
        try:
            return self.token_ids[token]
        except KeyError:
            raise KeyError(f"{token!r} is not in the vocabulary") from None

    @property
    def pad_id(self) -> int:
        return self.token_ids["[PAD]"]

    @property
    def unk_id(self) -> int:
        return self.token_ids["[UNK]"]

    @property
    def cls_id(self) -> int:
        return self.token_ids["[CLS]"]

    @property
    def sep_id(self) -> int:
        return self.token_ids["[SEP]"]

    @property
    def mask_id(self) -> int:
        return self.token_ids["[MASK]"]

    @property
    def special_ids(self) -> tuple[int, ...]:
        return tuple(self.token_ids[t] for t in SPECIAL_TOKENS)


def learn_vocabulary(
    files: Sequence[str | os.PathLike] | str | os.PathLike,
    size: int,
    out: str | os.PathLike,
    lower_case: bool = True,
    strip_accents: bool | None = None,
    num_unused: int = 0,
    progress: bool = True,
    min_count: int = 10,
    max_word_length: int = 50,
) -> Vocabulary:
    """Learns a WordPiece vocabulary of at most `size` tokens from text files and writes `out` (vocab.txt).

    Words are counted with the tokenizer's own normalization and splitting (so every learned token
    is reachable), then tensorflow-text's WordPiece learner picks the tokens. The file starts with
    `[PAD] [UNK] [CLS] [SEP] [MASK]`, then `[unused0]`…`[unused{num_unused-1}]`, then every
    character seen (and its `##` form), then learned pieces by frequency. The learner searches
    the count a piece needs (at least `min_count`) for a size within 5 % below `size`; a corpus
    too small for that gives a smaller vocabulary. Words longer than `max_word_length` characters
    are not learned from.

    Example (`bert-tf vocab` calls exactly this):
        >>> learn_vocabulary(["corpus.txt"], 8000, "vocab.txt")  # doctest: +SKIP
    """
    paths = [Path(files)] if isinstance(files, (str, os.PathLike)) else [Path(f) for f in files]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"Corpus files not found: {missing}")
    reserved = list(SPECIAL_TOKENS) + [f"[unused{i}]" for i in range(num_unused)]
    if size <= len(reserved):
        raise ValueError(f"size={size} leaves no room after the {len(reserved)} reserved tokens.")
    strip_accents = lower_case if strip_accents is None else strip_accents
    counts = _count_words(paths, character_table(lower_case, strip_accents), progress)
    if not counts:
        raise ValueError(f"No words found in {[str(p) for p in paths]}.")
    with tqdm(total=1, desc="learning word pieces", disable=not progress) as bar:
        tokens = wordpiece_tokenizer_learner_lib.learn(
            counts,
            vocab_size=size,
            reserved_tokens=reserved,
            lower_thresh=min_count,
            max_token_length=max_word_length,
            joiner=SUFFIX_INDICATOR,
        )
        bar.update(1)
    vocabulary = Vocabulary(tuple(tokens), lower_case=lower_case)
    vocabulary.write(out)
    return vocabulary


def _count_words(paths: list[Path], table, progress: bool, lines_per_batch: int = 4096) -> dict[str, int]:
    """Word counts over all files, words as the tokenizer splits them."""

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def unique_words(lines):
        words = tf.strings.unicode_encode(split_words(lines, table).chars, "UTF-8")
        unique, _, counts = tf.unique_with_counts(words)
        return unique, counts

    counts: collections.Counter = collections.Counter()
    total_bytes = sum(p.stat().st_size for p in paths)
    with tqdm(total=total_bytes, unit="B", unit_scale=True, desc="counting words", disable=not progress) as bar:
        for path in paths:
            with path.open("rb") as file:
                while batch := [line for _, line in zip(range(lines_per_batch), file)]:
                    words, numbers = unique_words(tf.constant(batch))
                    counts.update(dict(zip(words.numpy().tolist(), np.asarray(numbers).tolist())))
                    bar.update(sum(map(len, batch)))
    return {word.decode("utf-8"): count for word, count in counts.items()}
