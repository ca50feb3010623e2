"""`bert-tf evaluate`: score a fine-tuned model on a labelled file (classification report, entity scores, SQuAD EM/F1).

The model is a model directory, an export (`bert-tf export`'s version folder, or its model folder: the
highest version), served here on 127.0.0.1 for the run, or a model a server serves (`--server`). A served
model is asked as `predict --server` asks it (`serving.client.server_prediction.ServerPredictor`), and its
answers are scored by the task's own scoring (`FinetuneTask.prediction_scores`): the scores a model
directory gets from its own predictions. A BEIR folder is scored here, for a sentence-embedding model directory or a
search index (`bert-tf index`, in any mode), or for a reranker after a first stage (`--first-stage INDEX --top-k K`:
both rankings scored): `pipelines.beir_evaluation`.
"""

from pathlib import Path

from bert_tf_cli.argument_checks import check, existing_path, task_model_path
from bert_tf_cli.served_export import served_export

# What reading a data file and scoring answers take from a served model's `model_info`, beside its task.
SERVED_SETTINGS = ("label_names", "multi_label_threshold", "version_2")


def register(commands) -> None:
    parser = commands.add_parser(
        "evaluate", help="score a fine-tuned model, an export or a served model on a labelled data file",
        description="Read a data file in the format the model was trained on (CSV/TSV/JSONL with the same columns, "
                    "unless --text-column and the others name them; CoNLL; SQuAD JSON; scored pairs, pairs or a BEIR "
                    "folder) and print the task's scores: accuracy, macro-F1, MCC and per-class precision/recall/F1; "
                    "entity-level precision/recall/F1 (conlleval); SQuAD exact match/F1; or for sentence embeddings "
                    "STS Spearman/Pearson and retrieval nDCG@10, MRR@10, Recall@k; for a reranker on a BEIR folder, "
                    "those of the --first-stage index's --top-k documents and of the same documents reranked. An "
                    "export is served on 127.0.0.1 for the run; with --server, the served model answers.")
    parser.add_argument("--model", required=True,
                        help="model directory written by `bert-tf finetune`, or an export (`bert-tf export`'s version "
                             "folder, or its model folder); with --server, the served model's name")
    parser.add_argument("--server", metavar="HOST:PORT",
                        help="ask this TF Serving (or `bert-tf serve`) gRPC server, for a model exported by `bert-tf "
                             "export` (with text signatures)")
    parser.add_argument("--data", required=True, type=existing_path,
                        help="labelled data file, or a BEIR folder (corpus.jsonl, queries.jsonl, qrels/SPLIT.tsv) for "
                             "a sentence-embedding model or a search index (bert-tf index)")
    parser.add_argument("--split", help="a BEIR folder's judgments, qrels/SPLIT.tsv (default: test, else the only one)")
    parser.add_argument("--first-stage", metavar="INDEX", type=existing_path,
                        help="a reranker (--model) on a BEIR folder: the search index (bert-tf index, without "
                             "--rerank) whose answers it reorders")
    parser.add_argument("--top-k", type=int,
                        help="with --first-stage: the first stage's documents reranked per query, at most the "
                             "index's --top-k (default: 100)")
    parser.add_argument("--mode", choices=("lexical", "dense", "hybrid"),
                        help="a search index's mode (default: the index's)")
    parser.add_argument("--fusion", choices=("rrf", "weighted"),
                        help="a search index's hybrid fusion (default: its own)")
    parser.add_argument("--dense-weight", type=float, help="a search index's weighted fusion weight (default: its own)")
    parser.add_argument("--text-column", help="classification: the file's text column (default: the model's)")
    parser.add_argument("--text-pair-column", help="classification: the file's second text column")
    parser.add_argument("--label-column", help="classification: the file's label column")
    parser.add_argument("--batch-size", type=int, default=32, help="examples per batch (default: 32)")
    parser.add_argument("--json", action="store_true", help="print the scores as JSON")
    parser.set_defaults(run=run)


def run(args) -> None:
    if not args.server:
        check("--model", args.model, task_model_path)
    import json

    from bert_tf.model_directory import exported_version, is_bert_tf_directory
    from bert_tf.text_files import existing_file
    from bert_tf.training.finetune import evaluate

    columns = (args.text_column, args.text_pair_column, args.label_column)
    if args.batch_size < 1:
        raise ValueError(f"--batch-size must be at least 1, got {args.batch_size}.")
    model = Path(args.model)
    index_options = [flag for flag, value in (("--mode", args.mode), ("--fusion", args.fusion),
                                              ("--dense-weight", args.dense_weight)) if value is not None]
    if args.top_k is not None and not args.first_stage:
        raise ValueError("--top-k is the number of documents a reranker reorders: give --first-stage INDEX too.")
    if args.first_stage and not Path(args.data).is_dir():
        raise ValueError("--first-stage is for a reranker on a BEIR folder (--data FOLDER).")
    if Path(args.data).is_dir():
        format_scores, scores = evaluate_beir_folder(args, model, index_options)
        print(json.dumps(scores, indent=2) if args.json else format_scores(scores))
        return
    if args.split or index_options:
        raise ValueError(f"{(['--split'] if args.split else index_options)[0]} is for a BEIR folder (--data FOLDER).")
    if args.server:
        task, scores = evaluate_served(args.server, args.model, args.data, columns, args.batch_size)
    elif not is_bert_tf_directory(model) and exported_version(model) is not None:
        existing_file(args.data)  # before the export is served (seconds)
        with served_export(model) as (target, name):
            task, scores = evaluate_served(target, name, args.data, columns, args.batch_size)
    else:
        task, scores = evaluate(args.model, args.data, batch_size=args.batch_size, columns=columns)
    print(json.dumps(scores, indent=2) if args.json else task.format_scores(scores))


def evaluate_beir_folder(args, model: Path, index_options: list[str]):
    """(a function formatting the scores, scores) of a sentence-embedding model directory or a search index on the
    BEIR folder --data."""
    from bert_tf import format_retrieval
    from pipelines.beir_evaluation import beir_split, evaluate_index_on_beir, evaluate_model_on_beir, is_search_index
    from pipelines.beir_evaluation import evaluate_reranker_on_beir

    if args.server:
        raise ValueError("A BEIR folder is scored here, on a model directory or a search index: leave out --server.")
    split = beir_split(args.data, args.split)
    if args.first_stage:
        if not is_search_index(args.first_stage):
            raise ValueError(f"--first-stage {args.first_stage} is not a search index (write one with bert-tf index).")
        return format_reranking, evaluate_reranker_on_beir(
            model, args.first_stage, args.data, split, 100 if args.top_k is None else args.top_k, args.mode,
            args.fusion, args.dense_weight, args.batch_size)
    if is_search_index(model):
        return format_retrieval, evaluate_index_on_beir(model, args.data, split, args.mode, args.fusion,
                                                        args.dense_weight, args.batch_size)
    if index_options:
        raise ValueError(f"{index_options[0]} is for a search index (bert-tf index); {model} is not one.")
    task, scores = evaluate_model_on_beir(model, args.data, split, args.batch_size)
    return task.format_scores, scores


def format_reranking(scores: dict) -> str:
    """The first stage's and the reranked scores, a line each.

    >>> line = {"ndcg@10": 61.2, "mrr@10": 57.0, "recall@10": 80.0, "queries": 300}
    >>> print(format_reranking({"first_stage": line, "reranked": {**line, "ndcg@10": 64.0}}))
    first stage  nDCG@10 61.20  MRR@10 57.00  Recall@10 80.00  (300 queries)
    reranked     nDCG@10 64.00  MRR@10 57.00  Recall@10 80.00  (300 queries)
    """
    from bert_tf import format_retrieval

    return "\n".join(f"{name:<12} {format_retrieval(scores[key])}"
                     for name, key in (("first stage", "first_stage"), ("reranked", "reranked")))


def evaluate_served(target: str, model_name: str, data_file: str, columns: tuple, batch_size: int):
    """(task, scores) of model `model_name` served at `target` on `data_file`: its answers, scored by its task."""
    from bert_tf.progress import progress_bar
    from bert_tf.tasks.registry import task_from_spec, task_named
    from bert_tf.tasks.spec import TaskSpec
    from bert_tf_cli.predict import predict_batch
    from bert_tf.training.finetune import reading_columns
    from serving.client.server_prediction import ServerPredictor

    predictor = ServerPredictor(target, model_name)
    try:
        settings = {name: predictor.info[name] for name in SERVED_SETTINGS if name in predictor.info}
        if "classifier_mode" in predictor.info:
            settings["multi_label"] = predictor.info["classifier_mode"] == "multi_label"
        spec = TaskSpec.of(predictor.task_name, seq_length=task_named(predictor.task_name).default_seq_length,  # unread
                           text_pair="text_b" in predictor.text_inputs, **settings)
        task = reading_columns(task_from_spec(spec, tokenizer=None), columns)
        examples = task.read(data_file)
        inputs = task.inputs_of(examples)
        predictions = [prediction for start in progress_bar(range(0, len(inputs), batch_size), desc="asking the server",
                                                            unit="batch", leave=False)
                       for prediction in predict_batch(predictor, inputs[start:start + batch_size])]
    finally:
        predictor.close()
    return task, task.prediction_scores(examples, predictions)
