"""`bert-tf quickstart`: the whole BERT lifecycle on the built-in demo data, in a few minutes on a CPU.

1. learn a WordPiece vocabulary from the corpus;  2. pre-train a tiny BERT (MLM + NSP);
3. fine-tune a classifier with `model.fit` and evaluate it;  4. export a SavedModel, serve it
on 127.0.0.1 with the TF-Serving-compatible server and ask it over gRPC with raw text;
5. convert to TFLite with the tokenizer inside, run it, and compare with the SavedModel;
6. print a summary, and the commands that predict with, export and serve the classifier.
`--corpus`, `--train` and `--dev` take the user's own files instead.

The demo data (bert_tf_cli/demo_data) was written for this project: help-centre articles and
customer messages labelled hardware / software / billing.
"""

from __future__ import annotations

import dataclasses
import shlex
import shutil
import sys
import time
from pathlib import Path
from typing import Callable

DEMO_DATA = Path(__file__).resolve().parent / "demo_data"


@dataclasses.dataclass
class QuickstartConfig:
    """The quickstart's settings (defaults: the demo data, about 3 minutes on 2 CPU cores)."""

    out: str = "quickstart_output"  # every artefact goes here
    corpus: tuple[str, ...] = (str(DEMO_DATA / "corpus.txt"),)  # BERT text format: a sentence per line
    train: str = str(DEMO_DATA / "messages_train.tsv")  # columns text, label
    dev: str = str(DEMO_DATA / "messages_dev.tsv")
    vocab_size: int = 512  # the word pieces the demo texts hold at least twice (asking more warns that they hold fewer)
    seq_length: int = 64
    pretrain_steps: int = 1000
    pretrain_seconds: float = 120.0  # stops pre-training early on slow machines (the summary says so)
    finetune_epochs: int = 10
    finetune_learning_rate: float = 2e-4
    examples: tuple[str, ...] = (
        "The mobile app freezes when I open my schedule.",
        "I was charged twice for my plan this month.",
        "The power adapter of my router gets very hot.",
    )

    @classmethod
    def fast(cls, **changes) -> "QuickstartConfig":
        """A reduced run for tests: fewer steps, same stages."""
        return cls(**{"pretrain_steps": 30, "pretrain_seconds": 30.0, "finetune_epochs": 2, **changes})


@dataclasses.dataclass
class StageResult:
    name: str
    seconds: float
    metric: str  # the key figure, in words
    passed: bool


def _training_texts(config: QuickstartConfig, out: Path) -> Path:
    """The corpus plus the training texts, for vocabulary learning (labels left out)."""
    from bert_tf.tasks.registry import task_from_spec
    from bert_tf.tasks.spec import TaskSpec
    from bert_tf.text_files import utf8_lines

    path = out / "vocabulary_text.txt"
    lines = ["".join(utf8_lines(f)) for f in config.corpus]
    # Reading the file needs no tokenizer: the vocabulary is what this learns.
    examples = task_from_spec(TaskSpec(task="classify", seq_length=config.seq_length), tokenizer=None).read(
        config.train, fit_labels=True)
    lines += examples.texts + (examples.text_pairs or [])
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def learn_vocab(config: QuickstartConfig, out: Path, state: dict) -> str:
    from bert_tf.vocabulary import learn_vocabulary

    vocab_file = out / "vocab.txt"
    vocabulary = learn_vocabulary([_training_texts(config, out)], config.vocab_size, vocab_file, lower_case=True,
                                  min_count=2)
    state["vocab_file"] = str(vocab_file)
    return f"{len(vocabulary):,} WordPiece tokens"


def pretrain(config: QuickstartConfig, out: Path, state: dict) -> str:
    from bert_tf.training import PretrainingConfig, run_pretraining
    from pipelines.pretraining import pretraining_dataset_fn

    # Each quickstart starts over, as its fine-tuning overwrites: resuming an earlier quickstart's
    # checkpoints would train nothing (a finished run) or clash with this run's vocabulary.
    shutil.rmtree(out / "pretrain", ignore_errors=True)
    settings = PretrainingConfig(
        output_dir=str(out / "pretrain"), model="tiny", train_files=list(config.corpus),
        vocab_file=state["vocab_file"], seq_length=config.seq_length, max_predictions_per_seq=10,
        global_batch_size=16, num_train_steps=config.pretrain_steps,
        learning_rate=1e-3, checkpoint_every=max(config.pretrain_steps // 3, 1), log_every=10,
    )
    result = run_pretraining(settings, pretraining_dataset_fn(settings), max_seconds=config.pretrain_seconds)
    state["pretrained"] = str(out / "pretrain" / "model")
    steps = f"{result.step:,} steps"
    if result.step < config.pretrain_steps:
        steps = (f"{result.step:,} of {config.pretrain_steps:,} steps (the quickstart gives pre-training "
                 f"{config.pretrain_seconds:.0f} s; this machine is slower)")
    return (f"{steps}; MLM accuracy {result.metrics['mlm_accuracy']:.2f}, "
            f"NSP accuracy {result.metrics['nsp_accuracy']:.2f} (last batches)")


def finetune(config: QuickstartConfig, out: Path, state: dict) -> str:
    from bert_tf.training.finetune import finetune as run_finetune
    from bert_tf.training.finetune_config import FinetuneConfig

    result = run_finetune(FinetuneConfig(
        task="classify", train_file=config.train, dev_file=config.dev, init=state["pretrained"],
        output_dir=str(out / "classifier"), seq_length=config.seq_length, batch_size=16,
        epochs=config.finetune_epochs, learning_rate=config.finetune_learning_rate, overwrite=True,
    ))
    state["classifier"] = str(result.output_dir)
    state["dev_accuracy"] = result.metrics.get("accuracy")
    return f"dev accuracy {result.metrics['accuracy']:.2f}, macro-F1 {result.metrics['macro_f1']:.2f}"


def serve(config: QuickstartConfig, out: Path, state: dict) -> str:
    import numpy as np

    from serving.client.grpc_client import GrpcClient
    from serving.export.saved_model import export_saved_model
    from serving.server.model_server import ModelServer

    version_dir = export_saved_model(state["classifier"], out / "serving", "demo", version=_next_free_version(out))
    state["saved_model"] = str(version_dir)
    with ModelServer("demo", version_dir.parent, host="127.0.0.1", grpc_port=0, rest_port=0) as server:
        client = GrpcClient(f"127.0.0.1:{server.grpc_port}", model_name="demo")
        outputs = client.predict({"text": np.array(config.examples, dtype=object)})
    best = outputs["probabilities"].argmax(axis=1)
    labels = [_text(outputs["label_names"][row][index]) for row, index in enumerate(best)]
    for text, label, probability in zip(config.examples, labels, outputs["probabilities"].max(axis=1)):
        print(f"  gRPC  {text!r} → {label} ({probability:.2f})")
    state["served_probabilities"] = outputs["probabilities"]
    return f"{len(config.examples)} texts classified over gRPC on 127.0.0.1:{server.grpc_port}"


def tflite(config: QuickstartConfig, out: Path, state: dict) -> str:
    import numpy as np

    from serving.export.tflite import export_tflite
    from serving.tflite_runner import TfliteModel

    path = export_tflite(state["classifier"], out / "classifier.tflite", inputs="text")
    outputs = TfliteModel(path).predict_texts(list(config.examples))
    difference = float(np.abs(outputs["probabilities"] - state["served_probabilities"]).max())
    same = bool((outputs["probabilities"].argmax(1) == state["served_probabilities"].argmax(1)).all())
    if not same or difference > 1e-3:
        raise RuntimeError(f"TFLite disagrees with the SavedModel (max probability difference {difference:.2g}).")
    return f"{path.stat().st_size / 1e6:.1f} MB; same labels as the SavedModel (max difference {difference:.1e})"


STAGES: tuple[tuple[str, Callable], ...] = (
    ("Learn a WordPiece vocabulary", learn_vocab),
    ("Pre-train a tiny BERT (masked LM + next sentence)", pretrain),
    ("Fine-tune a classifier with model.fit", finetune),
    ("Export a SavedModel and serve it over gRPC", serve),
    ("Convert to TFLite with the tokenizer inside", tflite),
)


def run_quickstart(config: QuickstartConfig) -> list[StageResult]:
    """Runs the stages in order, stopping at the first failure; prints a summary table."""
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    state: dict = {}
    results = []
    for number, (name, stage) in enumerate(STAGES, start=1):
        print(f"\n== Stage {number}/{len(STAGES)}: {name} ==", flush=True)
        started = time.perf_counter()
        try:
            metric, passed = stage(config, out, state), True
        except Exception as error:  # reported in the summary, then the run stops
            metric, passed = f"FAILED: {type(error).__name__}: {error}", False
        results.append(StageResult(name, time.perf_counter() - started, metric, passed))
        print(f"   {'done' if passed else 'failed'} in {results[-1].seconds:.0f} s: {metric}", flush=True)
        if not passed:
            break
    print("\n== Summary ==")
    print(summary_table(results))
    print(f"\nArtefacts in {out.resolve()}: vocab.txt, pretrain/ (checkpoints, TensorBoard logs, model/), "
          "classifier/, serving/demo/<version>/ (SavedModel), classifier.tflite")
    if "classifier" in state:
        print(f"\nNext steps:\n{next_steps(config, Path(state['classifier']))}")
        if shutil.which("bert-tf") is None:  # e.g. run as .venv/bin/bert-tf by `make demo`
            where = Path(sys.executable).parent
            print(f"\n`bert-tf` is in {where}: run `source {where / 'activate'}` first, or {where / 'bert-tf'} ...")
    return results


def next_steps(config: QuickstartConfig, classifier: Path) -> str:
    """Commands that use the fine-tuned `classifier` directory: predict, export, serve, predict through the server.

    Example:
        >>> print(next_steps(QuickstartConfig(examples=("It crashes.",)), Path("out/classifier")))  # doctest: +ELLIPSIS
          bert-tf predict --model out/classifier 'It crashes.'
          bert-tf export --model out/classifier --out out/serving --name demo
        ...
    """
    serving = classifier.parent / "serving"
    example = shlex.quote(config.examples[0])
    commands = (
        f"bert-tf predict --model {shlex.quote(str(classifier))} {example}",
        f"bert-tf export --model {shlex.quote(str(classifier))} --out {shlex.quote(str(serving))} --name demo",
        f"bert-tf serve --model_name demo --model_base_path {shlex.quote(str(serving / 'demo'))}",
        f"bert-tf predict --server 127.0.0.1:8500 --model demo {example}   # in another terminal",
    )
    return "\n".join(f"  {command}" for command in commands)


def summary_table(results: list[StageResult]) -> str:
    rows = [("stage", "status", "time", "key result")]
    rows += [(r.name, "passed" if r.passed else "FAILED", f"{r.seconds:.0f} s", r.metric) for r in results]
    rows += [(s, "not run", "", "") for s, _ in STAGES[len(results):]]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = [" | ".join(cell.ljust(width) for cell, width in zip(row[:3], widths)) + " | " + row[3] for row in rows]
    lines.insert(1, "-+-".join("-" * width for width in widths) + "-+-" + "-" * 10)
    return "\n".join(lines)


def _next_free_version(out: Path) -> int:
    existing = [int(p.name) for p in (out / "serving" / "demo").glob("*") if p.name.isdigit()]
    return max(existing, default=0) + 1


def _text(value) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def register(commands) -> None:
    parser = commands.add_parser(
        "quickstart", help="run the whole BERT lifecycle on the built-in demo data",
        description=__doc__.split("\n\n")[0] + " Vocabulary → pre-training → fine-tuning → SavedModel served "
                    "over gRPC → TFLite, with a summary table at the end.")
    defaults = QuickstartConfig()
    parser.add_argument("--out", default=defaults.out, help=f"output directory (default: {defaults.out})")
    parser.add_argument("--corpus", nargs="+", help="your pre-training text (a sentence per line, blank line "
                                                    "between documents) instead of the demo corpus")
    parser.add_argument("--train", help="your labelled training file (CSV/TSV/JSONL with text and label columns)")
    parser.add_argument("--dev", help="your labelled development file")
    parser.add_argument("--fast", action="store_true", help="fewer training steps (a smoke test)")
    parser.set_defaults(run=run)


def run(args) -> int:
    changes = {"out": args.out}
    changes.update({name: value for name, value in (("train", args.train), ("dev", args.dev)) if value})
    if args.corpus:
        changes["corpus"] = tuple(args.corpus)
    if bool(args.train) != bool(args.dev):
        raise ValueError("give --train and --dev together (the dev file scores the fine-tuned classifier).")
    config = QuickstartConfig.fast(**changes) if args.fast else QuickstartConfig(**changes)
    results = run_quickstart(config)
    return 0 if all(r.passed for r in results) and len(results) == len(STAGES) else 1
