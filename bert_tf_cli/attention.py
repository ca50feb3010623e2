"""`bert-tf attention`: one head's (or the mean of all heads') attention as a table, and heat-map PNGs."""

import argparse

from bert_tf_cli.model_arguments import add_model_arguments, load_model


def register(commands) -> None:
    parser = commands.add_parser(
        "attention", help="show what the model attends to in a text",
        description="Print the attention matrix of one layer and head (rows: attending token, columns: attended "
                    "token; each row sums to 1), or the mean over heads. --png draws it as a heat map; with --all "
                    "the PNG is a grid of every layer and head.")
    add_model_arguments(parser)
    parser.add_argument("text", help="the text (first segment)")
    parser.add_argument("--pair", help="a second segment, packed as [CLS] text [SEP] pair [SEP]")
    parser.add_argument("--layer", type=int, default=-1, help="transformer block, negative from the end (default: -1)")
    parser.add_argument("--head", type=_head, default="mean", help="head index, or 'mean' over heads (default)")
    parser.add_argument("--decimals", type=int, default=2, help="decimals in the table (default: 2)")
    parser.add_argument("--png", help="write a heat map to this PNG file")
    parser.add_argument("--all", action="store_true", help="the PNG shows every layer and head")
    parser.set_defaults(run=run)


def _head(value: str):
    if value == "mean":
        return value
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--head takes a head index or 'mean', got {value!r}.") from None


def run(args) -> None:
    from bert_tf.inspection import attention_maps, format_attention_table, plot_attention, plot_attention_grid

    if args.all and not args.png:
        raise ValueError("--all draws every layer and head into a PNG: give the file with --png.")
    model = load_model(args)
    maps = attention_maps(model.encoder, model.tokenizer, args.text, args.pair, max_length=model.max_length)
    matrix = maps.matrix(args.layer, args.head)
    heads = "mean of heads" if args.head == "mean" else f"head {args.head}"
    title = f"layer {args.layer}, {heads}"
    print(f"Attention, {title} (rows attend to columns):")
    print(format_attention_table(maps.tokens, matrix, decimals=args.decimals))
    if args.png:
        if args.all:
            plot_attention_grid(maps, args.png)
        else:
            plot_attention(maps.tokens, matrix, args.png, title=title)
        print(f"Wrote {args.png}")
