"""Progress written to a file: plain, flushed lines at a steady pace (`bert_tf.progress`), from fine-tuning
and pre-training alike; a terminal keeps Keras' bar."""

import io
import re

from bert_tf import progress as progress_module
from bert_tf.progress import TextProgress


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_lines_come_at_the_interval_and_at_the_last_step(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(progress_module.time, "monotonic", clock)
    out = io.StringIO()
    progress = TextProgress(total_steps=100, examples_per_step=32, stream=out, interval_seconds=30)
    for step in range(1, 101):
        clock.now += 1.0  # one step per second
        progress.update(step, {"loss": 2.0 / step})
    lines = out.getvalue().splitlines()
    assert [int(re.match(r"step (\d+)/100", line).group(1)) for line in lines] == [30, 60, 90, 100]
    assert lines[0] == "step 30/100 (30%), 32.0 examples/s, loss 0.06667, 1m 10s left"
    assert lines[-1] == "step 100/100 (100%), 32.0 examples/s, loss 0.02"  # nothing left to wait for


def test_the_first_step_builds_the_graph_and_is_left_out_of_the_rate(monkeypatch):
    """A fine-tune's first line predicted "3h 36m left" for a 100 s run: its rate counted the graph's build."""
    clock = Clock()
    monkeypatch.setattr(progress_module.time, "monotonic", clock)
    out = io.StringIO()
    progress = TextProgress(total_steps=1000, examples_per_step=32, stream=out, interval_seconds=30)
    clock.now += 90.0  # the first step builds the model's graph
    progress.update(1, {"loss": 0.7})
    for step in range(2, 242):
        clock.now += 0.125
        progress.update(step, {"loss": 0.5})
    lines = out.getvalue().splitlines()
    assert lines[0] == "step 1/1000 (0%), loss 0.7, the first step took 1m 30s (building the model's graph)"
    assert lines[1] == "step 241/1000 (24%), 256.0 examples/s, loss 0.5, 1m 35s left"


def plain_lines(text: str) -> list[str]:
    assert "\x1b" not in text and "\r" not in text, "terminal codes in a file's progress"
    return [line for line in text.splitlines() if line.startswith("step ")]


def test_finetuning_into_a_file_prints_steps_not_a_bar(tmp_path, capsys, monkeypatch):
    from tiny_finetune_files import write_bert_config, write_sentiment_tsv, write_vocab

    from bert_tf.training.finetune import FinetuneConfig, finetune

    monkeypatch.setattr(progress_module, "INTERVAL_SECONDS", 0.0)
    config = FinetuneConfig(task="classify", train_file=str(write_sentiment_tsv(tmp_path / "train.tsv", 32, 0)),
                            init=str(write_bert_config(tmp_path)), vocab_file=str(write_vocab(tmp_path)),
                            output_dir=str(tmp_path / "model"), seq_length=16, batch_size=8, epochs=2)
    finetune(config, progress=True)  # pytest's captured stdout is not a terminal
    printed = capsys.readouterr().out
    assert printed.startswith(f"Reading and tokenizing {config.train_file}\nFine-tuning on 32 examples: 2 epochs of "
                              "4 batches of up to 8\n")
    lines = plain_lines(printed)
    assert [line.split(",")[0] for line in lines] == [f"step {step}/8 ({100 * step / 8:.0f}%)" for step in range(1, 9)]
    assert "the first step took" in lines[0] and all(" examples/s, loss " in line for line in lines[1:])
    epochs = [line for line in printed.splitlines() if not line.startswith("step ")][2:]
    assert [line.split(": ")[0] for line in epochs] == ["epoch 1/2", "epoch 2/2"], printed  # and no line of Keras


def test_pretraining_into_a_file_prints_steps_not_a_bar(tmp_path, capsys, monkeypatch):
    from test_pretraining_resume import train

    monkeypatch.setattr(progress_module, "INTERVAL_SECONDS", 0.0)
    train(tmp_path, 4, progress=True, log_every=2)
    lines = plain_lines(capsys.readouterr().out)
    assert [line.split(" (")[0] for line in lines] == ["step 2/4", "step 4/4"]
    assert all(re.search(r"mlm_loss \S+, nsp_loss \S+", line) for line in lines)



def test_a_bar_into_a_file_is_plain_lines_at_the_interval_and_at_the_end(monkeypatch):
    from bert_tf.progress import progress_bar

    clock = Clock()
    monkeypatch.setattr("tqdm.std.time", clock)
    monkeypatch.setattr(progress_module, "INTERVAL_SECONDS", 30.0)
    out = io.StringIO()
    with progress_bar(total=100, desc="embedding", unit="text", file=out) as bar:
        for step in range(100):
            clock.now += 1.0  # one text per second
            bar.set_postfix(batch=step)  # a change of postfix is no reason for a line
            bar.update(1)
    assert "\x1b" not in out.getvalue() and "\r" not in out.getvalue()
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("embedding: 0% (0/100 text)")
    assert [line.split(" (")[0] for line in lines[1:]] == ["embedding: 30%", "embedding: 60%", "embedding: 90%",
                                                           "embedding: 100%"]
    assert lines[1] == "embedding: 30% (30/100 text), 1.00text/s, 01:10 left, batch=29"


def test_a_bar_without_a_total_and_one_that_is_disabled():
    from bert_tf.progress import progress_bar

    out = io.StringIO()
    assert list(progress_bar(iter(range(3)), desc="writing", unit="batch", file=out)) == [0, 1, 2]
    assert out.getvalue().splitlines()[-1].startswith("writing: 3batch [")
    quiet = io.StringIO()
    assert list(progress_bar(range(3), file=quiet, disable=True)) == [0, 1, 2] and quiet.getvalue() == ""


def test_a_terminal_keeps_the_bar():
    from bert_tf.progress import progress_bar

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    out = Terminal()
    list(progress_bar(range(3), desc="predicting", file=out))
    assert "\r" in out.getvalue() and "|" in out.getvalue()


def test_predicting_into_a_file_prints_lines_not_a_bar(capsys, monkeypatch):
    import numpy as np
    import tensorflow as tf
    from tiny_exports import tiny_encoder

    import bert_tf
    from bert_tf.tasks.model_outputs import predict_examples

    monkeypatch.setattr(progress_module, "INTERVAL_SECONDS", 0.0)
    ids = np.ones([6, 5], np.int32)
    batches = tf.data.Dataset.from_tensor_slices(
        {"input_word_ids": ids, "input_mask": ids, "input_type_ids": 0 * ids}).batch(2)
    classifier = bert_tf.BertClassifier(tiny_encoder(), num_classes=2)
    assert len(predict_examples(classifier, batches, per_position=False, progress=True)) == 6
    printed = capsys.readouterr().err  # pytest's captured stderr is not a terminal
    assert "\r" not in printed and "\x1b" not in printed
    assert printed.splitlines()[-1].startswith("predicting: 100% (3/3 batch)")
