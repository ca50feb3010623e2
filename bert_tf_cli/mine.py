"""`bert-tf mine`: hard negatives for (query, positive) pairs, from BM25's or a model's candidates."""

import logging

logger = logging.getLogger(__name__)


def register(commands) -> None:
    parser = commands.add_parser(
        "mine", help="hard negatives for (query, positive) pairs, for --task embed",
        description="For each query of a BEIR folder's split (or of a file of anchor/positive pairs), retrieve "
                    "candidates with BM25 or a sentence-embedding model and write (query, positive, negative_1 ... "
                    "negative_N, scores) rows as JSON lines, which `bert-tf finetune --task embed` trains on. As "
                    "sentence-transformers' mine_hard_negatives: the positives and repeated texts are never "
                    "negatives; margins skip candidates scored near or above the positive (likely false negatives); "
                    "the best --range-min candidates are skipped and the negatives taken from the next, up to "
                    "--range-max. A query left with fewer than --num-negatives gets no row.")
    parser.add_argument("--data", required=True,
                        help="a BEIR folder (corpus.jsonl, queries.jsonl, qrels/SPLIT.tsv) or a pairs file "
                             "(anchor/query and positive columns: its positives are the documents searched)")
    parser.add_argument("--split", default="train", help="the BEIR folder's qrels split (default: train)")
    parser.add_argument("--candidates", required=True, metavar="bm25|MODEL",
                        help="bm25 (English stop words, k1 1.5, b 0.75), or a sentence-embedding model (a model "
                             "directory, a sentence-transformers folder, or all-minilm-l6-v2)")
    parser.add_argument("--out", required=True, help="the rows, .jsonl")
    parser.add_argument("--num-negatives", type=int, default=3, help="negatives per row (default: 3)")
    parser.add_argument("--range-min", type=int, default=0, help="best candidates skipped (default: 0)")
    parser.add_argument("--range-max", type=int,
                        help="candidates considered (default: range-min + num-negatives, x 10 with a margin or "
                             "--max-score, + the most positives of a query)")
    parser.add_argument("--absolute-margin", type=float,
                        help="skip candidates scored above the positive's score minus this")
    parser.add_argument("--relative-margin", type=float,
                        help="skip candidates scored above the positive's score minus |that score| x this (e.g. 0.05)")
    parser.add_argument("--max-score", type=float, help="skip candidates scored above this")
    parser.add_argument("--min-score", type=float, help="skip candidates scored below this")
    parser.add_argument("--sampling", choices=("top", "random"), default="top",
                        help="the best remaining candidates, or a seeded random draw of them (default: top)")
    parser.add_argument("--seed", type=int, default=12, help="of --sampling random (default: 12)")
    parser.add_argument("--batch-size", type=int, default=64, help="texts per batch of the model (default: 64)")
    parser.add_argument("--no-progress", action="store_true", help="no progress lines")
    parser.set_defaults(run=run)


def run(args) -> None:
    from bert_tf.progress import announce
    from bert_tf.retrieval.mining import MiningSettings, mine_hard_negatives, pairs_to_mine, write_mined

    progress = not args.no_progress
    settings = MiningSettings(num_negatives=args.num_negatives, range_min=args.range_min, range_max=args.range_max,
                              absolute_margin=args.absolute_margin, relative_margin=args.relative_margin,
                              max_score=args.max_score, min_score=args.min_score, sampling=args.sampling,
                              seed=args.seed)
    pairs = pairs_to_mine(args.data, args.split)
    announce(f"Indexing {len(pairs.documents):,} documents ({args.candidates}) for {len(pairs.queries):,} queries",
             progress, logger)
    retriever = _retriever(args.candidates, pairs.documents, args.batch_size, progress)
    rows = mine_hard_negatives(pairs.queries, pairs.positives, pairs.documents, retriever, settings)
    write_mined(rows, args.out)
    pairs_count = sum(len(set(group)) for group in pairs.positives)
    print(f"Wrote {len(rows):,} rows of {settings.num_negatives} hard negatives to {args.out} "
          f"({pairs_count - len(rows):,} of {pairs_count:,} pairs had too few candidates left).")


def _retriever(candidates: str, documents: list[str], batch_size: int, progress: bool):
    if candidates == "bm25":
        from bert_tf.retrieval.bm25 import BM25Index

        return BM25Index(documents)
    from bert_tf.retrieval.dense import DenseIndex, model_embedder

    return DenseIndex(model_embedder(candidates, batch_size, progress), documents)
