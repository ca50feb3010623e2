"""`bert-tf convert`: a Google, Hugging Face, KerasHub or bert-tf checkpoint → a bert-tf or Hugging Face directory."""

import sys
from pathlib import Path

from bert_tf_cli.argument_checks import model_path
from bert_tf_cli.config_defaults import built_in_folder_formats


def register(commands) -> None:
    parser = commands.add_parser(
        "convert", help="convert a Google, Hugging Face or KerasHub checkpoint",
        description="Read a BERT checkpoint (Google TF checkpoint directory, Hugging Face directory, KerasHub "
                    "preset directory or bert-tf directory) and write it as a bert-tf (keras) or Hugging Face "
                    "(hf) directory. A fine-tuned model (a bert-tf task model, or transformers' "
                    "BertForSequenceClassification, BertForTokenClassification or BertForQuestionAnswering) "
                    "converts whole, head and label names included; so does a sentence-transformers model (a BERT "
                    "Transformer, Pooling and optional Normalize), which --format sentence-transformers writes.")
    parser.add_argument("--from", dest="source", required=True, type=model_path, help="checkpoint directory or prefix")
    parser.add_argument("--out", "--to", dest="out", required=True, help="output directory")
    parser.add_argument("--format", choices=["keras", "hf", *FOLDER_FORMAT_NAMES], default="keras",
                        help="output format (default: keras); the others: a fine-tuned model as another tool's "
                             "folder of its task (sentence-transformers: an embed model; cross-encoder: a rerank "
                             "model)")
    parser.add_argument("--overwrite", action="store_true", help="write into a non-empty output directory")
    parser.add_argument("--text-pair", action="store_true",
                        help="the transformers classifier being read classifies text pairs (its config does not say)")
    parser.set_defaults(run=run)


MLM_HEAD, NSP_HEAD = "cls/predictions/", "cls/seq_relationship/"
FOLDER_FORMAT_NAMES = built_in_folder_formats()  # bert_tf.tasks.registry.FOLDER_FORMATS, read from the sources: the
# registry imports TensorFlow, which --help does not


def run(args) -> None:
    import bert_tf
    from bert_tf.tasks.registry import task_of_model

    out = Path(args.out)
    if out.exists() and any(out.iterdir()) and not args.overwrite:
        raise ValueError(f"{out} exists and is not empty; pass --overwrite to replace its files.")
    model, vocab_file, lower_case, task = _fine_tuned_model(Path(args.source)) or (None, None, None, None)
    from_transformers_classifier = model is not None and task is None and task_of_model(model).reads_text_pairs
    if args.text_pair and not from_transformers_classifier:
        raise ValueError("--text-pair is for a classifier read from a transformers directory; other sources record "
                         "their task or have none.")
    if model is not None:  # a fine-tuned model, kept whole: its head is what fine-tuning learned
        if args.format in FOLDER_FORMAT_NAMES:
            _write_folder_format(args.format, model, out, vocab_file, lower_case, task)
        elif args.format == "hf":
            bert_tf.write_hf_task_model(model, out, vocab_file=vocab_file, lower_case=lower_case, task=task)
        else:
            bert_tf.save_pretrained(model, out, vocab_file=vocab_file, lower_case=lower_case, task=task,
                                    text_pair=args.text_pair or None)
        print(f"Wrote {args.format} model with its {task_of_model(model).name} head ({model.count_params():,} "
              f"parameters) to {out}")
        return
    if args.format in FOLDER_FORMAT_NAMES:
        raise ValueError(f"--format {args.format} writes a fine-tuned model of its task; {args.source} is an encoder.")
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
    if encoder.vocab_file is None:
        print(f"bert-tf convert: warning: {args.source} has no vocab.txt (nor a WordPiece tokenizer.json): the model "
              f"written has no vocabulary and reads no text until the checkpoint's vocab.txt is copied into {out}.",
              file=sys.stderr)
    if args.format == "hf":
        bert_tf.write_hf_directory(model, out, vocab_file=encoder.vocab_file, lower_case=encoder.lower_case)
    else:
        bert_tf.save_pretrained(model, out)
    print(f"Wrote {args.format} model{kept} ({model.count_params():,} parameters) to {out}")


def _write_folder_format(name: str, model, out: Path, vocab_file, lower_case, task) -> None:
    from bert_tf.tasks.registry import FOLDER_FORMATS, task_of_model

    if task_of_model(model) is not FOLDER_FORMATS[name]:
        raise ValueError(f"--format {name} writes {FOLDER_FORMATS[name].name} models; this is a "
                         f"{task_of_model(model).name} model.")
    FOLDER_FORMATS[name].folder_format.write(model, out, vocab_file, lower_case, task.seq_length if task else None)


def _fine_tuned_model(source: Path):
    """(task model, vocab_file, lower_case, TaskSpec or None) if `source` is a fine-tuned model: a bert-tf model
    directory of a task model, or a transformers BertFor{SequenceClassification,TokenClassification,QuestionAnswering}
    directory (with the TaskSpec bert-tf recorded there, if it wrote it)."""
    from bert_tf.checkpoints.huggingface import is_hf_directory
    from bert_tf.hf_task_models import hf_task_spec, read_hf_task_model
    from bert_tf.model_directory import folder_model_source, is_bert_tf_directory, load_model_directory, read_task
    from bert_tf.tasks.registry import finetuned_tasks

    if folder_model_source(source) is not None:  # another tool's folder of a task model (a sentence-transformers model)
        loaded = load_model_directory(source)
        return loaded.model, loaded.vocab_file, loaded.lower_case, loaded.task
    if is_hf_directory(source):
        model = read_hf_task_model(source)
        return None if model is None else (model, model.encoder.vocab_file, model.encoder.lower_case,
                                           hf_task_spec(source))
    if not is_bert_tf_directory(source) or read_task(source) not in finetuned_tasks():
        return None
    loaded = load_model_directory(source)
    return loaded.model, loaded.vocab_file, loaded.lower_case, loaded.task
