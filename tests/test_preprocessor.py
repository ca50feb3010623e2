"""BertPreprocessor: packing and truncation against the reference, padding, bad input, tf.data and SavedModel use."""

import itertools
import json
import os
import subprocess
import sys
import textwrap

import keras
import pytest
import tensorflow as tf

from bert_tf.preprocessor import BertPreprocessor
from bert_tf.tokenizer import BertTokenizer

tokenizers = pytest.importorskip("tokenizers")

TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c", "hello", "world", "!", "is", "it", "?", "yes", "."]
NAMES = ("input_word_ids", "input_mask", "input_type_ids")


@pytest.fixture(scope="module")
def vocab_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    path.write_text("\n".join(TOKENS) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def tokenizer(vocab_file):
    return BertTokenizer(vocab_file)


def _reference(vocab_file, seq_length, strategy):
    reference = tokenizers.BertWordPieceTokenizer(str(vocab_file), lowercase=True)
    reference.enable_truncation(seq_length, strategy=strategy)
    reference.enable_padding(length=seq_length)
    return reference


def _as_lists(outputs):
    return {name: outputs[name].numpy().tolist() for name in NAMES}


def _reference_lists(encodings):
    return {
        "input_word_ids": [e.ids for e in encodings],
        "input_mask": [e.attention_mask for e in encodings],
        "input_type_ids": [e.type_ids for e in encodings],
    }


def _pairs(max_words=11):
    """Every pair of lengths 0..max_words: "a a a" with "b b"."""
    lengths = list(itertools.product(range(max_words + 1), repeat=2))
    return lengths, [" ".join("a" * n) for n, _ in lengths], [" ".join("b" * m) for _, m in lengths]


@pytest.mark.parametrize("seq_length", [5, 9, 10, 11, 12])
def test_longest_first_matches_reference_exactly(tokenizer, vocab_file, seq_length):
    _, first, second = _pairs()
    ours = BertPreprocessor(tokenizer, seq_length, truncation="longest_first")((tf.constant(first), tf.constant(second)))
    expected = _reference(vocab_file, seq_length, "longest_first").encode_batch(list(zip(first, second)))
    assert _as_lists(ours) == _reference_lists(expected)


@pytest.mark.parametrize("seq_length", [5, 9, 10, 11, 12])
def test_round_robin_differs_from_reference_only_on_odd_budget_ties(tokenizer, vocab_file, seq_length):
    """Round-robin gives an odd leftover token to A; the reference gives it to the longer segment (B on a tie)."""
    lengths, first, second = _pairs()
    ours = _as_lists(BertPreprocessor(tokenizer, seq_length, truncation="round_robin")(
        (tf.constant(first), tf.constant(second))))
    expected = _reference_lists(_reference(vocab_file, seq_length, "longest_first").encode_batch(list(zip(first, second))))
    budget = seq_length - 3
    predicted = [budget % 2 == 1 and min(n, m) > budget // 2 and n <= m for n, m in lengths]
    differs = [ours["input_word_ids"][i] != expected["input_word_ids"][i] for i in range(len(lengths))]
    assert differs == predicted
    assert ours["input_mask"] == expected["input_mask"]  # same total length


@pytest.mark.parametrize("seq_length", [5, 9, 12])
def test_waterfall_matches_only_second_when_first_fits(tokenizer, vocab_file, seq_length):
    lengths, first, second = _pairs()
    budget = seq_length - 3  # the reference raises unless B keeps a token or needs no cut
    fits = [i for i, (n, m) in enumerate(lengths) if n < budget or n + m <= budget]
    first, second = [first[i] for i in fits], [second[i] for i in fits]
    ours = BertPreprocessor(tokenizer, seq_length, truncation="waterfall")((tf.constant(first), tf.constant(second)))
    expected = _reference(vocab_file, seq_length, "only_second").encode_batch(list(zip(first, second)))
    assert _as_lists(ours) == _reference_lists(expected)


def test_real_pairs_match_reference(shared_data):
    """MRPC sentence pairs with the official vocabulary, cut to 32 tokens: longest_first is exact."""
    vocab_file = shared_data / "vocab" / "bert-base-uncased-vocab.txt"
    rows = [line.split("\t") for line in (shared_data / "mrpc" / "dev.tsv").read_text(encoding="utf-8-sig").split("\n")[1:]]
    first, second = zip(*[(row[3], row[4]) for row in rows if len(row) == 5])
    preprocessor = BertPreprocessor(BertTokenizer(vocab_file), 32, truncation="longest_first")
    ours = preprocessor((tf.constant(first), tf.constant(second)))
    expected = _reference(vocab_file, 32, "longest_first").encode_batch(list(zip(first, second)))
    assert len(first) == 408
    assert _as_lists(ours) == _reference_lists(expected)


def test_single_segment_and_padding(tokenizer):
    texts = tf.constant(["hello world !", "a", ""])
    outputs = BertPreprocessor(tokenizer, seq_length=6)(texts)
    assert _as_lists(outputs) == {
        "input_word_ids": [[2, 8, 9, 10, 3, 0], [2, 5, 3, 0, 0, 0], [2, 3, 0, 0, 0, 0]],
        "input_mask": [[1, 1, 1, 1, 1, 0], [1, 1, 1, 0, 0, 0], [1, 1, 0, 0, 0, 0]],
        "input_type_ids": [[0] * 6] * 3,
    }
    assert all(outputs[name].dtype == tf.int32 for name in NAMES)
    cut = BertPreprocessor(tokenizer, seq_length=4)(tf.constant(["a b c a b"]))
    assert cut["input_word_ids"].numpy().tolist() == [[2, 5, 6, 3]]


def test_padding_to_longest_in_batch(tokenizer):
    fixed = BertPreprocessor(tokenizer, seq_length=16)
    longest = BertPreprocessor(tokenizer, seq_length=16, padding="longest")
    segments = (tf.constant(["hello world", "a"]), tf.constant(["is it ?", "yes"]))
    short = _as_lists(longest(segments))
    assert [len(row) for row in short["input_word_ids"]] == [8, 8]
    assert short == {name: [row[:8] for row in rows] for name, rows in _as_lists(fixed(segments)).items()}
    assert longest(tf.constant(["a b c a b c a b c a b c a b c a b c"]))["input_word_ids"].shape == (1, 16)


def test_three_segments_and_scalars(tokenizer):
    outputs = BertPreprocessor(tokenizer, seq_length=10, truncation="round_robin")(
        (tf.constant("a"), tf.constant("b b"), tf.constant("c")))
    assert outputs["input_word_ids"].numpy().tolist() == [2, 5, 3, 6, 6, 3, 7, 3, 0, 0]
    assert outputs["input_type_ids"].numpy().tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 0, 0]


def test_bad_input(tokenizer):
    empty = BertPreprocessor(tokenizer, seq_length=8)(tf.constant([], tf.string))
    assert all(empty[name].shape == (0, 8) for name in NAMES)
    empty = BertPreprocessor(tokenizer, seq_length=8, padding="longest")(tf.constant([], tf.string))
    assert all(empty[name].shape[0] == 0 for name in NAMES)
    with pytest.raises(ValueError, match="truncation"):
        BertPreprocessor(tokenizer, truncation="longest")
    with pytest.raises(ValueError, match="padding"):
        BertPreprocessor(tokenizer, padding="none")
    with pytest.raises(ValueError, match="seq_length"):
        BertPreprocessor(tokenizer, seq_length=1)
    with pytest.raises(ValueError, match="too short"):
        BertPreprocessor(tokenizer, seq_length=2)((tf.constant(["a"]), tf.constant(["b"])))
    assert BertPreprocessor(tokenizer, seq_length=2)(tf.constant(["a b"]))["input_word_ids"].numpy().tolist() == [[2, 3]]
    with pytest.raises(ValueError, match="one or two segments"):
        BertPreprocessor(tokenizer, truncation="longest_first")([tf.constant(["a"])] * 3)
    with pytest.raises(ValueError, match="ranks"):
        BertPreprocessor(tokenizer)((tf.constant("a"), tf.constant(["b"])))
    with pytest.raises(TypeError, match="BertTokenizer"):
        BertPreprocessor("vocab.txt")


def test_works_in_tf_data_map(tokenizer):
    first, second = ["hello world", "a b c", "", "yes"] * 3, ["is it ?", "", "c", "a a a a a a a a"] * 3
    preprocessor = BertPreprocessor(tokenizer, seq_length=8)
    dataset = tf.data.Dataset.from_tensor_slices((first, second)).batch(5).map(lambda a, b: preprocessor((a, b)))
    batches = [_as_lists(batch) for batch in dataset]
    expected = _as_lists(preprocessor((tf.constant(first), tf.constant(second))))
    assert {name: [row for batch in batches for row in batch[name]] for name in NAMES} == expected


def test_keras_config_round_trip(tokenizer):
    preprocessor = BertPreprocessor(tokenizer, seq_length=7, truncation="waterfall", padding="longest")
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(preprocessor))
    assert (restored.seq_length, restored.truncation, restored.padding) == (7, "waterfall", "longest")
    segments = (tf.constant(["hello world a b c"]), tf.constant(["is it ?"]))
    assert _as_lists(restored(segments)) == _as_lists(preprocessor(segments))


@pytest.mark.slow
def test_saved_model_reloads_in_a_fresh_process(tokenizer, tmp_path):
    preprocessor = BertPreprocessor(tokenizer, seq_length=8)

    class TextModel(tf.Module):
        def __init__(self):
            super().__init__()
            self.preprocessor = preprocessor

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)] * 2)
        def preprocess(self, first, second):
            return self.preprocessor((first, second))

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
        def tokenize(self, text):
            ids, starts, ends = self.preprocessor.tokenizer.tokenize_with_offsets(text)
            return {"ids": ids, "starts": starts, "ends": ends}

    first, second = ["Hello, world!", "", "a b c a b c"], ["Is it?", "yes.", "c"]
    model = TextModel()
    expected = {
        "preprocess": _as_lists(model.preprocess(tf.constant(first), tf.constant(second))),
        "tokenize": {k: v.to_list() for k, v in model.tokenize(tf.constant(first)).items()},
    }
    tf.saved_model.save(model, str(tmp_path / "model"))
    del model

    script = textwrap.dedent(
        f"""
        import json, sys
        import tensorflow as tf
        import tensorflow_text  # registers the text ops before loading
        model = tf.saved_model.load({str(tmp_path / "model")!r})
        first, second = tf.constant({first!r}), tf.constant({second!r})
        print(json.dumps({{
            "preprocess": {{k: v.numpy().tolist() for k, v in model.preprocess(first, second).items()}},
            "tokenize": {{k: v.to_list() for k, v in model.tokenize(first).items()}},
        }}))
        """
    )
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(result.stdout.strip().splitlines()[-1]) == expected
