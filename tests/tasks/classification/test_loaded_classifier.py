"""A classifier loaded from its model directory is ready to train as KerasHub's task models are: compiled with its
task's loss and metrics, taking its own label names as labels; and saved again without arguments, it is the model it
was (vocabulary, casing, sequence length, columns, labels)."""

import keras
import numpy as np
import pytest
from tiny_finetune_files import VOCAB, write_vocab

import bert_tf
from bert_tf.tasks.spec import TaskSpec

TEXTS = ["a good film", "a bad plot", "the film was fine", "an awful film"]
LABELS = ["positive", "negative", "positive", "negative"]


@pytest.fixture(scope="module")
def classifier_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("classifier")
    vocab = write_vocab(folder)
    keras.utils.set_random_seed(1)
    encoder = bert_tf.BertModel(bert_tf.BertConfig(vocab_size=len(VOCAB), hidden_size=16, num_hidden_layers=1,
                                                   num_attention_heads=2, intermediate_size=32,
                                                   max_position_embeddings=32))
    model = bert_tf.BertClassifier(encoder, num_classes=2, label_names=["negative", "positive"])
    spec = TaskSpec.of("classify", seq_length=24, columns=("review", None, "stars"),
                    label_names=("negative", "positive"))
    return bert_tf.save_pretrained(model, folder / "model", vocab_file=vocab, lower_case=True, task=spec)


def test_a_loaded_classifier_trains_on_its_label_names_without_compile(classifier_dir):
    model = bert_tf.load_model_directory(classifier_dir).model
    assert type(model.loss).__name__ == "SparseCategoricalCrossentropy"
    before = [weight.numpy().copy() for weight in model.classifier.weights]
    history = model.fit(TEXTS, LABELS, epochs=1, batch_size=2, verbose=0,
                        validation_data=(TEXTS[:2], LABELS[:2])).history
    assert np.isfinite(history["loss"][0]) and "accuracy" in history and "val_accuracy" in history
    assert any(not np.allclose(old, new.numpy()) for old, new in zip(before, model.classifier.weights))
    ids = model.label_ids(LABELS)
    assert ids.tolist() == [1, 0, 1, 0] and ids.dtype == np.int32
    assert np.isfinite(model.evaluate(TEXTS, LABELS, verbose=0)[0])
    assert model.label_ids([1, 0]) == [1, 0]  # class ids pass as they are


def test_an_unknown_label_name_is_refused_in_one_line(classifier_dir):
    model = bert_tf.load_model_directory(classifier_dir).model
    with pytest.raises(ValueError, match=r"^BertClassifier: labels \['neutral'\] are not among the model's label names "
                                         r"\['negative', 'positive'\]\.$"):
        model.fit(TEXTS[:2], ["neutral", "positive"], epochs=1, verbose=0)


def test_a_loaded_model_saved_again_is_the_model_it_was(classifier_dir, tmp_path):
    loaded = bert_tf.load_model_directory(classifier_dir)
    again = bert_tf.load_model_directory(bert_tf.save_pretrained(loaded.model, tmp_path / "again"))
    assert again.task == loaded.task and again.task.seq_length == 24 and again.task.columns == ("review", None, "stars")
    assert again.lower_case is True
    assert (tmp_path / "again" / "vocab.txt").read_text() == (classifier_dir / "vocab.txt").read_text()
    np.testing.assert_allclose(again.model.predict(TEXTS, verbose=0), loaded.model.predict(TEXTS, verbose=0),
                               atol=1e-6)
