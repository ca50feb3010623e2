"""BertTokenizer: id and offset parity with the reference (Hugging Face `tokenizers`), shapes, bad input, graph use.

The reference is `tokenizers.BertWordPieceTokenizer(vocab, lowercase=L, strip_accents=L)` with
`add_special_tokens=False`; its offsets are code point offsets (unit="UTF8_CHAR" here).
"""

import json
import unicodedata

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.text_normalization import character_table, split_words
from bert_tf.tokenizer import BertTokenizer
from bert_tf.vocabulary import Vocabulary

tokenizers = pytest.importorskip("tokenizers")

HARD_CASES = [
    # accents, precomposed and combining
    "Héllo Wörld, café naïve Ångström résumé ÉCOLE Zoë",
    "e\u0301 a\u0308 n\u0303 \u0301alone",
    "İstanbul ǅemal ΣΑΣ σας Ⅻ ① ℌ \u212a \u212b ﬁnance ß STRASSE ½ ¼ ² 𝐀𝐁𝐂",
    # CJK and other scripts
    "日本語のテキスト、中文分词测试。안녕하세요 𠀀𪜀 \U0002b820\U0002b920 \uf900\ufa10",
    "Ελληνικά Русский ЁЖ عربي ١٢٣ עברית हिन्दी ไทย ქართული",
    # emoji, including ZWJ sequences, modifiers, flags and newer emoji
    "😀 👍🏽 👨\u200d👩\u200d👧 🇫🇷 🥰 🫠 ❤️ a😀b",
    # control characters and line breaks
    "a\x00b\x07c\x1b[31mred\x1b[0m\x7fd\x85e\tf\ng\rh\x0bi\x0cj",
    # zero-width and format characters
    "zero\u200bwidth\u200cnon\u200djoiner\ufeffbom\u2060word\u00adsoft\u200ehidden",
    # spaces other than U+0020
    "a\u00a0b\u2002c\u3000d\u2028e\u2029f\u1680g\u202fh",
    # replacement and private-use characters
    "bad\ufffdchar private\ue000use \U000f0000",
    # punctuation of every kind
    "$100.00 + 5% = ? don't U.S.A. C++/C# e-mail “quotes” ‘single’ «guill» — dash – en … ¿qué? ¡sí!",
    "##hash ## #tag @user http://example.com/a/b?c=d&e=f <html> {json: [1, 2]} ~`^|\\",
    # very long words (100 characters is the limit, counted in characters)
    "a" * 99 + " " + "b" * 100 + " " + "c" * 101 + " " + "é" * 100 + " " + "é" * 101 + " " + "x" * 1000,
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    # empty and whitespace-only
    "",
    " ",
    "\t\n\r ",
    "\u00a0\u3000\u2028",
    "\u200b\u200b",
]


def _reference(vocab_path, lower_case):
    return tokenizers.BertWordPieceTokenizer(str(vocab_path), lowercase=lower_case, strip_accents=lower_case)


def _vocab_path(shared_data, lower_case):
    return shared_data / "vocab" / f"bert-base-{'uncased' if lower_case else 'cased'}-vocab.txt"


@pytest.fixture(scope="module", params=[True, False], ids=["uncased", "cased"])
def pair(request, shared_data):
    """(ours, reference) for the official uncased or cased vocabulary."""
    path = _vocab_path(shared_data, request.param)
    return BertTokenizer(path, lower_case=request.param), _reference(path, request.param)


def _mismatches(ours, reference, texts, batch_size=4096):
    """Indices of texts whose ids or code point offsets differ from the reference."""
    expected = reference.encode_batch(texts, add_special_tokens=False)
    bad = []
    for begin in range(0, len(texts), batch_size):
        ids, starts, ends = ours.tokenize_with_offsets(tf.constant(texts[begin : begin + batch_size]), unit="UTF8_CHAR")
        for i, (row_ids, row_starts, row_ends) in enumerate(zip(ids.to_list(), starts.to_list(), ends.to_list())):
            want = expected[begin + i]
            if row_ids != want.ids or list(zip(row_starts, row_ends)) != [tuple(o) for o in want.offsets]:
                bad.append(begin + i)
    return bad


# ----- readers of the shared data sets -------------------------------------------


def sst2_sentences(data, files=("train", "dev")):
    lines = [line for f in files for line in (data / "sst2" / f"{f}.tsv").read_text(encoding="utf-8").split("\n")[1:]]
    return [line.split("\t")[0] for line in lines if line]


def conll_sentences(data, files=("train", "valid")):
    sentences, words = [], []
    for f in files:
        for line in (data / "conll2003" / f"{f}.txt").read_text(encoding="utf-8").split("\n") + [""]:
            if line.strip():
                words.append(line.split(" ")[0])
            elif words:
                if words[0] != "-DOCSTART-":
                    sentences.append(" ".join(words))
                words = []
    return sentences


def corpus_lines(data, names=None):
    """Every non-blank raw line (BOM, CR and all) of the corpus books and bert_sample_text.txt."""
    paths = sorted((data / "corpus").glob("*.txt"))
    paths = [p for p in paths if names is None or p.name in names]
    return [line for p in paths for line in p.read_bytes().decode("utf-8").split("\n") if line.strip()]


def squad_texts(data):
    articles = json.loads((data / "squad" / "train-v1.1-subset.json").read_text(encoding="utf-8"))["data"]
    paragraphs = [p for a in articles for p in a["paragraphs"]]
    return [p["context"] for p in paragraphs] + [q["question"] for p in paragraphs for q in p["qas"]]


# ----- parity ----------------------------------------------------------------------


def test_hard_cases_match_reference(pair):
    ours, reference = pair
    bad = _mismatches(ours, reference, HARD_CASES)
    assert [HARD_CASES[i] for i in bad] == []


def test_words_are_the_references_words_as_written(pair, shared_data):
    """`words`: the reference's words (its tokens grouped by word id), each spanning its tokens, as written."""
    ours, reference = pair
    texts = HARD_CASES + conll_sentences(shared_data, files=("valid",))[:300] + ["Airbus, in Toulouse.", "U.S.-based"]
    words, starts, ends = (part.to_list() for part in ours.words(tf.constant(texts)))
    for text, encoding, row_words, row_starts, row_ends in zip(
            texts, reference.encode_batch(texts, add_special_tokens=False), words, starts, ends):
        spans = {}
        for word, (start, end) in zip(encoding.word_ids, encoding.offsets):
            first, last = spans.get(word, (start, end))
            spans[word] = (min(first, start), max(last, end))
        assert list(zip(row_starts, row_ends)) == [spans[word] for word in sorted(spans)], text
        assert [word.decode("utf-8") for word in row_words] == [text[start:end] for start, end in spans.values()]
    assert words[-2:] == [[b"Airbus", b",", b"in", b"Toulouse", b"."], [b"U", b".", b"S", b".", b"-", b"based"]]


def test_data_subset_matches_reference(pair, shared_data):
    ours, reference = pair
    texts = (
        sst2_sentences(shared_data, ["dev"])
        + conll_sentences(shared_data, ["valid"])[:1500]
        + corpus_lines(shared_data, ["bert_sample_text.txt", "2701-0.txt"])[:3000]
        + squad_texts(shared_data)[:500]
    )
    assert len(texts) > 5000
    bad = _mismatches(ours, reference, texts)
    assert [texts[i] for i in bad][:5] == []


@pytest.mark.slow
@pytest.mark.parametrize("dataset", ["sst2", "conll2003", "corpus", "squad"])
def test_full_data_matches_reference(pair, shared_data, dataset):
    ours, reference = pair
    texts = {"sst2": sst2_sentences, "conll2003": conll_sentences, "corpus": corpus_lines, "squad": squad_texts}[dataset](
        shared_data
    )
    bad = _mismatches(ours, reference, texts)
    print(f"{dataset}: {len(bad)} mismatches in {len(texts)} texts")
    assert [texts[i] for i in bad][:5] == []


# Characters whose Unicode category changed after Unicode 3.2 in a way that changes BERT's
# treatment (the reference's Rust crates carry older Unicode data than Python 3.11's 14.0).
RECATEGORIZED = {0x166D, 0x1734, 0x1885, 0x1886}


@pytest.mark.parametrize("lower_case", [True, False], ids=["uncased", "cased"])
def test_every_code_point_normalizes_as_reference(lower_case):
    """All 1.1 M code points, each between two letters: same words as the reference's normalizer + pre-tokenizer.

    They differ only on characters that Unicode assigned or re-categorized after 3.2, where the
    reference's older Unicode tables and Python's disagree (by design: see text_normalization).
    """
    normalizer = tokenizers.normalizers.BertNormalizer(strip_accents=lower_case, lowercase=lower_case)
    pre_tokenizer = tokenizers.pre_tokenizers.BertPreTokenizer()
    code_points = [cp for cp in range(0x110000) if not 0xD800 <= cp < 0xE000]
    texts = [f"a{chr(cp)}b" for cp in code_points]
    table = character_table(lower_case, lower_case)
    different = []
    for begin in range(0, len(texts), 65536):
        batch = texts[begin : begin + 65536]
        split = split_words(tf.constant(batch), table)
        words = tf.RaggedTensor.from_value_rowids(
            tf.strings.unicode_encode(split.chars, "UTF-8"), split.rows, nrows=len(batch)
        ).to_list()
        for i, (text, ours) in enumerate(zip(batch, words)):
            expected = [w for w, _ in pre_tokenizer.pre_tokenize_str(normalizer.normalize_str(text))]
            if [w.decode("utf-8") for w in ours] != expected:
                different.append(code_points[begin + i])
    newer = [cp for cp in different if unicodedata.ucd_3_2_0.category(chr(cp)) == "Cn" or cp in RECATEGORIZED]
    print(f"{len(different)} code points differ, all assigned or re-categorized after Unicode 3.2")
    assert sorted(set(different) - set(newer)) == []
    assert len(different) < 700


def test_special_token_text_is_plain_text(pair):
    """By design, text such as "[MASK]" is tokenized as text (as google-research/bert does), never as a special id.

    The reference matches special-token strings in raw input; here user text cannot inject [SEP] or [CLS].
    """
    ours, reference = pair
    text = "[MASK] is [CLS]"
    special = {ours.vocabulary.mask_id, ours.vocabulary.cls_id}
    assert not special & set(ours(tf.constant([text])).to_list()[0])
    assert special <= set(reference.encode(text, add_special_tokens=False).ids)


# ----- behaviour without the shared data -----------------------------------------

TINY_TOKENS = [
    "[PAD]", "hello", "[UNK]", "world", "[SEP]", "[CLS]", "un", "##able", "!", ",", "[MASK]", "é", "##s", "caf", "##e"
]


@pytest.fixture(scope="module")
def tiny():
    return BertTokenizer(TINY_TOKENS, lower_case=True)


def test_special_token_ids_come_from_the_vocabulary(tiny):
    vocab = tiny.vocabulary
    assert (vocab.pad_id, vocab.unk_id, vocab.cls_id, vocab.sep_id, vocab.mask_id) == (0, 2, 5, 4, 10)
    assert tiny(tf.constant(["xyz"])).to_list() == [[2]]


def test_tokens_strings_and_detokenize(tiny):
    ids = tiny(tf.constant(["Hello, WORLD! Unable", "Cafés"]))
    assert ids.to_list() == [[1, 9, 3, 8, 6, 7], [13, 14, 12]]
    assert tiny.tokenize_to_strings(tf.constant(["unable"])).to_list() == [[b"un", b"##able"]]
    assert tiny.detokenize(ids).numpy().tolist() == [b"hello , world ! unable", b"cafes"]
    with_specials = tiny.detokenize(tf.constant([5, 1, 4, 0, 0]), skip_special_tokens=False)
    assert with_specials.numpy() == b"[CLS] hello [SEP] [PAD] [PAD]"
    assert tiny.token_to_id("world") == 3
    assert tiny.vocab_size == len(TINY_TOKENS)


def test_offsets_in_bytes_and_characters(tiny):
    text = "  Héllo, wörld!"
    ids, starts, ends = tiny.tokenize_with_offsets(tf.constant([text]))
    char_ids, char_starts, char_ends = tiny.tokenize_with_offsets(tf.constant([text]), unit="UTF8_CHAR")
    assert ids.to_list() == char_ids.to_list() == [[1, 9, 3, 8]]
    encoded = text.encode("utf-8")
    assert [encoded[s:e].decode() for s, e in zip(starts.to_list()[0], ends.to_list()[0])] == ["Héllo", ",", "wörld", "!"]
    assert [text[s:e] for s, e in zip(char_starts.to_list()[0], char_ends.to_list()[0])] == ["Héllo", ",", "wörld", "!"]
    with pytest.raises(ValueError, match="unit"):
        tiny.tokenize_with_offsets(tf.constant([text]), unit="CHAR")


def test_any_batch_shape(tiny):
    assert tiny(tf.constant("hello world")).numpy().tolist() == [1, 3]
    assert tiny("hello").numpy().tolist() == [1]
    assert tiny(["hello", "world !"]).to_list() == [[1], [3, 8]]
    assert tiny(tf.constant([["hello", "world"], ["!", ""]])).to_list() == [[[1], [3]], [[8], []]]
    ragged = tf.ragged.constant([["hello world"], [], ["un", "able"]])
    assert tiny(ragged).to_list() == [[[1, 3]], [], [[6], [2]]]


def test_bad_input_is_defined(tiny):
    assert tiny(tf.constant([], tf.string)).to_list() == []
    assert tiny.tokenize_with_offsets(tf.constant([], tf.string))[1].to_list() == []
    assert tiny(tf.constant(["", " ", "\t\n", "\u200b"])).to_list() == [[], [], [], []]
    # Bytes that are not UTF-8 are dropped, as the reference drops U+FFFD ("hel\xfflo" is "hello");
    # offsets still point into the original bytes.
    ids, starts, ends = tiny.tokenize_with_offsets(tf.constant([b"hel\xfflo \xc3 world\xe2\x82"]))
    assert ids.to_list() == [[1, 3]]
    assert (starts.to_list(), ends.to_list()) == ([[0, 9]], [[6, 14]])
    # A 1 MB string: tokenized like any other; one 1 MB word is one [UNK].
    repeats = (1 << 20) // len("hello world ")
    assert tiny(tf.constant(["hello world " * repeats])).row_lengths().numpy().tolist() == [2 * repeats]
    assert tiny(tf.constant(["a" * (1 << 20)])).to_list() == [[2]]


def test_casing_is_checked_against_the_vocabulary(tiny):
    cased = TINY_TOKENS + ["Hello"]
    assert not BertTokenizer(cased).lower_case
    assert tiny.lower_case and tiny.strip_accents
    with pytest.raises(ValueError, match="cased vocabulary"):
        BertTokenizer(cased, lower_case=True)
    with pytest.raises(ValueError, match="Casing mismatch"):
        BertTokenizer(Vocabulary(tuple(cased)), lower_case=True)
    assert BertTokenizer(cased)(tf.constant(["Hello hello"])).to_list() == [[len(TINY_TOKENS), 1]]


def test_missing_vocab_file_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="Vocabulary file not found"):
        BertTokenizer(tmp_path / "missing.txt")


def test_works_in_tf_data_map(tiny):
    texts = ["hello world", "", "unable !", "café"] * 5
    dataset = tf.data.Dataset.from_tensor_slices(texts).batch(6).map(tiny)
    tokens = [row for batch in dataset for row in batch.to_list()]
    assert tokens == tiny(tf.constant(texts)).to_list()
    per_example = [t.numpy().tolist() for t in tf.data.Dataset.from_tensor_slices(texts).map(tiny)]
    assert per_example == tokens


def test_keras_config_round_trip(tiny):
    import keras

    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(tiny))
    assert isinstance(restored, BertTokenizer)
    texts = tf.constant(["Hello, unable world!"])
    assert restored(texts).to_list() == tiny(texts).to_list()
    assert restored.get_config() == tiny.get_config()


def test_long_word_limit_is_in_characters(tiny):
    tokens = BertTokenizer(TINY_TOKENS + ["##é"], lower_case=False, max_chars_per_word=3)
    suffix = len(TINY_TOKENS)
    assert tokens(tf.constant(["ééé éééé"])).to_list() == [[11, suffix, suffix, 2]]
    assert tokens(tf.constant(["hello"])).to_list() == [[2]]
    with pytest.raises(ValueError, match="max_chars_per_word"):
        BertTokenizer(TINY_TOKENS, max_chars_per_word=0)



def test_the_character_table_is_kept_on_disk_and_read_back(tmp_path, monkeypatch):
    """Tabulating takes seconds per process (most of a command's start-up); the file makes it milliseconds."""
    import dataclasses as dc

    from bert_tf.text_normalization import table_cache_file

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    character_table.cache_clear()
    built = character_table(True, True)
    path = table_cache_file(True, True)
    assert path.is_file() and path.parent == tmp_path / "bert_tf"
    character_table.cache_clear()
    read = character_table(True, True)
    for field in dc.fields(built):
        np.testing.assert_array_equal(getattr(read, field.name), getattr(built, field.name))
    path.write_bytes(b"damaged")
    character_table.cache_clear()
    rebuilt = character_table(True, True)
    np.testing.assert_array_equal(rebuilt.block_rules, built.block_rules)
    assert path.stat().st_size > 1000  # written again
    character_table.cache_clear()
