"""`bert-tf distill` end to end on tiny models: a sentiment teacher distilled into a student of its own first
layer and into a random narrower one, the student served by every path like a fine-tuned model, NER and SQuAD
teachers distilled too, and bad combinations refused in one line."""

import re

import pytest

import bert_tf
from bert_tf_cli import build_parser, main
from bert_tf_cli.distill import config_from_args
from tiny_finetune_files import VOCAB, write_bert_config, write_conll, write_sentiment_tsv, write_squad, write_vocab

TRAINING = ["--epochs", "3", "--batch-size", "16", "--learning-rate", "3e-3", "--dropout", "0"]


@pytest.fixture(scope="module")
def sentiment(tmp_path_factory):
    directory = tmp_path_factory.mktemp("distill")
    files = {"vocab": write_vocab(directory), "config": write_bert_config(directory),
             "train": write_sentiment_tsv(directory / "train.tsv", 96, seed=0),
             "dev": write_sentiment_tsv(directory / "dev.tsv", 32, seed=1), "dir": directory}
    assert main(["finetune", "--task", "classify", "--train", str(files["train"]), "--dev", str(files["dev"]),
                 "--init", str(files["config"]), "--vocab", str(files["vocab"]), "--out", str(directory / "teacher"),
                 "--seq-length", "16", "--label-names", "negative,positive", *TRAINING, "--epochs", "6"]) == 0
    return files


def distill(files, out, *student):
    return main(["distill", "--teacher", str(files["dir"] / "teacher"), "--train", str(files["train"]),
                 "--dev", str(files["dev"]), "--out", str(out), *TRAINING, *student])  # the case's flags last: they win


@pytest.mark.slow
def test_a_student_of_the_teachers_layers_keeps_its_task_and_serves_like_any_model(sentiment, tmp_path, capsys):
    out = tmp_path / "student"
    assert distill(sentiment, out, "--student", "teacher", "--student-layers", "1", "--temperature", "3",
                   "--hidden-weight", "0.5", "--attention-weight", "0.5") == 0
    printed = capsys.readouterr().out
    assert "Distilling" in printed and "a student of 1 layers" in printed and "Dev scores (epoch" in printed
    # the end compares them: the teacher's dev score beside the student's, the share kept, size and speed
    teacher_row = next(line for line in printed.splitlines() if line.startswith("teacher "))
    student_row = next(line for line in printed.splitlines() if line.startswith("student "))
    assert re.search(r"model +accuracy +parameters +on disk +examples/s", printed), printed
    assert re.fullmatch(r"teacher +[01]\.\d{4} +[\d,]+ +[\d.]+ MB +[\d,]+", teacher_row), teacher_row
    assert re.fullmatch(r"student +[01]\.\d{4} \(\d+% kept\) +[\d,]+ +[\d.]+ MB +[\d,]+ \([\d.]+× the teacher's\)",
                        student_row), student_row
    directory = bert_tf.load_model_directory(out)
    teacher = bert_tf.load_model_directory(sentiment["dir"] / "teacher")
    assert directory.encoder.config.num_hidden_layers == 1 and directory.task == teacher.task
    assert directory.metadata["training"]["config"]["teacher"] == str(sentiment["dir"] / "teacher")
    assert directory.metadata["training"]["config"]["temperature"] == 3.0
    assert {"hidden_loss", "attention_loss"} <= set(directory.metadata["training"]["history"])
    assert directory.metadata["dev_scores"]["accuracy"] >= 0.8

    assert main(["evaluate", "--model", str(out), "--data", str(sentiment["dev"])]) == 0
    assert main(["predict", "--model", str(out), "the film was great", "--json"]) == 0
    capsys.readouterr()
    assert main(["export", "--model", str(out), "--out", str(tmp_path / "models"), "--name", "student",
                 "--quantize", "int8"]) == 0
    assert (tmp_path / "models" / "student" / "1" / "model.tflite").is_file()


@pytest.mark.slow
def test_unlabeled_text_is_labelled_by_the_teacher(sentiment, tmp_path, capsys):
    from bert_tf.prediction import Predictor

    unlabeled = tmp_path / "reviews.txt"
    sentences = [line.split("\t")[0].strip() for line in sentiment["dev"].read_text().splitlines()[1:]]
    unlabeled.write_text("\n".join(sentences) + "\n\n")
    teacher = Predictor(sentiment["dir"] / "teacher")
    from bert_tf.training.finetune import training_data
    from bert_tf.training.finetune_config import FinetuneConfig

    config = FinetuneConfig(task="classify", train_file=str(sentiment["train"]), output_dir=str(tmp_path / "x"),
                            init="teacher", student_layers=1, teacher=str(sentiment["dir"] / "teacher"),
                            unlabeled_files=(str(unlabeled),))
    directory = bert_tf.load_model_directory(config.teacher)
    examples = training_data(config, directory.tokenizer(), directory, progress=True).examples
    assert len(examples) == 96 + len(sentences)
    captured = capsys.readouterr()  # the teacher's labelling shows its progress (it was silent for minutes)
    assert f"Labelling the {len(sentences)} lines of {unlabeled} with the teacher" in captured.out
    assert "predicting: 100% (1/1 batch)" in captured.err, captured.err  # 32 lines, in batches of 32
    assert examples.labels[96:] == [result["label"] for result in teacher.classify(sentences)]
    assert distill(sentiment, tmp_path / "student", "--student", "teacher", "--student-layers", "1",
                   "--unlabeled", str(unlabeled)) == 0
    training = bert_tf.load_model_directory(tmp_path / "student").metadata["training"]
    assert training["train_examples"] == 96 + len(sentences)


def test_augmented_copies_of_the_training_texts_are_labelled_by_the_teacher(sentiment, tmp_path):
    from bert_tf.training.finetune import training_data
    from bert_tf.training.finetune_config import FinetuneConfig
    from bert_tf.prediction import Predictor

    masked_lm = bert_tf.BertPretrainer(bert_tf.BertModel(bert_tf.BertConfig.from_json_file(sentiment["config"])))
    bert_tf.save_pretrained(masked_lm, tmp_path / "mlm", vocab_file=sentiment["vocab"])
    config = FinetuneConfig(task="classify", train_file=str(sentiment["train"]), output_dir=str(tmp_path / "x"),
                            init="teacher", student_layers=1, teacher=str(sentiment["dir"] / "teacher"),
                            augment_copies=3, augment_with=str(tmp_path / "mlm"))
    teacher = bert_tf.load_model_directory(config.teacher)
    examples = training_data(config, teacher.tokenizer(), teacher).examples
    assert 96 + 96 <= len(examples) <= 96 + 3 * 96 and examples.source == str(sentiment["train"])
    augmented = examples.texts[96:]
    assert len(set(augmented)) == len(augmented) and not set(augmented) & set(examples.texts[:96])
    assert examples.labels[96:] == [result["label"] for result in Predictor(config.teacher).classify(augmented)]
    args = build_parser().parse_args(["distill", "--teacher", config.teacher, "--train", config.train_file, "--out",
                                      config.output_dir, "--student", "teacher", "--student-layers", "1",
                                      "--augment", "3", "--augment-with", config.augment_with])
    assert config_from_args(args) == config  # the command line makes the same run


@pytest.mark.slow
def test_a_random_start_learns_at_its_sizes_rate_and_a_larger_student_is_warned_about(sentiment, tmp_path, caplog):
    """The README's `--student tiny` learnt at 1e-4 (the rate of trained small models) and collapsed to one class."""
    assert main(["distill", "--teacher", str(sentiment["dir"] / "teacher"), "--train", str(sentiment["train"]),
                 "--student", "tiny", "--out", str(tmp_path / "tiny"), "--epochs", "1"]) == 0
    assert bert_tf.load_model_directory(tmp_path / "tiny").metadata["training"]["learning_rate"] == 1e-3
    warnings = [record.getMessage() for record in caplog.records if record.levelname == "WARNING"]
    assert any("is larger than its teacher" in warning for warning in warnings), warnings


@pytest.mark.slow  # 15 s; the random start's loading is finetune's own (tests/test_finetune.py)
def test_a_random_narrower_student(sentiment, tmp_path):
    config = sentiment["dir"] / "narrow.json"
    bert_tf.BertConfig(vocab_size=len(VOCAB), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                       intermediate_size=32, max_position_embeddings=64).write_json(config)
    assert distill(sentiment, tmp_path / "narrow", "--student", str(config), "--soft-weight", "0.8",
                   "--hidden-weight", "1", "--layer-map", "2") == 0
    directory = bert_tf.load_model_directory(tmp_path / "narrow")
    assert directory.encoder.config.hidden_size == 16 and directory.model.label_names == ["negative", "positive"]


@pytest.mark.slow  # 30 s: two teachers fine-tuned first (tests/test_distillation.py checks both heads' losses)
@pytest.mark.parametrize("task", ["ner", "squad"])
def test_ner_and_squad_teachers_distil(task, tmp_path):
    train = write_conll(tmp_path / "train.txt", copies=2) if task == "ner" else write_squad(tmp_path / "train.json")
    files = {"vocab": write_vocab(tmp_path), "config": write_bert_config(tmp_path), "train": train, "dev": train,
             "dir": tmp_path}
    shape = ["--seq-length", "32"] if task == "ner" else ["--seq-length", "48", "--max-query-length", "16",
                                                          "--doc-stride", "16"]
    assert main(["finetune", "--task", task, "--train", str(train), "--init", str(files["config"]), "--vocab",
                 str(files["vocab"]), "--out", str(tmp_path / "teacher"), *shape, *TRAINING]) == 0
    unlabeled = ["--unlabeled", str(write_text(tmp_path / "news.txt", "Mary lives in Paris.\nJohn works at Acme.\n"))]
    assert distill(files, tmp_path / "student", "--student", "teacher", "--student-layers", "1",
                   *(unlabeled if task == "ner" else [])) == 0
    assert bert_tf.load_model_directory(tmp_path / "student").task.task == task


def write_text(path, text):
    path.write_text(text)
    return path


def test_bad_combinations_are_one_line_errors(sentiment, tmp_path, capsys):
    other_vocab = tmp_path / "other"
    other_vocab.mkdir()
    (other_vocab / "vocab.txt").write_text("\n".join(VOCAB[:-1] + ["zebra"]) + "\n")
    student = bert_tf.BertModel(bert_tf.BertConfig.from_json_file(sentiment["config"]))
    bert_tf.save_pretrained(student, tmp_path / "checkpoint", vocab_file=other_vocab / "vocab.txt")
    assert main(["export", "--model", str(sentiment["dir"] / "teacher"), "--out", str(tmp_path / "models"), "--name",
                 "teacher"]) == 0
    cases = [
        (["--student", "teacher"], "bert-tf distill: error: --student teacher needs --student-layers"),
        (["--student", "tiny", "--student-layers", "1"], "--student-layers goes with --student teacher only"),
        (["--student", "teacher", "--student-layers", "3"], "takes 1 to 2 of them, not 3"),
        (["--student", str(tmp_path / "checkpoint")], "has another vocabulary"),
        (["--student", "teacher", "--student-layers", "1", "--soft-weight", "2"], "--soft-weight must be in [0, 1]"),
        *((["--student", "teacher", "--student-layers", "1", flag, value], f"{flag} must be")
          for flag, value in [("--temperature", "nan"), ("--temperature", "0"), ("--temperature", "inf"),
                              ("--learning-rate", "nan"), ("--learning-rate", "-0.001"), ("--weight-decay", "nan"),
                              ("--hidden-weight", "inf"), ("--attention-weight", "-1"), ("--dropout", "nan"),
                              ("--warmup-proportion", "nan")]),
        (["--student", "teacher", "--student-layers", "1", "--augment", "2"],
         "has no masked-LM head to augment text with; pass --augment-with"),
        (["--student", "teacher", "--student-layers", "1", "--hidden-weight", "1", "--layer-map", "1,2"],
         "The layer map [1, 2] must name one teacher layer (1 to 2) for each of the student's 1 layers"),
    ]
    for arguments, message in cases:
        assert distill(sentiment, tmp_path / "bad", *arguments) == 2
        error = capsys.readouterr().err.strip()
        assert message in error and len(error.splitlines()) == 1, error
        assert "FinetuneConfig" not in error and "student_layers" not in error, error
    for export in (tmp_path / "models" / "teacher", tmp_path / "models" / "teacher" / "1"):
        assert main(["distill", "--teacher", str(export), "--train", str(sentiment["train"]), "--student", "tiny",
                     "--out", str(tmp_path / "x")]) == 2
        error = capsys.readouterr().err.strip()
        assert (f"--teacher {export} is an export for serving: give the fine-tuned model directory it was exported "
                "from (bert-tf finetune's --out)") in error and "--server" not in error, error
    assert main(["distill", "--teacher", str(sentiment["vocab"].parent / "nowhere"), "--train",
                 str(sentiment["train"]), "--student", "tiny", "--out", str(tmp_path / "x")]) == 2
    assert "nowhere" in capsys.readouterr().err
