"""`bert-tf convert`: a Google, Hugging Face, KerasHub or bert-tf checkpoint → a bert-tf or Hugging Face directory."""

from pathlib import Path


def register(commands) -> None:
    parser = commands.add_parser(
        "convert", help="convert a Google, Hugging Face or KerasHub checkpoint",
        description="Read a BERT checkpoint (Google TF checkpoint directory, Hugging Face directory, KerasHub "
                    "preset directory or bert-tf directory) and write it as a bert-tf (keras) or Hugging Face "
                    "(hf) directory.")
    parser.add_argument("--from", dest="source", required=True, help="checkpoint directory or prefix")
    parser.add_argument("--to", "--out", dest="to", required=True, help="output directory")
    parser.add_argument("--format", choices=["keras", "hf"], default="keras", help="output format (default: keras)")
    parser.add_argument("--overwrite", action="store_true", help="write into a non-empty output directory")
    parser.set_defaults(run=run)


MLM_HEAD, NSP_HEAD = "cls/predictions/", "cls/seq_relationship/"


def run(args) -> None:
    import bert_tf

    out = Path(args.to)
    if out.exists() and any(out.iterdir()) and not args.overwrite:
        raise ValueError(f"{out} exists and is not empty; pass --overwrite to replace its files.")
    fine_tuned = _fine_tuned_directory(Path(args.source))
    if fine_tuned is not None:  # kept whole: its head is what fine-tuning learned
        model, task = fine_tuned.model, fine_tuned.task
        if args.format == "hf":
            bert_tf.write_hf_directory(model, out, vocab_file=fine_tuned.vocab_file, lower_case=fine_tuned.lower_case)
        else:
            bert_tf.save_pretrained(model, out, vocab_file=fine_tuned.vocab_file, lower_case=fine_tuned.lower_case,
                                    task=task)
        print(f"Wrote {args.format} model with its {task.task} head ({model.count_params():,} parameters) to {out}")
        return
    contents = bert_tf.read_checkpoint(args.source)
    heads = [prefix for prefix in (MLM_HEAD, NSP_HEAD) if contents.head_weights(prefix)]
    if heads == [MLM_HEAD, NSP_HEAD]:  # a pre-training checkpoint: kept whole, so that fill-mask works on it
        model = bert_tf.BertPretrainer.from_pretrained(args.source)
        encoder, kept = model.encoder, " with its pre-training heads (masked LM, next sentence)"
    else:
        model = encoder = bert_tf.from_pretrained(args.source)
        kept = ""
        if heads:
            print(f"Dropped the {'masked-LM' if heads == [MLM_HEAD] else 'next-sentence'} head ({heads[0]}*): without "
                  f"the {'next-sentence' if heads == [MLM_HEAD] else 'masked-LM'} head "
                  f"({NSP_HEAD if heads == [MLM_HEAD] else MLM_HEAD}*) bert-tf keeps the encoder only.")
    if args.format == "hf":
        bert_tf.write_hf_directory(model, out, vocab_file=encoder.vocab_file, lower_case=encoder.lower_case)
    else:
        bert_tf.save_pretrained(model, out)
    print(f"Wrote {args.format} model{kept} ({model.count_params():,} parameters) to {out}")


def _fine_tuned_directory(source: Path):
    """The loaded bert-tf model directory `source` if it holds a task model (classifier, tagger, span labeler)."""
    from bert_tf.model_directory import is_bert_tf_directory, load_model_directory
    from bert_tf.task_model import BertTaskModel

    if not is_bert_tf_directory(source):
        return None
    loaded = load_model_directory(source)
    return loaded if isinstance(loaded.model, BertTaskModel) else None
