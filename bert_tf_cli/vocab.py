"""`bert-tf vocab`: learn a WordPiece vocabulary (vocab.txt) from text files."""


def register(commands) -> None:
    parser = commands.add_parser(
        "vocab", help="learn a WordPiece vocabulary from a corpus",
        description="Learn a BERT-style vocab.txt (special tokens first) from text files with tensorflow-text's "
                    "WordPiece learner.")
    parser.add_argument("--corpus", nargs="+", required=True, help="text files")
    parser.add_argument("--size", type=int, required=True, help="vocabulary size to aim for")
    parser.add_argument("--out", required=True, help="vocab.txt to write")
    parser.add_argument("--cased", action="store_true", help="keep case and accents (default: uncased)")
    parser.add_argument("--unused", type=int, default=0, help="[unusedN] slots after the special tokens")
    parser.add_argument("--min-count", type=int, default=10, help="ignore words seen fewer times (default 10)")
    parser.set_defaults(run=run)


def run(args) -> None:
    from bert_tf.vocabulary import learn_vocabulary

    vocabulary = learn_vocabulary(args.corpus, args.size, args.out, lower_case=not args.cased,
                                  num_unused=args.unused, min_count=args.min_count)
    print(f"Wrote {len(vocabulary):,} tokens ({'cased' if args.cased else 'uncased'}) to {args.out}")
