"""`bert-tf fill-mask`: the masked-LM head's top candidates for every [MASK] in a text."""

import json

from bert_tf_cli.model_arguments import add_model_arguments, load_model


def register(commands) -> None:
    parser = commands.add_parser(
        "fill-mask", help="predict the words at [MASK] with the pre-training head",
        description="Print the top-k candidates (with probabilities) for every [MASK] in each text, using the "
                    "model's masked-LM head (a pre-training checkpoint). Adjacent masks, '[MASK][MASK]', are one "
                    "word of several pieces, filled left to right by beam search; masks separated by a space are "
                    "separate words.")
    add_model_arguments(parser)
    parser.add_argument("text", nargs="+", help="text with one or more [MASK]")
    parser.add_argument("--top-k", type=int, default=5, help="candidates per mask (default: 5)")
    parser.add_argument("--json", action="store_true", help="print one JSON object per text")
    parser.set_defaults(run=run)


def run(args) -> None:
    from bert_tf.inspection import fill_mask

    model = load_model(args)
    pretrainer = model.require_pretrainer()
    for text in args.text:
        result = fill_mask(pretrainer, model.tokenizer, text, top_k=args.top_k, max_length=model.max_length)
        if args.json:
            print(json.dumps({"text": text, "filled": result.filled_text(), "masks": [
                {"positions": list(span.positions),
                 "candidates": [{"text": c.text, "tokens": list(c.tokens), "probability": c.probability}
                                for c in span.candidates]}
                for span in result.spans]}, ensure_ascii=False))
            continue
        print(text)
        for number, span in enumerate(result.spans, start=1):
            pieces = f", {len(span.positions)} pieces" if len(span.positions) > 1 else ""
            print(f"  [MASK] {number} (token {span.positions[0]}{pieces}):")
            width = max(len(c.text) for c in span.candidates)
            for rank, candidate in enumerate(span.candidates, start=1):
                print(f"    {rank:>2}. {candidate.text:<{width}}  {candidate.probability:.4f}")
        print(f"  → {result.filled_text()}")
