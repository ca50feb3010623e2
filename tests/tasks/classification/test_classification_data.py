"""Classification files (CSV, TSV, JSONL, GLUE), label vocabularies, in-graph tokenization and length bucketing."""

import csv
import json
import re

import numpy as np
import pytest
import tensorflow as tf
from tiny_finetune_files import write_vocab

import bert_tf
from bert_tf.tasks import data_rows
from bert_tf.tasks.bucketing import batch_examples, count_batches
from bert_tf.tasks.classification.data import TextPacker, read_classification_file
from bert_tf.tasks.labels import encode_labels, label_vocabulary


def write(path, text, encoding="utf-8"):
    path.write_text(text, encoding=encoding)
    return path


def test_mrpc_style_tsv_keeps_quotes_as_text_and_drops_the_bom(tmp_path):
    path = write(tmp_path / "dev.tsv",
                 "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
                 '1\t11\t12\tHe said "no.\t"No," he said.\n'
                 "0\t13\t14\tA \"quoted\" word\tplain\n")
    examples = read_classification_file(path)
    assert examples.columns == ("#1 String", "#2 String", "Quality")
    assert examples.texts == ['He said "no.', 'A "quoted" word']
    assert examples.text_pairs == ['"No," he said.', "plain"]
    assert examples.labels == ["1", "0"] and examples.lines == [2, 3]


@pytest.mark.parametrize("header, row, columns", [
    ("sentence\tlabel", "it 's fine \t1", ("sentence", None, "label")),                       # SST-2
    ("index\tsentence1\tsentence2\tlabel", "0\tA.\tB.\tentailment", ("sentence1", "sentence2", "label")),  # RTE
    ("index\tquestion\tsentence\tlabel", "0\tQ?\tS.\tnot_entailment", ("question", "sentence", "label")),  # QNLI
])
def test_glue_columns_are_found_by_name(tmp_path, header, row, columns):
    examples = read_classification_file(write(tmp_path / "train.tsv", f"{header}\n{row}\n"))
    assert examples.columns == columns
    assert examples.labels == [row.split("\t")[-1]]


def test_csv_with_quoting_and_named_columns(tmp_path):
    path = write(tmp_path / "data.csv", 'review,stars,extra\n"good, really ""good""",5,x\nbad,1,y\n')
    examples = read_classification_file(path, text_column="review", label_column="stars")
    assert examples.texts == ['good, really "good"', "bad"] and examples.labels == ["5", "1"]
    assert examples.text_pairs is None


def test_jsonl_single_and_multi_label(tmp_path):
    rows = [{"text": "good film", "label": 1, "tags": ["plot", "acting"]}, {"text": "bad", "label": 0, "tags": []}]
    path = write(tmp_path / "data.jsonl", "\n".join(json.dumps(row) for row in rows) + "\n\n")
    assert read_classification_file(path).labels == ["1", "0"]
    multi = read_classification_file(path, label_column="tags", multi_label=True)
    assert multi.labels == [["acting", "plot"], []]


def test_multi_label_cells_are_split_by_the_separator(tmp_path):
    path = write(tmp_path / "data.tsv", "text\tlabel\nx\tb|a\ny\t\n")
    assert read_classification_file(path, multi_label=True).labels == [["a", "b"], []]


@pytest.mark.parametrize("name, text, message", [
    ("empty.tsv", "", r"empty.tsv: the file is empty"),
    ("header.tsv", "sentence\tlabel\n", r"header.tsv: no examples"),
    ("fields.tsv", "sentence\tlabel\nok\t1\ntoo\tmany\tfields\n", r"fields.tsv, line 3: 3 fields"),
    ("nolabel.tsv", "sentence\tlabel\nok\t\n", r"nolabel.tsv, line 2: the label must be one non-empty value"),
    ("columns.tsv", "words\tgold\nok\t1\n", r"columns.tsv: no known text column"),
    ("broken.jsonl", '{"text": "a", "label": 1}\n{"text": \n', r"broken.jsonl, line 2: not a JSON object"),
    ("empty.jsonl", "\n", r"empty.jsonl: the file is empty"),
    ("data.txt", "x", r"unknown file type '.txt'"),
])
def test_bad_files_are_errors_naming_file_and_line(tmp_path, name, text, message):
    with pytest.raises(ValueError, match=message):
        read_classification_file(write(tmp_path / name, text))


@pytest.mark.parametrize("name", ["train.tsv", "train.csv", "train.jsonl"])
def test_a_file_that_is_not_utf8_is_an_error_naming_line_and_byte(tmp_path, name):
    header, row = {".tsv": ("sentence\tlabel\n", "café\t1\n"), ".csv": ("sentence,label\n", "café,1\n"),
                   ".jsonl": ("", '{"sentence": "café", "label": 1}\n')}[name[name.index("."):]]
    path = tmp_path / name
    good = header + row * 3000  # many blocks of the text reader, which decodes ahead of the line it is at
    path.write_bytes(good.encode() + row.encode("latin-1"))
    offset = len(good.encode()) + row.index("é")
    expected = (f"{path}, line {good.count(chr(10)) + 1}, byte offset {offset}: the file is not UTF-8 (re-save it "
                "as UTF-8); byte 0xe9 starts no UTF-8 character.")
    with pytest.raises(ValueError) as error:
        read_classification_file(path)
    assert str(error.value) == expected


@pytest.fixture
def csv_default_field_limit():
    """csv's own field limit (128 KiB) for the test; whatever the process had, again after it."""
    previous = csv.field_size_limit(128 * 1024)
    yield
    csv.field_size_limit(previous)


def test_a_field_longer_than_csv_default_limit_is_read(tmp_path, csv_default_field_limit, monkeypatch):
    text = "word " * 40_000  # 200 KB in one field, over csv's 128 KiB
    path = write(tmp_path / "long.tsv", f"sentence\tlabel\nshort\t0\n{text}\t1\n")
    assert read_classification_file(path).texts == ["short", text]

    # Where a field is over even the raised limit, the error names the file and line.
    csv.field_size_limit(128 * 1024)
    monkeypatch.setattr(data_rows, "MAX_FIELD_CHARACTERS", 100_000)
    with pytest.raises(ValueError, match=rf"^{re.escape(str(path))}, line 3: field larger than field limit"):
        read_classification_file(path)


def test_missing_file_and_missing_named_column(tmp_path):
    with pytest.raises(FileNotFoundError, match="not found"):
        read_classification_file(tmp_path / "missing.tsv")
    path = write(tmp_path / "data.tsv", "sentence\tlabel\nok\t1\n")
    with pytest.raises(ValueError, match=r"no text pair column 'other'"):
        read_classification_file(path, text_pair_column="other")


def test_label_vocabulary_order_and_unknown_labels():
    assert label_vocabulary(["1", "0", "10", "2"]) == ["0", "1", "2", "10"]
    assert label_vocabulary(["not_entailment", "entailment"]) == ["entailment", "not_entailment"]
    assert encode_labels(["b", "a"], ["a", "b"], "f.tsv", [2, 3]) == [1, 0]
    with pytest.raises(ValueError, match=r"dev.tsv, line 7: unknown label 'maybe'"):
        encode_labels(["a", "maybe"], ["a", "b"], "dev.tsv", [6, 7])


def test_labels_may_be_given_by_their_ids_when_the_classes_have_names():
    names = ["negative", "positive"]
    assert encode_labels(["1", "negative", "0"], names, "f.tsv", [1, 2, 3], accept_ids=True) == [1, 0, 0]
    with pytest.raises(ValueError, match=r"line 2: unknown label '2'; the model knows \['negative', 'positive'\] "
                                         r"or their ids 0 to 1"):
        encode_labels(["1", "2"], names, "f.tsv", [1, 2], accept_ids=True)
    with pytest.raises(ValueError, match="unknown label '0'"):  # integer class names are never read as ids
        encode_labels(["0"], ["1", "2"], "f.tsv", [1], accept_ids=True)
    with pytest.raises(ValueError, match="unknown label '1'"):  # NER tags: names only
        encode_labels(["1"], ["O", "B-PER"], "f.txt", [1])


def test_tokenization_matches_the_preprocessor_and_truncates_pairs(tmp_path):
    tokenizer = bert_tf.BertTokenizer(write_vocab(tmp_path))
    texts, pairs = ["good film", "the plot was very very very bad"], ["nice", "it is awful and sad and poor"]
    features = TextPacker(tokenizer, bert_tf.TaskSpec(task="classify", seq_length=10, text_pair=True))(texts, pairs)
    reference = bert_tf.BertPreprocessor(tokenizer, 10, truncation="longest_first")((tf.constant(texts), tf.constant(pairs)))
    lengths = features["input_word_ids"].row_lengths().numpy()
    assert lengths.tolist() == [6, 10]
    for name, values in features.items():
        for row, length in enumerate(lengths):
            np.testing.assert_array_equal(values[row].numpy(), reference[name][row, :length])
    assert features["input_type_ids"][1].numpy().tolist() == [0] * 5 + [1] * 5  # 3 + 4 tokens kept, longest first


def test_bucketing_pads_per_batch_counts_batches_and_keeps_every_example():
    lengths = [3, 5, 4, 20, 18, 40, 3, 6, 30]
    dataset = tf.data.Dataset.from_generator(
        lambda: (({"input_word_ids": np.full(n, i + 1, np.int32), "input_mask": np.ones(n, np.int32),
                   "input_type_ids": np.zeros(n, np.int32)}, np.int32(i)) for i, n in enumerate(lengths)),
        output_signature=({name: tf.TensorSpec([None], tf.int32) for name in
                           ("input_word_ids", "input_mask", "input_type_ids")}, tf.TensorSpec([], tf.int32)))
    batches = list(batch_examples(dataset, lengths, batch_size=2, seq_length=64, training=True, seed=1))
    assert len(batches) == count_batches(lengths, 2, 64, bucketing=True) == 6  # buckets <16: 5, [16,32): 3, [32,48): 1
    seen = []
    for features, labels in batches:
        example_lengths = features["input_mask"].numpy().sum(axis=1)
        assert features["input_word_ids"].shape[1] == example_lengths.max()  # padded to the batch's longest only
        assert len({int(n >= 16) + int(n >= 32) for n in example_lengths}) == 1  # one bucket per batch
        seen += labels.numpy().tolist()
    assert sorted(seen) == list(range(len(lengths)))
    in_order = batch_examples(dataset, lengths, batch_size=4, seq_length=64, training=False)
    assert [label for _, labels in in_order for label in labels.numpy().tolist()] == list(range(len(lengths)))


def test_glue_files_in_shared_data_read_as_they_are(shared_data):
    sst2 = read_classification_file(shared_data / "sst2" / "train.tsv")
    assert len(sst2) == 67349 and sst2.columns == ("sentence", None, "label")
    mrpc = read_classification_file(shared_data / "mrpc" / "train.tsv")
    assert len(mrpc) == 3668 and (mrpc.labels.count("1"), mrpc.labels.count("0")) == (2474, 1194)
    rte = read_classification_file(shared_data / "rte" / "dev.tsv")
    assert len(rte) == 277 and label_vocabulary(rte.labels) == ["entailment", "not_entailment"]
    assert rte.labels.count("entailment") == 146
