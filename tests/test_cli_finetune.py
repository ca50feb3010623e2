"""`bert-tf finetune`, `evaluate` and `predict` end to end, on a tiny model and tiny hand-made files."""

import json

import pytest

import bert_tf
from bert_tf_cli import main
from tiny_finetune_files import write_bert_config, write_conll, write_squad, write_vocab

MRPC_STYLE = ("\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
              '1\t1\t2\tmary lives in paris .\t"mary lives in paris\n'
              "0\t3\t4\tjohn works at acme .\tthe film was bad\n"
              '1\t5\t6\tthe plot is good\tthe plot is "very" good\n'
              "0\t7\t8\tit was awful\tjohn and mary\n")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("cli_finetune")
    write_vocab(directory)
    write_bert_config(directory)
    return directory


def finetune(workdir, task, train, *options):
    out = workdir / f"{task}_model"
    code = main(["finetune", "--task", task, "--train", str(train), "--dev", str(train), "--init",
                 str(workdir / "bert_config.json"), "--vocab", str(workdir / "vocab.txt"), "--out", str(out),
                 "--epochs", "1", "--batch-size", "8", "--learning-rate", "1e-3", "--seq-length", "32", *options])
    assert code == 0
    return out


@pytest.mark.slow
def test_classify_pairs_evaluate_and_predict(workdir, capsys):
    train = workdir / "pairs.tsv"
    train.write_text(MRPC_STYLE)
    model = finetune(workdir, "classify", train, "--label-names", "different, paraphrase")  # the ids 0 and 1
    assert "Dev scores (epoch 1):" in capsys.readouterr().out
    spec = bert_tf.load_model_directory(model).task
    assert spec.text_pair is True and spec.label_names == ("different", "paraphrase")

    assert main(["evaluate", "--model", str(model), "--data", str(train)]) == 0
    report = capsys.readouterr().out
    assert report.startswith("accuracy ") and "MCC" in report and "\ndifferent " in report and "\nparaphrase " in report
    # a file whose columns have other names: `label<TAB>content` ... named as finetune names them
    rows = [line.split("\t") for line in MRPC_STYLE.removeprefix("\ufeff").splitlines()[1:]]
    renamed = workdir / "renamed.tsv"
    renamed.write_text("label\tfirst\tsecond\n" + "".join(f"{row[0]}\t{row[3]}\t{row[4]}\n" for row in rows))
    assert main(["evaluate", "--model", str(model), "--data", str(renamed), "--text-column", "first",
                 "--text-pair-column", "second", "--label-column", "label"]) == 0
    assert capsys.readouterr().out == report

    assert main(["predict", "--model", str(model), "mary lives in paris", "it was bad", "--pair", "mary is in paris",
                 "--pair", "good", "--json"]) == 0
    results = json.loads(capsys.readouterr().out)
    assert len(results) == 2 and all(r["label"] in ("different", "paraphrase") for r in results)
    assert all(r["probability"] == pytest.approx(max(r["probabilities"].values())) for r in results)

    assert main(["predict", "--model", str(model), "mary lives in paris"]) == 2  # a pair model needs --pair
    assert "second text" in capsys.readouterr().err


def test_ner_evaluate_predict_and_a_malformed_file(workdir, capsys):
    train = write_conll(workdir / "train.txt", copies=2)
    model = finetune(workdir, "ner", train)
    capsys.readouterr()
    assert main(["evaluate", "--model", str(model), "--data", str(train)]) == 0
    report = capsys.readouterr().out
    assert report.startswith("entities: precision") and "PER" in report and "LOC" in report

    assert main(["predict", "--model", str(model), "mary lives in snowboarding paris", "john"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [[pair.rsplit("/", 1)[0] for pair in line.split()] for line in lines] == [
        ["mary", "lives", "in", "snowboarding", "paris"], ["john"]]

    bad = workdir / "bad.txt"
    bad.write_text("mary NNP B-PER\nlives\n")
    assert main(["evaluate", "--model", str(model), "--data", str(bad)]) == 2
    assert "bad.txt, line 2: expected 'word ... tag'" in capsys.readouterr().err


def test_squad_evaluate_predict_and_bad_answers(workdir, capsys):
    train = write_squad(workdir / "train.json", copies=2)
    model = finetune(workdir, "squad", train, "--max-query-length", "8", "--doc-stride", "8")
    capsys.readouterr()
    assert main(["evaluate", "--model", str(model), "--data", str(train), "--json"]) == 0
    assert set(json.loads(capsys.readouterr().out)) == {"exact_match", "f1"}

    context = "john lives in london and mary works at acme ."
    assert main(["predict", "--model", str(model), "--question", "who works at acme ?", "--context", context,
                 "--json"]) == 0
    (answer,) = json.loads(capsys.readouterr().out)
    assert answer["text"] == context[answer["start"]:answer["end"]]

    assert main(["predict", "--model", str(model), "a text"]) == 2
    assert "--question" in capsys.readouterr().err

    data = json.loads(train.read_text())
    data["data"][0]["paragraphs"][0]["qas"][0]["answers"][0]["answer_start"] = 1
    bad = workdir / "bad.json"
    bad.write_text(json.dumps(data))
    out = workdir / "never_written"
    assert main(["finetune", "--task", "squad", "--train", str(bad), "--init", str(workdir / "bert_config.json"),
                 "--vocab", str(workdir / "vocab.txt"), "--out", str(out), "--seq-length", "32",
                 "--max-query-length", "8"]) == 2
    assert "question 'q0-0-0': answer 'mary' does not match the context at character 1" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize("flag, value", [("--learning-rate", "nan"), ("--weight-decay", "inf"), ("--focal-gamma", "nan"),
                                         ("--null-score-threshold", "-inf"), ("--warmup-proportion", "nan")])
def test_numbers_that_are_not_finite_are_refused_naming_the_flag(workdir, capsys, flag, value):
    task = "squad" if flag == "--null-score-threshold" else "classify"
    train = workdir / ("train.json" if task == "squad" else "train.tsv")
    train.write_text('{"data": []}' if task == "squad" else "sentence\tlabel\na film\t1\n")
    assert main(["finetune", "--task", task, "--train", str(train), "--init", "tiny", "--out", str(workdir / "x"),
                 f"{flag}={value}", *(["--focal-loss"] if flag == "--focal-gamma" else [])]) == 2
    error = capsys.readouterr().err
    assert error == f"bert-tf finetune: error: {flag} must be a finite number, got {float(value)!r}.\n"
