"""`bert-tf` starts light and quiet: `--help` imports no TensorFlow, `--version` answers, and commands print none
of TensorFlow's native log lines unless `-v` is given (the real `bert-tf` script, in a subprocess)."""

import os
import re
import subprocess
import sys
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


def test_commands_are_quiet_unless_verbose(classifier_dir):
    result = bert_tf_command("predict", "--model", classifier_dir, "the film was great")
    assert result.returncode == 0, result.stderr
    assert result.stdout.endswith("\tthe film was great\n")
    noisy = [line for line in result.stderr.splitlines() if any(marker in line for marker in NATIVE_LOG_MARKERS)]
    assert noisy == [], result.stderr

    result = bert_tf_command("-v", "predict", "--model", classifier_dir, "the film was great")
    assert result.returncode == 0, result.stderr
    assert re.search(r"^[IWE]\d{4} ", result.stderr, re.MULTILINE), result.stderr  # TensorFlow's own lines, as before


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
