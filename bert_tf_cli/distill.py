"""`bert-tf distill`: a smaller student learns a fine-tuned teacher's task from its soft targets (an embedding
teacher's: its vectors) and the labels."""

from bert_tf_cli.argument_checks import existing_file, existing_path, model_path, student, task_model_path
from bert_tf_cli.config_defaults import dataclass_defaults
from bert_tf_cli.finetune import (
    HARDWARE_FIELDS,
    add_training_arguments,
    finetune_config,
    flags_of,
    preset_names,
    print_result,
    train,
)

# CLI flag (argparse dest) → FinetuneConfig field, passed only when given (FinetuneConfig's defaults apply).
_OPTIONAL_FIELDS = {
    **HARDWARE_FIELDS, "dev": "dev_file", "batch_size": "batch_size", "epochs": "epochs", "learning_rate": "learning_rate",
    "warmup_proportion": "warmup_proportion", "weight_decay": "weight_decay", "dropout": "dropout", "seed": "seed",
    "early_stopping": "early_stopping_patience", "max_train_examples": "max_train_examples",
    "student_layers": "student_layers", "temperature": "temperature", "soft_weight": "soft_weight",
    "hidden_weight": "hidden_weight", "attention_weight": "attention_weight", "layer_map": "layer_map",
    "augment": "augment_copies", "augment_with": "augment_with",
}
# The FinetuneConfig fields of the flags that are always passed, as its errors name them.
_FIELD_FLAGS = {"train_file": "--train", "output_dir": "--out", "init": "--student", "unlabeled_files": "--unlabeled",
                "jit_compile": "--xla"}


def register(commands) -> None:
    default = dataclass_defaults("bert_tf/training/finetune_config.py", "FinetuneConfig")
    parser = commands.add_parser(
        "distill", help="distil a fine-tuned model into a smaller student (then export --quantize int8)",
        description="Train a student on the teacher's task (its labels, seq_length and settings) from the labels and "
                    "the teacher's soft targets at --temperature, mixed by --soft-weight; Keras fit as in finetune, "
                    "the dev file scored after every epoch. --student is a checkpoint with the teacher's vocabulary, "
                    "a preset name or bert_config.json (a random start), or `teacher`: --student-layers of the "
                    "teacher's own layers, every k-th (DistilBERT). A sentence-embedding teacher's student learns "
                    "its vectors (the squared distance to them is the soft loss, without temperature; a narrower "
                    "student keeps a projection to the teacher's size), from a file of sentences, a line each, as "
                    "well as from pairs. The output is an ordinary model directory.")
    parser.add_argument("--teacher", required=True, type=task_model_path, help="fine-tuned model directory (bert-tf finetune's --out)")
    parser.add_argument("--train", required=True, type=existing_file,
                        help="training file, in the teacher's task's format (an embedding teacher's: also sentences)")
    parser.add_argument("--dev", type=existing_path, help="dev file, scored after every epoch")
    parser.add_argument("--student", required=True, type=student,
                        help=f"checkpoint, preset name ({preset_names()}), bert_config.json, or `teacher`")
    parser.add_argument("--student-layers", type=int, metavar="N", help="with --student teacher: how many layers")
    parser.add_argument("--out", required=True, help="output model directory (the student)")
    parser.add_argument("--overwrite", action="store_true", help="replace a non-empty output directory")
    parser.add_argument("--unlabeled", nargs="+", type=existing_file, metavar="FILE", default=(),
                        help="text files, a sentence per line (pairs: tab-separated), that the teacher labels for the "
                             "student to learn from too (classification and NER)")
    parser.add_argument("--augment", type=int, metavar="N",
                        help="also learn from N copies of each training and unlabeled text with words replaced by a "
                             "masked-LM's guesses, labelled by the teacher (TinyBERT; classification and NER)")
    parser.add_argument("--augment-with", type=model_path, metavar="CHECKPOINT",
                        help="the pre-training checkpoint whose masked-LM head augments (default: the teacher's own)")
    parser.add_argument("--temperature", type=float,
                        help=f"softens both models' outputs (default: {default['temperature']})")
    parser.add_argument("--soft-weight", type=float,
                        help=f"share of the soft-target loss, the rest the labels' (default: {default['soft_weight']})")
    parser.add_argument("--hidden-weight", type=float,
                        help="weight of the loss between the student's hidden states (projected where narrower) and "
                             f"the teacher's, TinyBERT style (default: {default['hidden_weight']}: off)")
    parser.add_argument("--attention-weight", type=float,
                        help="weight of the KL between the teacher's and the student's attention (same head count; "
                             f"default: {default['attention_weight']}: off)")
    parser.add_argument("--layer-map", type=_layer_map, metavar="I,J,...",
                        help="the teacher layer (1-based) each student layer learns from (default: uniform, last to last)")
    add_training_arguments(parser, default)
    parser.set_defaults(run=run)


def _layer_map(text: str) -> tuple[int, ...]:
    import argparse

    try:
        return tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated layer numbers, e.g. 2,4, not {text!r}") from None


def config_from_args(args):
    from bert_tf.model_directory import read_task
    from bert_tf.training.finetune import teacher_directory

    return finetune_config(
        {**_FIELD_FLAGS, **flags_of(_OPTIONAL_FIELDS)},
        task=read_task(teacher_directory(args.teacher)), train_file=args.train, output_dir=args.out, init=args.student,
        teacher=args.teacher, unlabeled_files=tuple(args.unlabeled), select_best=not args.last_epoch, bucketing=not args.no_bucketing,
        overwrite=args.overwrite, jit_compile=args.xla,
        **{field: getattr(args, flag) for flag, field in _OPTIONAL_FIELDS.items() if getattr(args, flag) is not None},
    )


def run(args) -> int:
    from bert_tf.training.student_comparison import compare_with_teacher, comparison_table

    config = config_from_args(args)
    result = train(config)
    if isinstance(result, int):
        return result
    print_result(config, result)
    if result.output_dir is None:  # another worker than the chief: the chief compares
        return 0
    scored = f"scored on {config.dev_file}" if config.dev_file else "no --dev to score them on"
    print(f"\nThe student beside its teacher ({scored}; speed over a few batches):", flush=True)
    print(comparison_table(*compare_with_teacher(config, result.metrics), config.primary_metric()))
    return 0
