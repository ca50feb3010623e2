"""The `--model`, `--vocab` and `--seq-length` options that `embed`, `fill-mask` and `attention` share."""

from bert_tf_cli.argument_checks import existing_file, model_path


def add_model_arguments(parser, exports: bool = False) -> None:
    """The options; `exports`: the command reads exported SavedModels too (`embed`)."""
    parser.add_argument("--model", required=True, type=model_path,
                        help="a bert-tf model directory (or `bert-tf pretrain` output folder), a Google checkpoint, "
                             "a Hugging Face BERT directory, a KerasHub preset directory, a sentence-transformers folder, "
                             "an installed model (all-minilm-l6-v2)" + (", or an exported encoder or sentence-embedding "
                                                                        "SavedModel" if exports else ""))
    parser.add_argument("--vocab", type=existing_file, help="vocab.txt, when the model directory has none (or to "
                                                            "replace it)")
    parser.add_argument("--seq-length", "--max-length", dest="seq_length", type=int,
                        help="most tokens per input, [CLS] and [SEP] included (default: the model's seq_length "
                             "if recorded, else its maximum)")


def load_model(args):
    """The `bert_tf.inspection.InspectionModel` that the options name."""
    from bert_tf.inspection import load_inspection_model

    return load_inspection_model(args.model, vocab_file=args.vocab, max_length=args.seq_length)
