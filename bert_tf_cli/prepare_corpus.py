"""`bert-tf prepare-corpus`: raw text files → BERT's pre-training text format."""

from bert_tf_cli.argument_checks import existing_file


def register(commands) -> None:
    parser = commands.add_parser(
        "prepare-corpus", help="turn raw text files into one-sentence-per-line documents",
        description="Clean raw text (byte-order marks, CRLF, bad bytes, Project Gutenberg licence blocks, "
                    "hard-wrapped paragraphs), split it into sentences and write BERT's pre-training format: "
                    "one sentence per line, a blank line between documents.")
    parser.add_argument("raw_files", nargs="+", type=existing_file, help="raw text files (each becomes one document)")
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--encoding", default="utf-8", help="encoding of the raw files (default utf-8)")
    parser.set_defaults(run=run)


def run(args) -> None:
    from pipelines.corpus import prepare_corpus

    reports = prepare_corpus(args.raw_files, args.out, encoding=args.encoding)
    for report in reports:
        notes = ", Gutenberg licence removed" if report.gutenberg_boilerplate_removed else ""
        notes += f", {report.replaced_bytes} undecodable bytes replaced" if report.replaced_bytes else ""
        print(f"{report.source} → {report.output}: {report.sentences:,} sentences{notes}")
