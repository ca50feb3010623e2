"""`bert-tf predict`: classes, entity tags or answers from a fine-tuned model directory.

Prediction returns plain Python results (`pipelines.prediction`), which `print_results`
formats; another source of results (e.g. a model server) only needs its own
`predict_*` function returning the same values.
"""

import json


def register(commands) -> None:
    parser = commands.add_parser(
        "predict", help="predict with a fine-tuned model: class, entity tags or answer",
        description="Classification: the class and its probability per text (--pair gives each text its second "
                    "text). NER: word/TAG for every whitespace-separated word. SQuAD: the answer to --question in "
                    "--context (repeat both for several questions).")
    parser.add_argument("texts", nargs="*", help="texts to classify or tag")
    parser.add_argument("--model", required=True,
                        help="model directory written by `bert-tf finetune`; with --server, the served model's name")
    parser.add_argument("--server", metavar="HOST:PORT",
                        help="ask this TF Serving (or `bert-tf serve`) gRPC server instead, for a model exported "
                             "by `bert-tf export` (with text signatures)")
    parser.add_argument("--pair", action="append", help="second text of a pair, once per text, in order")
    parser.add_argument("--question", action="append", help="question (SQuAD models)")
    parser.add_argument("--context", action="append", help="the question's context (SQuAD models)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.set_defaults(run=run)


def predict_locally(args) -> tuple[str, list]:
    """(task name, results) of the model directory `args.model`."""
    from pipelines.prediction import Predictor

    return predict_with(Predictor(args.model, batch_size=args.batch_size), args)


def predict_from_server(args) -> tuple[str, list]:
    """(task name, results) of model `args.model` served at `args.server` (gRPC)."""
    from serving.server_prediction import ServerPredictor

    return predict_with(ServerPredictor(args.server, args.model), args)


def predict_with(predictor, args) -> tuple[str, list]:
    """(task name, results) of a `Predictor` (or anything with its methods) for the texts or questions in `args`."""
    if predictor.task_name == "squad":
        if args.texts or not args.question or not args.context:
            raise ValueError("A SQuAD model answers --question QUESTION --context CONTEXT (no positional texts).")
        return "squad", predictor.answer(args.question, args.context)
    if not args.texts:
        raise ValueError("Give one or more texts to predict.")
    return predictor.task_name, predictor.predict_texts(args.texts, args.pair)


def print_results(task: str, args, results: list) -> None:
    if args.json:
        print(json.dumps(results, indent=2, ensure_ascii=False))
        return
    if task == "squad":
        for question, answer in zip(args.question, results):
            print(f"{answer['text'] or '(no answer)'}\t{answer['probability']:.4f}\t{question}")
    elif task == "ner":
        for tagged in results:
            print(" ".join(f"{word}/{tag}" for word, tag in tagged))
    else:
        for text, result in zip(args.texts, results):
            label = ",".join(result["labels"]) if "labels" in result else result["label"]
            probability = "" if "labels" in result else f"\t{result['probability']:.4f}"
            print(f"{label}{probability}\t{text}")


def run(args) -> None:
    task, results = predict_from_server(args) if args.server else predict_locally(args)
    print_results(task, args, results)
