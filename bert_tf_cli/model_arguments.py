"""The `--model`, `--vocab` and `--max-length` options that `embed`, `fill-mask` and `attention` share."""


def add_model_arguments(parser) -> None:
    parser.add_argument("--model", required=True,
                        help="a bert-tf model directory (or `bert-tf pretrain` output folder), a Google checkpoint, "
                             "a Hugging Face BERT directory, a KerasHub preset directory, a sentence-transformers folder, an "
                             "installed model (all-minilm-l6-v2), or an exported encoder or "
                             "sentence-embedding SavedModel (embed only)")
    parser.add_argument("--vocab", help="vocab.txt, when the model directory has none (or to replace it)")
    parser.add_argument("--max-length", type=int,
                        help="most tokens per input, [CLS] and [SEP] included (default: the model's seq_length "
                             "if recorded, else its maximum)")


def load_model(args):
    """The `bert_tf.inspection.InspectionModel` that the options name."""
    from bert_tf.inspection import load_inspection_model

    return load_inspection_model(args.model, vocab_file=args.vocab, max_length=args.max_length)
