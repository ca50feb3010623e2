"""What an embedding run refuses to train on, in one line naming the file (and line): rows that lack a text or a
score, values that are not texts or numbers, and data in which the loss compares nothing (a loss of 0 at every step,
the weights written unchanged)."""

import json

import pytest

import bert_tf
from bert_tf.tasks.embedding.data import read_embedding_file
from bert_tf.tasks.registry import task_from_spec
from bert_tf.tasks.spec import TaskSpec
from bert_tf_cli import main
from bert_tf.training.finetune_config import FinetuneConfig
from tiny_finetune_files import write_bert_config, write_vocab


def jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


PAIR = {"anchor": "a good film", "positive": "a fine film"}
SCORED = {"sentence1": "a good film", "sentence2": "a fine film", "score": 4.0}


@pytest.mark.parametrize("row, message", [
    ({"anchor": "the plot"}, "line 2: no positive; every row of this file needs anchor, positive."),
    ({**PAIR, "positive": None}, "line 2: positive is null, not a text."),
    ({**PAIR, "anchor": 12}, "line 2: anchor is a number, not a text."),
    ({**PAIR, "positive": ["a", "b"]}, "line 2: positive is a list, not a text."),
    ({**SCORED, "score": None}, "line 2: no score."),
    ({"sentence1": "a", "sentence2": "b"}, "line 2: no score."),
    ({**SCORED, "score": True}, "line 2: the score true/false is not a number."),
    ({**SCORED, "sentence2": {"text": "b"}}, "line 2: sentence2 is an object, not a text."),
])
def test_a_row_without_its_texts_or_score_is_refused_naming_its_line(tmp_path, row, message):
    first = SCORED if "sentence1" in row else PAIR
    path = jsonl(tmp_path / "train.jsonl", [first, row])
    with pytest.raises(ValueError) as error:
        read_embedding_file(path)
    assert str(error.value) == f"{path}, {message}"


@pytest.fixture
def task(tmp_path):
    return task_from_spec(TaskSpec(task="embed", seq_length=16), bert_tf.BertTokenizer(write_vocab(tmp_path)))


def loss_for(task, path, batch_size=16, **settings):
    data = task.prepare(task.read(path, fit_labels=True), training=True)
    config = FinetuneConfig(task="embed", train_file=str(path), output_dir="out", init="tiny", batch_size=batch_size,
                            settings=settings)
    return task.loss(config, data)


@pytest.mark.parametrize("rows, batch_size, message", [
    ([SCORED], 16, "1 scored pair leaves each batch one scored pair, and CoSENT orders the pairs of a batch"),
    ([PAIR], 16, "1 pair leaves each batch one pair, and in-batch negatives score each anchor's positive"),
    ([{"text": "a good film"}], 16, "1 sentence leaves each batch one sentence"),
    ([PAIR, {"anchor": "the plot", "positive": "the story"}], 1, "--batch-size 1 leaves each batch one pair"),
    ([SCORED] * 48, 16, "all 48 pairs are scored the same, so CoSENT"),
])
def test_data_in_which_the_loss_compares_nothing_is_refused(task, tmp_path, rows, batch_size, message):
    path = jsonl(tmp_path / "train.jsonl", rows)
    with pytest.raises(ValueError) as error:
        loss_for(task, path, batch_size)
    assert str(error.value).startswith(f"{path}: {message}"), error.value


def test_a_hard_negative_or_a_regression_loss_compares_even_one_example(task, tmp_path):
    triple = jsonl(tmp_path / "triple.jsonl", [{**PAIR, "negative": "the plot"}])
    assert type(loss_for(task, triple, batch_size=1)).__name__ == "InBatchNegativesLoss"
    same = jsonl(tmp_path / "same.jsonl", [SCORED] * 4)
    assert type(loss_for(task, same, embedding_loss="cosine")).__name__ == "CosineSimilarityLoss"


def test_the_command_refuses_them_in_one_line_before_training(tmp_path, capsys):
    write_vocab(tmp_path)
    common = ["finetune", "--task", "embed", "--init", str(write_bert_config(tmp_path)), "--vocab",
              str(tmp_path / "vocab.txt"), "--seq-length", "16", "--epochs", "1"]
    one = tmp_path / "one.txt"
    one.write_text("a good film\n")
    assert main([*common, "--train", str(one), "--out", str(tmp_path / "one")]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and error[0].startswith(f"bert-tf finetune: error: {one}: 1 sentence leaves"), error
    # vectors of 32 values cannot be cut to 64
    two = tmp_path / "two.txt"
    two.write_text("a good film\nthe plot was bad\n")
    assert main([*common, "--train", str(two), "--out", str(tmp_path / "two"), "--matryoshka-dims", "64,16"]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert error[-1] == ("bert-tf finetune: error: MatryoshkaLoss: the size 64 (--matryoshka-dims) is more than the "
                         "vectors' 32 values."), error
    assert not (tmp_path / "one").exists() and not (tmp_path / "two").exists()


@pytest.mark.parametrize("rows, settings, summary", [
    ([SCORED, {**SCORED, "score": 1.0}], {}, "scored pairs → CoSENT (the default; --loss chooses another)"),
    ([SCORED, {**SCORED, "score": 1.0}], {"embedding_loss": "cosine"},
     "scored pairs → cosine regression (as --loss asks)"),
    ([PAIR, PAIR], {"matryoshka_dims": (8,)}, "pairs → in-batch negatives, at sizes 8 too (the default;"),
    ([{**PAIR, "negative": "n"}] * 2, {}, "triples (anchor, positive, hard negative) → in-batch negatives ("),
    ([{"text": "a"}, {"text": "b"}], {},
     "sentences → SimCSE, in-batch negatives of each sentence paired with itself (the default"),
])
def test_the_run_says_which_format_it_found_and_which_loss_it_chose(task, tmp_path, rows, settings, summary):
    path = jsonl(tmp_path / "train.jsonl", rows)
    data = task.prepare(task.read(path, fit_labels=True), training=True)
    config = FinetuneConfig(task="embed", train_file=str(path), output_dir="out", init="tiny", settings=settings)
    assert task.training_summary(config, data).startswith(f"{path}: {summary}")
