"""`bert-tf vocab`: learn a WordPiece vocabulary (vocab.txt) from text files."""

from bert_tf_cli.argument_checks import existing_file


def register(commands) -> None:
    parser = commands.add_parser(
        "vocab", help="learn a WordPiece vocabulary from a corpus",
        description="Learn a BERT-style vocab.txt (special tokens first) from text files with tensorflow-text's "
                    "WordPiece learner. It warns about corpus files that look like binary data or are not "
                    "UTF-8.")
    parser.add_argument("--corpus", nargs="+", required=True, type=existing_file, help="text files")
    parser.add_argument("--size", type=int, required=True,
                        help="vocabulary size to aim for (a warning says when the corpus gives fewer tokens)")
    parser.add_argument("--out", required=True, help="vocab.txt to write (its folder is created first)")
    parser.add_argument("--cased", action="store_true", help="keep case and accents (default: uncased)")
    parser.add_argument("--unused", type=int, default=0, help="[unusedN] slots after the special tokens")
    parser.add_argument("--min-count", type=int, default=10,
                        help="a word piece must occur this often to be learned (default 10); lower it when fewer "
                             "tokens than --size are learned")
    parser.set_defaults(run=run)


def run(args) -> None:
    from bert_tf.vocabulary import learn_vocabulary

    vocabulary = learn_vocabulary(args.corpus, args.size, args.out, lower_case=not args.cased,
                                  num_unused=args.unused, min_count=args.min_count)
    print(f"Wrote {len(vocabulary):,} tokens ({'cased' if args.cased else 'uncased'}) to {args.out}")
