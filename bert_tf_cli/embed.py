"""`bert-tf embed`: a text file (one text or tab-separated pair per line) → sentence vectors or token vectors."""

import sys
import tempfile
from pathlib import Path

from bert_tf_cli.argument_checks import existing_file
from bert_tf_cli.model_arguments import add_model_arguments
from bert_tf_cli.predict import check_utf8


def register(commands) -> None:
    parser = commands.add_parser(
        "embed", help="sentence or token vectors of a text file",
        description="Embed every line of a text file (or stdin, or the texts given) with a BERT encoder. Sentence "
                    "vectors go to .npy "
                    "(float32 [lines, dim]) or .jsonl ({text, vector}); with --tokens, every token's vector with "
                    "its token string and word goes to .jsonl. Row i is line i+1; texts longer than the model's "
                    "maximum are truncated with a warning.")
    add_model_arguments(parser, exports=True)
    parser.add_argument("texts", nargs="*", help="texts to embed (or --input)")
    parser.add_argument("--input", "--in", dest="input", type=existing_file, help="text file, one text per line (UTF-8), or - for stdin")
    parser.add_argument("--out", required=True, help="output file: .npy or .jsonl")
    parser.add_argument("--pooling",
                        help="sentence vector: cls (the [CLS] vector), pooled (the pooler's output), or of the real "
                             "tokens mean, max or mean_max (both concatenated) (default: the pooling a sentence-embedding model was trained with, "
                             "else mean; a distilled student's vectors are in its teacher's space with that pooling "
                             "of the last layer only)")
    parser.add_argument("--layer", nargs="+", default=["-1"], metavar="L",
                        help="transformer block to read: 0 is the first, -1 the last (default), 'embeddings' "
                             "the embeddings' output before the first; several, as '--layer -4 -3 -2 -1', are "
                             "concatenated; 'last4' is that (the paper's best feature-based setting)")
    parser.add_argument("--pairs", action="store_true",
                        help="each line is a text pair, 'first<TAB>second' (e.g. question and passage), encoded "
                             "together as BERT reads sentence pairs; one vector per pair")
    parser.add_argument("--tokens", action="store_true",
                        help="write token vectors (.jsonl) instead of sentence vectors")
    parser.add_argument("--normalize", action="store_true", default=None,
                        help="scale every vector to unit L2 length (default: as a sentence-embedding model was "
                             "trained, else not)")
    parser.add_argument("--skip-special", action="store_true", help="leave [CLS] and [SEP] out of mean/max pooling")
    parser.add_argument("--batch-size", type=int, default=32, help="texts per batch (default: 32)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.set_defaults(run=run)


def _layers(values: list[str]) -> tuple[int | str, ...]:
    """--layer's values as `BertEmbedder`'s `encoder_layers`."""
    if values == ["last4"]:
        return -4, -3, -2, -1
    try:
        return tuple(value if value == "embeddings" else int(value) for value in values)
    except ValueError:
        raise ValueError(f"--layer takes block indices, 'embeddings' or 'last4', got {' '.join(values)!r}.") from None


def _text_file(args, scratch: Path) -> str:
    """The file to embed: --input FILE itself, or the command line's texts (or stdin's lines) written to one."""
    if args.input and args.input != "-":
        return args.input
    if args.input == "-":
        lines = sys.stdin.read().splitlines()
    else:
        check_utf8(args.texts)
        broken = next((number for number, text in enumerate(args.texts, start=1) if "\n" in text or "\r" in text), None)
        if broken:
            raise ValueError(f"text {broken} holds a line break: embed texts of several lines from a file (--input).")
        lines = args.texts
    path = scratch / "texts.txt"
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return str(path)


def run(args) -> None:
    from bert_tf import TextEmbedder, embed_file, load_embedder

    if bool(args.texts) == bool(args.input):
        raise ValueError("Give texts to embed or --input FILE (- for stdin), not both." if args.texts else
                         "Give texts to embed, or --input FILE (- for stdin).")

    if args.tokens and args.pairs:
        raise ValueError("--tokens writes the vectors of single texts' tokens; --pairs embeds pairs as one vector "
                         "each. Give one of them.")
    if args.tokens and args.pooling:
        raise ValueError("--pooling makes one vector per text; --tokens writes one per token. Give one of them.")
    layers = _layers(args.layer)
    model = load_embedder(args.model, pooling=args.pooling, encoder_layers=layers, normalize=args.normalize,
                          skip_special_tokens=args.skip_special, vocab_file=args.vocab, max_length=args.seq_length)
    embedder = TextEmbedder(model, batch_size=args.batch_size)
    with tempfile.TemporaryDirectory(prefix="bert-tf-embed-") as scratch:
        count = embed_file(embedder, _text_file(args, Path(scratch)), args.out, tokens=args.tokens,
                           progress=not args.no_progress, pairs=args.pairs)
    what = "token vectors of" if args.tokens else f"sentence vectors ({model.pooling} pooling) of"
    texts = "text pair(s)" if args.pairs else "text(s)"
    size = model.encoder.config.hidden_size * len(layers) if args.tokens else embedder.dim()
    print(f"Wrote {what} {count} {texts}, size {size}, layers {list(layers)}, to {args.out}")
