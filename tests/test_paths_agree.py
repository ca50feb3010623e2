"""What is evaluated is what is served: one fine-tuned model, every path, the same answers.

For each task a tiny model is fine-tuned with `bert-tf finetune` on inputs longer than one
window, then `bert-tf predict`, `bert-tf evaluate`, the SavedModel served over gRPC by the
development server (`bert-tf serve`'s) and, for classification, the raw-text TFLite model are
asked about the same inputs: pairs at seq_length 24 (an odd budget of 21 tokens, where
truncation policies differ), CoNLL sentences of up to 30 words at seq_length 16, SQuAD contexts
several windows long (seq_length 64, doc_stride 16). The scores computed from the served
answers equal `evaluate`'s. Also: the README's ten-line Python model (`save_pretrained` without
a task) works with every command, directories of the first format keep loading, and a
pre-training run folder stands for its model.
"""

import json
import random

import keras
import numpy as np
import pytest
import tensorflow as tf
from tiny_finetune_files import NEGATIVE, NER_SENTENCES, NEUTRAL, POSITIVE, write_bert_config, write_vocab

import bert_tf
from bert_tf.tasks.ner.metrics import ner_scores
from bert_tf.tasks.squad.metrics import squad_scores
from bert_tf_cli import main
from serving.client.grpc_client import GrpcClient
from serving.client.server_prediction import ServerPredictor
from serving.export.saved_model import export_saved_model
from serving.export.tflite import export_tflite
from serving.server.model_server import ModelServer
from serving.tflite_runner import TfliteModel

SEQ_LENGTH = 24


def pair_rows(n: int, seed: int) -> list[tuple[str, str, str]]:
    """(first, second, label): label "1" when the second text holds a positive word; texts of 3 to 18 words."""
    rng = random.Random(seed)
    rows = []
    for index in range(n):
        label = index % 2
        first = [rng.choice(NEUTRAL + POSITIVE + NEGATIVE) for _ in range(rng.randint(3, 18))]
        second = [rng.choice(NEUTRAL) for _ in range(rng.randint(3, 18))]
        second.insert(rng.randrange(len(second)), rng.choice(POSITIVE if label else NEGATIVE))
        rows.append((" ".join(first), " ".join(second), str(label)))
    return rows


def write_pairs(path, rows):
    path.write_text("sentence1\tsentence2\tlabel\n" + "".join(f"{a}\t{b}\t{label}\n" for a, b, label in rows))
    return path


@pytest.fixture(scope="module")
def pair_model(tmp_path_factory):
    """(model directory, dev rows, dev file) of a pair classifier fine-tuned by the CLI."""
    directory = tmp_path_factory.mktemp("paths_agree")
    train = write_pairs(directory / "train.tsv", pair_rows(64, seed=1))
    dev_rows = pair_rows(40, seed=2)
    dev = write_pairs(directory / "dev.tsv", dev_rows)
    out = directory / "model"
    assert main(["finetune", "--task", "classify", "--train", str(train), "--dev", str(dev),
                 "--init", str(write_bert_config(directory)), "--vocab", str(write_vocab(directory)),
                 "--out", str(out), "--epochs", "2", "--batch-size", "8", "--learning-rate", "1e-3",
                 "--seq-length", str(SEQ_LENGTH)]) == 0
    return out, dev_rows, dev


def served(model_dir, base_path, name, ask):
    """Exports `model_dir` as `name`, serves it over gRPC on 127.0.0.1 and returns `ask(predictor, target)`."""
    export_saved_model(model_dir, base_path, name)
    with ModelServer(name, base_path / name, poll_wait_s=0) as server:
        target = f"127.0.0.1:{server.grpc_port}"
        predictor = ServerPredictor(target, name)
        try:
            return ask(predictor, target)
        finally:
            predictor.close()


def cli_json(capsys, *argv):
    capsys.readouterr()
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def assert_same_scores(actual: dict, expected: dict) -> None:
    """The same scores, numbers to float rounding, per-class tables too."""
    assert actual.keys() == expected.keys()
    for key, value in expected.items():
        if isinstance(value, dict):
            assert_same_scores(actual[key], value)
        else:
            assert actual[key] == pytest.approx(value, abs=1e-9), key


def test_pairs_are_cut_longest_first_and_recorded(pair_model):
    model_dir, rows, _ = pair_model
    spec = bert_tf.load_model_directory(model_dir).task
    assert (spec.task, spec.text_pair, spec.truncation, spec.seq_length) == ("classify", True, "longest_first", 24)
    lengths = [(len(a.split()), len(b.split())) for a, b, _ in rows]
    assert sum(a + b > SEQ_LENGTH - 3 for a, b in lengths) >= 10  # truncation matters for many dev pairs


@pytest.mark.slow
def test_predict_evaluate_served_and_tflite_answers_agree(pair_model, tmp_path, capsys):
    model_dir, rows, dev = pair_model
    texts, pairs, labels = (list(column) for column in zip(*rows))
    pair_options = [option for pair in pairs for option in ("--pair", pair)]
    local = cli_json(capsys, "predict", "--model", str(model_dir), *texts, *pair_options)
    evaluated = cli_json(capsys, "evaluate", "--model", str(model_dir), "--data", str(dev))

    remote, remote_cli, served_scores = served(model_dir, tmp_path / "models", "pairs", lambda predictor, target: (
        predictor.classify(texts, pairs),
        cli_json(capsys, "predict", "--server", target, "--model", "pairs", *texts, *pair_options),
        cli_json(capsys, "evaluate", "--server", target, "--model", "pairs", "--data", str(dev))))
    assert_same_scores(served_scores, evaluated)  # the server's answers, scored, score as the model
    export = tmp_path / "models" / "pairs" / "1"
    assert_same_scores(cli_json(capsys, "evaluate", "--model", str(export), "--data", str(dev)), evaluated)
    assert remote_cli == [{"text": text, "text_b": pair, **result} for text, pair, result in zip(texts, pairs, remote)]

    names = sorted(local[0]["probabilities"])
    assert [answer["label"] for answer in remote] == [answer["label"] for answer in local]
    np.testing.assert_allclose([[a["probabilities"][n] for n in names] for a in remote],
                               [[a["probabilities"][n] for n in names] for a in local], atol=1e-5, rtol=0)
    served_accuracy = np.mean([answer["label"] == label for answer, label in zip(remote, labels)])
    assert served_accuracy == pytest.approx(evaluated["accuracy"], abs=1e-12)

    tflite = TfliteModel(export_tflite(model_dir, tmp_path / "pairs.tflite", inputs="text"))
    probabilities = tflite.predict_texts(texts, pairs)["probabilities"]
    np.testing.assert_allclose(probabilities, [[a["probabilities"][n] for n in names] for a in local],
                               atol=1e-5, rtol=0)


@pytest.mark.parametrize("quantize", ["bf16", "int8"])
@pytest.mark.slow
def test_quantized_versions_serve_the_float32_labels(pair_model, tmp_path, capsys, quantize):
    """`bert-tf export --quantize` (a bfloat16 SavedModel; int8: model.tflite), served by the development server:
    the labels of the float32 model, also for a text over the byte budget (cut alike on every path)."""
    model_dir, rows, _ = pair_model
    texts, pairs, _ = (list(column) for column in zip(*rows))
    texts, pairs = texts + ["the movie is " * 6000], pairs + ["great"]  # 72,000 bytes: over max_text_bytes
    pair_options = [option for pair in pairs for option in ("--pair", pair)]
    local = cli_json(capsys, "predict", "--model", str(model_dir), *texts, *pair_options)
    base = tmp_path / "models"
    assert main(["export", "--model", str(model_dir), "--out", str(base), "--name", "pairs", "--quantize", quantize]) == 0
    assert (base / "pairs/1" / ("model.tflite" if quantize == "int8" else "saved_model.pb")).is_file()
    with ModelServer("pairs", base / "pairs", poll_wait_s=0) as server:
        target = f"127.0.0.1:{server.grpc_port}"
        remote = cli_json(capsys, "predict", "--server", target, "--model", "pairs", *texts, *pair_options)
        with GrpcClient(target, model_name="pairs", signature_name="model_info") as client:
            info = client.predict({"request": [""]})
    assert info["quantization"][0] == quantize.encode()
    names = sorted(local[0]["probabilities"])
    assert [answer["label"] for answer in remote] == [answer["label"] for answer in local]
    np.testing.assert_allclose([[a["probabilities"][n] for n in names] for a in remote],
                               [[a["probabilities"][n] for n in names] for a in local], atol=0.02, rtol=0)


@pytest.mark.slow
def test_the_readme_ten_line_model_works_with_every_command(tmp_path, capsys):
    vocab = write_vocab(tmp_path)
    encoder = bert_tf.BertModel(bert_tf.BertConfig.from_json_file(write_bert_config(tmp_path)))
    preprocess = bert_tf.BertPreprocessor(bert_tf.BertTokenizer(vocab), seq_length=16)
    rows = [(f"{' '.join(random.Random(i).sample(NEUTRAL, 3))} {word}", int(word in POSITIVE))
            for i, word in enumerate(POSITIVE + NEGATIVE)]
    train = tf.data.Dataset.from_tensor_slices(([text for text, _ in rows], [label for _, label in rows])).batch(4)
    train = train.map(lambda text, label: (preprocess(text), label))
    keras.utils.set_random_seed(3)
    model = bert_tf.BertClassifier(encoder, num_classes=2, label_names=["negative", "positive"])
    model.compile(optimizer=bert_tf.create_optimizer(1e-3, num_train_steps=2 * len(train), num_warmup_steps=1))
    model.fit(train, epochs=2, verbose=0)
    model_dir = bert_tf.save_pretrained(model, tmp_path / "sst2_model", vocab_file=vocab, seq_length=16)

    texts = [text for text, _ in rows]
    expected = tf.nn.softmax(model(preprocess(tf.constant(texts)))).numpy()
    predicted = cli_json(capsys, "predict", "--model", str(model_dir), *texts)
    np.testing.assert_allclose([[p["probabilities"]["negative"], p["probabilities"]["positive"]] for p in predicted],
                               expected, atol=1e-5, rtol=0)
    data = tmp_path / "dev.tsv"
    data.write_text("sentence\tlabel\n" + "".join(f"{text}\t{['negative', 'positive'][label]}\n"
                                                  for text, label in rows))
    scores = cli_json(capsys, "evaluate", "--model", str(model_dir), "--data", str(data))
    assert scores["accuracy"] == pytest.approx(np.mean(expected.argmax(axis=1) == [label for _, label in rows]))
    assert main(["export", "--model", str(model_dir), "--out", str(tmp_path / "models"), "--name", "sst2"]) == 0
    with ModelServer("sst2", tmp_path / "models" / "sst2", poll_wait_s=0) as server:
        remote = cli_json(capsys, "predict", "--server", f"127.0.0.1:{server.grpc_port}", "--model", "sst2", *texts)
    assert [answer["label"] for answer in remote] == [answer["label"] for answer in predicted]


def test_first_format_directories_load_with_the_same_task(tmp_path):
    vocab = write_vocab(tmp_path)
    encoder = bert_tf.BertModel(bert_tf.BertConfig.from_json_file(write_bert_config(tmp_path)))
    model = bert_tf.BertSpanLabeler(encoder)
    directory = bert_tf.save_pretrained(model, tmp_path / "squad", vocab_file=vocab, seq_length=48,
                                        settings={"doc_stride": 16, "max_query_length": 8})
    spec = bert_tf.load_model_directory(directory).task
    metadata_file = directory / "bert_tf.json"
    metadata_file.write_text(json.dumps({"lower_case": True, "task": "squad", "seq_length": 48, "text_pair": False,
                                         "settings": {"doc_stride": 16, "max_query_length": 8, "max_answer_length": 30,
                                                      "n_best_size": 20, "null_score_threshold": 0.0,
                                                      "version_2": False}}))
    assert bert_tf.load_model_directory(directory).task == spec
    metadata_file.write_text(json.dumps({"task": "ner", "seq_length": 48}))
    with pytest.raises(ValueError, match=r"bert_tf.json: the task is 'ner', but the model is a BertSpanLabeler"):
        bert_tf.load_model_directory(directory)


def test_a_pretraining_run_folder_stands_for_its_model(tmp_path, capsys):
    vocab = write_vocab(tmp_path)
    encoder = bert_tf.BertModel(bert_tf.BertConfig.from_json_file(write_bert_config(tmp_path)))
    bert_tf.save_pretrained(bert_tf.BertPretrainer(encoder), tmp_path / "run" / "model", vocab_file=vocab)
    assert bert_tf.load_model_directory(tmp_path / "run").task.task == "pretrainer"
    assert main(["predict", "--model", str(tmp_path / "run"), "some text"]) == 2
    assert "holds a model without a task (an pretrainer)" in capsys.readouterr().err


def long_ner_sentences(n: int, seed: int) -> list[tuple[list[str], list[str]]]:
    """(words, BIO tags): 3 to 6 of the tiny NER sentences joined, 12 to 30 words (over 14 pieces: several windows)."""
    rng = random.Random(seed)
    sentences = []
    for _ in range(n):
        parts = [rng.choice(NER_SENTENCES) for _ in range(rng.randint(3, 6))]
        sentences.append(([w for words, _ in parts for w in words.split()], [t for _, tags in parts for t in tags.split()]))
    return sentences


def write_conll_sentences(path, sentences):
    lines = ["-DOCSTART- -X- -X- O", ""]
    for words, tags in sentences:
        lines += [f"{word} NN I-NP {tag}" for word, tag in zip(words, tags)] + [""]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.slow
def test_ner_tags_of_long_sentences_agree_on_every_path(tmp_path, capsys):
    train = write_conll_sentences(tmp_path / "train.txt", long_ner_sentences(48, seed=3))
    dev_sentences = long_ner_sentences(16, seed=4)
    dev = write_conll_sentences(tmp_path / "dev.txt", dev_sentences)
    model_dir = tmp_path / "ner_model"
    assert main(["finetune", "--task", "ner", "--train", str(train), "--init", str(write_bert_config(tmp_path)),
                 "--vocab", str(write_vocab(tmp_path)), "--out", str(model_dir), "--epochs", "3", "--batch-size", "8",
                 "--learning-rate", "1e-3", "--seq-length", "16"]) == 0
    texts = [" ".join(words) for words, _ in dev_sentences]
    local = cli_json(capsys, "predict", "--model", str(model_dir), *texts)
    evaluated = cli_json(capsys, "evaluate", "--model", str(model_dir), "--data", str(dev))

    recognized, served_scores = served(model_dir, tmp_path / "models", "ner", lambda predictor, target: (
        predictor.recognize(texts), cli_json(capsys, "evaluate", "--server", target, "--model", "ner", "--data", str(dev))))
    assert_same_scores(served_scores, evaluated)
    for result in local:
        result["entities"] = [{**entity, "score": pytest.approx(entity["score"], abs=1e-5)}
                              for entity in result["entities"]]
    assert [{"text": text, **result} for text, result in zip(texts, recognized)] == local
    assert sum(len(result["entities"]) for result in local) > 16
    remote = [list(zip(result["words"], result["tags"])) for result in recognized]
    assert all(len(tagged) == len(words) and "" not in dict(tagged).values()
               for tagged, (words, _) in zip(remote, dev_sentences))
    scores = ner_scores([tags for _, tags in dev_sentences], [[tag for _, tag in s] for s in remote])
    assert scores["f1"] == pytest.approx(evaluated["f1"], abs=1e-12) and evaluated["f1"] > 0.3, evaluated["f1"]
    assert scores["accuracy"] == pytest.approx(evaluated["accuracy"], abs=1e-12)


def long_squad_json(paragraphs: int, seed: int) -> dict:
    """SQuAD v1.1 JSON whose contexts are 25 to 35 tiny sentences (~150-250 tokens: several windows at seq 64)."""
    rng = random.Random(seed)
    data = []
    for number in range(paragraphs):
        sentences = [rng.choice(NER_SENTENCES)[0] for _ in range(rng.randint(25, 35))]
        context = " ".join(sentences)
        qas = []
        for index in rng.sample(range(len(sentences)), 4):
            answer = sentences[index].split()[0]  # the sentence's first word: mary, john, acme, ...
            start = len(" ".join(sentences[:index])) + (1 if index else 0)
            question = "who " + " ".join(sentences[index].split()[1:3]) + " ?"
            qas.append({"id": f"p{number}-{index}", "question": question,
                        "answers": [{"text": answer, "answer_start": start}]})
        data.append({"context": context, "qas": qas})
    return {"version": "1.1", "data": [{"title": "long", "paragraphs": data}]}


@pytest.mark.slow
def test_squad_answers_over_many_windows_agree_on_every_path(tmp_path, capsys):
    train, dev = tmp_path / "train.json", tmp_path / "dev.json"
    train.write_text(json.dumps(long_squad_json(12, seed=5)))
    dev_data = long_squad_json(5, seed=6)
    dev.write_text(json.dumps(dev_data))
    model_dir = tmp_path / "squad_model"
    assert main(["finetune", "--task", "squad", "--train", str(train), "--init",
                 str(write_bert_config(tmp_path, max_position_embeddings=128)), "--vocab", str(write_vocab(tmp_path)),
                 "--out", str(model_dir), "--epochs", "2", "--batch-size", "16", "--learning-rate", "1e-3",
                 "--seq-length", "64", "--doc-stride", "16", "--max-query-length", "8"]) == 0
    questions = [(qa["id"], qa["question"], paragraph["context"], [a["text"] for a in qa["answers"]])
                 for paragraph in dev_data["data"][0]["paragraphs"] for qa in paragraph["qas"]]
    ids, texts, contexts, truths = (list(column) for column in zip(*questions))
    question_options = [option for question, context in zip(texts, contexts)
                        for option in ("--question", question, "--context", context)]
    local = cli_json(capsys, "predict", "--model", str(model_dir), *question_options)
    evaluated = cli_json(capsys, "evaluate", "--model", str(model_dir), "--data", str(dev))

    remote, served_scores = served(model_dir, tmp_path / "models", "qa", lambda predictor, target: (
        predictor.answer(texts, contexts), cli_json(capsys, "evaluate", "--server", target, "--model", "qa", "--data",
                                                    str(dev))))
    assert_same_scores(served_scores, evaluated)
    assert [(a["text"], a["start"], a["end"]) for a in remote] == [(a["text"], a["start"], a["end"]) for a in local]
    np.testing.assert_allclose([[a["score"], a["probability"]] for a in remote],
                               [[a["score"], a["probability"]] for a in local], atol=1e-5, rtol=0)
    assert any(a["start"] > 200 for a in remote)  # answers beyond the first window are found
    scores = squad_scores({i: a["text"] for i, a in zip(ids, remote)}, dict(zip(ids, truths)))
    assert scores == pytest.approx({"exact_match": evaluated["exact_match"], "f1": evaluated["f1"]}, abs=1e-9)


def test_a_multi_label_threshold_is_applied_alike_locally_and_served(tmp_path):
    from bert_tf.prediction import Predictor

    vocab = write_vocab(tmp_path)
    encoder = bert_tf.BertModel(bert_tf.BertConfig.from_json_file(write_bert_config(tmp_path)))
    keras.utils.set_random_seed(4)
    model = bert_tf.BertClassifier(encoder, num_classes=3, mode="multi_label", label_names=["a", "b", "c"])
    texts = [" ".join(random.Random(i).sample(NEUTRAL + POSITIVE, 6)) for i in range(24)]
    probabilities = tf.sigmoid(model(bert_tf.BertPreprocessor(bert_tf.BertTokenizer(vocab), 16)(tf.constant(texts))))
    threshold = float(np.median(probabilities.numpy()))  # about half the labels chosen
    model_dir = bert_tf.save_pretrained(model, tmp_path / "topics", vocab_file=vocab, seq_length=16,
                                        settings={"multi_label_threshold": threshold})
    local = Predictor(model_dir).classify(texts)
    remote = served(model_dir, tmp_path / "models", "topics", lambda predictor, _: predictor.classify(texts))
    assert [answer["labels"] for answer in remote] == [answer["labels"] for answer in local]
    chosen = sum(len(answer["labels"]) for answer in local)
    assert 0 < chosen < 3 * len(texts)  # the threshold decides: neither none nor all
