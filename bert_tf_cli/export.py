"""`bert-tf export`: a bert-tf model directory → a SavedModel version for TF Serving, or a `.tflite` file."""

from bert_tf_cli.argument_checks import model_directory_path

# What --quantize can be for each --format (serving.export.signatures.QUANTIZATIONS,
# serving.export.tflite.QUANTIZATIONS).
_QUANTIZATIONS = {"saved_model": ("none", "int8", "bf16"), "tflite": ("none", "int8", "float16")}


def register(commands) -> None:
    parser = commands.add_parser(
        "export", help="export a model directory for TF Serving (SavedModel) or TFLite",
        description="SavedModel (default; needs --name): writes OUT/NAME/<version>/ with signatures "
                    "serving_default (raw text in, tokenized in the graph), serve_ids (token ids in), preprocess and "
                    "model_info; see serving/README.md. --format tflite: writes the .tflite file OUT.")
    parser.add_argument("--model", required=True, type=model_directory_path, help="a bert-tf model directory (bert_tf.save_pretrained)")
    parser.add_argument("--out", required=True, help="SavedModel: the base path (holding NAME/); tflite: the .tflite file")
    parser.add_argument("--format", choices=["saved_model", "tflite"], default="saved_model", help="default: saved_model")
    parser.add_argument("--name", help="SavedModel: the model's name, its directory under --out (required unless "
                                       "--format tflite)")
    parser.add_argument("--version", type=int, help="SavedModel: the version (default: the highest there + 1)")
    parser.add_argument("--ids-only", action="store_true",
                        help="SavedModel: token-id signatures only, no tensorflow-text ops (for TF Serving builds "
                             "without them)")
    parser.add_argument("--seq-length", type=int, help="tokens per example (default: the model directory's)")
    parser.add_argument("--max-text-bytes", type=int,
                        help="SavedModel: each text is cut to this many UTF-8 bytes before tokenizing, the bound on a "
                             "request's cost (default: the model directory's, 65536)")
    parser.add_argument("--dims", type=int, metavar="N",
                        help="SavedModel of a sentence-embedding model: vectors of their first N values, renormalised "
                             "(a size it trained at with --matryoshka-dims)")
    parser.add_argument("--tflite-input", choices=["ids", "text"], default="ids",
                        help="tflite: token ids in (builtin ops only), or raw text in (needs tensorflow-text's TFLite "
                             "kernels at run time); default: ids")
    parser.add_argument(
        "--quantize", choices=["none", "int8", "bf16", "float16"], default="none",
        help="none (float32, the default); int8: the fastest on CPUs (int8 weights, LiteRT's int8 kernels; with "
             "--format saved_model it writes NAME/<version>/model.tflite, which bert-tf serve serves); bf16: a "
             "SavedModel computing in bfloat16, for CPUs with bfloat16 units (AVX512_BF16, AMX, ARM BF16; elsewhere it is "
             "slower than float32, and export and serve say so); float16: tflite float16 weights")
    parser.set_defaults(run=run)


def run(args) -> None:
    if args.format == "tflite":
        for flag, value in (("--name", args.name), ("--version", args.version), ("--ids-only", args.ids_only or None),
                            ("--max-text-bytes", args.max_text_bytes), ("--dims", args.dims)):
            if value is not None:
                raise ValueError(f"{flag} applies to --format saved_model only.")
        _check_quantize(args)
        from serving.export.tflite import export_tflite

        path = export_tflite(args.model, args.out, inputs=args.tflite_input, quantization=args.quantize,
                             seq_length=args.seq_length)
        print(f"Wrote {path} ({path.stat().st_size:,} bytes; {args.tflite_input} inputs, quantization {args.quantize}).")
        return
    if args.name is None:
        raise ValueError("--name is required for --format saved_model (the model's directory under --out).")
    if args.tflite_input != "ids":
        raise ValueError("--tflite-input applies to --format tflite only.")
    _check_quantize(args)
    from serving.export.saved_model import export_saved_model

    path = export_saved_model(args.model, args.out, args.name, version=args.version, ids_only=args.ids_only,
                              seq_length=args.seq_length, max_text_bytes=args.max_text_bytes, quantize=args.quantize,
                              embedding_dims=args.dims)
    details = [note for note, given in (("ids only", args.ids_only), (f"quantize {args.quantize}", args.quantize != "none"))
               if given]
    print(f"Exported {args.model} to {path}" + (f" ({', '.join(details)})" if details else ""))


def _check_quantize(args) -> None:
    if args.quantize not in _QUANTIZATIONS[args.format]:
        raise ValueError(f"--quantize {args.quantize} applies to --format "
                         f"{'tflite' if args.format == 'saved_model' else 'saved_model'} only; with --format "
                         f"{args.format} use one of {', '.join(_QUANTIZATIONS[args.format])}.")

