"""Each raw text is cut to `max_text_bytes` UTF-8 bytes before tokenizing, on every path: the cut keeps
whole characters, `bert-tf predict` and the SavedModel agree past the budget for every task, and a huge
text costs the SavedModel memory bounded by the budget, not by the text."""

import numpy as np
import pytest
import tensorflow as tf

import bert_tf
from bert_tf.tasks.text_budget import cut_text
from serving.export.saved_model import export_saved_model
from tiny_exports import tiny_encoder, write_vocab

BUDGET = 40


def test_the_cut_keeps_whole_characters_and_leaves_short_texts_alone():
    texts = tf.constant(["naïve", "ab€z", "short", "", "x" * 10])
    assert cut_text(texts, 4).numpy().tolist() == [b"na\xc3\xaf", b"ab", b"shor", b"", b"xxxx"]
    assert cut_text(tf.constant([b"ok\xff"]), 8).numpy().tolist() == [b"ok\xff"]  # not cut: not transcoded


def model_directory(task, tmp_path):
    vocab = write_vocab(tmp_path)
    models = {"classify": lambda: bert_tf.BertClassifier(tiny_encoder(seed=21), num_classes=2),
              "ner": lambda: bert_tf.BertTokenClassifier(tiny_encoder(seed=22), num_labels=3),
              "squad": lambda: bert_tf.BertSpanLabeler(tiny_encoder(seed=23))}
    settings = {"max_text_bytes": BUDGET, **({"max_query_length": 4, "doc_stride": 4} if task == "squad" else {})}
    return bert_tf.save_pretrained(models[task](), tmp_path / task, vocab_file=vocab, seq_length=16,
                                   text_pair=task == "classify", settings=settings)


@pytest.mark.parametrize("task", ["classify", "ner", "squad"])
@pytest.mark.slow
def test_predict_and_the_saved_model_agree_on_texts_past_the_budget(task, tmp_path):
    from bert_tf.prediction import Predictor

    model_dir = model_directory(task, tmp_path)
    signatures = tf.saved_model.load(str(export_saved_model(model_dir, tmp_path / "models", task))).signatures
    long = "the film was very good , " * 6 + "paris"  # 155 bytes: "paris" lies past the budget
    texts = [long, "a dull film", "wörld " * 12]
    predictor = Predictor(model_dir)
    if task == "classify":
        local = predictor.classify(texts, list(reversed(texts)))
        served = signatures["serving_default"](text=tf.constant(texts), text_b=tf.constant(list(reversed(texts))))
        np.testing.assert_allclose(served["probabilities"].numpy(),
                                   [list(answer["probabilities"].values()) for answer in local], atol=1e-5)
    elif task == "ner":
        local = predictor.tag(texts)
        served = signatures["serving_default"](text=tf.constant(texts))
        words = [[word.decode() for word in row if word] for row in served["words"].numpy().tolist()]
        assert words == [[word for word, _ in tagged] for tagged in local]
        assert "paris" not in words[0]
    else:
        local = predictor.answer(["who lives in paris ?"] * 3, texts)
        served = signatures["serving_default"](question=tf.constant(["who lives in paris ?"] * 3),
                                               context=tf.constant(texts))
        assert [(a["text"], a["start"], a["end"]) for a in local] == [
            (t.decode(), s, e) for t, s, e in zip(served["answer_text"].numpy().tolist(),
                                                  served["answer_char_start"].numpy().tolist(),
                                                  served["answer_char_end"].numpy().tolist())]
        assert all(answer["end"] <= BUDGET for answer in local)


def resident_bytes() -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmRSS:"))


def test_a_huge_text_costs_memory_bounded_by_the_budget(tmp_path):
    model_dir = model_directory("classify", tmp_path)
    serve = tf.saved_model.load(str(export_saved_model(model_dir, tmp_path / "models", "clf",
                                                       max_text_bytes=4096))).signatures["serving_default"]
    text = "the film was good , " * 1_500_000  # 30 MB: tokenizing all of it would take ~2 GB
    expected = serve(text=tf.constant([text[:4096]]), text_b=tf.constant(["a"]))["probabilities"].numpy()
    before = resident_bytes()
    outputs = serve(text=tf.constant([text]), text_b=tf.constant(["a"]))["probabilities"].numpy()
    assert resident_bytes() - before < 300 * 2**20
    np.testing.assert_allclose(outputs, expected, atol=1e-6)
