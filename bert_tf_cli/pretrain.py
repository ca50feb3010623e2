"""`bert-tf pretrain`: masked-LM + next-sentence pre-training on text files, on one or many devices or hosts."""

from bert_tf_cli.argument_checks import existing_file, model_path, preset_or_path
from bert_tf_cli.config_defaults import dataclass_defaults

# CLI flag → PretrainingConfig field, for the settings the command exposes beyond the required ones: passed only
# when given, so that PretrainingConfig's defaults apply (building the parser imports no TensorFlow).
_OPTIONAL_FIELDS = ("global_batch_size", "seq_length", "max_predictions_per_seq", "num_warmup_steps", "learning_rate",
                    "optimizer", "strategy", "mixed_precision", "checkpoint_every", "checkpoint_minutes", "log_every", "seed",
                    "gradient_accumulation_steps")


def register(commands) -> None:
    default = dataclass_defaults("bert_tf/training/pretraining.py", "PretrainingConfig")
    parser = commands.add_parser(
        "pretrain", help="pre-train BERT (masked LM + next sentence) on text files",
        description="Pre-train with dynamic masking in tf.data. The model's vocabulary size and casing are "
                    "those of --vocab. Checkpoints every tenth of --steps or 5 minutes, whichever comes first, and on "
                    "SIGTERM or Ctrl-C, which then stops; run the same command again to resume from the newest "
                    "intact checkpoint in --out. "
                    "--batch-size is the global batch, split over replicas. For several hosts, set TF_CONFIG on "
                    "each and pass --strategy multi_worker.")
    parser.add_argument("--corpus", nargs="+", required=True, help="files in BERT's text format (or .tfrecord)")
    parser.add_argument("--vocab", required=True, type=existing_file, help="vocab.txt")
    parser.add_argument("--config", default="mini", type=preset_or_path, help="preset name or bert_config.json (default: mini)")
    parser.add_argument("--out", required=True, help="output directory (checkpoints, logs, model)")
    parser.add_argument("--steps", type=int, required=True, help="optimizer updates")
    parser.add_argument("--batch-size", type=int, dest="global_batch_size", metavar="BATCH_SIZE",
                        help="global batch size (default: 32)")
    parser.add_argument("--init", type=model_path, help="initial checkpoint (any format from_pretrained reads)")
    parser.add_argument("--cased", action="store_true", default=None, help="the vocabulary is cased")
    parser.add_argument("--uncased", dest="cased", action="store_false", default=None, help="the vocabulary is uncased")
    parser.add_argument("--whole-word-masking", action="store_true", help="mask all pieces of a word together")
    parser.add_argument("--xla", action="store_true", help="compile the training step with XLA")
    parser.add_argument("--max-seconds", type=float, help="stop (with a checkpoint) after this long")
    parser.add_argument("--seq-length", type=int,
                        help=f"tokens per example, [CLS] and [SEP]s included (default: {default['seq_length']})")
    parser.add_argument("--max-predictions-per-seq", type=int,
                        help=f"masked positions per example (default: {default['max_predictions_per_seq']}; BERT: 20 "
                             "for 128 tokens, 80 for 512)")
    parser.add_argument("--num-warmup-steps", type=int,
                        help="updates of linear learning-rate warm-up, below --steps (default: a tenth of --steps, "
                             "at most 100)")
    parser.add_argument("--learning-rate", type=float, help=f"peak learning rate (default: {default['learning_rate']:g})")
    parser.add_argument("--optimizer", choices=["adamw", "lamb"],
                        help=f"lamb for large batches (default: {default['optimizer']})")
    parser.add_argument("--strategy", choices=["default", "mirrored", "multi_worker"],
                        help="default: one device; mirrored: all local GPUs (else CPUs); multi_worker: the hosts in "
                             "TF_CONFIG")
    parser.add_argument("--mixed-precision", choices=["mixed_float16", "mixed_bfloat16"],
                        help="mixed_float16: GPUs, with loss scaling; mixed_bfloat16: CPUs with bfloat16 units")
    parser.add_argument("--checkpoint-every", type=int,
                        help="steps between checkpoints (default: a tenth of --steps)")
    parser.add_argument("--checkpoint-minutes", type=float,
                        help="minutes of training between checkpoints (default: 5)")
    parser.add_argument("--log-every", type=int, help="steps between TensorBoard summaries and progress-line "
                                                         f"refreshes (default: {default['log_every']})")
    parser.add_argument("--seed", type=int, help=f"masking, data order, initial weights (default: {default['seed']})")
    parser.add_argument("--gradient-accumulation-steps", type=int, metavar="K",
                        help="average the gradients of K batches per optimizer update (default: "
                             f"{default['gradient_accumulation_steps']})")
    parser.set_defaults(run=run)


def config_from_args(args):
    from bert_tf.training.pretraining import PretrainingConfig
    from bert_tf.vocabulary import resolve_lower_case

    if args.steps < 1:
        raise ValueError(f"--steps must be at least 1, got {args.steps}.")
    if args.num_warmup_steps is not None and not 0 <= args.num_warmup_steps < args.steps:
        raise ValueError(f"--num-warmup-steps must be at least 0 and below --steps ({args.steps}), got "
                         f"{args.num_warmup_steps}; leave it out for a tenth of --steps.")
    return PretrainingConfig(
        output_dir=args.out,
        model=args.config,
        init_checkpoint=args.init,
        train_files=list(args.corpus),
        vocab_file=args.vocab,
        lower_case=resolve_lower_case(args.vocab, None if args.cased is None else not args.cased,
                                      flag_names=("--cased", "--uncased")),
        whole_word_masking=args.whole_word_masking,
        num_train_steps=args.steps,
        jit_compile=args.xla,
        **{name: getattr(args, name) for name in _OPTIONAL_FIELDS if getattr(args, name) is not None},
    )


def run(args) -> int:
    from bert_tf.training import run_pretraining
    from pipelines.pretraining import pretraining_dataset_fn

    config = config_from_args(args)
    result = run_pretraining(config, pretraining_dataset_fn(config), max_seconds=args.max_seconds)
    if result.stopped_by:
        print(f"Stopped by {result.stopped_by.name} at step {result.step}, checkpoint {result.checkpoint}.\n"
              "Run the same command again to resume from there.")
        return 128 + result.stopped_by  # the shell's status for a process ended by that signal
    summary = ", ".join(f"{k} {v:.4g}" for k, v in result.metrics.items())
    print(f"Trained to step {result.step}: {summary}\nModel: {config.output_dir}/model  Checkpoint: {result.checkpoint}")
    return 0
