"""Vocabulary files, special tokens, casing, and vocabulary learning."""

import random
import subprocess
import sys

import pytest
import tensorflow as tf

from bert_tf.tokenizer import BertTokenizer
from bert_tf.vocabulary import SPECIAL_TOKENS, Vocabulary, check_casing, learn_vocabulary, read_vocab_file


def test_reads_official_vocabularies(shared_data):
    uncased = Vocabulary.from_file(shared_data / "vocab" / "bert-base-uncased-vocab.txt")
    assert (len(uncased), uncased.lower_case) == (30522, True)
    assert (uncased.pad_id, uncased.unk_id, uncased.cls_id, uncased.sep_id, uncased.mask_id) == (0, 100, 101, 102, 103)
    assert uncased.token_id("hello") == 7592
    cased = Vocabulary.from_file(shared_data / "vocab" / "bert-base-cased-vocab.txt")
    assert (len(cased), cased.lower_case, cased.token_id("Hello")) == (28996, False, 8667)
    with pytest.raises(ValueError, match="cased vocabulary"):
        Vocabulary.from_file(shared_data / "vocab" / "bert-base-cased-vocab.txt", lower_case=True)


def test_file_format_details(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_bytes("\ufeff[PAD]\r\n[UNK]\r\n[CLS]\n[SEP]\n[MASK]\nline\u2028sep\nlast".encode("utf-8"))
    assert read_vocab_file(path) == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "line\u2028sep", "last"]
    vocabulary = Vocabulary.from_file(path)
    vocabulary.write(tmp_path / "copy.txt")
    assert Vocabulary.from_file(tmp_path / "copy.txt") == vocabulary


def test_bad_vocabularies_are_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="not found"):
        Vocabulary.from_file(tmp_path / "missing.txt")
    (tmp_path / "latin1.txt").write_bytes(b"[PAD]\ncaf\xe9\n")
    with pytest.raises(ValueError, match=r"latin1.txt, line 2, byte offset 9: the file is not UTF-8 \(re-save"):
        Vocabulary.from_file(tmp_path / "latin1.txt")
    with pytest.raises(ValueError, match="empty"):
        Vocabulary(())
    with pytest.raises(ValueError, match=r"lacks the special tokens \['\[CLS\]', '\[MASK\]'\]"):
        Vocabulary(("[PAD]", "[UNK]", "[SEP]", "a"))
    with pytest.raises(ValueError, match="duplicate"):
        Vocabulary(SPECIAL_TOKENS + ("a", "a"))
    with pytest.raises(ValueError, match="whitespace"):
        Vocabulary(SPECIAL_TOKENS + ("a b",))
    with pytest.raises(ValueError, match="whitespace"):
        Vocabulary(SPECIAL_TOKENS + ("",))
    with pytest.raises(KeyError, match="not in the vocabulary"):
        Vocabulary(SPECIAL_TOKENS).token_id("missing")


def test_casing():
    assert Vocabulary(SPECIAL_TOKENS + ("the", "##s")).lower_case
    assert not Vocabulary(SPECIAL_TOKENS + ("The",)).lower_case
    assert not Vocabulary(SPECIAL_TOKENS + ("the",), lower_case=False).lower_case  # stated, not contradicted
    check_casing(True, True)
    check_casing(False, False)
    with pytest.raises(ValueError, match=r"tokenizer lower-cases \(uncased\) but the checkpoint .* keeps case"):
        check_casing(True, False)
    with pytest.raises(ValueError, match="lower_case=True"):
        check_casing(False, True)


def _write_corpus(path, lines=600, seed=0):
    rng = random.Random(seed)
    stems = ["play", "walk", "talk", "jump", "read", "writ", "think", "sing", "Paint", "Build"]
    endings = ["", "s", "ed", "ing", "er", "ers"]
    with path.open("w", encoding="utf-8") as file:
        for _ in range(lines):
            words = [rng.choice(stems) + rng.choice(endings) for _ in range(rng.randint(3, 12))]
            file.write(" ".join(words) + rng.choice([".", "!", "?", ", café."]) + "\n")


@pytest.mark.parametrize("lower_case", [True, False], ids=["uncased", "cased"])
def test_learns_a_vocabulary_the_tokenizer_can_use(tmp_path, lower_case):
    corpus = tmp_path / "corpus.txt"
    _write_corpus(corpus)
    out = tmp_path / "vocab.txt"
    vocabulary = learn_vocabulary([corpus], 120, out, lower_case=lower_case, num_unused=3, progress=False, min_count=2)
    assert read_vocab_file(out) == list(vocabulary.tokens)
    assert vocabulary.tokens[:8] == SPECIAL_TOKENS + ("[unused0]", "[unused1]", "[unused2]")
    assert 80 <= len(vocabulary) <= 120
    assert vocabulary.lower_case == lower_case
    assert ("Paint" in vocabulary.tokens) != lower_case
    assert any("é" in token for token in vocabulary.tokens) != lower_case  # accents stripped when uncased
    tokenizer = BertTokenizer(out, lower_case=lower_case)
    ids = tokenizer(tf.constant(corpus.read_text(encoding="utf-8").splitlines())).flat_values.numpy()
    assert vocabulary.unk_id not in ids
    assert len(ids) < 2 * len(corpus.read_text(encoding="utf-8").split())  # whole words and common pieces


def test_learning_bad_arguments(tmp_path):
    with pytest.raises(FileNotFoundError, match="not found"):
        learn_vocabulary([tmp_path / "missing.txt"], 100, tmp_path / "vocab.txt")
    (tmp_path / "empty.txt").write_text("  \n\n", encoding="utf-8")
    with pytest.raises(ValueError, match="No words"):
        learn_vocabulary(tmp_path / "empty.txt", 100, tmp_path / "vocab.txt", progress=False)
    with pytest.raises(ValueError, match="no room"):
        learn_vocabulary(tmp_path / "empty.txt", 5, tmp_path / "vocab.txt")


def test_learning_creates_the_output_folder_first_and_refuses_a_folder(tmp_path):
    corpus = tmp_path / "corpus.txt"
    _write_corpus(corpus, lines=50)
    learn_vocabulary(corpus, 100, tmp_path / "new" / "folder" / "vocab.txt", progress=False, min_count=2)
    assert (tmp_path / "new" / "folder" / "vocab.txt").is_file()
    with pytest.raises(ValueError, match=r"is a folder; give the path of the vocab.txt to write"):
        learn_vocabulary(corpus, 100, tmp_path / "new", progress=False)


def vocabulary_warnings(caplog) -> list[str]:
    return [record.getMessage() for record in caplog.records
            if record.name == "bert_tf.vocabulary" and record.levelname == "WARNING"]


def test_learning_warns_about_binary_files_and_files_that_are_not_utf8(tmp_path, caplog):
    junk, latin1 = tmp_path / "junk.bin", tmp_path / "latin1.txt"
    junk.write_bytes(random.Random(0).randbytes(20_000))
    latin1.write_bytes("the café\n".encode("utf-8") * 3 + "a café\n".encode("latin-1"))
    _write_corpus(tmp_path / "text.txt", lines=50)
    learn_vocabulary([junk, latin1, tmp_path / "text.txt"], 100, tmp_path / "vocab.txt", progress=False, min_count=1)
    warnings = vocabulary_warnings(caplog)
    assert warnings[0].startswith(f"{junk} looks like binary data, not text: 1") and "check --corpus" in warnings[0]
    assert warnings[1] == (f"{latin1}, line 4, byte offset 35: the file is not UTF-8 (re-save it as UTF-8); byte 0xe9 "
                           "starts no UTF-8 character. Its bytes that are not UTF-8 are dropped from the words counted.")
    assert len(warnings) == 2  # the text file is fine


def test_learning_says_why_it_learned_fewer_tokens_than_asked_for(tmp_path, caplog):
    corpus = tmp_path / "corpus.txt"
    _write_corpus(corpus)  # 60 words, each seen at least 57 times
    vocabulary = learn_vocabulary([corpus], 1000, tmp_path / "vocab.txt", progress=False)
    assert vocabulary_warnings(caplog) == [f"Learned {len(vocabulary):,} tokens, fewer than the 1,000 asked for: the "
                                           "corpus has no more word pieces; learn from more text."]
    rng = random.Random(1)
    with corpus.open("a", encoding="utf-8") as file:  # and 3,000 words seen once or twice
        file.write(" ".join("".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=8)) for _ in range(3000)) + "\n")
    caplog.clear()
    vocabulary = learn_vocabulary([corpus], 1000, tmp_path / "vocab.txt", progress=False, min_count=10)
    assert vocabulary_warnings(caplog) == [
        f"Learned {len(vocabulary):,} tokens, fewer than the 1,000 asked for: no more word pieces occur at least "
        "min_count=10 times (--min-count); lower it, or learn from more text."]
    caplog.clear()  # every piece seen once is more than 1,000 tokens, those seen twice fewer: never more than asked
    vocabulary = learn_vocabulary([corpus], 1000, tmp_path / "vocab.txt", progress=False, min_count=1)
    assert vocabulary_warnings(caplog) == [f"Learned {len(vocabulary):,} tokens, fewer than the 1,000 asked for: no "
                                           "minimum count gives a size nearer to it (this one needs 2)."]


def test_the_search_never_tries_a_count_under_min_count(monkeypatch):
    """The progress line shows the count each try needs: it must never go under --min-count, which the
    warning then names (it showed "min_count=9" beside a warning about min_count=10)."""
    from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as learner

    from bert_tf.vocabulary import _learn_word_pieces

    tried = []
    learn = learner.learn_with_thresh
    monkeypatch.setattr(learner, "learn_with_thresh", lambda words, count, params: tried.append(count) or learn(
        words, count, params))
    # Counts from 3 to 14: the search runs over [min_count, 14]; every count gives too few pieces.
    counts = {"".join(random.Random(index).choices("abcdefgh", k=6)): 3 + index % 12 for index in range(40)}
    tokens, needed = _learn_word_pieces(counts, 1000, ["[PAD]"], min_count=10, max_word_length=50, progress=False)
    assert min(tried) == needed == 10 and len(tried) == len(set(tried)) and len(tokens) < 1000


def test_bert_tf_vocab_warns_on_the_command_line(tmp_path):
    """The warnings show on stderr, and `--out`'s folder is made before the work."""
    junk = tmp_path / "junk.bin"
    junk.write_bytes(random.Random(0).randbytes(20_000))
    out = tmp_path / "missing" / "vocab.txt"
    result = subprocess.run([sys.executable, "-m", "bert_tf_cli", "vocab", "--corpus", str(junk), "--size", "5000",
                             "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if line.startswith("WARNING ")]
    assert warnings[0].startswith(f"WARNING {junk} looks like binary data, not text:")
    assert warnings[1].startswith("WARNING Learned ") and "fewer than the 5,000 asked for" in warnings[1]
    assert out.is_file() and f"to {out}" in result.stdout
