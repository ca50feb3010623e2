"""`bert-tf convert` from the command line, in a fresh process."""

import json
import pickle
import subprocess
import sys

import numpy as np
import pytest

import bert_tf
from bert_tf import BertConfig, BertModel

CONFIG = BertConfig(vocab_size=60, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                    intermediate_size=48, max_position_embeddings=16)


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "bert_tf_cli", *map(str, args)], capture_output=True, text=True,
                          timeout=300)


@pytest.fixture(scope="module")
def hf_source(tmp_path_factory):
    model = BertModel(CONFIG)
    directory = tmp_path_factory.mktemp("hf")
    vocab = directory / "source_vocab.txt"
    vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n")
    bert_tf.write_hf_directory(model, directory, vocab_file=vocab, lower_case=True)
    return model, directory


@pytest.mark.slow
def test_convert_hf_to_keras_and_back(tmp_path, hf_source):
    model, source = hf_source
    result = run_cli("convert", "--from", source, "--to", tmp_path / "keras", "--format", "keras")
    assert result.returncode == 0, result.stderr
    assert "Wrote keras model" in result.stdout
    converted = bert_tf.from_pretrained(tmp_path / "keras")
    assert converted.lower_case is True and (tmp_path / "keras" / "vocab.txt").is_file()
    ids = {"input_word_ids": np.array([[2, 7, 8, 3]])}
    np.testing.assert_array_equal(converted(ids)["pooled_output"], model(ids)["pooled_output"])

    # --out, the output flag of every other command, is --to's other name
    result = run_cli("convert", "--from", tmp_path / "keras", "--out", tmp_path / "hf", "--format", "hf")
    assert result.returncode == 0, result.stderr
    assert json.loads((tmp_path / "hf" / "tokenizer_config.json").read_text())["do_lower_case"] is True
    np.testing.assert_array_equal(bert_tf.from_pretrained(tmp_path / "hf")(ids)["pooled_output"],
                                  model(ids)["pooled_output"])


def test_convert_refuses_to_overwrite_and_reports_missing_input(tmp_path, hf_source):
    _, source = hf_source
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "keep.txt").write_text("user data")
    result = run_cli("convert", "--from", source, "--to", tmp_path / "busy")
    assert result.returncode == 2 and "not empty" in result.stderr
    assert (tmp_path / "busy" / "keep.txt").read_text() == "user data"
    result = run_cli("convert", "--from", tmp_path / "missing", "--to", tmp_path / "out")
    assert result.returncode == 2 and f"argument --from: no such model folder: {tmp_path / 'missing'}" in result.stderr


class RunsCode:
    """Unpickling this would create a file: what a malicious pytorch_model.bin does."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_convert_refuses_a_pickle_that_would_run_code_in_one_line(tmp_path):
    pytest.importorskip("torch")
    source, marker = tmp_path / "hf", tmp_path / "pwned"
    source.mkdir()
    CONFIG.write_json(source / "config.json", style="hf")
    with open(source / "pytorch_model.bin", "wb") as file:
        pickle.dump({"embeddings.word_embeddings.weight": RunsCode(marker)}, file)
    result = run_cli("convert", "--from", source, "--to", tmp_path / "out")
    assert result.returncode == 2 and not marker.exists()
    assert result.stderr.startswith(f"bert-tf convert: error: {source / 'pytorch_model.bin'} was refused: it is not a "
                                    "pickle of tensors only (unpickling it could run code from the file)")
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


@pytest.fixture(scope="module")
def pretraining_source(tmp_path_factory):
    """A transformers BertForPreTraining folder (both heads), with a vocabulary."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    directory = tmp_path_factory.mktemp("pretraining")
    torch.manual_seed(0)
    settings = {key: value for key, value in CONFIG.to_hf_dict().items() if key != "architectures"}
    transformers.BertForPreTraining(transformers.BertConfig(**settings)).save_pretrained(directory)
    (directory / "vocab.txt").write_text("".join(f"{token}\n" for token in
                                                 ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *map(str, range(55))]))
    return directory


@pytest.mark.slow
def test_convert_keeps_the_pretraining_heads_and_hf_writes_them_back(tmp_path, pretraining_source):
    """`convert` of a BertForPreTraining folder kept the encoder only, so fill-mask on the result failed; its Hugging
    Face output named no head in `architectures` and was readable by its owner only (0600)."""
    import os

    import torch
    import transformers

    result = run_cli("convert", "--from", pretraining_source, "--to", tmp_path / "keras")
    assert result.returncode == 0, result.stderr
    assert "with its pre-training heads (masked LM, next sentence)" in result.stdout
    assert isinstance(bert_tf.load_model_directory(tmp_path / "keras").model, bert_tf.BertPretrainer)
    filled = run_cli("fill-mask", "--model", tmp_path / "keras", "7 [MASK] 9")
    assert filled.returncode == 0, filled.stderr

    os.umask(0o022)
    # --out, the output flag of every other command, is --to's other name
    result = run_cli("convert", "--from", tmp_path / "keras", "--out", tmp_path / "hf", "--format", "hf")
    assert result.returncode == 0, result.stderr
    assert json.loads((tmp_path / "hf" / "config.json").read_text())["architectures"] == ["BertForPreTraining"]
    assert oct((tmp_path / "hf" / "model.safetensors").stat().st_mode & 0o777) == oct(0o644)
    ids = torch.tensor([[2, 7, 4, 9, 3]])
    with torch.no_grad():
        source = transformers.BertForPreTraining.from_pretrained(pretraining_source).eval()(input_ids=ids)
        round_trip = transformers.BertForPreTraining.from_pretrained(tmp_path / "hf").eval()(input_ids=ids)
    np.testing.assert_allclose(round_trip.prediction_logits.numpy(), source.prediction_logits.numpy(), atol=1e-5)
    np.testing.assert_allclose(round_trip.seq_relationship_logits.numpy(), source.seq_relationship_logits.numpy(),
                               atol=1e-5)


def test_convert_of_an_encoder_says_which_heads_it_drops(tmp_path, pretraining_source):
    """A masked-LM head without its next-sentence partner cannot make a `BertPretrainer`: said, not silent."""
    import shutil

    from safetensors.numpy import load_file, save_file

    masked_lm_only = tmp_path / "masked_lm"
    shutil.copytree(pretraining_source, masked_lm_only)
    tensors = {name: value for name, value in load_file(masked_lm_only / "model.safetensors").items()
               if not name.startswith("cls.seq_relationship")}
    save_file(tensors, masked_lm_only / "model.safetensors", metadata={"format": "pt"})
    result = run_cli("convert", "--from", masked_lm_only, "--to", tmp_path / "keras")
    assert result.returncode == 0, result.stderr
    assert ("Dropped the masked-LM head (cls/predictions/*): without the next-sentence head (cls/seq_relationship/*) "
            "bert-tf keeps the encoder only") in result.stdout
    assert isinstance(bert_tf.load_model_directory(tmp_path / "keras").model, BertModel)


@pytest.mark.slow
def test_convert_keeps_a_fine_tuned_models_head(tmp_path):
    """A fine-tuned model converts whole: to Hugging Face as its task's BertFor* class (head and label names),
    to bert-tf as the same task model; the encoder alone would lose what fine-tuning learned."""
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(55)]) + "\n")
    classifier = bert_tf.BertClassifier(BertModel(CONFIG), num_classes=2, label_names=["negative", "positive"])
    source = bert_tf.save_pretrained(classifier, tmp_path / "mrpc_model", vocab_file=vocab, task="classify",
                                     seq_length=16, text_pair=True)
    result = run_cli("convert", "--from", source, "--out", tmp_path / "hf", "--format", "hf")
    assert result.returncode == 0, result.stderr
    assert "with its classify head" in result.stdout
    written = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert written["architectures"] == ["BertForSequenceClassification"]
    assert written["id2label"] == {"0": "negative", "1": "positive"}

    result = run_cli("convert", "--from", source, "--out", tmp_path / "keras")
    assert result.returncode == 0, result.stderr
    loaded = bert_tf.load_model_directory(tmp_path / "keras")
    assert isinstance(loaded.model, bert_tf.BertClassifier)
    assert loaded.task == bert_tf.load_model_directory(source).task and loaded.task.text_pair
    # and back from Hugging Face's format: its TaskSpec (pairs, seq_length) was kept in config.json
    result = run_cli("convert", "--from", tmp_path / "hf", "--out", tmp_path / "back")
    assert result.returncode == 0, result.stderr
    assert bert_tf.load_model_directory(tmp_path / "back").task == loaded.task
    ids = {"input_word_ids": np.array([[2, 7, 8, 3]]), "input_mask": np.ones([1, 4], np.int32),
           "input_type_ids": np.zeros([1, 4], np.int32)}
    np.testing.assert_array_equal(loaded.model(ids), classifier(ids))


@pytest.mark.slow
def test_convert_reads_a_transformers_classifier_whole(tmp_path):
    """A transformers BertForSequenceClassification folder converts to a bert-tf classifier (head, label names)
    that `predict` and `export` take as it is; its logits equal transformers'."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    settings = {k: v for k, v in CONFIG.to_hf_dict().items() if k != "architectures"}
    hf_model = transformers.BertForSequenceClassification(transformers.BertConfig(
        **settings, id2label={0: "negative", 1: "positive"}, attn_implementation="eager")).eval()
    hf_model.save_pretrained(tmp_path / "hf")
    (tmp_path / "hf" / "vocab.txt").write_text(
        "\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(55)]) + "\n")
    result = run_cli("convert", "--from", tmp_path / "hf", "--out", tmp_path / "keras")
    assert result.returncode == 0, result.stderr
    assert "with its classify head" in result.stdout and "not part of BERT" not in result.stderr
    loaded = bert_tf.load_model_directory(tmp_path / "keras")
    assert loaded.task.task == "classify" and loaded.model.label_names == ["negative", "positive"]
    ids = np.array([[2, 7, 8, 3]])
    with torch.no_grad():
        theirs = hf_model(input_ids=torch.tensor(ids)).logits.numpy()
    ours = loaded.model({"input_word_ids": ids, "input_mask": np.ones_like(ids), "input_type_ids": 0 * ids})
    np.testing.assert_allclose(np.asarray(ours), theirs, atol=1e-4)
    # its config does not say whether it reads pairs: --text-pair does (for such sources only)
    result = run_cli("convert", "--from", tmp_path / "hf", "--out", tmp_path / "pairs", "--text-pair")
    assert result.returncode == 0, result.stderr
    assert bert_tf.load_model_directory(tmp_path / "pairs").task.text_pair is True
    result = run_cli("convert", "--from", tmp_path / "keras", "--out", tmp_path / "again", "--text-pair")
    assert result.returncode == 2
    assert "--text-pair is for a classifier read from a transformers directory" in result.stderr


@pytest.fixture(scope="module")
def hf_classifier(tmp_path_factory):
    """A transformers BertForSequenceClassification folder of two labels, written by bert-tf."""
    directory = tmp_path_factory.mktemp("hf_classifier")
    vocab = directory / "source_vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(55)]) + "\n")
    classifier = bert_tf.BertClassifier(BertModel(CONFIG), num_classes=2, label_names=["negative", "positive"])
    return bert_tf.write_hf_task_model(classifier, directory / "model", vocab_file=vocab, lower_case=True)


def damaged_copy(source, target, config_changes=None, tensors=None, cut_to=None):
    """A copy of the folder `source`: its config.json updated, its tensors replaced, or its weights cut short."""
    import shutil

    from safetensors.numpy import load_file, save_file

    shutil.copytree(source, target)
    config = json.loads((target / "config.json").read_text())
    (target / "config.json").write_text(json.dumps({**config, **(config_changes or {})}))
    weights = target / "model.safetensors"
    if tensors:
        save_file({**load_file(weights), **tensors}, weights, metadata={"format": "pt"})
    if cut_to:
        weights.write_bytes(weights.read_bytes()[:cut_to])
    return target


@pytest.mark.parametrize("damage, message", [
    (dict(cut_to=5000), "model.safetensors is cut short or damaged"),
    (dict(tensors={"bert.embeddings.word_embeddings.weight": np.ones([60, 32], np.int32)}),
     "bert.embeddings.word_embeddings.weight holds int32 values, not floating-point weights"),
    (dict(config_changes={"id2label": {"0": "negative", "7": "positive"}}),
     "config.json: id2label has ids 0, 7; they must be 0 to 1, each once"),
    (dict(config_changes={"id2label": {"0": "good", "1": "good"}}), "config.json: id2label names 'good' twice"),
    (dict(config_changes={"problem_type": "ranking"}),
     "config.json: problem_type 'ranking' is none of transformers' (single_label_classification, "
     "multi_label_classification, regression)"),
    (dict(config_changes={"id2label": {str(index): f"class {index}" for index in range(5)}}),
     "config.json: id2label has 5 labels, the classifier 2 rows"),
])
def test_a_damaged_transformers_folder_is_one_line_naming_what_is_wrong(hf_classifier, tmp_path, capsys, damage,
                                                                        message):
    from bert_tf_cli import main

    source = damaged_copy(hf_classifier, tmp_path / "damaged", **damage)
    assert main(["convert", "--from", str(source), "--out", str(tmp_path / "out")]) == 2
    error = capsys.readouterr().err
    assert message in error and error.count("\n") == 1, error
    assert str(source) in error


def test_a_folder_without_a_vocabulary_converts_with_a_warning(tmp_path):
    bert_tf.write_hf_directory(BertModel(CONFIG), tmp_path / "hf")  # weights and config, no vocab.txt
    result = run_cli("convert", "--from", tmp_path / "hf", "--out", tmp_path / "keras")
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip().splitlines() == [
        f"bert-tf convert: warning: {tmp_path / 'hf'} has no vocab.txt (nor a WordPiece tokenizer.json): the model "
        f"written has no vocabulary and reads no text until the checkpoint's vocab.txt is copied into "
        f"{tmp_path / 'keras'}."]
