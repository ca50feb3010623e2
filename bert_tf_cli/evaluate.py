"""`bert-tf evaluate`: score a fine-tuned model on a labelled file (classification report, entity scores, SQuAD EM/F1)."""


def register(commands) -> None:
    parser = commands.add_parser(
        "evaluate", help="score a fine-tuned model on a labelled data file",
        description="Read a data file in the format the model was trained on (CSV/TSV/JSONL with the same columns, "
                    "CoNLL, SQuAD JSON) and print the task's scores: accuracy, macro-F1, MCC and per-class "
                    "precision/recall/F1; entity-level precision/recall/F1 (conlleval); or SQuAD exact match/F1.")
    parser.add_argument("--model", required=True, help="model directory written by `bert-tf finetune`")
    parser.add_argument("--data", required=True, help="labelled data file")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--json", action="store_true", help="print the scores as JSON")
    parser.set_defaults(run=run)


def run(args) -> None:
    import json

    from pipelines.finetune import evaluate

    task, scores = evaluate(args.model, args.data, batch_size=args.batch_size)
    print(json.dumps(scores, indent=2) if args.json else task.format_scores(scores))
