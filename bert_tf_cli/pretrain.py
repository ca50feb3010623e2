"""`bert-tf pretrain`: masked-LM + next-sentence pre-training on text files, on one or many devices or hosts."""

import dataclasses

from bert_tf.training.pretraining import PretrainingConfig
from bert_tf.vocabulary import resolve_lower_case

# CLI flag → PretrainingConfig field, for the settings the command exposes beyond the required ones.
_OPTIONAL_FIELDS = ("seq_length", "max_predictions_per_seq", "num_warmup_steps", "learning_rate", "optimizer",
                    "strategy", "mixed_precision", "checkpoint_every", "log_every", "seed", "gradient_accumulation_steps")


def register(commands) -> None:
    defaults = {f.name: f.default for f in dataclasses.fields(PretrainingConfig)}
    parser = commands.add_parser(
        "pretrain", help="pre-train BERT (masked LM + next sentence) on text files",
        description="Pre-train with dynamic masking in tf.data. The model's vocabulary size and casing are "
                    "those of --vocab. Resumes from the newest checkpoint in --out. "
                    "--batch-size is the global batch, split over replicas. For several hosts, set TF_CONFIG on "
                    "each and pass --strategy multi_worker.")
    parser.add_argument("--corpus", nargs="+", required=True, help="files in BERT's text format (or .tfrecord)")
    parser.add_argument("--vocab", required=True, help="vocab.txt")
    parser.add_argument("--config", default="mini", help="preset name or bert_config.json (default: mini)")
    parser.add_argument("--out", required=True, help="output directory (checkpoints, logs, model)")
    parser.add_argument("--steps", type=int, required=True, help="optimizer updates")
    parser.add_argument("--batch-size", type=int, default=defaults["global_batch_size"], help="global batch size")
    parser.add_argument("--init", help="initial checkpoint (any format from_pretrained reads)")
    parser.add_argument("--cased", action="store_true", default=None, help="the vocabulary is cased")
    parser.add_argument("--uncased", dest="cased", action="store_false", default=None, help="the vocabulary is uncased")
    parser.add_argument("--whole-word-masking", action="store_true", help="mask all pieces of a word together")
    parser.add_argument("--xla", action="store_true", help="compile the training step with XLA")
    parser.add_argument("--max-seconds", type=float, help="stop (with a checkpoint) after this long")
    parser.add_argument("--seq-length", type=int, default=defaults["seq_length"])
    parser.add_argument("--max-predictions-per-seq", type=int, default=defaults["max_predictions_per_seq"])
    parser.add_argument("--num-warmup-steps", type=int, default=defaults["num_warmup_steps"])
    parser.add_argument("--learning-rate", type=float, default=defaults["learning_rate"])
    parser.add_argument("--optimizer", choices=["adamw", "lamb"], default=defaults["optimizer"])
    parser.add_argument("--strategy", choices=["default", "mirrored", "multi_worker"], default=defaults["strategy"])
    parser.add_argument("--mixed-precision", choices=["mixed_float16", "mixed_bfloat16"])
    parser.add_argument("--checkpoint-every", type=int, default=defaults["checkpoint_every"])
    parser.add_argument("--log-every", type=int, default=defaults["log_every"])
    parser.add_argument("--seed", type=int, default=defaults["seed"])
    parser.add_argument("--gradient-accumulation-steps", type=int, default=defaults["gradient_accumulation_steps"])
    parser.set_defaults(run=run)


def config_from_args(args) -> PretrainingConfig:
    return PretrainingConfig(
        output_dir=args.out,
        model=args.config,
        init_checkpoint=args.init,
        train_files=list(args.corpus),
        vocab_file=args.vocab,
        lower_case=resolve_lower_case(args.vocab, None if args.cased is None else not args.cased,
                                      flag_names=("--cased", "--uncased")),
        whole_word_masking=args.whole_word_masking,
        global_batch_size=args.batch_size,
        num_train_steps=args.steps,
        jit_compile=args.xla,
        **{name: getattr(args, name) for name in _OPTIONAL_FIELDS},
    )


def run(args) -> None:
    from bert_tf.training import run_pretraining
    from pipelines.pretraining import pretraining_dataset_fn

    config = config_from_args(args)
    result = run_pretraining(config, pretraining_dataset_fn(config), max_seconds=args.max_seconds)
    summary = ", ".join(f"{k} {v:.4g}" for k, v in result.metrics.items())
    print(f"Trained to step {result.step}: {summary}\nModel: {config.output_dir}/model  Checkpoint: {result.checkpoint}")
