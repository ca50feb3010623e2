"""`bert-tf index` and `bert-tf search`: a search SavedModel over a corpus (dense, lexical, hybrid), and asking it."""

import json
from pathlib import Path

# serving.export.search_index's MODES and bert_tf.retrieval.fusion's FUSIONS, which import TensorFlow.
MODES = ("lexical", "dense", "hybrid")
FUSIONS = ("rrf", "weighted")

from bert_tf_cli.argument_checks import existing_file, model_directory_path


def register(commands) -> None:
    index = commands.add_parser(
        "index", help="a search SavedModel: a sentence-embedding model's vectors and BM25 over a corpus",
        description="Embed every document of --corpus with a sentence-embedding model (bert-tf finetune --task embed) "
                    "and count its words for BM25 (bm25s's scores: k1, b, English stop words), and write "
                    "OUT/NAME/<version>/, a SavedModel whose serving_default takes query texts and returns the "
                    "--top-k documents' ids, scores, indices (documents counted from 0 in the corpus's order) and "
                    "texts (their first 200 characters), by meaning (dense, exact cosine), by words (lexical) or "
                    "both (hybrid), in the graph: bert-tf serve and TF Serving serve it as any model. A request may "
                    "name its mode, fusion and dense_weight; left out, they are this command's. Memory in the "
                    "server: documents x size x 4 bytes of vectors, (word, document) pairs x 8 bytes for BM25. "
                    "Documents longer than --seq-length tokens are embedded from their start (a warning counts "
                    "them). --corpus: BEIR's corpus.jsonl ({_id, title, text}), {id, text} lines, or a .txt file, a "
                    "document per line. With --rerank, the first stage's --rerank-top-k best documents are scored by "
                    "a reranker in the same call and the --top-k best by its score returned, with both scores.")
    index.add_argument("--model", type=model_directory_path,
                       help="a sentence-embedding model directory (or --lexical-only)")
    index.add_argument("--lexical-only", action="store_true",
                       help="no model: BM25 alone (mode lexical), seconds to write, no vectors to hold")
    index.add_argument("--corpus", required=True, type=existing_file, help="the documents: .jsonl or .txt")
    index.add_argument("--out", required=True, help="the base path (holding NAME/)")
    index.add_argument("--name", required=True, help="the search model's name, its directory under --out")
    index.add_argument("--version", type=int, help="the version (default: the highest there + 1)")
    index.add_argument("--top-k", type=int, default=10, help="documents per query (default: 10)")
    index.add_argument("--seq-length", type=int,
                       help="tokens of a document embedded (default: the model's; at most its position table)")
    index.add_argument("--mode", choices=MODES,
                       help="default search mode (default: hybrid; lexical with --lexical-only)")
    index.add_argument("--fusion", choices=FUSIONS, default="rrf",
                       help="hybrid: reciprocal-rank fusion (k=60) or a weighted sum of min-max normalised scores "
                            "(default: rrf)")
    index.add_argument("--dense-weight", type=float, default=0.5,
                       help="weighted fusion: the dense score's weight, 0 to 1; BM25's is 1 minus it (default: 0.5)")
    index.add_argument("--k1", type=float, default=1.5, help="BM25's term-frequency saturation (default: 1.5)")
    index.add_argument("--b", type=float, default=0.75, help="BM25's length normalisation, 0 to 1 (default: 0.75)")
    index.add_argument("--rerank", metavar="RERANKER", type=model_directory_path,
                       help="a reranker's model directory (bert-tf finetune --task rerank): reorders the first stage's "
                            "best --rerank-top-k documents in the graph; the index then also holds the documents' "
                            "whole texts")
    index.add_argument("--rerank-top-k", type=int,
                       help="with --rerank: the first stage's documents reranked per query, at least --top-k "
                            "(default: 100)")
    index.add_argument("--no-progress", action="store_true", help="no progress bar")
    index.set_defaults(run=run_index)
    search = commands.add_parser(
        "search", help="the documents a search SavedModel (bert-tf index) finds for queries",
        description="Prints, for each query, the rank, score, id and text (cut to a line) of the best documents "
                    "(an index with a reranker: the rank, the reranker's score, the first stage's score, id and "
                    "text); --mode, --fusion and --dense-weight default to the index's.")
    search.add_argument("queries", nargs="+", help="query texts")
    search.add_argument("--model", required=True,
                        help="OUT/NAME of bert-tf index (its latest version), or a version; with --server, the served "
                             "model's name")
    search.add_argument("--server", metavar="HOST:PORT", help="ask this TF Serving (or bert-tf serve) gRPC server")
    search.add_argument("--top-k", type=int, help="documents per query, at most the index's (default: the index's)")
    search.add_argument("--mode", choices=MODES, help="lexical, dense or hybrid (default: the index's)")
    search.add_argument("--fusion", choices=FUSIONS, help="hybrid's fusion (default: the index's)")
    search.add_argument("--dense-weight", type=float, help="weighted fusion's dense weight (default: the index's)")
    search.add_argument("--json", action="store_true", help="print a JSON line per query: {query, results}")
    search.set_defaults(run=run_search)


def run_index(args) -> None:
    from serving.export.search_index import SearchSettings, export_search_index

    if bool(args.model) == args.lexical_only:
        raise ValueError("Give --model (a sentence-embedding model directory) or --lexical-only (BM25 alone)." if not
                         args.model else "--lexical-only indexes without a model: leave out --model, or the flag.")
    if args.rerank_top_k is not None and not args.rerank:
        raise ValueError("--rerank-top-k is the number of documents --rerank reorders: give --rerank RERANKER too.")
    rerank_top_k = {} if args.rerank_top_k is None else {"rerank_top_k": args.rerank_top_k}
    mode = args.mode or ("lexical" if args.lexical_only else "hybrid")
    settings = SearchSettings(top_k=args.top_k, mode=mode, fusion=args.fusion, dense_weight=args.dense_weight,
                              k1=args.k1, b=args.b, **rerank_top_k)
    final = export_search_index(args.model, args.corpus, args.out, args.name, version=args.version, settings=settings,
                                seq_length=args.seq_length, progress=not args.no_progress, reranker=args.rerank)
    print(f"Wrote the search model {final}: serve it with `bert-tf serve --model_base_path {final.parent} "
          f"--model_name {args.name}`, or ask it with `bert-tf search --model {final.parent} QUERY`.")


def _requested(args) -> dict:
    """The request's optional inputs that the command line sets."""
    return {name: value for name, value in (("mode", args.mode), ("fusion", args.fusion),
                                            ("dense_weight", args.dense_weight)) if value is not None}


def run_search(args) -> None:
    if args.top_k is not None and args.top_k < 1:
        raise ValueError(f"--top-k must be at least 1, got {args.top_k}.")
    found, top_k, mode = _served(args) if args.server else _local(args)
    if args.top_k is not None and args.top_k > top_k:
        raise ValueError(f"--top-k {args.top_k} is more than the index's {top_k} (bert-tf index --top-k).")
    shown = args.top_k or top_k
    reranked = "first_stage_scores" in found  # an index with a reranker: both scores
    first_stage = found["first_stage_scores"] if reranked else found["scores"]
    for query, ids, scores, first_scores, texts in zip(args.queries, found["ids"], found["scores"], first_stage,
                                                       found["texts"]):
        found_rows = zip(ids[:shown], scores[:shown], first_scores[:shown], texts[:shown])
        if mode == "lexical":  # BM25 scores 0 a document without a word of the query: not found
            found_rows = [row for row in found_rows if row[2] > 0]
        results = [{"rank": rank, "score": float(score), **({"first_stage_score": float(first)} if reranked else {}),
                    "id": identifier.decode("utf-8"), "text": text.decode("utf-8")}
                   for rank, (identifier, score, first, text) in enumerate(found_rows, start=1)]
        if args.json:
            print(json.dumps({"query": query, "results": results}, ensure_ascii=False))
            continue
        print(query + ("\t(rank, reranker score, first-stage score, id, text)" if reranked else ""))
        for result in results:
            first = f"\t{result['first_stage_score']:.4f}" if reranked else ""
            print(f"  {result['rank']}\t{result['score']:.4f}{first}\t{result['id']}\t{result['text']}")
        if not results:
            print("  no document shares a word with this query")


def _local(args) -> tuple[dict, int, str]:
    """What the index answers, its top-k and the search mode."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the tokenizer's ops, before the SavedModel loads)

    from bert_tf.model_directory import exported_version

    version = exported_version(Path(args.model))
    if version is None:
        raise FileNotFoundError(f"{args.model} holds no search SavedModel (write one with bert-tf index).")
    loaded = tf.saved_model.load(str(version))
    info = {name: value.numpy()[0] for name, value in
            loaded.signatures["model_info"](request=tf.constant([""])).items()}
    if "mode" not in info:
        raise ValueError(f"{args.model} is no search index of this bert-tf (its model_info has no mode): write it "
                         "with bert-tf index.")
    inputs = {"mode": info["mode"].decode(), "fusion": info["fusion"].decode(),
              "dense_weight": float(info["dense_weight"]), **_requested(args)}
    found = loaded.signatures["serving_default"](
        text=tf.constant(args.queries), mode=tf.constant(inputs["mode"]), fusion=tf.constant(inputs["fusion"]),
        dense_weight=tf.constant(inputs["dense_weight"], tf.float32))
    return {name: value.numpy() for name, value in found.items()}, int(info["top_k"]), inputs["mode"]


def _served(args) -> tuple[dict, int, str]:
    """What the server answers, the index's top-k and the search mode."""
    import numpy as np

    from serving.client.grpc_client import GrpcClient

    with GrpcClient(args.server, model_name=args.model, signature_name="model_info", timeout_s=30) as client:
        info = client.predict({"request": [""]})
    if "mode" not in info:
        raise ValueError(f"{args.model} at {args.server} is no search index of bert-tf index (its model_info has no "
                         "mode).")
    top_k = int(info["top_k"][0])
    optional = {name: np.float32(value) if name == "dense_weight" else value
                for name, value in _requested(args).items()}
    mode = args.mode or info["mode"][0].decode()
    with GrpcClient(args.server, model_name=args.model, timeout_s=60) as client:
        return client.predict({"text": args.queries, **optional}), top_k, mode
