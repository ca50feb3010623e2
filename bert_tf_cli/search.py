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
                    "document per line.")
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
    index.add_argument("--no-progress", action="store_true", help="no progress bar")
    index.set_defaults(run=run_index)
    search = commands.add_parser(
        "search", help="the documents a search SavedModel (bert-tf index) finds for queries",
        description="Prints, for each query, the rank, score, id and text (cut to a line) of the best documents; "
                    "--mode, --fusion and --dense-weight default to the index's.")
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
    mode = args.mode or ("lexical" if args.lexical_only else "hybrid")
    settings = SearchSettings(top_k=args.top_k, mode=mode, fusion=args.fusion, dense_weight=args.dense_weight,
                              k1=args.k1, b=args.b)
    final = export_search_index(args.model, args.corpus, args.out, args.name, version=args.version, settings=settings,
                                seq_length=args.seq_length, progress=not args.no_progress)
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
    for query, ids, scores, texts in zip(args.queries, found["ids"], found["scores"], found["texts"]):
        results = [{"rank": rank, "score": float(score), "id": identifier.decode("utf-8"), "text": text.decode("utf-8")}
                   for rank, (identifier, score, text) in enumerate(zip(ids[:shown], scores[:shown], texts[:shown]),
                                                                    start=1)]
        if mode == "lexical":  # BM25 scores 0 a document without a word of the query: not found
            results = [result for result in results if result["score"] > 0]
        if args.json:
            print(json.dumps({"query": query, "results": results}, ensure_ascii=False))
            continue
        print(query)
        for result in results:
            print(f"  {result['rank']}\t{result['score']:.4f}\t{result['id']}\t{result['text']}")
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
