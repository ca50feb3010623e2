"""Sentence-transformers' model folder both ways: the same weights give the same vectors in both libraries."""

import json

import numpy as np
import pytest

sentence_transformers = pytest.importorskip("sentence_transformers")

import bert_tf  # noqa: E402
from bert_tf_cli import main  # noqa: E402

TEXTS = ["good film", "the plot was bad", "mary and john", "a bad film and a good plot"]


def st_vectors(folder) -> np.ndarray:
    model = sentence_transformers.SentenceTransformer(str(folder), device="cpu")
    return model.encode(TEXTS, convert_to_numpy=True)


def bert_tf_vectors(model_dir) -> np.ndarray:
    return bert_tf.load_model_directory(model_dir).model.predict(TEXTS, verbose=0)


def test_an_embedding_model_written_for_sentence_transformers_gives_its_vectors_there(embedder_dir, tmp_path):
    assert main(["convert", "--from", str(embedder_dir), "--to", str(tmp_path / "st"),
                 "--format", "sentence-transformers"]) == 0
    np.testing.assert_allclose(st_vectors(tmp_path / "st"), bert_tf_vectors(embedder_dir), atol=1e-5)
    # and read back: the same model, its pooling, normalisation and length kept
    assert main(["convert", "--from", str(tmp_path / "st"), "--to", str(tmp_path / "back")]) == 0
    back = bert_tf.load_model_directory(tmp_path / "back")
    assert (back.task.task, back.task.pooling, back.task.normalize, back.task.seq_length) == ("embed", "mean", True, 16)
    np.testing.assert_allclose(bert_tf_vectors(tmp_path / "back"), bert_tf_vectors(embedder_dir), atol=1e-6)


def test_a_model_saved_by_sentence_transformers_reads_with_its_pooling(embedder_dir, tmp_path):
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer

    encoder = bert_tf.load_model_directory(embedder_dir).encoder
    bert_tf.write_hf_directory(encoder, tmp_path / "hf", vocab_file=embedder_dir / "vocab.txt", lower_case=True)
    transformer = Transformer(str(tmp_path / "hf"), max_seq_length=12)
    theirs = sentence_transformers.SentenceTransformer(
        modules=[transformer, Pooling(transformer.get_embedding_dimension(), "cls"), Normalize()], device="cpu")
    theirs.save(str(tmp_path / "saved"))  # sentence-transformers 6's layout, no vocab.txt
    assert main(["convert", "--from", str(tmp_path / "saved"), "--to", str(tmp_path / "ours")]) == 0
    ours = bert_tf.load_model_directory(tmp_path / "ours")
    assert (ours.task.pooling, ours.task.normalize, ours.task.seq_length) == ("cls", True, 12)
    np.testing.assert_allclose(bert_tf_vectors(tmp_path / "ours"), theirs.encode(TEXTS, convert_to_numpy=True),
                               atol=1e-5)


def test_a_projected_embedder_is_a_dense_module_there(embedder_dir, tmp_path):
    import keras

    directory = bert_tf.load_model_directory(embedder_dir)
    keras.utils.set_random_seed(5)
    projected = bert_tf.BertEmbedder(directory.encoder, embedding_size=24)  # a distilled student's projection
    bert_tf.save_pretrained(projected, tmp_path / "projected", vocab_file=embedder_dir / "vocab.txt",
                            task=directory.task.replace(embedding_size=24))
    assert main(["convert", "--from", str(tmp_path / "projected"), "--to", str(tmp_path / "st"),
                 "--format", "sentence-transformers"]) == 0
    ours = bert_tf_vectors(tmp_path / "projected")
    assert ours.shape == (len(TEXTS), 24)
    np.testing.assert_allclose(st_vectors(tmp_path / "st"), ours, atol=1e-5)
    assert main(["convert", "--from", str(tmp_path / "st"), "--to", str(tmp_path / "back")]) == 0
    np.testing.assert_allclose(bert_tf_vectors(tmp_path / "back"), ours, atol=1e-6)


def test_a_folder_with_a_module_bert_tf_lacks_is_refused_in_one_line(embedder_dir, tmp_path, capsys):
    assert main(["convert", "--from", str(embedder_dir), "--to", str(tmp_path / "st"),
                 "--format", "sentence-transformers"]) == 0
    modules = json.loads((tmp_path / "st" / "modules.json").read_text())
    modules.append({"idx": 3, "name": "3", "path": "3_Dense", "type": "sentence_transformers.models.Dense"})
    (tmp_path / "st" / "modules.json").write_text(json.dumps(modules))
    assert main(["convert", "--from", str(tmp_path / "st"), "--to", str(tmp_path / "out")]) != 0
    error = capsys.readouterr().err.strip().splitlines()
    assert error == [f"bert-tf convert: error: {tmp_path / 'st' / 'modules.json'}: modules Transformer → Pooling → Normalize → Dense; "
                     "bert-tf reads a Transformer, a Pooling, an optional Dense and an optional Normalize."]


def test_only_an_embedding_model_is_written_as_a_sentence_transformers_folder(tmp_path, capsys):
    from tiny_finetune_files import write_vocab

    vocab = write_vocab(tmp_path)
    encoder = bert_tf.BertModel(bert_tf.BertConfig.preset("tiny", vocab_size=len(vocab.read_text().split())))
    classifier = bert_tf.save_pretrained(bert_tf.BertClassifier(encoder, num_classes=2), tmp_path / "classifier",
                                         vocab_file=vocab, seq_length=16)
    assert main(["convert", "--from", str(classifier), "--to", str(tmp_path / "st"),
                 "--format", "sentence-transformers"]) != 0
    assert capsys.readouterr().err.strip() == ("bert-tf convert: error: --format sentence-transformers writes embed models; this is a "
                                               "classify model.")


def test_the_command_line_names_every_folder_format_of_the_registry():
    from bert_tf.tasks.registry import FOLDER_FORMATS
    from bert_tf_cli.convert import FOLDER_FORMAT_NAMES

    assert FOLDER_FORMAT_NAMES == tuple(FOLDER_FORMATS)
