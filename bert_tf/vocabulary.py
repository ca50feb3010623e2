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
import logging
import os
import re
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import tensorflow as tf
from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib

from bert_tf.progress import progress_bar
from bert_tf.text_files import first_non_utf8_byte, not_utf8_error, not_utf8_message
from bert_tf.text_normalization import character_table, split_words

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
SUFFIX_INDICATOR = "##"
LEARNER_SLACK = 0.05  # the WordPiece learner aims for a size within this share below the one asked for
logger = logging.getLogger(__name__)
_BRACKETED = re.compile(r"\[[^\]]*\]")


def is_bracketed(token: str) -> bool:
    """Whether `token` is a special or reserved token ([PAD], [CLS], [unused12], ...): never a word of text."""
    return _BRACKETED.fullmatch(token) is not None


def read_vocab_file(path: str | os.PathLike) -> list[str]:
    """The tokens of a `vocab.txt` (UTF-8, one token per line, line number = id)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"Vocabulary file not found: {path}")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise not_utf8_error(path) from None
    # Only "\n" ends a line (str.splitlines would also split on U+2028, U+0085, ...).
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def _has_upper_case(token: str) -> bool:
    """True for a token with an upper-case letter, bracketed special tokens aside."""
    return token != token.lower() and not is_bracketed(token)


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
        tokens = read_vocab_file(path)
        try:
            return cls(tuple(tokens), lower_case)
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
    too small for that gives a smaller vocabulary, with a warning. Words longer than
    `max_word_length` characters are not learned from.

    `out`'s folder is created first. A corpus file that looks like binary data, or is not UTF-8 (its
    bad bytes are dropped), is warned about once the words are counted, before the learning.

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
    out = Path(out)
    if out.is_dir():
        raise ValueError(f"{out} is a folder; give the path of the vocab.txt to write.")
    out.parent.mkdir(parents=True, exist_ok=True)
    strip_accents = lower_case if strip_accents is None else strip_accents
    counts = _count_words(paths, character_table(lower_case, strip_accents), progress)
    if not counts:
        raise ValueError(f"No words found in {[str(p) for p in paths]}.")
    tokens, needed_count = _learn_word_pieces(counts, size, reserved, min_count, max_word_length, progress)
    if len(tokens) < size * (1 - LEARNER_SLACK):
        if needed_count <= min(counts.values()):  # every piece of every word is in
            why = "the corpus has no more word pieces; learn from more text"
        elif needed_count <= min_count:
            why = (f"no more word pieces occur at least min_count={min_count} times (--min-count); lower it, or learn "
                   "from more text")
        else:
            why = f"no minimum count gives a size nearer to it (this one needs {needed_count})"
        logger.warning("Learned %s tokens, fewer than the %s asked for: %s.", f"{len(tokens):,}", f"{size:,}", why)
    vocabulary = Vocabulary(tuple(tokens), lower_case=lower_case)
    vocabulary.write(out)
    return vocabulary


def _learn_word_pieces(counts: dict[str, int], size: int, reserved: list[str], min_count: int, max_word_length: int,
                       progress: bool) -> tuple[list[str], int]:
    """tensorflow-text's WordPiece learner (its `learn`, with its defaults): the tokens, and the count a piece needed.

    Its binary search for that count runs here, one try at a time, so that the progress bar
    moves (each try is a whole learning pass: a minute on a large corpus); it tries counts of at
    least `min_count` only, and keeps the try nearest to `size` from below.
    """
    learner = wordpiece_tokenizer_learner_lib
    params = learner.Params(
        upper_thresh=10_000_000, lower_thresh=min_count, num_iterations=4, max_input_tokens=5_000_000,
        max_token_length=max_word_length, max_unique_chars=1000, vocab_size=size, slack_ratio=LEARNER_SLACK,
        include_joiner_token=True, joiner=SUFFIX_INDICATOR, reserved_tokens=reserved)
    word_counts = list(counts.items())
    upper, lower = learner.get_search_threshs(word_counts, params.upper_thresh, params.lower_thresh)
    words = learner.get_input_words(word_counts, reserved, max_word_length)
    words = learner.filter_input_words(words, learner.get_allowed_chars(words, params.max_unique_chars),
                                       params.max_input_tokens)
    most_tries = (upper - lower + 1).bit_length()  # of a binary search over [lower, upper]
    best = None  # (tokens, count) of the try nearest to `size` from below
    with progress_bar(total=most_tries, desc="learning word pieces", unit="try", disable=not progress) as bar:
        while lower <= upper:
            count = (lower + upper) // 2
            tokens = learner.learn_with_thresh(words, count, params)
            bar.set_postfix(pieces_seen_at_least=count, tokens=len(tokens))
            bar.update(1)
            if len(tokens) <= size and (best is None or len(tokens) > len(best[0])):
                best = tokens, count
            if size * (1 - LEARNER_SLACK) <= len(tokens) <= size:
                break
            if len(tokens) > size:
                lower = count + 1
            else:
                upper = count - 1
        bar.total = bar.n  # done: the search may end before its most tries
    return best if best is not None else (tokens[:size], count)  # every count gave too many: the fewest, cut


def _count_words(paths: list[Path], table, progress: bool, lines_per_batch: int = 4096) -> dict[str, int]:
    """Word counts over all files, words as the tokenizer splits them; warns about files that are not UTF-8 text."""

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def unique_words(lines):
        words = tf.strings.unicode_encode(split_words(lines, table).chars, "UTF-8")
        unique, _, counts = tf.unique_with_counts(words)
        return unique, counts

    counts: collections.Counter = collections.Counter()
    signs = {path: _TextSigns() for path in paths}
    total_bytes = sum(p.stat().st_size for p in paths)
    with progress_bar(total=total_bytes, unit="B", unit_scale=True, desc="counting words", disable=not progress) as bar:
        for path in paths:
            with path.open("rb") as file:
                while batch := [line for _, line in zip(range(lines_per_batch), file)]:
                    signs[path].update(batch)
                    words, numbers = unique_words(tf.constant(batch))
                    counts.update(dict(zip(words.numpy().tolist(), np.asarray(numbers).tolist())))
                    bar.update(sum(map(len, batch)))
    for path, file_signs in signs.items():  # once the bar is done, not in its line
        file_signs.warn(path)
    return {word.decode("utf-8"): count for word, count in counts.items()}


class _TextSigns:
    """What a file's bytes say about it being text: control characters, and its first byte that is not UTF-8."""

    # Control characters other than whitespace: text has almost none, binary data about one byte in eight.
    CONTROL_BYTES = bytes([*range(0, 9), *range(14, 32), 127])
    BINARY_SHARE = 0.01  # more control bytes than this share: binary

    def __init__(self):
        self.bytes = self.control_bytes = self.lines = 0
        self.first_non_utf8: tuple[int, int, int] | None = None  # (line, byte offset, byte)

    def update(self, lines: list[bytes]) -> None:
        data = b"".join(lines)
        self.control_bytes += len(data) - len(data.translate(None, self.CONTROL_BYTES))
        found = None if self.first_non_utf8 else first_non_utf8_byte(lines)
        if found:
            line, offset, byte = found
            self.first_non_utf8 = (self.lines + line, self.bytes + offset, byte)
        self.lines += len(lines)
        self.bytes += len(data)

    def warn(self, path: Path) -> None:
        if self.control_bytes > self.BINARY_SHARE * self.bytes:
            logger.warning("%s looks like binary data, not text: %.0f%% of its bytes are control characters. Its "
                           "words are counted all the same; check --corpus.", path,
                           100 * self.control_bytes / self.bytes)
        elif self.first_non_utf8 is not None:
            logger.warning("%s Its bytes that are not UTF-8 are dropped from the words counted.",
                           not_utf8_message(path, *self.first_non_utf8))
