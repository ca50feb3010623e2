"""The `bert-tf` command line. It only parses arguments and calls the library.

Run `bert-tf --help` or `bert-tf COMMAND --help`.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path


def _convert(args) -> None:
    import bert_tf

    out = Path(args.to)
    if out.exists() and any(out.iterdir()) and not args.overwrite:
        raise SystemExit(f"bert-tf convert: {out} exists and is not empty; pass --overwrite to replace its files.")
    model = bert_tf.from_pretrained(args.source)
    if args.format == "hf":
        bert_tf.write_hf_directory(model, out, vocab_file=model.vocab_file, lower_case=model.lower_case)
    else:
        bert_tf.save_pretrained(model, out)
    print(f"Wrote {args.format} model ({model.count_params():,} parameters) to {out}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bert-tf", description="BERT for TensorFlow/Keras.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log what is loaded and skipped")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    convert = commands.add_parser(
        "convert", help="convert a Google, Hugging Face or KerasHub checkpoint",
        description="Read a BERT checkpoint (Google TF checkpoint directory, Hugging Face directory, KerasHub "
                    "preset directory or bert-tf directory) and write it as a bert-tf (keras) or Hugging Face "
                    "(hf) directory.")
    convert.add_argument("--from", dest="source", required=True, help="checkpoint directory or prefix")
    convert.add_argument("--to", required=True, help="output directory")
    convert.add_argument("--format", choices=["keras", "hf"], default="keras", help="output format (default: keras)")
    convert.add_argument("--overwrite", action="store_true", help="write into a non-empty output directory")
    convert.set_defaults(run=_convert)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(message)s")
    try:
        args.run(args)
    except (FileNotFoundError, ValueError) as error:
        print(f"bert-tf {args.command}: error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
