"""`bert-tf` starts light and quiet: `--help` imports no TensorFlow, `--version` answers, and commands print none
of TensorFlow's native log lines unless `-v` is given (the real `bert-tf` script, in a subprocess)."""

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

import bert_tf
from bert_tf_cli import COMMAND_MODULES, main
from tiny_exports import tiny_encoder, write_vocab

BERT_TF = Path(sys.executable).parent / "bert-tf"
NATIVE_LOG_MARKERS = ("cuInit", "oneDNN", "cpu_feature_guard", "absl::InitializeLog", "I0000", "E0000", "W0000")


def test_help_imports_no_tensorflow():
    commands = [["--help"]] + [[name.replace("_", "-"), "--help"] for name in COMMAND_MODULES]
    script = (f"import sys\nfrom bert_tf_cli import main\nfor argv in {commands!r}:\n"
              "    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
              "print(sorted(m for m in ('tensorflow', 'keras', 'bert_tf', 'pipelines') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert result.stdout.splitlines()[-1] == "[]", result.stderr


def test_finetune_help_shows_the_defaults_finetune_config_has(capsys):
    from bert_tf.training.finetune_config import (BASE_LEARNING_RATE, NARROW_RANDOM_START_LEARNING_RATE,
                                           RANDOM_START_LEARNING_RATE, SMALL_MODEL_LEARNING_RATE, FinetuneConfig)

    with pytest.raises(SystemExit):
        main(["finetune", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    defaults = FinetuneConfig(task="classify", train_file="t", output_dir="o", init="i")
    for flag, value in (("--epochs", defaults.epochs), ("--batch-size", defaults.batch_size),
                        ("--learning-rate", f"{BASE_LEARNING_RATE:g} for BERT-base and larger; smaller models "
                                            f"{SMALL_MODEL_LEARNING_RATE:g} from trained weights, from random ones "
                                            f"{RANDOM_START_LEARNING_RATE:g} (hidden size 256 up) or "
                                            f"{NARROW_RANDOM_START_LEARNING_RATE:g}"),
                        ("--warmup-proportion", defaults.warmup_proportion), ("--weight-decay", defaults.weight_decay),
                        ("--dropout", defaults.dropout), ("--seed", defaults.seed)):
        assert re.search(rf"{flag} \S+ [^-]*\(default: {re.escape(str(value))}[;)]", help_text), flag


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out == f"bert-tf {bert_tf.__version__}\n"


def test_export_help_says_when_name_is_required(capsys):
    with pytest.raises(SystemExit):
        main(["export", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "--name NAME SavedModel: the model's name, its directory under --out (required unless --format tflite)" \
        in help_text


def test_the_student_and_init_helps_list_the_presets(capsys):
    for command in ("distill", "finetune"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        help_text = " ".join(capsys.readouterr().out.split())
        assert all(name in help_text for name in bert_tf.BertConfig.preset_names()
                   if not name.startswith("bert_L") or name in ("bert_L2_H128", "bert_L12_H768", "bert_L24_H1024"))
        assert "bert_L2_H128 … bert_L12_H768" in help_text or "L 2, 4, 6, 8, 10, 12" in help_text, help_text


@pytest.fixture(scope="module")
def classifier_dir(tmp_path_factory):
    base = tmp_path_factory.mktemp("quiet")
    model = bert_tf.BertClassifier(tiny_encoder(), num_classes=2, label_names=["neg", "pos"])
    return bert_tf.save_pretrained(model, base / "classifier", vocab_file=write_vocab(base), seq_length=16)


def bert_tf_command(*args):
    env = {key: value for key, value in os.environ.items() if key != "TF_CPP_MIN_LOG_LEVEL"}
    return subprocess.run([str(BERT_TF), *map(str, args)], capture_output=True, text=True, env=env, timeout=300)


@pytest.mark.slow
def test_commands_are_quiet_unless_verbose(classifier_dir):
    result = bert_tf_command("predict", "--model", classifier_dir, "the film was great")
    assert result.returncode == 0, result.stderr
    assert result.stdout.endswith("\tthe film was great\n")
    noisy = [line for line in result.stderr.splitlines() if any(marker in line for marker in NATIVE_LOG_MARKERS)]
    assert noisy == [], result.stderr

    result = bert_tf_command("-v", "predict", "--model", classifier_dir, "the film was great")
    assert result.returncode == 0, result.stderr
    assert re.search(r"^[IWE]\d{4} ", result.stderr, re.MULTILINE), result.stderr  # TensorFlow's own lines, as before


@pytest.mark.slow
def test_library_imports_are_quiet():
    """A user's `import bert_tf` (or of a client, or the TFLite runner), and TensorFlow's first op after it, print none
    of TensorFlow's native start-up lines; errors still show, and TF_CPP_MIN_LOG_LEVEL=0 keeps them all."""
    environment = {key: value for key, value in os.environ.items() if key != "TF_CPP_MIN_LOG_LEVEL"}
    for modules in ("serving.client.grpc_client, serving.tflite_runner", "bert_tf"):  # serving first: TF not yet in
        # TensorFlow's first op looks for GPUs: "failed call to cuInit: ... (303)" where there is none
        script = (f"import {modules}, sys, tensorflow; tensorflow.constant(1) + 1; "
                  "sys.stderr.write('a real error\\n')")
        result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=environment,
                                check=True)
        assert result.stderr == "a real error\n", modules
    result = subprocess.run([sys.executable, "-c", "import bert_tf"], capture_output=True, text=True,
                            env={**environment, "TF_CPP_MIN_LOG_LEVEL": "0"}, check=True)
    assert "I0000" in result.stderr or "absl::InitializeLog" in result.stderr


def test_bare_command_prints_the_help(capsys):
    assert main([]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: bert-tf") and "finetune" in out and "predict" in out


def test_bad_arguments_answer_before_tensorflow_loads(tmp_path):
    """Missing files, folders that hold no model, misspelt presets, tasks and commands, a column the file lacks and
    another task's data: one line each, with what fits, and TensorFlow never imported (in a fresh interpreter)."""
    (tmp_path / "empty").mkdir()
    (tmp_path / "train.csv").write_text("sentence,label\na fine film,1\n")
    (tmp_path / "train.conll").write_text("EU B-ORG\nrejects O\n\n")
    (tmp_path / "monitoring.config").write_text("prometheus_config { enable: true }\n")
    empty, csv_file, conll_file = tmp_path / "empty", tmp_path / "train.csv", tmp_path / "train.conll"
    finetune = ["finetune", "--init", "tiny", "--out", str(tmp_path / "out")]
    cases = [
        (["finetun"], "bert-tf: error: argument COMMAND: invalid choice: 'finetun'", "did you mean 'finetune'?"),
        ([*finetune, "--task", "clasify", "--train", csv_file], "unknown task 'clasify'",
         "did you mean 'classify'?"),
        ([*finetune, "--task", "classify", "--train", tmp_path / "missing.csv"], "bert-tf finetune: error: argument "
         "--train: no such file:", "missing.csv"),
        (["finetune", "--task", "classify", "--train", csv_file, "--init", "bert_bse", "--out", empty],
         "argument --init: no file, folder or preset 'bert_bse'", "did you mean 'base'?"),
        ([*finetune, "--task", "classify", "--train", csv_file, "--text-column", "sentense"],
         "has no column 'sentense' (--text-column)", "did you mean 'sentence'?"),
        ([*finetune, "--task", "classify", "--train", conll_file], "looks like CoNLL", "--task ner reads it"),
        ([*finetune, "--task", "ner", "--train", csv_file], "looks like a table", "--task classify reads it"),
        (["predict", "--model", empty, "text"], "bert-tf predict: error: argument --model:", "holds no model"),
        (["evaluate", "--model", empty, "--data", csv_file], "bert-tf evaluate: error: argument --model:",
         "holds no model"),
        (["embed", "--model", tmp_path / "nothing", "--out", tmp_path / "v.npy", "text"], "argument --model:",
         "no such model folder"),
        (["convert", "--from", empty, "--out", tmp_path / "x"], "argument --from:", "holds no model"),
        (["export", "--model", empty, "--out", tmp_path / "x", "--name", "m"], "argument --model:", "model.keras"),
        (["serve", "--model_base_path", tmp_path / "nothing"], "bert-tf serve: error: argument --model_base_path:",
         "no such file or folder"),
        (["serve", "--model_base_path", empty, "--monitoring_config_file", tmp_path / "missing.config"],
         "bert-tf serve: error: argument --monitoring_config_file:", "no such file"),
    ]
    script = ("import contextlib, io, json, sys\nfrom bert_tf_cli import main\nanswers = []\n"
              f"for argv in {[[str(arg) for arg in argv] for argv, *_ in cases]!r}:\n"
              "    err = io.StringIO()\n"
              "    with contextlib.redirect_stderr(err):\n"
              "        try:\n            code = main(argv)\n"
              "        except SystemExit as exit:\n            code = exit.code\n"
              "    answers.append([code, err.getvalue()])\n"
              "print(json.dumps([answers, 'tensorflow' in sys.modules]))")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120)
    answers, imported_tensorflow = json.loads(result.stdout.splitlines()[-1])
    for (argv, *expected), (code, err) in zip(cases, answers):
        assert code == 2, (argv, err)
        assert all(part in err for part in expected), (argv, err)
        assert "Traceback" not in err and len(err.strip().splitlines()[-1]) > 0, (argv, err)
    assert not imported_tensorflow


def test_a_bad_argument_answers_within_seconds(tmp_path):
    """The real script, start-up included: well under the 7-18 s of importing TensorFlow first (3 s: generous for a
    loaded machine)."""
    started = time.perf_counter()
    result = bert_tf_command("finetune", "--task", "classify", "--train", tmp_path / "missing.csv", "--init", "tiny",
                             "--out", tmp_path / "out")
    elapsed = time.perf_counter() - started
    assert result.returncode == 2 and "argument --train: no such file" in result.stderr
    assert elapsed < 3, f"{elapsed:.1f} s"


def command_parsers() -> dict:
    import argparse

    from bert_tf_cli import build_parser

    [commands] = [action for action in build_parser()._actions if isinstance(action, argparse._SubParsersAction)]
    return commands.choices


def test_every_option_of_every_command_has_help():
    missing = [(name, action.option_strings or action.dest) for name, parser in command_parsers().items()
               for action in parser._actions if not action.help]
    assert missing == []


def test_one_name_for_one_thing_old_spellings_still_work_unshown(tmp_path):
    """--out (convert's --to), --input (embed's --in), --seq-length (--max-length of embed, fill-mask, attention)."""
    (tmp_path / "model.keras").touch()  # what the parsers look for in a model folder
    model = str(tmp_path)
    parsers = command_parsers()
    assert parsers["convert"].parse_args(["--from", model, "--to", "x"]).out == "x"
    assert parsers["embed"].parse_args(["--model", model, "--in", "-", "--out", "v.npy"]).input == "-"
    for command in ("embed", "fill-mask", "attention"):
        assert parsers[command].parse_args(["--model", model, "--max-length", "8", "--out", "v", "t"]
                                           if command == "embed" else ["--model", model, "--max-length", "8", "t"]
                                           ).seq_length == 8
    for command, new, old in (("convert", "--out", "--to"), ("embed", "--input", "--in"),
                              ("embed", "--seq-length", "--max-length"), ("fill-mask", "--seq-length", "--max-length"),
                              ("attention", "--seq-length", "--max-length")):
        help_text = parsers[command].format_help()
        assert new in help_text and not re.search(rf"{old}\b(?!-)", help_text), (command, old)
    for command in ("fill-mask", "attention"):
        model_help = " ".join(parsers[command].format_help().split())
        assert "(embed only)" not in model_help and "SavedModel" not in model_help, command


@pytest.mark.slow
def test_a_script_that_fits_and_predicts_prints_no_tensorflow_info_lines():
    """`import bert_tf`, then a first fit and predict (XLA compiles: "I0000 ... XLA service ... initialized",
    "Compiled cluster using XLA!"): no TensorFlow info line on stderr, unless TF_CPP_MIN_LOG_LEVEL=0 asks for them."""
    script = ("import bert_tf, numpy as np\n"
              "encoder = bert_tf.BertModel(bert_tf.BertConfig(vocab_size=16, hidden_size=16, num_hidden_layers=1, "
              "num_attention_heads=2, intermediate_size=32, max_position_embeddings=16))\n"
              "model = bert_tf.BertClassifier(encoder, num_classes=2)\n"
              "ids = np.ones((4, 8), dtype='int32')\n"
              "x = {'input_word_ids': ids, 'input_mask': ids, 'input_type_ids': 0 * ids}\n"
              "model.compile(optimizer='adam', loss='sparse_categorical_crossentropy')\n"
              "model.fit(x, np.zeros(4, dtype='int32'), epochs=1, verbose=0)\n"
              "model.predict(x, verbose=0)\n")
    environment = {key: value for key, value in os.environ.items() if key != "TF_CPP_MIN_LOG_LEVEL"}
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=environment,
                            check=True, timeout=600)
    assert not re.search(r"^I\d{4} ", result.stderr, re.MULTILINE), result.stderr
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env={**environment, "TF_CPP_MIN_LOG_LEVEL": "0"}, check=True, timeout=600)
    assert "Compiled cluster using XLA" in result.stderr  # the lines are there to be hidden
