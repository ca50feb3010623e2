"""BERT's text normalization and word splitting, as TensorFlow ops that match the reference exactly.

The reference (google-research/bert's `BasicTokenizer`; Hugging Face's `BertNormalizer` +
`BertPreTokenizer`) does, in this order:
1. clean text: drop NUL, U+FFFD and control/format/private-use characters; every whitespace → " ";
2. put spaces around CJK ideographs;
3. uncased only: strip accents (NFD, then drop nonspacing marks) and lower-case (plain full
   lower-case mapping of each character, not case folding: "ß" stays "ß");
4. split on whitespace and around every punctuation character.

Each step looks at one character at a time, so the whole chain is a function from one code point
to a short string ("É" → "e", "," → " , ", U+200B → ""). This module tabulates that function once,
in Python, and applies it in the graph with two gathers per character. It is written by hand
because no library offers BERT's normalization in the graph: tensorflow-text's `FastBertNormalizer`
and `BertTokenizer` differ from the reference on "½" (compatibility decomposition), "ß" (case
folding), zero-width/format characters and no-break spaces. The table also gives every output
character its source character, which is how token offsets reach the original string.

The table is built from the running Python's `unicodedata` (Unicode 14.0 on Python 3.11). The
reference's Rust crates use older Unicode data for some properties, so the two disagree on a few
hundred rare code points assigned or re-categorized after Unicode 9 (tests/test_tokenizer.py
checks all 1.1 M code points and bounds the disagreement). Per-character NFD also skips the
canonical reordering of adjacent combining marks; after nonspacing marks are dropped this only
matters for the 25 spacing marks with a combining class (Balinese/Javanese viramas, Hangul tone
marks, musical symbols), and only when two of them meet.

Example:
    >>> normalize_character("É", lower_case=True, strip_accents=True)
    'e'
    >>> table = character_table(lower_case=True, strip_accents=True)
    >>> split = split_words(tf.constant(["Héllo, wörld!"]), table)
    >>> tf.strings.unicode_encode(split.chars, "UTF-8").numpy().tolist()
    [b'hello', b',', b'world', b'!']
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import itertools
import os
import tempfile
import unicodedata
from pathlib import Path
from typing import NamedTuple

import numpy as np
import tensorflow as tf

SPACE = ord(" ")
NUM_CODE_POINTS = 0x110000
_BLOCK = 256  # code points per block of the two-stage table

# Hugging Face's `is_chinese_char`. It differs from google-research/bert in one range: its
# extension-E range starts at U+2B920, not U+2B820 (a typo upstream, kept for exact parity).
_CJK_RANGES = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B920, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)


def _is_cjk(code_point: int) -> bool:
    return any(low <= code_point <= high for low, high in _CJK_RANGES)


def _is_removed(char: str) -> bool:
    """NUL, U+FFFD, and control, format, private-use and surrogate characters except tab and newlines."""
    if char in "\t\n\r":
        return False
    return char in "\x00\ufffd" or unicodedata.category(char) in ("Cc", "Cf", "Co", "Cs")


def _is_punctuation(char: str) -> bool:
    """Every non-alphanumeric printable ASCII character, and Unicode punctuation (P*)."""
    code_point = ord(char)
    if 33 <= code_point <= 47 or 58 <= code_point <= 64 or 91 <= code_point <= 96 or 123 <= code_point <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def normalize_character(char: str, lower_case: bool, strip_accents: bool) -> str:
    """What BERT's normalization makes of one character, with spaces where words split."""
    if _is_removed(char):
        return ""
    if char.isspace():
        return " "
    text = char
    if strip_accents:
        text = "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")
    if lower_case:
        text = "".join(c.lower() for c in text)  # per character: no final-sigma context, as the reference
    if _is_cjk(ord(char)):
        return f" {text} "
    return "".join(f" {c} " if _is_punctuation(c) else c for c in text)


@dataclasses.dataclass(frozen=True, eq=False)
class CharacterTable:
    """`normalize_character` for every code point, as arrays for `split_words`.

    A code point `c` has the rule `block_rules[block_index[c // 256] * 256 + c % 256]`; rule `r`
    writes `rule_lengths[r]` characters, character `i` being
    `slot_constants[rule_starts[r] + i] + slot_self[rule_starts[r] + i] * c`.
    """

    block_index: np.ndarray
    block_rules: np.ndarray
    rule_lengths: np.ndarray
    rule_starts: np.ndarray
    slot_constants: np.ndarray
    slot_self: np.ndarray


@functools.lru_cache(maxsize=4)
def character_table(lower_case: bool, strip_accents: bool) -> CharacterTable:
    """Tabulates `normalize_character` over all code points: 2 to 4 s, so the table is also kept on disk
    (`table_cache_file`) and later processes read it in milliseconds."""
    try:
        path = table_cache_file(lower_case, strip_accents)
    except (OSError, RuntimeError, KeyError):  # no home folder to be found: every process tabulates
        return _tabulate(lower_case, strip_accents)
    with contextlib.suppress(OSError, ValueError, KeyError):  # none yet, unreadable or damaged: tabulate anew
        with np.load(path) as arrays:
            return CharacterTable(**{field.name: arrays[field.name] for field in dataclasses.fields(CharacterTable)})
    table = _tabulate(lower_case, strip_accents)
    with contextlib.suppress(OSError):  # a read-only home: every process tabulates
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".npz", delete=False) as file:
            np.savez(file, **dataclasses.asdict(table))
        os.replace(file.name, path)
    return table


def table_cache_file(lower_case: bool, strip_accents: bool) -> Path:
    """Where the table is kept: `$XDG_CACHE_HOME/bert_tf` (default ~/.cache/bert_tf), named by the Unicode version
    of this Python, the options and this module's source (a change to the rules makes a new file)."""
    source = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]
    home = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "bert_tf"
    return home / (f"character_table-unicode{unicodedata.unidata_version}-lower{int(lower_case)}-"
                   f"strip{int(strip_accents)}-{source}.npz")


def _tabulate(lower_case: bool, strip_accents: bool) -> CharacterTable:
    identity = ((0, 1),)
    rules: dict[tuple, int] = {identity: 0}
    rule_of = np.zeros(NUM_CODE_POINTS, np.int32)
    cjk = (cp for low, high in _CJK_RANGES for cp in range(low, high + 1))
    assigned = (cp for cp in range(NUM_CODE_POINTS) if unicodedata.category(chr(cp)) != "Cn")
    # Unassigned code points outside the CJK ranges keep the identity rule, as normalize_character says.
    for code_point in itertools.chain(assigned, cjk):
        char = chr(code_point)
        output = normalize_character(char, lower_case, strip_accents)
        if output != char:
            # A rule is written relative to the code point so that runs of characters share one.
            rule = tuple((SPACE, 0) if c == " " else (ord(c) - code_point, 1) for c in output)
            rule_of[code_point] = rules.setdefault(rule, len(rules))
    blocks, block_index = np.unique(rule_of.reshape(-1, _BLOCK), axis=0, return_inverse=True)
    lengths = np.array([len(rule) for rule in rules], np.int32)
    return CharacterTable(
        block_index=block_index.astype(np.int32).reshape(-1),
        block_rules=blocks.astype(np.int32).reshape(-1),
        rule_lengths=lengths,
        rule_starts=(np.cumsum(lengths) - lengths).astype(np.int32),
        slot_constants=np.array([slot[0] for rule in rules for slot in rule], np.int32),
        slot_self=np.array([slot[1] for rule in rules for slot in rule], np.int32),
    )


class WordSplit(NamedTuple):
    """The words of a batch of strings, after normalization.

    chars: int32 RaggedTensor [words, (chars)] — each word's normalized code points.
    rows: int64 [words] — which input string each word comes from.
    sources: int64 RaggedTensor [words, (chars)] — for each normalized character, the index of the
        character it comes from among all decoded input characters (`source_starts` indexes it).
    source_starts, source_ends: int64 [input chars] — byte offsets of every input character in its string.
    source_positions: int64 [input chars] — position of every input character in its string.
    """

    chars: tf.RaggedTensor
    rows: tf.Tensor
    sources: tf.RaggedTensor
    source_starts: tf.Tensor
    source_ends: tf.Tensor
    source_positions: tf.Tensor


def split_words(text: tf.Tensor, table: CharacterTable) -> WordSplit:
    """Normalizes and splits a 1-D string tensor into words; invalid UTF-8 bytes are dropped."""
    # Invalid bytes become U+FFFD, which the normalization removes, as the reference removes U+FFFD.
    code_points, starts = tf.strings.unicode_decode_with_offsets(text, "UTF-8", errors="replace")
    source = code_points.flat_values
    source_rows = code_points.value_rowids()
    starts = tf.cast(starts.flat_values, tf.int64)
    positions = tf.range(tf.size(source, out_type=tf.int64)) - tf.gather(code_points.row_splits, source_rows)
    is_last = tf.equal(positions + 1, tf.gather(code_points.row_lengths(), source_rows))
    next_starts = tf.concat([starts[1:], tf.zeros_like(starts[:1])], 0)
    ends = tf.where(is_last, tf.gather(tf.cast(tf.strings.length(text), tf.int64), source_rows), next_starts)

    # Each input character writes its rule's characters.
    block = tf.gather(table.block_index, source // _BLOCK)
    rule = tf.gather(table.block_rules, block * _BLOCK + source % _BLOCK)
    first_slot = tf.gather(table.rule_starts, rule)
    slots = tf.ragged.range(first_slot, first_slot + tf.gather(table.rule_lengths, rule))
    origin = slots.value_rowids()
    slot = slots.flat_values
    chars = tf.gather(table.slot_constants, slot) + tf.gather(table.slot_self, slot) * tf.gather(source, origin)
    rows = tf.gather(source_rows, origin)

    # A word is a run of non-space characters within one string.
    is_space = tf.equal(chars, SPACE)
    starts_row = tf.concat([tf.ones_like(is_space[:1]), tf.not_equal(rows[1:], rows[:-1])], 0)
    follows_space = tf.concat([tf.ones_like(is_space[:1]), is_space[:-1]], 0)
    in_word = tf.logical_not(is_space)
    word_start = in_word & (starts_row | follows_space)
    word_of_char = tf.cumsum(tf.cast(word_start, tf.int64)) - 1
    num_words = tf.reduce_sum(tf.cast(word_start, tf.int64))
    word_of_char = tf.boolean_mask(word_of_char, in_word)
    return WordSplit(
        chars=tf.RaggedTensor.from_value_rowids(tf.boolean_mask(chars, in_word), word_of_char, nrows=num_words),
        rows=tf.boolean_mask(rows, word_start),
        sources=tf.RaggedTensor.from_value_rowids(tf.boolean_mask(origin, in_word), word_of_char, nrows=num_words),
        source_starts=starts,
        source_ends=ends,
        source_positions=positions,
    )
