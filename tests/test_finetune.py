"""`bert_tf.training.finetune`: training with best-epoch selection and early stopping, the saved directory, bad input."""

import json
import re

import numpy as np
import pytest
from tiny_finetune_files import VOCAB, write_bert_config, write_sentiment_tsv, write_vocab

import bert_tf
from bert_tf.metrics import SparseCategoricalFocalLoss
from bert_tf.tasks.classification.task import ClassificationData, ClassificationTask
from bert_tf.tasks.spec import TaskSpec
from bert_tf.tokenizer import BertTokenizer
from bert_tf.training.finetune import evaluate, finetune, load_encoder
from bert_tf.training.finetune_config import FinetuneConfig


@pytest.fixture
def files(tmp_path):
    return {
        "vocab": str(write_vocab(tmp_path)),
        "config": str(write_bert_config(tmp_path)),
        "train": str(write_sentiment_tsv(tmp_path / "train.tsv", 96, seed=0)),
        "dev": str(write_sentiment_tsv(tmp_path / "dev.tsv", 32, seed=1)),
    }


def config(files, tmp_path, **changes):
    settings = dict(task="classify", train_file=files["train"], dev_file=files["dev"], init=files["config"],
                    vocab_file=files["vocab"], output_dir=str(tmp_path / "model"), seq_length=16, batch_size=16,
                    learning_rate=3e-3, epochs=8, dropout=0.0)
    return FinetuneConfig(**{**settings, **changes})


def collapse_warnings(caplog) -> list[str]:
    return [record.getMessage() for record in caplog.records
            if record.name == "bert_tf.training.finetune" and record.levelname == "WARNING"]


@pytest.mark.slow
def test_classification_learns_keeps_the_best_epoch_and_saves_everything(files, tmp_path, caplog):
    result = finetune(config(files, tmp_path, settings={"class_weights": True}), progress=False)
    assert collapse_warnings(caplog) == []
    dev_accuracy = result.history["val_accuracy"]
    assert len(dev_accuracy) == 8 and result.best_epoch == int(np.argmax(dev_accuracy)) + 1
    assert result.metrics["accuracy"] == max(dev_accuracy) >= 0.9
    assert set(result.metrics) >= {"accuracy", "macro_f1", "mcc", "f1", "per_class"}
    assert result.train_steps == 8 * 6  # 96 examples, all shorter than 16 tokens: one bucket, batches of 16

    directory = bert_tf.load_model_directory(tmp_path / "model")
    assert isinstance(directory.model, bert_tf.BertClassifier) and directory.model.label_names == ["0", "1"]
    assert directory.vocab_file.read_text().split("\n")[:len(VOCAB)] == VOCAB and directory.lower_case is True
    spec = directory.task
    assert (spec.task, spec.seq_length, spec.text_pair, spec.truncation) == ("classify", 16, False, "longest_first")
    assert spec.columns == ("sentence", None, "label") and spec.label_names == ("0", "1")
    metadata = directory.metadata
    assert metadata["dev_scores"]["accuracy"] == result.metrics["accuracy"]
    assert metadata["training"]["best_epoch"] == result.best_epoch
    _, scores = evaluate(tmp_path / "model", files["dev"], progress=False)
    assert scores["accuracy"] == pytest.approx(result.metrics["accuracy"])
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".model")] == []  # checkpoints removed


def test_the_saved_model_is_its_weights_without_the_optimizers_state(files, tmp_path):
    """model.keras kept AdamW's two moments per weight (134 MB for BERT-Mini, 45 MB of weights): a model directory
    is for predicting, exporting and fine-tuning again, none of which reads them."""
    import zipfile

    import h5py

    bigger = bert_tf.BertConfig(vocab_size=len(VOCAB), hidden_size=128, num_hidden_layers=2, num_attention_heads=2,
                                intermediate_size=512, max_position_embeddings=32)  # its weights outweigh the file's rest
    bigger.write_json(tmp_path / "bigger.json")
    finetune(config(files, tmp_path, init=str(tmp_path / "bigger.json"), epochs=1), progress=False)
    directory = bert_tf.load_model_directory(tmp_path / "model")
    weight_bytes = sum(weight.numpy().nbytes for weight in directory.model.weights)
    saved = tmp_path / "model" / "model.keras"
    assert saved.stat().st_size < 1.2 * weight_bytes, (saved.stat().st_size, weight_bytes)  # with AdamW's state: 3.3×
    with zipfile.ZipFile(saved) as archive, archive.open("model.weights.h5") as weights, h5py.File(weights) as h5:
        assert "optimizer" not in h5
    # loaded ready to train again (its task's loss, KerasHub's Adam), from a fresh optimizer: none was saved
    assert type(directory.model.optimizer).__name__ == "Adam" and int(directory.model.optimizer.iterations) == 0


@pytest.mark.slow
def test_focal_loss_takes_the_class_weights_and_early_stopping_stops(files, tmp_path):
    settings = config(files, tmp_path, settings={"focal_loss": True, "class_weights": True}, learning_rate=1e-9, epochs=5,
                      early_stopping_patience=1)
    result = finetune(settings, progress=False)
    assert result.epochs_run == 2  # the dev score cannot improve at a learning rate of 1e-9
    task = ClassificationTask(BertTokenizer(files["vocab"]), settings.task_spec())  # the loss it trained with
    loss = task.loss(settings, task.prepare(task.read(files["train"], fit_labels=True), training=True))
    assert isinstance(loss, SparseCategoricalFocalLoss) and loss.alpha == [1.0, 1.0]


@pytest.mark.parametrize("data", ["dev", "training"])
def test_a_model_that_predicts_one_class_for_everything_is_warned_about(files, tmp_path, caplog, data):
    dev_file = files["dev"] if data == "dev" else None
    finetune(config(files, tmp_path, dev_file=dev_file, learning_rate=1e-9, epochs=1), progress=False)
    [warning] = collapse_warnings(caplog)
    assert re.fullmatch(
        rf"The model predicts '[01]' for every {data} example, though their labels differ: training collapsed to one "
        r"class\. Try another --learning-rate \(this run: 1e-09\): small models need a higher one, e\.g\. 1e-3 for "
        r"tiny and 3e-4 for mini from random weights on SST-2 \(benchmarks/RESULTS\.md\)\.", warning)


@pytest.mark.parametrize("multi_label, labels, logits, expected", [
    (False, [0, 1, 1], [[2.0, 1.0], [3.0, -1.0], [0.5, 0.0]], "'neg'"),
    (False, [0, 1, 1], [[2.0, 1.0], [0.0, 1.0], [0.5, 0.0]], None),  # two classes predicted
    (False, [1, 1, 1], [[0.0, 1.0], [0.0, 1.0], [0.0, 1.0]], None),  # one class to predict
    (True, [[1, 0], [0, 1], [1, 1]], [[-1.0, -2.0], [-3.0, -1.0], [-1.0, -1.0]], "[]"),
    (True, [[1, 0], [0, 1], [1, 1]], [[1.0, -2.0], [-3.0, -1.0], [-1.0, -1.0]], None),
])
def test_only_prediction_is_the_class_of_a_collapsed_model(files, multi_label, labels, logits, expected):
    task = ClassificationTask(BertTokenizer(files["vocab"]), TaskSpec.of(
        "classify", seq_length=16, label_names=("neg", "pos"), multi_label=multi_label))
    task.outputs = lambda model, data, batch_size: list(np.array(logits))
    data = ClassificationData(examples=None, labels=np.array(labels), features={})
    assert task.only_prediction(model=None, data=data, batch_size=2) == expected


def test_an_unknown_dev_label_fails_before_training_and_writes_nothing(files, tmp_path):
    dev = tmp_path / "bad_dev.tsv"
    dev.write_text("sentence\tlabel\ngood film\t1\nbad film\tmaybe\n")
    with pytest.raises(ValueError, match=r"bad_dev.tsv, line 3: unknown label 'maybe'"):
        finetune(config(files, tmp_path, dev_file=str(dev)), progress=False)
    assert not (tmp_path / "model").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".model")]


def test_a_non_empty_output_directory_needs_overwrite(files, tmp_path):
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "keep.txt").write_text("mine")
    with pytest.raises(ValueError, match="exists and is not empty"):
        finetune(config(files, tmp_path), progress=False)
    assert (tmp_path / "model" / "keep.txt").read_text() == "mine"


def test_load_encoder_from_a_checkpoint_a_config_or_a_preset(files, tmp_path):
    encoder, vocab, lower_case = load_encoder(config(files, tmp_path))
    assert encoder.config.hidden_size == 32 and str(vocab) == files["vocab"] and lower_case is True  # the vocabulary's
    with pytest.raises(ValueError, match="--cased .* contradicts .*vocab.txt, an uncased vocabulary"):
        load_encoder(config(files, tmp_path, lower_case=False))
    bert_tf.save_pretrained(encoder, tmp_path / "checkpoint", vocab_file=vocab, lower_case=True)
    loaded, vocab, lower_case = load_encoder(config(files, tmp_path, init=str(tmp_path / "checkpoint"), vocab_file=None))
    assert vocab == tmp_path / "checkpoint" / "vocab.txt" and lower_case is True
    np.testing.assert_array_equal(loaded.pooler.kernel.numpy(), encoder.pooler.kernel.numpy())
    preset, _, _ = load_encoder(config(files, tmp_path, init="bert_L2_H128"))
    assert preset.config.vocab_size == len(VOCAB) and preset.config.hidden_size == 128
    with pytest.raises(ValueError, match="needs a vocabulary"):
        load_encoder(config(files, tmp_path, init="bert_L2_H128", vocab_file=None))
    with pytest.raises(ValueError, match=r"seq_length must be in \[3, 64\] \(the model.s max_position_embeddings\), got 128"):
        load_encoder(config(files, tmp_path, seq_length=128))
    with pytest.raises(FileNotFoundError, match="neither a checkpoint"):
        load_encoder(config(files, tmp_path, init=str(tmp_path / "missing")))
    run = tmp_path / "run"  # a pre-training run folder stands for its model/
    bert_tf.save_pretrained(bert_tf.BertPretrainer(encoder), run / "model", vocab_file=vocab)
    from_run, _, _ = load_encoder(config(files, tmp_path, init=str(run), vocab_file=None))
    np.testing.assert_array_equal(from_run.pooler.kernel.numpy(), encoder.pooler.kernel.numpy())
    (run / "model").rename(run / "unfinished")
    (run / "checkpoints").mkdir()
    (run / "checkpoints" / "ckpt-20.index").write_bytes(b"")
    with pytest.raises(FileNotFoundError, match="pre-training checkpoints .* but no finished model"):
        load_encoder(config(files, tmp_path, init=str(run), vocab_file=None))


def test_multi_label_from_jsonl(files, tmp_path):
    rows = [{"text": text, "topics": (["pos"] if label == "1" else ["neg"]) + (["plot"] if "plot" in text else [])}
            for text, label in (line.rsplit("\t", 1) for line in open(files["train"]).read().splitlines()[1:])]
    path = tmp_path / "train.jsonl"
    path.write_text("\n".join(json.dumps(row) for row in rows))
    result = finetune(config(files, tmp_path, train_file=str(path), dev_file=str(path), epochs=1,
                             settings={"multi_label": True, "columns": (None, None, "topics")}), progress=False)
    assert set(result.metrics["per_class"]) == {"neg", "plot", "pos"}
    assert {"accuracy", "macro_f1", "micro_f1"} <= set(result.metrics)
    model = bert_tf.load_model_directory(tmp_path / "model").model
    assert model.mode == "multi_label" and model.label_names == ["neg", "plot", "pos"]


@pytest.mark.slow
def test_label_names_name_the_classes_by_id(files, tmp_path):
    """`--label-names negative,positive`: the file's labels 0/1 are ids; the model predicts the names."""
    result = finetune(config(files, tmp_path, epochs=1, label_names=("negative", "positive")), progress=False)
    assert set(result.metrics["per_class"]) == {"negative", "positive"}
    directory = bert_tf.load_model_directory(tmp_path / "model")
    assert directory.model.label_names == ["negative", "positive"]
    assert directory.task.label_names == ("negative", "positive")
    _, scores = evaluate(tmp_path / "model", files["dev"], progress=False)
    assert scores["accuracy"] == pytest.approx(result.metrics["accuracy"])


def test_the_default_learning_rate_follows_the_models_size_and_start():
    """The rates benchmarks/RESULTS.md measured: from trained weights 1e-4 under BERT-base's width; from random ones
    tiny learns at 1e-3 and mini at 3e-4 only (1e-4 collapsed both to one class); base at 5e-5 either way."""
    config = FinetuneConfig(task="classify", train_file="t", output_dir="o", init="tiny")
    assert config.peak_learning_rate(bert_tf.BertConfig.preset("mini")) == 1e-4
    assert config.peak_learning_rate(bert_tf.BertConfig.preset("base")) == 5e-5
    random_start = {size: config.peak_learning_rate(bert_tf.BertConfig.preset(size), random_start=True)
                    for size in ("tiny", "mini", "base")}
    assert random_start == {"tiny": 1e-3, "mini": 3e-4, "base": 5e-5}
    assert FinetuneConfig(task="classify", train_file="t", output_dir="o", init="tiny",
                          learning_rate=3e-5).peak_learning_rate(bert_tf.BertConfig.preset("mini")) == 3e-5


def test_config_checks_settings():
    with pytest.raises(ValueError, match="unknown task"):
        FinetuneConfig(task="tag", train_file="t", output_dir="o", init="tiny")
    with pytest.raises(ValueError, match=r"\['class_weights'\] are not settings of task 'ner' \(its own: "):
        FinetuneConfig(task="ner", train_file="t", output_dir="o", init="tiny", settings={"class_weights": True})
    with pytest.raises(ValueError, match="early stopping needs a dev_file"):
        FinetuneConfig(task="ner", train_file="t", output_dir="o", init="tiny", early_stopping_patience=2)
    assert FinetuneConfig(task="squad", train_file="t", output_dir="o", init="tiny").sequence_length() == 384
    with pytest.raises(ValueError, match="seq_length 40 is too short for task 'squad'"):
        FinetuneConfig(task="squad", train_file="t", output_dir="o", init="tiny", seq_length=40)
    with pytest.raises(ValueError, match=r"label_names must be distinct and not empty, got \('a', 'a'\)"):
        FinetuneConfig(task="classify", train_file="t", output_dir="o", init="tiny", label_names=("a", "a"))
    with pytest.raises(ValueError, match="class_weights and focal_loss apply to single-label classification"):
        FinetuneConfig(task="classify", train_file="t", output_dir="o", init="tiny",
                       settings={"multi_label": True, "focal_loss": True})
    for field, value in [("temperature", float("nan")), ("temperature", 0.0), ("learning_rate", float("inf")),
                         ("weight_decay", -0.01), ("weight_decay", float("nan")), ("hidden_weight", float("inf")),
                         ("dropout", float("nan")), ("seed", -1)]:
        with pytest.raises(ValueError, match=f"FinetuneConfig: {field} must be"):
            FinetuneConfig(task="classify", train_file="t", output_dir="o", init="teacher", teacher="t", student_layers=1,
                           **{field: value})
    for task, field in (("classify", "focal_gamma"), ("squad", "null_score_threshold"), ("embed", "similarity_scale")):
        with pytest.raises(ValueError, match=f"FinetuneConfig: {field} must be a finite number, got nan"):
            FinetuneConfig(task=task, train_file="t", output_dir="o", init="tiny", settings={field: float("nan")})


@pytest.mark.slow
def test_training_data_gives_the_batches_fit_trains_on_in_order(files, tmp_path, monkeypatch):
    """A reference framework trains on `training_data(config, ...)`'s batches (benchmarks/quality.py): they must be
    those `finetune`'s `model.fit` consumes, epoch after epoch (with bucketing, a reshuffle per epoch, a subset)."""
    import keras
    import tensorflow as tf

    import bert_tf.training.finetune as finetune_module

    seen = []

    def recording_fit(model, batches, *args, **kwargs):
        def record(features, labels):
            ids = features["input_word_ids"]
            recorded = tf.py_function(lambda ids: seen.append(ids.numpy().tolist()) or ids, [ids], tf.int32)
            return {**features, "input_word_ids": tf.ensure_shape(recorded, ids.shape)}, labels

        return original_fit(model, batches.map(record), *args, **kwargs)

    original_fit = finetune_module._fit
    monkeypatch.setattr(finetune_module, "_fit", recording_fit)
    settings = config(files, tmp_path, epochs=3, batch_size=8, seed=7, max_train_examples=60, bucketing=True,
                      seq_length=32)
    finetune(settings, progress=False)

    keras.utils.set_random_seed(settings.seed)
    vocab_file = bert_tf.load_model_directory(tmp_path / "model").vocab_file
    training = finetune_module.training_data(settings, BertTokenizer(vocab_file, lower_case=True))
    again = [features["input_word_ids"].numpy().tolist() for _ in range(settings.epochs)
             for features, _ in training.batches]
    assert len(again) == training.steps and again == seen
    assert seen[:training.steps // 3] != seen[training.steps // 3: 2 * training.steps // 3]  # reshuffled per epoch
