"""`bert-tf finetune`: fine-tune a checkpoint (or a random start) on classification, NER, SQuAD or sentence-embedding
data."""

import argparse
import re
import sys

from bert_tf_cli.argument_checks import did_you_mean, existing_file, existing_path, preset_or_path
from bert_tf_cli.config_defaults import built_in_finetune_tasks, dataclass_defaults
from bert_tf_cli.data_checks import check_task_file

# The registry's built-in fine-tuning tasks, read from its source: the registry imports TensorFlow.
TASKS = built_in_finetune_tasks()

# The optional training settings `finetune` and `distill` share with `pretrain` (`add_training_arguments`): argparse
# dest → FinetuneConfig field. --xla (jit_compile) is always passed.
HARDWARE_FIELDS = {"gradient_accumulation_steps": "gradient_accumulation_steps", "strategy": "strategy",
                   "mixed_precision": "mixed_precision"}
# CLI flag (argparse dest) → FinetuneConfig field, for the optional settings: passed only when given, so that
# FinetuneConfig's defaults apply (building the parser imports no TensorFlow).
_OPTIONAL_FIELDS = {**HARDWARE_FIELDS,
    "dev": "dev_file", "vocab": "vocab_file", "seq_length": "seq_length", "batch_size": "batch_size",
    "epochs": "epochs", "learning_rate": "learning_rate", "warmup_proportion": "warmup_proportion",
    "weight_decay": "weight_decay", "dropout": "dropout", "seed": "seed",
    "early_stopping": "early_stopping_patience", "max_train_examples": "max_train_examples",
    "label_names": "label_names",
}
# The FinetuneConfig fields of the flags that are always passed, as its errors name them.
_FIELD_FLAGS = {"train_file": "--train", "output_dir": "--out", "init": "--init", "jit_compile": "--xla"}


def register(commands) -> None:
    default = dataclass_defaults("bert_tf/training/finetune_config.py", "FinetuneConfig")
    parser = commands.add_parser(
        "finetune", help="fine-tune on classification (CSV/TSV/JSONL), NER (CoNLL), SQuAD or sentence-embedding data",
        description="Fine-tune BERT with Keras fit: AdamW, 10% warm-up then linear decay, the dev file scored after "
                    "every epoch, the best epoch kept. --init is a checkpoint (bert-tf, Google, Hugging Face, "
                    "KerasHub; e.g. `bert-tf pretrain`'s OUT/model) or a random start from a preset name or "
                    "bert_config.json (then --vocab is required). The output directory is written at the end only.")
    parser.add_argument("--task", required=True, metavar="TASK",
                        help="the task's name in bert_tf.tasks.registry (e.g. classify, ner, squad, embed); "
                             "`bert-tf finetune --task TASK --help` lists its own options")
    parser.add_argument("--train", required=True, type=existing_file, help="training file")
    parser.add_argument("--dev", type=existing_path, help="dev file (embed: or a BEIR folder), scored after every epoch")
    parser.add_argument("--init", required=True, type=preset_or_path,
                        help=f"checkpoint, preset name ({preset_names()}) or bert_config.json")
    parser.add_argument("--vocab", type=existing_file,
                        help="vocab.txt (required for a random start; default: the checkpoint's)")
    parser.add_argument("--out", required=True, help="output model directory")
    parser.add_argument("--overwrite", action="store_true", help="replace a non-empty output directory")
    parser.add_argument("--cased", action="store_true", default=None, help="the vocabulary is cased")
    parser.add_argument("--uncased", dest="cased", action="store_false", default=None, help="the vocabulary is uncased")
    add_training_arguments(parser, default)
    parser.add_argument("--seq-length", type=int, help="tokens per example (default: 128; squad 384)")
    parser.add_argument("--label-names", type=_names, metavar="NAME,NAME,...",
                        help="the labels' names in id order, e.g. negative,positive: the data's labels are these "
                             "names or their ids 0, 1, ... (default: the labels as written)")
    parser.set_defaults(run=run)


def add_task_arguments(parser, argv: list[str]) -> None:
    """The own options of the task `argv` names (`--task TASK`), from its settings class: a parser error names the
    registered tasks when there is no such task. Without --task (`--help` alone) nothing is imported."""
    task = next((argv[index + 1] for index, arg in enumerate(argv[:-1]) if arg == "--task"), None)
    task = next((arg.split("=", 1)[1] for arg in argv if arg.startswith("--task=")), task)
    if task is None:
        return
    # The built-in names, or the registry's when it is loaded already (a task registered in Python): a wrong name is
    # answered without importing TensorFlow.
    known = sys.modules["bert_tf.tasks.registry"].finetuned_tasks() if "bert_tf.tasks.registry" in sys.modules \
        else TASKS
    if task not in known:
        parser.error(f"unknown task {task!r}; use one of {', '.join(known)}{did_you_mean(task, known)}")
    if task in TASKS:
        _check_data_files(parser, task, argv)
    from bert_tf.tasks.registry import task_named

    _add_task_group(parser, task_named(task).settings_class, task)


def _check_data_files(parser, task: str, argv: list[str]) -> None:
    """A parser error when --train or --dev cannot be `task`'s data (`check_task_file`), before TensorFlow loads."""
    files = argparse.ArgumentParser(add_help=False)
    for flag in ("--train", "--dev", "--text-column", "--text-pair-column", "--label-column"):
        files.add_argument(flag)
    given, _ = files.parse_known_args(argv)
    for flag, path in (("--train", given.train), ("--dev", given.dev)):
        if path:
            try:
                check_task_file(task, path, flag, given.text_column, given.text_pair_column, given.label_column)
            except ValueError as error:
                parser.error(str(error))


def task_options_help() -> str:
    """Each fine-tuning task's own options, as `--task TASK --help` lists them (for the CLI reference)."""
    from bert_tf.tasks.registry import finetuned_tasks, task_named

    parts = []
    for task in finetuned_tasks():
        settings = task_named(task).settings_class
        if settings.flags():
            parser = argparse.ArgumentParser(usage=argparse.SUPPRESS, add_help=False)
            _add_task_group(parser, settings, task)
            parts.append(parser.format_help().strip())
    return "\n\n".join(parts)


def _add_task_group(parser, settings, task: str) -> None:
    settings.add_arguments(parser.add_argument_group(f"the {task} task's own settings (--task {task})",
                                                     settings.description or None))


def preset_names() -> str:
    """The presets a random start names, for a help text (read from bert_tf/config.py: the help imports no TensorFlow).

    Example:
        >>> preset_names()[:22]
        'tiny, mini, small, med'
    """
    constants = dataclass_defaults("bert_tf/config.py", "BertConfig")
    layers, hidden = constants["_SMALL_BERT_LAYERS"], constants["_SMALL_BERT_HIDDEN"]
    return (f"{', '.join(constants['PRESET_ALIASES'])}, or bert_L<layers>_H<hidden> of layers "
            f"{', '.join(map(str, layers))} and hidden {', '.join(map(str, hidden))}: bert_L{layers[0]}_H{hidden[0]} … "
            f"bert_L{layers[-1]}_H{hidden[-1]}, and bert_L24_H1024")


def _names(text: str) -> tuple[str, ...]:
    return tuple(name.strip() for name in text.split(","))


def add_training_arguments(parser, default: dict) -> None:
    """The optimization and run options `finetune` and `distill` share (`default`: FinetuneConfig's defaults)."""
    parser.add_argument("--epochs", type=int, help=f"(default: {default['epochs']})")
    parser.add_argument("--batch-size", type=int, help=f"(default: {default['batch_size']})")
    parser.add_argument("--learning-rate", type=float,
                        help=f"peak learning rate (default: {default['BASE_LEARNING_RATE']:g} for BERT-base and larger; "
                             f"smaller models {default['SMALL_MODEL_LEARNING_RATE']:g} from trained weights, from random "
                             f"ones {default['RANDOM_START_LEARNING_RATE']:g} (hidden size 256 up) or "
                             f"{default['NARROW_RANDOM_START_LEARNING_RATE']:g})")
    parser.add_argument("--warmup-proportion", type=float,
                        help=f"share of the steps spent warming up (default: {default['warmup_proportion']})")
    parser.add_argument("--weight-decay", type=float,
                        help=f"AdamW's weight decay, not on biases and LayerNorms (default: {default['weight_decay']})")
    parser.add_argument("--dropout", type=float, help=f"dropout of the head (default: {default['dropout']})")
    parser.add_argument("--seed", type=int, help=f"head weights, data order, dropout (default: {default['seed']})")
    parser.add_argument("--early-stopping", type=int, metavar="PATIENCE",
                        help="stop after PATIENCE epochs without a better dev score")
    parser.add_argument("--last-epoch", action="store_true", help="keep the last epoch, not the best on dev")
    parser.add_argument("--no-bucketing", action="store_true", help="do not group examples of similar length")
    parser.add_argument("--max-train-examples", type=int, help="train on a seeded random subset")
    parser.add_argument("--gradient-accumulation-steps", type=int, metavar="K",
                        help="average the gradients of K batches per optimizer update (default: 1)")
    parser.add_argument("--strategy", choices=["default", "mirrored", "multi_worker"],
                        help="default: one device; mirrored: all local GPUs (else CPUs); multi_worker: the hosts in "
                             "TF_CONFIG, only the chief writes --out. --batch-size is the global batch, split over "
                             "the replicas")
    parser.add_argument("--mixed-precision", choices=["mixed_float16", "mixed_bfloat16"],
                        help="mixed_float16: GPUs, with loss scaling; mixed_bfloat16: CPUs with bfloat16 units")
    parser.add_argument("--xla", action="store_true",
                        help="compile the training step with XLA (not for several replicas on one host's CPUs)")


def config_from_args(args):
    from bert_tf.tasks.registry import task_named

    settings = task_named(args.task).settings_class
    return finetune_config(
        {**_FIELD_FLAGS, **flags_of(_OPTIONAL_FIELDS), **settings.flags()},
        task=args.task,
        train_file=args.train,
        output_dir=args.out,
        init=args.init,
        lower_case=None if args.cased is None else not args.cased,
        select_best=not args.last_epoch,
        bucketing=not args.no_bucketing,
        overwrite=args.overwrite,
        jit_compile=args.xla,
        settings=settings.from_arguments(args),
        **{field: getattr(args, flag) for flag, field in _OPTIONAL_FIELDS.items() if getattr(args, flag) is not None},
    )


def flags_of(optional_fields: dict[str, str]) -> dict[str, str]:
    """{FinetuneConfig field: its flag} of a command's {argparse dest: field}."""
    return {field: "--" + dest.replace("_", "-") for dest, field in optional_fields.items()}


def finetune_config(flags: dict[str, str], **settings):
    """`FinetuneConfig(**settings)`; its errors name the command's flags (`flags`: {field: flag}), not its fields:
    "student_layers goes with init='teacher'" is "--student-layers goes with --student teacher".

    Example:
        >>> finetune_config({"init": "--student", "temperature": "--temperature"}, task="classify", train_file="t",
        ...                 output_dir="o", init="tiny", teacher="t", temperature=0.0)
        Traceback (most recent call last):
        ...
        ValueError: --temperature must be > 0, got 0.0.
    """
    from bert_tf.training.finetune_config import FinetuneConfig

    try:
        return FinetuneConfig(**settings)
    except ValueError as error:
        message = str(error).removeprefix("FinetuneConfig: ")
        for field, flag in flags.items():
            message = re.sub(rf"\b{field}='([^']*)'", rf"{flag} \1", message)
            message = re.sub(rf"\b{field}\b", flag, message)
        raise ValueError(message) from None


def run(args) -> int:
    config = config_from_args(args)
    result = train(config)
    if isinstance(result, int):
        return result
    print_result(config, result)
    if result.stopped is not None:
        print(f"{result.stopped}\nSaved the best epoch scored so far (epoch {result.best_epoch}) to "
              f"{result.output_dir}. To go on, fine-tune it further (--init {result.output_dir} --out NEW), or run the "
              "same command again to train from the start.")
        return 128 + result.stopped.stopped_by
    return 0


def train(config):
    """`bert_tf.training.finetune.finetune(config)` for `finetune` and `distill`; when SIGTERM or SIGINT stopped the run (on
    any worker of a multi-worker run), it says how to go on and returns the exit status instead (128 + the signal)."""
    from bert_tf.training.distributed_fit import TrainingStopped
    from bert_tf.training.finetune import finetune

    try:
        return finetune(config)
    except TrainingStopped as stopped:
        print(f"{stopped}\nNothing was saved (no epoch was scored on a --dev file to keep): run the same command "
              "again (on every worker) to train from the start.")
        return 128 + stopped.stopped_by


def print_result(config, result) -> None:
    """What a finetune or distill run did: epochs, the dev scores kept, the model directory."""
    from bert_tf.tasks.registry import task_named

    print(f"Trained {result.epochs_run} epoch{'s' * (result.epochs_run != 1)} on {result.train_examples:,} examples "
          f"in {result.train_seconds:.0f} s.")
    if result.metrics:
        print(f"Dev scores (epoch {result.best_epoch}):\n{task_named(config.task).format_scores(result.metrics)}")
    print(f"Model: {result.output_dir or 'written by the chief worker'}")
