"""`bert-tf predict --input`: examples from a file or stdin (JSON lines or text lines) → JSON lines, in batches."""

import io
import json
import re

import pytest

import bert_tf
from bert_tf_cli import main
from bert_tf_cli.predict import predict_lines, read_examples
from bert_tf.prediction import Predictor
from tiny_exports import tiny_encoder, write_vocab

TEXTS = ["the film was great", "a dull film, not good!", "who lives in berlin", "", "the movie " * 20]
PAIRS = ["a film", "great", "in paris", "x", "not very good"]
NER_LABELS = ["O", "B-LOC", "I-LOC"]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """Tiny fine-tuned-like model directories: a classifier, a pair classifier, a tagger and a span labeler."""
    base = tmp_path_factory.mktemp("predict")
    vocab = write_vocab(base)

    def save(model, name, **spec):
        return bert_tf.save_pretrained(model, base / name, vocab_file=vocab, seq_length=16, **spec)

    return {
        "classify": save(bert_tf.BertClassifier(tiny_encoder(), num_classes=2, label_names=["neg", "pos"]),
                         "classifier", task="classify"),
        "pairs": save(bert_tf.BertClassifier(tiny_encoder(seed=1), num_classes=2, label_names=["no", "yes"]),
                      "pair_classifier", task="classify", text_pair=True),
        "ner": save(bert_tf.BertTokenClassifier(tiny_encoder(seed=2), num_labels=3, label_names=NER_LABELS),
                    "tagger", task="ner"),
        "squad": save(bert_tf.BertSpanLabeler(tiny_encoder(seed=3)), "span_labeler", task="squad",
                      settings={"max_query_length": 4, "max_answer_length": 5, "doc_stride": 6}),
    }


def predict(capsys, *args):
    code = main(["predict", *map(str, args)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return [json.loads(line) for line in captured.out.splitlines()]


def assert_same_results(actual, expected):
    """Equal, probabilities to float32 rounding (the CLI predicts in other batches than `expected`)."""
    assert len(actual) == len(expected)
    for got, want in zip(actual, expected):
        assert got.keys() == want.keys()
        for key, value in want.items():
            assert got[key] == (pytest.approx(value, abs=1e-5) if key in ("probability", "probabilities", "score")
                                else value), key


def without_inputs(results, *fields):
    """The results without the input fields each echoes (`predict` leads every result with its input)."""
    return [{key: value for key, value in result.items() if key not in fields} for result in results]


def test_jsonl_file_to_jsonl_file_in_batches(tmp_path, capsys, models):
    source, target = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    lines = [json.dumps({"text": text, "id": number}) for number, text in enumerate(TEXTS)]
    source.write_text("\n".join(lines[:2] + [""] + lines[2:]) + "\n", encoding="utf-8")  # a blank line is skipped
    assert predict(capsys, "--model", models["classify"], "--input", source, "--output", target,
                   "--batch-size", 2) == []
    results = [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]
    # Each input's `id` comes back with its result (it was dropped), so results can be joined to their inputs.
    assert [result.pop("id") for result in results] == list(range(len(TEXTS)))
    assert_same_results(without_inputs(results, "text"), Predictor(models["classify"]).classify(TEXTS))


def test_an_id_is_echoed_where_an_input_line_has_one(tmp_path, monkeypatch, capsys, models):
    lines = [{"text": "a film", "id": "review-7"}, {"text": "great"}, {"question": "who?", "context": "mary", "id": 3}]
    monkeypatch.setattr("sys.stdin", io.StringIO("".join(json.dumps(line) + "\n" for line in lines[:2])))
    results = predict(capsys, "--model", models["classify"], "--input", "-")
    assert [result.get("id") for result in results] == ["review-7", None] and list(results[0])[0] == "id"
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(lines[2]) + "\n"))
    [answer] = predict(capsys, "--model", models["squad"], "--input", "-")
    assert answer["id"] == 3 and "text" in answer


@pytest.mark.slow
def test_each_result_leads_with_its_input(tmp_path, monkeypatch, capsys, models):
    """As Hugging Face's pipelines answer: the input beside its result, so that a line of output stands alone."""
    monkeypatch.setattr("sys.stdin", io.StringIO("a film\tgreat\n"))
    [result] = predict(capsys, "--model", models["pairs"], "--input", "-")
    assert list(result)[:3] == ["text", "text_b", "label"] and (result["text"], result["text_b"]) == ("a film", "great")
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps({"id": 4, "question": "who?", "context": "mary"}) + "\n"))
    [answer] = predict(capsys, "--model", models["squad"], "--input", "-")
    assert list(answer)[:3] == ["id", "question", "context"] and "text" in answer
    assert main(["predict", "--model", str(models["classify"]), "the film was great", "--json"]) == 0
    [result] = json.loads(capsys.readouterr().out)
    assert list(result)[:2] == ["text", "label"] and result["text"] == "the film was great"
    assert main(["predict", "--model", str(models["squad"]), "--question", "who?", "--context", "mary", "--json"]) == 0
    [answer] = json.loads(capsys.readouterr().out)
    assert (answer["question"], answer["context"]) == ("who?", "mary") and "probability" in answer


def test_text_lines_from_stdin(monkeypatch, capsys, models):
    monkeypatch.setattr("sys.stdin", io.StringIO("".join(f"{text}\n" for text in TEXTS)))
    results = predict(capsys, "--model", models["classify"], "--input", "-", "--batch-size", 3)
    assert_same_results(without_inputs(results, "text"),
                        Predictor(models["classify"]).classify([text for text in TEXTS if text]))  # blank
    # lines are skipped


@pytest.mark.slow
def test_pairs_as_tsv_and_as_jsonl(tmp_path, monkeypatch, capsys, models):
    expected = Predictor(models["pairs"]).classify(TEXTS, PAIRS)
    monkeypatch.setattr("sys.stdin", io.StringIO("".join(f"{a}\t{b}\n" for a, b in zip(TEXTS, PAIRS))))
    assert_same_results(without_inputs(predict(capsys, "--model", models["pairs"], "--input", "-"), "text", "text_b"),
                        expected)
    source = tmp_path / "pairs.jsonl"
    source.write_text("".join(json.dumps({"text": a, "text_b": b}) + "\n" for a, b in zip(TEXTS, PAIRS)))
    results = predict(capsys, "--model", models["pairs"], "--input", source, "--batch-size", 4)
    assert_same_results(without_inputs(results, "text", "text_b"), expected)


def test_ner_and_squad_inputs(tmp_path, monkeypatch, capsys, models):
    source = tmp_path / "ner.jsonl"
    source.write_text("".join(json.dumps({"text": text}) + "\n" for text in TEXTS[:3]))
    expected = Predictor(models["ner"]).recognize(TEXTS[:3])
    assert expected[1]["words"] == ["a", "dull", "film", ",", "not", "good", "!"]  # as BERT splits words
    assert sum(len(result["entities"]) for result in expected) > 0
    for result in expected:
        result["entities"] = [{**entity, "score": pytest.approx(entity["score"], abs=1e-5)}
                              for entity in result["entities"]]
    assert without_inputs(predict(capsys, "--model", models["ner"], "--input", source), "text") == expected

    questions, contexts = ["who lives in berlin?", "where is paris?"], ["a film " * 30, "paris is not in berlin."]
    monkeypatch.setattr("sys.stdin", io.StringIO("".join(f"{q}\t{c}\n" for q, c in zip(questions, contexts))))
    results = predict(capsys, "--model", models["squad"], "--input", "-", "--batch-size", 1)
    assert_same_results(without_inputs(results, "question", "context"), Predictor(models["squad"]).answer(questions,
                                                                                                         contexts))


def test_a_bad_line_is_named_by_file_and_line(tmp_path, monkeypatch, capsys, models):
    source = tmp_path / "in.jsonl"
    source.write_text('{"text": "a film"}\n\n{"text": "a film"\n')
    assert main(["predict", "--model", str(models["classify"]), "--input", str(source)]) == 2
    captured = capsys.readouterr()
    assert f"bert-tf predict: error: {source}:3: not a JSON object" in captured.err
    assert len(captured.out.splitlines()) == 0  # the batch holding the bad line is not predicted

    monkeypatch.setattr("sys.stdin", io.StringIO('{"question": "who?"}\n'))
    assert main(["predict", "--model", str(models["squad"]), "--input", "-"]) == 2
    assert "<stdin>:1: missing 'context'" in capsys.readouterr().err


@pytest.mark.parametrize("lines, task, error", [
    (['{"text": 3}'], "classify", "in.jsonl:1: 'text' must be a string"),
    (['{"text": "a"}', '["a film"]'], "classify", "in.jsonl:2: expected a JSON object, got list"),
    (['{"text": "a", "text_b": "b"}', '{"text": "c"}'], "classify",
     "in.jsonl:2: has 'text' but line 1 has 'text', 'text_b'"),
    (["a film\tgreat"], "ner", "in.jsonl:1: expected text, got 2 tab-separated fields"),
    (["who?"], "squad", "in.jsonl:1: expected question TAB context, got 1 tab-separated field"),
    (["a\tb\tc"], "classify", "in.jsonl:1: expected text [TAB text_b], got 3 tab-separated fields"),
])
def test_read_examples_errors(lines, task, error):
    with pytest.raises(ValueError, match=re.escape(error)):
        list(read_examples(lines, "in.jsonl", task))


def test_read_examples_formats():
    assert list(read_examples(['{"text": "a", "text_b": null, "id": 7}'], "-", "classify")) == [{"text": "a", "id": 7}]
    assert list(read_examples(["{not json}"], "-", "classify", input_format="text")) == [{"text": "{not json}"}]
    assert list(read_examples(["a\tb\r\n", "  \n"], "-", "classify")) == [{"text": "a", "text_b": "b"}]


class RecordingPredictor:
    """Classifies each text as its length, recording the batches it is given."""

    task_name = "classify"

    def __init__(self):
        self.batches = []

    def predict(self, inputs):
        self.batches.append([example["text"] for example in inputs])
        return [{"label": str(len(example["text"]))} for example in inputs]


def test_input_is_streamed_in_batches():
    predictor, output = RecordingPredictor(), io.StringIO()

    def lines():  # fails if the whole input were read before the first batch's results were written
        for number in range(1, 6):
            assert output.getvalue().count("\n") >= (number - 1) // 2 * 2
            yield "x" * number

    assert predict_lines(predictor, lines(), "-", output, batch_size=2) == 5
    assert predictor.batches == [["x", "xx"], ["xxx", "xxxx"], ["xxxxx"]]
    assert output.getvalue().splitlines() == [json.dumps({"text": "x" * n, "label": str(n)}) for n in range(1, 6)]


@pytest.mark.slow
def test_predict_reads_an_export_as_evaluate_does(models, capsys, tmp_path):
    """An export (its version folder, or its model folder: the highest version) is served on 127.0.0.1 for the run and
    answers as the model directory it came from."""
    from serving.export.saved_model import export_saved_model

    version = export_saved_model(models["classify"], tmp_path / "models", "sentiment")
    source = tmp_path / "texts.txt"
    source.write_text("".join(f"{text}\n" for text in TEXTS[:3]), encoding="utf-8")
    expected = predict(capsys, "--model", models["classify"], "--input", source)
    for model in (version, version.parent):
        assert_same_results(predict(capsys, "--model", model, "--input", source), expected)
