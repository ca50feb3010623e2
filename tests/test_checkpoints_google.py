"""A checkpoint in Google's original format (TF1 Saver, official variable names) loads and matches."""

import json

import numpy as np
import pytest
import tensorflow as tf

import bert_tf
from bert_tf import BertConfig, BertModel

CONFIG = BertConfig(vocab_size=80, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                    intermediate_size=48, max_position_embeddings=24)


def write_google_checkpoint(variables: dict, directory, google_config: dict):
    """Writes `variables` (full names → arrays) with TF1's Saver, exactly as google-research/bert did."""
    with tf.Graph().as_default():
        tf1_variables = [tf.compat.v1.Variable(value, name=name) for name, value in variables.items()]
        saver = tf.compat.v1.train.Saver(tf1_variables)
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            saver.save(session, str(directory / "bert_model.ckpt"), write_meta_graph=False, write_state=False)
    (directory / "bert_config.json").write_text(json.dumps(google_config))
    (directory / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]) + "\n")


@pytest.fixture
def reference_and_checkpoint(tmp_path):
    rng = np.random.default_rng(0)
    reference = BertModel(CONFIG)
    variables = {}
    for name, variable in reference.google_weights().items():
        value = rng.normal(0.0, 0.2, variable.shape).astype(np.float32)
        variable.assign(value)
        variables[f"bert/{name}"] = value
        variables[f"bert/{name}/adam_m"] = np.zeros_like(value)  # optimizer slots, as in real checkpoints
    variables["cls/predictions/output_bias"] = rng.normal(size=CONFIG.vocab_size).astype(np.float32)
    variables["cls/seq_relationship/output_weights"] = rng.normal(size=(2, CONFIG.hidden_size)).astype(np.float32)
    variables["global_step"] = np.int64(1000)
    write_google_checkpoint(variables, tmp_path, CONFIG.to_google_dict())
    return reference, tmp_path


def test_checkpoint_loads_and_matches(reference_and_checkpoint):
    reference, directory = reference_and_checkpoint
    model = bert_tf.from_pretrained(directory)
    assert model.config == CONFIG
    assert model.vocab_file == directory / "vocab.txt"
    ids = np.array([[2, 10, 11, 12, 3, 0, 0], [2, 40, 3, 50, 60, 3, 0]], dtype=np.int32)
    batch = {"input_word_ids": ids, "input_mask": (ids > 0).astype(np.int32),
             "input_type_ids": np.array([[0] * 7, [0, 0, 0, 1, 1, 1, 0]], dtype=np.int32)}
    ours, theirs = model(batch), reference(batch)
    np.testing.assert_array_equal(ours["sequence_output"], theirs["sequence_output"])
    np.testing.assert_array_equal(ours["pooled_output"], theirs["pooled_output"])


def test_head_weights_are_kept_and_trainer_state_ignored(reference_and_checkpoint):
    _, directory = reference_and_checkpoint
    contents = bert_tf.read_checkpoint(directory / "bert_model.ckpt")  # a prefix works as well as the directory
    assert sorted(contents.head_weights()) == ["cls/predictions/output_bias", "cls/seq_relationship/output_weights"]
    assert "global_step" in contents.ignored and all(
        name.endswith("adam_m") for name in contents.ignored if name != "global_step")
    assert contents.unrecognized == []


def test_missing_config_is_a_clear_error(reference_and_checkpoint):
    _, directory = reference_and_checkpoint
    (directory / "bert_config.json").unlink()
    with pytest.raises((FileNotFoundError, ValueError), match="bert_config.json|not a BERT checkpoint"):
        bert_tf.from_pretrained(directory)


def test_google_gelu_is_the_tanh_approximation(tmp_path):
    """Google's "gelu" computes google-research/bert's `modeling.gelu`, Hugging Face's "gelu_new"."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    shape = dict(vocab_size=80, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128,
                 max_position_embeddings=24, type_vocab_size=2)
    google_config = {**shape, "hidden_act": "gelu", "initializer_range": 0.5, "hidden_dropout_prob": 0.1,
                     "attention_probs_dropout_prob": 0.1}  # a bert_config.json as Google ships it
    torch.manual_seed(0)
    reference = transformers.BertModel(transformers.BertConfig(
        **shape, hidden_act="gelu_new", initializer_range=0.5, attn_implementation="eager")).eval()
    with torch.no_grad():  # GELU inputs around -2.7, where the two GELUs differ most for their size
        for layer in reference.encoder.layer:
            layer.intermediate.dense.bias.fill_(-2.7)
    reference.save_pretrained(tmp_path / "hf")
    weights = bert_tf.read_checkpoint(tmp_path / "hf").weights
    write_google_checkpoint({f"bert/{name}": value for name, value in weights.items()}, tmp_path, google_config)

    model = bert_tf.from_pretrained(tmp_path)
    assert model.config.hidden_act == "gelu_tanh"
    exact = bert_tf.from_pretrained(tmp_path, config=model.config.replace(hidden_act="gelu"))
    ids = np.array([[2, 10, 11, 12, 3, 0, 0], [2, 40, 3, 50, 60, 3, 0]], dtype=np.int32)
    mask, types = (ids > 0).astype(np.int32), np.array([[0] * 7, [0, 0, 0, 1, 1, 1, 0]], dtype=np.int32)
    with torch.no_grad():
        expected = reference(input_ids=torch.tensor(ids, dtype=torch.long),
                             attention_mask=torch.tensor(mask, dtype=torch.long),
                             token_type_ids=torch.tensor(types, dtype=torch.long)).last_hidden_state.numpy()
    batch = {"input_word_ids": ids, "input_mask": mask, "input_type_ids": types}
    np.testing.assert_allclose(model(batch)["sequence_output"], expected, atol=1e-4)
    assert np.abs(exact(batch)["sequence_output"] - expected).max() > 1e-3

    bert_tf.write_hf_directory(model, tmp_path / "export")
    assert json.loads((tmp_path / "export" / "config.json").read_text())["hidden_act"] == "gelu_pytorch_tanh"
    assert model.config.to_google_dict()["hidden_act"] == "gelu"
