"""`bert-tf distill` of a sentence-embedding teacher, end to end on tiny models: plain sentences are enough; a
narrower random student learns the teacher's vectors through a projection it keeps, so that evaluate, embed and the
export answer vectors in the teacher's space; a same-width student of the teacher's own layers needs none; files and
flags that do not fit are refused in one line."""

import re

import numpy as np
import pytest
import tensorflow as tf
from tiny_finetune_files import VOCAB, sentiment_rows, write_sentiment_tsv, write_vocab

import bert_tf
from bert_tf.tasks.embedding.distillation import vector_distance
from bert_tf.tasks.embedding.model import BertEmbedder
from bert_tf.tasks.spec import TaskSpec
from bert_tf_cli import main

TRAINING = ["--epochs", "3", "--batch-size", "8", "--learning-rate", "3e-3", "--soft-weight", "1"]
STS = [("good film", "great film", 5.0), ("good film", "bad film", 0.5), ("fine plot", "nice plot", 4.5),
       ("bad plot", "awful plot", 4.0), ("fine film", "poor plot", 1.0), ("nice plot", "sad film", 0.0)]


@pytest.fixture(scope="module")
def embedding(tmp_path_factory):
    """A teacher (2 layers of width 16, random weights spread out so that vectors differ), sentences to distil on and
    a scored-pair dev file."""
    directory = tmp_path_factory.mktemp("distill_embedding")
    vocab = write_vocab(directory)
    encoder = bert_tf.BertModel(bert_tf.BertConfig(
        vocab_size=len(VOCAB), hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
        max_position_embeddings=32, initializer_range=0.5, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0))
    teacher = bert_tf.save_pretrained(BertEmbedder(encoder), directory / "teacher", vocab_file=vocab,
                                      task=TaskSpec(task="embed", seq_length=16))
    sentences = directory / "sentences.txt"
    sentences.write_text("".join(f"{text}\n" for text, _ in sentiment_rows(48, seed=0)))
    dev = directory / "sts-dev.tsv"
    dev.write_text("sentence1\tsentence2\tscore\n" + "".join(f"{a}\t{b}\t{score}\n" for a, b, score in STS))
    return {"dir": directory, "teacher": teacher, "sentences": sentences, "dev": dev}


def distill(files, out, *student):
    return main(["distill", "--teacher", str(files["teacher"]), "--train", str(files["sentences"]), "--dev",
                 str(files["dev"]), "--out", str(out), *TRAINING, *student])


def texts(files) -> list[str]:
    return files["sentences"].read_text().splitlines()


def test_a_narrower_student_answers_in_the_teachers_space_by_every_path(embedding, tmp_path, capsys):
    config = tmp_path / "narrow.json"
    bert_tf.BertConfig(vocab_size=len(VOCAB), hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                       intermediate_size=16, max_position_embeddings=32).write_json(config)
    out = tmp_path / "student"
    assert distill(embedding, out, "--student", str(config)) == 0
    printed = capsys.readouterr().out
    assert "a student of 1 layers, hidden 8," in printed and "Spearman" in printed
    assert re.search(r"model +score +parameters +on disk +examples/s", printed), printed
    student_row = next(line for line in printed.splitlines() if line.startswith("student "))
    assert re.fullmatch(r"student +-?\d+\.\d{4} \(-?\d+% kept\) +[\d,]+ +[\d.]+ MB +[\d,]+ \([\d.]+× the teacher's\)",
                        student_row), student_row

    student, teacher = bert_tf.load_model_directory(out), bert_tf.load_model_directory(embedding["teacher"])
    assert student.encoder.config.hidden_size == 8 and student.model.projection is not None
    assert student.task == teacher.task and student.task.embedding_size == 16
    history = student.metadata["training"]["history"]["soft_loss"]
    assert history[-1] < 0.8 * history[0], history
    sentences = texts(embedding)
    vectors = student.model.predict(sentences, verbose=0)
    assert vectors.shape == (len(sentences), 16)
    assert float(vector_distance(teacher.model.predict(sentences, verbose=0), vectors)) < history[0]

    assert main(["evaluate", "--model", str(out), "--data", str(embedding["dev"])]) == 0
    assert "Spearman" in capsys.readouterr().out
    assert main(["embed", "--model", str(out), "--out", str(tmp_path / "v.npy"), *sentences[:3]]) == 0
    np.testing.assert_allclose(np.load(tmp_path / "v.npy"), vectors[:3], atol=1e-5)
    assert main(["export", "--model", str(out), "--out", str(tmp_path / "models"), "--name", "student"]) == 0
    served = tf.saved_model.load(str(tmp_path / "models" / "student" / "1"))
    answered = served.signatures["serving_default"](text=tf.constant(sentences[:3]))["embedding"].numpy()
    np.testing.assert_allclose(answered, vectors[:3], atol=1e-5)
    assert int(served.signatures["model_info"](request=tf.constant([""]))["embedding_size"][0]) == 16


@pytest.mark.slow  # 25 s; the same-width student's fit is checked in tests/tasks/embedding/test_embedding_distillation.py
def test_a_same_width_student_of_the_teachers_layers_needs_no_projection(embedding, tmp_path):
    out = tmp_path / "student"
    assert distill(embedding, out, "--student", "teacher", "--student-layers", "1") == 0
    student = bert_tf.load_model_directory(out)
    assert student.encoder.config.num_hidden_layers == 1 and student.model.projection is None
    assert student.task == bert_tf.load_model_directory(embedding["teacher"]).task
    history = student.metadata["training"]["history"]["soft_loss"]
    assert history[-1] < history[0], history


def test_what_does_not_fit_an_embedding_teacher_is_refused_in_one_line(embedding, tmp_path, capsys):
    labelled = write_sentiment_tsv(tmp_path / "sst2.tsv", 8, seed=0)
    cases = [
        (["--train", str(labelled)], f"{labelled} has a label column, as classification files have"),
        (["--hidden-weight", "1"], ("--hidden-weight and --attention-weight match the layers of classification, NER "
                                    "and SQuAD students, not embed ones")),
        (["--unlabeled", str(embedding["sentences"])], "unlabeled and augmented text teach classification and NER"),
    ]
    for arguments, message in cases:
        assert distill(embedding, tmp_path / "bad", "--student", "teacher", "--student-layers", "1", *arguments) == 2
        error = capsys.readouterr().err.strip()
        assert message in error and len(error.splitlines()) == 1, error


@pytest.mark.slow  # 40 s: a run of its own; the warning's logic is finetune's (tests/test_cli_distill.py)
def test_a_student_larger_than_its_teacher_is_warned_about(embedding, tmp_path, caplog):
    config = tmp_path / "wide.json"
    bert_tf.BertConfig(vocab_size=len(VOCAB), hidden_size=32, num_hidden_layers=4, num_attention_heads=2,
                       intermediate_size=64, max_position_embeddings=32).write_json(config)
    assert main(["distill", "--teacher", str(embedding["teacher"]), "--train", str(embedding["sentences"]),
                 "--out", str(tmp_path / "wide"), "--epochs", "1", "--student", str(config)]) == 0
    warnings = [record.getMessage() for record in caplog.records if record.levelname == "WARNING"]
    assert any("is larger than its teacher" in warning for warning in warnings), warnings
