"""What real use fed the commands (issue 27, items 14 and 15): crafted model files, a folder for a data file, a
.txt that is tab-separated, an empty corpus file, bytes that are not UTF-8 — each one line that says what to do,
and data files checked before any model loads."""

import json
import shutil
import zipfile

import pytest

import bert_tf
from bert_tf_cli import main
from tiny_exports import tiny_encoder, write_vocab

CRAFTED = {
    "a module reference": {"module": "os", "class_name": "system", "config": {"command": "touch pwned"},
                           "registered_name": "system"},
    "a function reference": {"module": "builtins", "class_name": "function", "config": "eval",
                             "registered_name": "function"},
    "a layer config without its name": {"module": "keras.src.models.functional", "class_name": "Functional",
                                        "config": {"name": "m", "layers": [{}], "input_layers": [],
                                                   "output_layers": []}, "registered_name": "Functional"},
}


@pytest.fixture(scope="module")
def classifier_dir(tmp_path_factory):
    base = tmp_path_factory.mktemp("odd")
    model = bert_tf.BertClassifier(tiny_encoder(), num_classes=2, label_names=["neg", "pos"])
    return bert_tf.save_pretrained(model, base / "classifier", vocab_file=write_vocab(base), seq_length=16,
                                   task="classify")


def one_line_error(capsys, *argv) -> str:
    assert main([str(arg) for arg in argv]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    return line


@pytest.mark.parametrize("case", CRAFTED)
def test_a_crafted_model_file_is_refused_in_one_line(tmp_path, classifier_dir, capsys, case):
    crafted = tmp_path / "crafted"
    shutil.copytree(classifier_dir, crafted)
    with zipfile.ZipFile(crafted / "model.keras", "w") as archive:
        archive.writestr("config.json", json.dumps(CRAFTED[case]))
        archive.writestr("metadata.json", json.dumps({"keras_version": "3.15.1"}))
    line = one_line_error(capsys, "predict", "--model", crafted, "a film")
    assert line.startswith(f"bert-tf predict: error: {crafted / 'model.keras'} was refused: it is not a model "
                           "bert-tf wrote, or it asks to run code"), line
    assert not (tmp_path / "pwned").exists()


def test_a_folder_for_a_data_file_is_named_a_folder_before_the_model_loads(tmp_path, classifier_dir, capsys):
    line = one_line_error(capsys, "evaluate", "--model", classifier_dir, "--data", tmp_path)
    assert line == (f"bert-tf evaluate: error: {tmp_path} is a folder without corpus.jsonl: name the data file in it "
                    "(--data), or give a BEIR folder (corpus.jsonl, queries.jsonl, qrels/SPLIT.tsv).")


def test_a_missing_data_file_and_model_are_found_missing_as_the_arguments_are_read(tmp_path, capsys):
    line = one_line_error(capsys, "evaluate", "--model", tmp_path / "no-model", "--data", tmp_path / "dev.tsv")
    assert line == f"bert-tf evaluate: error: argument --data: no such file or folder: {tmp_path / 'dev.tsv'}"
    line = one_line_error(capsys, "evaluate", "--model", tmp_path / "no-model", "--data", tmp_path)
    assert line == f"bert-tf evaluate: error: argument --model: no such model folder: {tmp_path / 'no-model'}"


def test_a_txt_file_that_is_tab_separated_is_read_as_tsv(tmp_path, classifier_dir, capsys):
    """The MSR paraphrase test file ships as msr_paraphrase_test.txt."""
    data = tmp_path / "dev.txt"
    data.write_text("sentence\tlabel\nthe film was great\tpos\na dull film\tneg\n", encoding="utf-8")
    assert main(["evaluate", "--model", str(classifier_dir), "--data", str(data), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["per_class"]["pos"]["support"] == 1


def test_an_empty_corpus_file_is_a_warning(tmp_path, capsys, caplog):
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    assert main(["prepare-corpus", str(empty), "--out", str(tmp_path / "out")]) == 0
    assert f"{empty} holds no text: nothing was written for it" in caplog.text


def test_a_text_argument_that_is_not_utf8_is_named(classifier_dir, capsys):
    line = one_line_error(capsys, "predict", "--model", classifier_dir, "caf\udce9")  # how Python passes byte 0xe9
    assert line == ("bert-tf predict: error: text 1 is not UTF-8 (byte 0xe9 at character 4): set a UTF-8 locale "
                    "or pass the texts in a UTF-8 file (--input).")
