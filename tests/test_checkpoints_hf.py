"""Parity with Hugging Face transformers: the same weights give the same numbers."""

import json
import pickle

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import bert_tf  # noqa: E402
from bert_tf import BertConfig  # noqa: E402
from bert_tf.checkpoints import CheckpointMismatchError  # noqa: E402
from bert_tf.checkpoints.huggingface import google_to_hf_name, hf_to_google_name  # noqa: E402

CONFIGS = {
    "small": BertConfig(vocab_size=120, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=128, max_position_embeddings=40),
    "odd": BertConfig(vocab_size=1000, hidden_size=96, num_hidden_layers=3, num_attention_heads=3,
                      intermediate_size=200, type_vocab_size=3, max_position_embeddings=33),
    "gelu_tanh": BertConfig(vocab_size=90, hidden_size=48, num_hidden_layers=2, num_attention_heads=2,
                            intermediate_size=64, hidden_act="gelu_tanh", max_position_embeddings=20),
    "relu": BertConfig(vocab_size=90, hidden_size=48, num_hidden_layers=1, num_attention_heads=6,
                       intermediate_size=64, hidden_act="relu", max_position_embeddings=20, layer_norm_eps=1e-5),
}


def random_hf_model(config: BertConfig, cls=None, seed=0):
    """A transformers model with every parameter random (LayerNorms too), in eval mode."""
    torch.manual_seed(seed)
    settings = {k: v for k, v in config.to_hf_dict().items() if k != "architectures"}
    hf_config = transformers.BertConfig(**settings, attn_implementation="eager")
    model = (cls or transformers.BertModel)(hf_config).eval()
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.normal_(0.0, 0.2)
    return model


def padded_batch(config: BertConfig, seq=None, seed=1):
    seq = seq or min(config.max_position_embeddings, 17)
    rng = np.random.default_rng(seed)
    ids = rng.integers(1, config.vocab_size, size=(3, seq), dtype=np.int32)
    lengths = [seq, seq - 5, 3]
    mask = (np.arange(seq)[None, :] < np.array(lengths)[:, None]).astype(np.int32)
    types = rng.integers(0, config.type_vocab_size, size=(3, seq), dtype=np.int32) * mask
    return {"input_word_ids": ids * mask, "input_mask": mask, "input_type_ids": types}


def hf_outputs(model, batch):
    with torch.no_grad():
        out = model(input_ids=torch.tensor(batch["input_word_ids"], dtype=torch.long),
                    attention_mask=torch.tensor(batch["input_mask"], dtype=torch.long),
                    token_type_ids=torch.tensor(batch["input_type_ids"], dtype=torch.long),
                    output_hidden_states=True, output_attentions=True)
    return out


def assert_same_outputs(ours, batch, hf_model, atol=1e-4):
    theirs = hf_outputs(hf_model, batch)
    mine = ours(batch, output_attentions=True)
    np.testing.assert_allclose(mine["sequence_output"].numpy(), theirs.last_hidden_state.numpy(), atol=atol)
    np.testing.assert_allclose(mine["pooled_output"].numpy(), theirs.pooler_output.numpy(), atol=atol)
    np.testing.assert_allclose(mine["embedding_output"].numpy(), theirs.hidden_states[0].numpy(), atol=atol)
    assert len(mine["encoder_outputs"]) == len(theirs.hidden_states) - 1
    for layer, (a, b) in enumerate(zip(mine["encoder_outputs"], theirs.hidden_states[1:])):
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=atol, err_msg=f"layer {layer}")
    for layer, (a, b) in enumerate(zip(mine["attention_probs"], theirs.attentions)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=atol, err_msg=f"attention of layer {layer}")


@pytest.mark.parametrize("name", list(CONFIGS))
def test_import_matches_transformers(tmp_path, name):
    config = CONFIGS[name]
    hf_model = random_hf_model(config)
    hf_model.save_pretrained(tmp_path)
    ours = bert_tf.from_pretrained(tmp_path)
    assert ours.config == config
    assert_same_outputs(ours, padded_batch(config), hf_model)


def test_pytorch_bin_and_pretraining_heads(tmp_path):
    config = CONFIGS["small"]
    hf_model = random_hf_model(config, cls=transformers.BertForPreTraining)
    hf_model.config.save_pretrained(tmp_path)
    torch.save(hf_model.state_dict(), tmp_path / "pytorch_model.bin")
    contents = bert_tf.read_checkpoint(tmp_path)
    assert sorted(contents.head_weights()) == [
        "cls/predictions/output_bias", "cls/predictions/transform/LayerNorm/beta",
        "cls/predictions/transform/LayerNorm/gamma", "cls/predictions/transform/dense/bias",
        "cls/predictions/transform/dense/kernel", "cls/seq_relationship/output_bias",
        "cls/seq_relationship/output_weights"]
    np.testing.assert_array_equal(contents.weights["cls/predictions/transform/dense/kernel"],
                                  hf_model.cls.predictions.transform.dense.weight.detach().numpy().T)
    assert contents.unrecognized == []
    ours = bert_tf.from_pretrained(tmp_path)
    assert_same_outputs(ours, padded_batch(config), hf_model.bert)


def test_pickle_with_code_is_refused(tmp_path):
    """A pytorch_model.bin that would run code when unpickled is rejected, and the code never runs."""
    marker = tmp_path / "pwned"

    class Exploit:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    CONFIGS["small"].write_json(tmp_path / "config.json", style="hf")
    with open(tmp_path / "pytorch_model.bin", "wb") as f:
        pickle.dump({"embeddings.word_embeddings.weight": Exploit()}, f)
    with pytest.raises(ValueError, match=r"pytorch_model.bin was refused: it is not a pickle of tensors only"):
        bert_tf.read_checkpoint(tmp_path)
    assert not marker.exists()


def test_round_trip_to_transformers(tmp_path):
    config = CONFIGS["odd"]
    hf_model = random_hf_model(config, seed=3)
    hf_model.save_pretrained(tmp_path / "source")
    ours = bert_tf.from_pretrained(tmp_path / "source")
    bert_tf.write_hf_directory(ours, tmp_path / "exported")
    reloaded = transformers.BertModel.from_pretrained(tmp_path / "exported", attn_implementation="eager").eval()
    assert_same_outputs(ours, padded_batch(config), reloaded)
    assert json.loads((tmp_path / "exported" / "config.json").read_text())["hidden_size"] == 96


def test_name_rules_are_inverse():
    names = bert_tf.BertModel(CONFIGS["small"]).google_weights()
    for name in list(names) + ["cls/predictions/output_bias", "cls/seq_relationship/output_weights",
                               "cls/predictions/transform/LayerNorm/gamma"]:
        assert hf_to_google_name(google_to_hf_name(name)) == name
    assert hf_to_google_name("bert.encoder.layer.11.attention.output.LayerNorm.gamma") == \
        "encoder/layer_11/attention/output/LayerNorm/gamma"
    assert hf_to_google_name("classifier.weight") is None


def test_config_that_disagrees_with_weights_is_an_error(tmp_path):
    random_hf_model(CONFIGS["small"]).save_pretrained(tmp_path)
    data = json.loads((tmp_path / "config.json").read_text())
    data["intermediate_size"] = 256
    (tmp_path / "config.json").write_text(json.dumps(data))
    with pytest.raises(CheckpointMismatchError, match=r"intermediate/dense/kernel: checkpoint \(64, 128\) vs BertModel \(64, 256\)"):
        bert_tf.from_pretrained(tmp_path)


def test_missing_variables_are_named_and_nothing_is_loaded(tmp_path):
    from safetensors.numpy import load_file, save_file

    random_hf_model(CONFIGS["small"]).save_pretrained(tmp_path)
    tensors = load_file(str(tmp_path / "model.safetensors"))
    del tensors["pooler.dense.weight"]
    save_file(tensors, str(tmp_path / "model.safetensors"))
    with pytest.raises(CheckpointMismatchError, match="missing from the checkpoint: pooler/dense/kernel"):
        bert_tf.from_pretrained(tmp_path)


def test_unrecognized_variables_are_reported(tmp_path, caplog):
    hf_model = random_hf_model(CONFIGS["small"], cls=transformers.BertForSequenceClassification)
    hf_model.save_pretrained(tmp_path)
    with caplog.at_level("WARNING", logger="bert_tf"):
        bert_tf.from_pretrained(tmp_path)
    assert "classifier.weight" in caplog.text and "classifier.bias" in caplog.text


def test_missing_files_are_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="Checkpoint not found"):
        bert_tf.from_pretrained(tmp_path / "nowhere")
    CONFIGS["small"].write_json(tmp_path / "config.json", style="hf")
    with pytest.raises(FileNotFoundError, match="No model.safetensors or pytorch_model.bin"):
        bert_tf.from_pretrained(tmp_path)


def test_preset_without_local_weights_explains(tmp_path, monkeypatch):
    monkeypatch.setenv("BERT_TF_HOME", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="never downloads"):
        bert_tf.from_pretrained("tiny")


def test_pretraining_heads_match_transformers(tmp_path):
    config = CONFIGS["odd"]
    hf_model = random_hf_model(config, cls=transformers.BertForPreTraining, seed=5)
    hf_model.save_pretrained(tmp_path)
    pretrainer = bert_tf.BertPretrainer.from_pretrained(tmp_path)
    batch = padded_batch(config)
    positions = np.array([[1, 4, 9], [2, 3, 0], [1, 2, 0]], dtype=np.int32)
    ours = pretrainer({**batch, "masked_lm_positions": positions})
    with torch.no_grad():
        theirs = hf_model(input_ids=torch.tensor(batch["input_word_ids"], dtype=torch.long),
                          attention_mask=torch.tensor(batch["input_mask"], dtype=torch.long),
                          token_type_ids=torch.tensor(batch["input_type_ids"], dtype=torch.long))
    expected_mlm = np.take_along_axis(theirs.prediction_logits.numpy(), positions[:, :, None], axis=1)
    np.testing.assert_allclose(ours["mlm_logits"].numpy(), expected_mlm, atol=1e-3, rtol=1e-5)
    np.testing.assert_allclose(ours["nsp_logits"].numpy(), theirs.seq_relationship_logits.numpy(), atol=1e-4)


def task_models(config: BertConfig) -> dict:
    """A random bert-tf model of every task (its own weights: the heads too), and the transformers class it becomes."""
    import keras

    keras.utils.set_random_seed(9)
    return {
        "classify": (bert_tf.BertClassifier(bert_tf.BertModel(config), num_classes=3, label_names=["a", "b", "c"]),
                     transformers.BertForSequenceClassification),
        "multi_label": (bert_tf.BertClassifier(bert_tf.BertModel(config), num_classes=2, mode="multi_label"),
                        transformers.BertForSequenceClassification),
        "ner": (bert_tf.BertTokenClassifier(bert_tf.BertModel(config), num_labels=4,
                                            label_names=["O", "B-PER", "I-PER", "B-LOC"]),
                transformers.BertForTokenClassification),
        "squad": (bert_tf.BertSpanLabeler(bert_tf.BertModel(config)), transformers.BertForQuestionAnswering),
    }


@pytest.mark.parametrize("task", ["classify", "multi_label", "ner", "squad"])
def test_task_models_written_for_transformers_answer_alike(tmp_path, task):
    """A fine-tuned model keeps its head in Hugging Face's format: transformers' BertFor* class for the task loads
    it with nothing missing or left over and gives the same logits, with the label names and problem type."""
    config = CONFIGS["odd"]
    model, hf_class = task_models(config)[task]
    bert_tf.write_hf_task_model(model, tmp_path)
    written = json.loads((tmp_path / "config.json").read_text())
    assert written["architectures"] == [hf_class.__name__]
    hf_model, loading = hf_class.from_pretrained(tmp_path, output_loading_info=True)
    assert not any(loading.values()), loading  # no missing, unexpected or mismatched weights
    batch = padded_batch(config)
    with torch.no_grad():
        theirs = hf_model.eval()(input_ids=torch.tensor(batch["input_word_ids"], dtype=torch.long),
                                 attention_mask=torch.tensor(batch["input_mask"], dtype=torch.long),
                                 token_type_ids=torch.tensor(batch["input_type_ids"], dtype=torch.long))
    ours = model(batch, training=False)
    mask = batch["input_mask"].astype(bool) if task in ("ner", "squad") else slice(None)  # bert-tf masks padding
    if task == "squad":
        np.testing.assert_allclose(ours["start_logits"].numpy()[mask], theirs.start_logits.numpy()[mask], atol=1e-4)
        np.testing.assert_allclose(ours["end_logits"].numpy()[mask], theirs.end_logits.numpy()[mask], atol=1e-4)
        return
    np.testing.assert_allclose(np.asarray(ours)[mask], theirs.logits.numpy()[mask], atol=1e-4)
    if task in ("classify", "ner"):
        assert list(hf_model.config.id2label.values()) == model.label_names
    if task == "multi_label":
        assert hf_model.config.problem_type == "multi_label_classification"


@pytest.mark.parametrize("task", ["classify", "multi_label", "ner", "squad"])
def test_task_models_of_transformers_read_with_their_heads(tmp_path, task):
    """transformers' BertFor* task directories read as bert-tf task models (head, labels, mode): the same logits."""
    config = CONFIGS["odd"]
    _, hf_class = task_models(config)[task]
    settings = {"classify": {"id2label": {0: "neg", 1: "neutral", 2: "pos"}},
                "multi_label": {"num_labels": 4, "problem_type": "multi_label_classification"},
                "ner": {"id2label": {0: "O", 1: "B-PER", 2: "I-PER"}}, "squad": {}}[task]
    hf_settings = {k: v for k, v in config.to_hf_dict().items() if k != "architectures"}
    hf_model = hf_class(transformers.BertConfig(**hf_settings, **settings, attn_implementation="eager")).eval()
    with torch.no_grad():
        for parameter in hf_model.parameters():
            parameter.normal_(0.0, 0.2)
    hf_model.save_pretrained(tmp_path)
    model = bert_tf.read_hf_task_model(tmp_path)
    expected_class = {"classify": bert_tf.BertClassifier, "multi_label": bert_tf.BertClassifier,
                      "ner": bert_tf.BertTokenClassifier, "squad": bert_tf.BertSpanLabeler}[task]
    assert type(model) is expected_class
    if task in ("classify", "ner"):
        assert model.label_names == list(settings["id2label"].values())
    if task == "multi_label":
        assert model.mode == "multi_label" and model.num_classes == 4
    batch = padded_batch(config)
    with torch.no_grad():
        theirs = hf_model(input_ids=torch.tensor(batch["input_word_ids"], dtype=torch.long),
                          attention_mask=torch.tensor(batch["input_mask"], dtype=torch.long),
                          token_type_ids=torch.tensor(batch["input_type_ids"], dtype=torch.long))
    ours = model(batch, training=False)
    mask = batch["input_mask"].astype(bool) if task in ("ner", "squad") else slice(None)
    if task == "squad":
        np.testing.assert_allclose(ours["start_logits"].numpy()[mask], theirs.start_logits.numpy()[mask], atol=1e-3)
        np.testing.assert_allclose(ours["end_logits"].numpy()[mask], theirs.end_logits.numpy()[mask], atol=1e-3)
    else:
        np.testing.assert_allclose(np.asarray(ours)[mask], theirs.logits.numpy()[mask], atol=1e-3)
    assert bert_tf.read_hf_task_model(write_plain_encoder(tmp_path / "plain", config)) is None
    with pytest.raises(ValueError, match="written with bert_tf.write_hf_task_model"):
        bert_tf.write_hf_directory(model, tmp_path / "wrong")


def write_plain_encoder(directory, config):
    random_hf_model(config).save_pretrained(directory)
    return directory


def test_a_folder_saved_by_transformers_5_gives_its_vocabulary_from_tokenizer_json(tmp_path):
    # transformers 5 saves a tokenizer as tokenizer.json and tokenizer_config.json only: no vocab.txt.
    config = CONFIGS["small"]
    random_hf_model(config).save_pretrained(tmp_path / "model")
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "##s", "sat"]
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(tokens) + "\n", encoding="utf-8")
    transformers.BertTokenizer(str(vocab), do_lower_case=True).save_pretrained(tmp_path / "model")
    assert not (tmp_path / "model" / "vocab.txt").exists() and (tmp_path / "model" / "tokenizer.json").is_file()
    encoder = bert_tf.from_pretrained(tmp_path / "model")
    assert encoder.lower_case is True
    assert encoder.vocab_file.read_text(encoding="utf-8").split("\n")[:len(tokens)] == tokens
    assert bert_tf.BertTokenizer(encoder.vocab_file, lower_case=True).tokenize(["The cats sat"]).to_list() == [
        [5, 6, 7, 8]]
