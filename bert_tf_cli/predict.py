"""`bert-tf predict`: classes, entity tags, answers or pair scores from a fine-tuned model directory (or a model
server).

Texts come from the command line, printed as a table (or `--json`), or from a file or stdin
(`--input`), written as JSON lines (`--output`, default stdout), streamed in batches of
`--batch-size` lines. Input lines are JSON objects or plain text, a tab before a second text:

    {"text": "a gripping film", "text_b": "it was good"}    classification (text_b: pair models)
    {"text": "EU rejects German call."}                      NER
    {"question": "Who wrote it?", "context": "Mary did."}   SQuAD
    {"query": "who wrote it?", "document": "Mary did."}     reranking (one pair per line)
    a gripping film<TAB>it was good                          text<TAB>text_b, question<TAB>context, query<TAB>document

Each output line (and each object `--json` prints) is the example, its `id` where it has one and
its input fields, as Hugging Face's pipelines echo their inputs, then the task's result:
classification {"label", "probability", "probabilities"} (multi-label: {"labels", "probabilities"}),
NER {"entities": [{"type", "text", "start", "end", "score"}], "words", "tags"}, SQuAD {"text",
"start", "end", "score", "probability"}, reranking {"score"} (the pair's logit).

Example:
    $ bert-tf predict --model sst2_model --input reviews.jsonl --output predictions.jsonl
    $ echo "a gripping, funny film" | bert-tf predict --model sst2_model --input -
    {"text": "a gripping, funny film", "label": "1", "probability": 0.93, "probabilities": {"0": 0.07, "1": 0.93}}

Prediction returns plain Python results (`bert_tf.prediction.Predictor`, or
`serving.client.server_prediction.ServerPredictor` for `--server` or an export: the same methods).
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import IO, Iterable, Iterator

from bert_tf_cli.argument_checks import check, existing_file, task_model_path
from bert_tf_cli.served_export import served_export

# Each task's input fields (`FinetuneTask.input_fields`): required, then optional (text lines give them in this order,
# tab-separated).
ID = "id"  # an input line's own identifier, echoed with its result
INPUT_FORMATS = ("auto", "jsonl", "text")
FIELD_FLAGS = {"text": "texts", "text_b": "--pair", "question": "--question", "context": "--context",
               "query": "--query", "document": "--document"}  # on the command line


def register(commands) -> None:
    parser = commands.add_parser(
        "predict", help="predict with a fine-tuned model: class, entity tags, answer or pair score",
        description="Classification: the class and its probability per text (--pair gives each text its second "
                    "text). NER: word/TAG for every word (split at whitespace and punctuation) and the entities they "
                    "make. SQuAD: the answer to --question in "
                    "--context (repeat both for several questions). Reranking: the score of --document for --query "
                    "(repeat both for several pairs). --input FILE (or - for stdin) reads one example per line "
                    "instead, as JSON ({\"text\", \"text_b\"}, {\"text\"}, {\"question\", \"context\"} or "
                    "{\"query\", \"document\"}) or as text (a tab before the second text, the context or the "
                    "document), and writes one JSON "
                    "object per example to --output, in order, led by the example (its id and texts); blank lines "
                    "are skipped.")
    parser.add_argument("texts", nargs="*", help="texts to classify or tag")
    parser.add_argument("--model", required=True,
                        help="model directory written by `bert-tf finetune`, or an export (`bert-tf export`'s version "
                             "folder, or its model folder: the highest version, served on 127.0.0.1 for the run); "
                             "with --server, the served model's name")
    parser.add_argument("--server", metavar="HOST:PORT",
                        help="ask this TF Serving (or `bert-tf serve`) gRPC server instead, for a model exported "
                             "by `bert-tf export` (with text signatures)")
    parser.add_argument("--pair", action="append", help="second text of a pair, once per text, in order")
    parser.add_argument("--question", action="append", help="question (SQuAD models)")
    parser.add_argument("--context", action="append", help="the question's context (SQuAD models)")
    parser.add_argument("--query", action="append", help="query of a pair to score (rerank models)")
    parser.add_argument("--document", action="append", help="the query's document to score (rerank models)")
    parser.add_argument("--input", metavar="FILE", type=existing_file, help="examples, one per line (- for stdin)")
    parser.add_argument("--input-format", choices=INPUT_FORMATS, default="auto",
                        help="jsonl or text; auto (default): jsonl if the first line starts with '{'")
    parser.add_argument("--output", metavar="FILE", help="with --input: the JSON lines' file (default: stdout)")
    parser.add_argument("--batch-size", type=int, default=32, help="examples per batch (default: 32)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.set_defaults(run=run)


@contextlib.contextmanager
def predictor_of(args):
    """A `Predictor` of the model directory `args.model`, or a `ServerPredictor` of the model served at `args.server`,
    or of the export `args.model` (a version folder, or a model folder: its highest version) served on 127.0.0.1 for
    the block, as `evaluate` serves one."""
    from bert_tf.model_directory import exported_version, is_bert_tf_directory
    from serving.client.server_prediction import ServerPredictor

    model = Path(args.model)
    if not args.server and (is_bert_tf_directory(model) or exported_version(model) is None):
        from bert_tf.prediction import Predictor

        yield Predictor(args.model, batch_size=args.batch_size)
        return
    with contextlib.ExitStack() as stack:
        target, name = (args.server, args.model) if args.server else stack.enter_context(served_export(model))
        predictor = ServerPredictor(target, name)
        stack.callback(predictor.close)
        yield predictor


def examples_from_args(task_name: str, args) -> list[dict]:
    """The examples of the command line's texts or questions (the task's fields, as `read_examples` reads a line)."""
    from bert_tf.tasks.registry import task_named

    given = {"text": args.texts or [], "text_b": args.pair or [], "question": args.question or [],
             "context": args.context or [], "query": args.query or [], "document": args.document or []}
    check_utf8([text for texts in given.values() for text in texts])
    required, optional = task_named(task_name).input_fields
    reads = " and ".join(FIELD_FLAGS[field] for field in required)
    unknown = [FIELD_FLAGS[field] for field, texts in given.items() if texts and field not in required + optional]
    if unknown:
        raise ValueError(f"This {task_name} model reads {reads}; it takes no {' or '.join(unknown)}.")
    if not all(given[field] for field in required):
        raise ValueError(f"Give {reads} to predict, or --input FILE.")
    fields = [field for field in required + optional if given[field]]
    if len({len(given[field]) for field in fields}) > 1:
        raise ValueError(f"Give as many of each: got {', '.join(f'{len(given[f])} {FIELD_FLAGS[f]}' for f in fields)}.")
    return [dict(zip(fields, texts)) for texts in zip(*(given[field] for field in fields))]


def check_utf8(texts: list[str]) -> None:
    """ValueError for a command-line text holding bytes that are not UTF-8 (Python passes each as a lone surrogate);
    texts are numbered in the order given: the texts, then --pair, --question, --context, --query, --document."""
    for number, text in enumerate(texts, start=1):
        bad = next((index for index, character in enumerate(text) if "\udc80" <= character <= "\udcff"), None)
        if bad is not None:
            raise ValueError(f"text {number} is not UTF-8 (byte 0x{ord(text[bad]) - 0xdc00:02x} at character {bad + 1}): "
                             "set a UTF-8 locale or pass the texts in a UTF-8 file (--input).")


def read_examples(lines: Iterable[str], name: str, task: str, input_format: str = "auto") -> Iterator[dict]:
    """The example (`task`'s fields) of each non-blank line of `lines`; errors name file `name` and the line.

    Example:
        >>> list(read_examples(['{"text": "fine"}', "", '{"text": "bad"}'], "in.jsonl", "ner"))
        [{'text': 'fine'}, {'text': 'bad'}]
        >>> list(read_examples(["Who?\\tMary did."], "-", "squad"))
        [{'question': 'Who?', 'context': 'Mary did.'}]
    """
    from bert_tf.tasks.registry import task_named

    required, optional = task_named(task).input_fields
    first = None  # (line number, fields) of the first example: every example has the same fields
    for number, line in enumerate(lines, start=1):
        line = line.rstrip("\r\n")
        if not line.strip():
            continue
        if input_format == "auto":
            input_format = "jsonl" if line.lstrip().startswith("{") else "text"
        try:
            example = _from_json(line, required, optional) if input_format == "jsonl" else _from_text(
                line, required, optional)
            fields = [field for field in example if field != ID]
            if first is None:
                first = number, fields
            if set(fields) != set(first[1]):
                raise ValueError(f"has {_names(example)} but line {first[0]} has {_names(first[1])}: give every "
                                 "example the same fields")
        except ValueError as error:
            raise ValueError(f"{name}:{number}: {error}") from None
        yield example


def _from_json(line: str, required: tuple[str, ...], optional: tuple[str, ...]) -> dict:
    from bert_tf.tasks.data_rows import json_object

    example = json_object(line)
    missing = [field for field in required if field not in example]
    if missing:
        raise ValueError(f"missing {_names(missing)} (this model reads {_names(required + optional)})")
    fields = {field: example[field] for field in required + optional if example.get(field) is not None}
    not_text = [field for field, value in fields.items() if not isinstance(value, str)]
    if not_text:
        raise ValueError(f"{_names(not_text)} must be a string")
    if "id" in example:  # echoed with the result, so that results join their inputs
        fields[ID] = example["id"]
    return fields


def _from_text(line: str, required: tuple[str, ...], optional: tuple[str, ...]) -> dict:
    values = line.split("\t")
    if not len(required) <= len(values) <= len(required) + len(optional):
        wanted = " TAB ".join(required) + "".join(f" [TAB {field}]" for field in optional)
        raise ValueError(f"expected {wanted}, got {len(values)} tab-separated field{'s' * (len(values) != 1)}")
    return dict(zip(required + optional, values))


def _names(fields) -> str:
    return ", ".join(repr(field) for field in fields)


def predict_batch(predictor, examples: list[dict]) -> list[dict]:
    """One JSON-ready result per example of `read_examples`, led by the example (`echoed`)."""
    results = predictor.predict([{name: value for name, value in example.items() if name != ID} for example in examples])
    return [echoed(example, result) for example, result in zip(examples, results)]


def echoed(example: dict, result: dict) -> dict:
    """`result` led by its example: its `id` where it has one, then its input fields.

    Example:
        >>> echoed({"text": "a film", "id": 7}, {"label": "1"})
        {'id': 7, 'text': 'a film', 'label': '1'}
    """
    return {ID: example[ID], **example, **result} if ID in example else {**example, **result}


def predict_lines(predictor, lines: Iterable[str], name: str, output: IO[str], batch_size: int = 32,
                  input_format: str = "auto") -> int:
    """Writes one JSON line to `output` per example line of `lines` (file `name`), `batch_size` at a time.

    Returns the number of examples. Example:
        >>> predict_lines(Predictor("sst2_model"), ["a gripping film"], "-", sys.stdout)  # doctest: +SKIP
        {"text": "a gripping film", "label": "1", "probability": 0.93, "probabilities": {"0": 0.07, "1": 0.93}}
        1
    """
    count = 0
    batch: list[dict] = []
    for example in read_examples(lines, name, predictor.task_name, input_format):
        batch.append(example)
        if len(batch) == batch_size:
            count += _write(predict_batch(predictor, batch), output)
            batch = []
    if batch:
        count += _write(predict_batch(predictor, batch), output)
    return count


def _write(results: list, output: IO[str]) -> int:
    for result in results:
        output.write(json.dumps(result, ensure_ascii=False) + "\n")
    output.flush()
    return len(results)


def print_results(task: str, args, examples: list[dict], results: list[dict]) -> None:
    """The results of `examples` (`predict_batch`'s), as JSON or as the task prints them (`prediction_lines`)."""
    from bert_tf.tasks.registry import task_named

    if args.json:
        print(json.dumps(results, indent=2, ensure_ascii=False))
        return
    for line in task_named(task).prediction_lines(examples, results):
        print(line)


def run(args) -> None:
    if not args.server:
        check("--model", args.model, task_model_path)
    if args.input is None:
        if args.output:
            raise ValueError("--output goes with --input (a file of examples, or - for stdin).")
        with predictor_of(args) as predictor:
            examples = examples_from_args(predictor.task_name, args)
            print_results(predictor.task_name, args, examples, predict_batch(predictor, examples))
        return
    if args.texts or args.pair or args.question or args.context or args.query or args.document or args.json:
        raise ValueError("--input reads the examples (and writes JSON lines): give no texts, --pair, --question, "
                         "--context, --query, --document or --json with it.")
    if args.batch_size < 1:
        raise ValueError(f"--batch-size must be at least 1, got {args.batch_size}.")
    name = "<stdin>" if args.input == "-" else args.input
    with contextlib.ExitStack() as files:
        source = sys.stdin if args.input == "-" else files.enter_context(open(args.input, encoding="utf-8"))
        output = files.enter_context(open(args.output, "w", encoding="utf-8")) if args.output else sys.stdout
        predictor = files.enter_context(predictor_of(args))
        predict_lines(predictor, source, name, output, args.batch_size, args.input_format)
