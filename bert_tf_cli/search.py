"""`bert-tf index` and `bert-tf search`: a sentence-embedding model's search SavedModel over a corpus, and asking it."""

from pathlib import Path

from bert_tf_cli.argument_checks import existing_file, model_directory_path


def register(commands) -> None:
    index = commands.add_parser(
        "index", help="a search SavedModel: a sentence-embedding model and its vectors of a corpus",
        description="Embed every document of --corpus with a sentence-embedding model (bert-tf finetune --task embed) "
                    "and write OUT/NAME/<version>/, a SavedModel whose serving_default takes query texts and returns "
                    "the --top-k documents' ids, scores (cosine) and indices, exactly, in the graph: bert-tf serve "
                    "and TF Serving serve it as any model. The vectors take documents x size x 4 bytes in the server. "
                    "--corpus: BEIR's corpus.jsonl ({_id, title, text}), {id, text} lines, or a .txt file, a "
                    "document per line.")
    index.add_argument("--model", required=True, type=model_directory_path, help="a sentence-embedding model directory")
    index.add_argument("--corpus", required=True, type=existing_file, help="the documents: .jsonl or .txt")
    index.add_argument("--out", required=True, help="the base path (holding NAME/)")
    index.add_argument("--name", required=True, help="the search model's name, its directory under --out")
    index.add_argument("--version", type=int, help="the version (default: the highest there + 1)")
    index.add_argument("--top-k", type=int, default=10, help="documents per query (default: 10)")
    index.set_defaults(run=run_index)
    search = commands.add_parser(
        "search", help="the documents a search SavedModel (bert-tf index) finds for queries",
        description="Prints rank, score and document id of the best documents for each query.")
    search.add_argument("queries", nargs="+", help="query texts")
    search.add_argument("--model", required=True, help="OUT/NAME of bert-tf index (its latest version), or a version")
    search.set_defaults(run=run_search)


def run_index(args) -> None:
    from serving.export.search_index import export_search_index

    final = export_search_index(args.model, args.corpus, args.out, args.name, version=args.version, top_k=args.top_k)
    print(f"Wrote the search model {final}: serve it with `bert-tf serve --model_base_path {final.parent} "
          f"--model_name {args.name}`, or ask it with `bert-tf search --model {final.parent} QUERY`.")


def run_search(args) -> None:
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the tokenizer's ops, before the SavedModel loads)

    search = tf.saved_model.load(str(_latest_version(Path(args.model)))).signatures["serving_default"]
    found = search(text=tf.constant(args.queries))
    for query, ids, scores in zip(args.queries, found["ids"].numpy(), found["scores"].numpy()):
        print(query)
        for rank, (identifier, score) in enumerate(zip(ids, scores), start=1):
            print(f"  {rank}\t{score:.4f}\t{identifier.decode('utf-8')}")


def _latest_version(path: Path) -> Path:
    """`path` if it is a SavedModel, else its highest numbered version folder."""
    if (path / "saved_model.pb").is_file():
        return path
    versions = [child for child in path.iterdir() if child.name.isdigit() and (child / "saved_model.pb").is_file()] \
        if path.is_dir() else []
    if not versions:
        raise FileNotFoundError(f"{path} holds no search SavedModel (write one with bert-tf index).")
    return max(versions, key=lambda child: int(child.name))
