import json

import pytest

from bert_tf import BertConfig


def test_defaults_are_bert_base():
    config = BertConfig()
    assert (config.hidden_size, config.num_hidden_layers, config.num_attention_heads) == (768, 12, 12)
    assert config.hidden_act == "gelu" and config.head_size == 64


@pytest.mark.parametrize(
    "name, layers, hidden, heads",
    [("tiny", 2, 128, 2), ("mini", 4, 256, 4), ("small", 4, 512, 8), ("medium", 8, 512, 8),
     ("base", 12, 768, 12), ("large", 24, 1024, 16), ("bert_L10_H256", 10, 256, 4)],
)
def test_presets(name, layers, hidden, heads):
    config = BertConfig.preset(name)
    assert (config.num_hidden_layers, config.hidden_size, config.num_attention_heads) == (layers, hidden, heads)
    assert config.intermediate_size == 4 * hidden


def test_all_24_small_berts_and_large_are_presets():
    names = [n for n in BertConfig.preset_names() if n.startswith("bert_L")]
    assert len(names) == 25
    for name in names:
        BertConfig.preset(name)


def test_unknown_preset_lists_known_ones():
    with pytest.raises(ValueError, match="Unknown BERT preset 'huge'.*tiny"):
        BertConfig.preset("huge")


@pytest.mark.parametrize(
    "changes, message",
    [({"hidden_size": 100, "num_attention_heads": 3}, "divisible"),
     ({"vocab_size": 0}, "vocab_size must be a positive integer"),
     ({"hidden_act": "swish"}, "unknown hidden_act"),
     ({"hidden_dropout_prob": 1.5}, "hidden_dropout_prob")],
)
def test_validation_messages(changes, message):
    with pytest.raises(ValueError, match=message):
        BertConfig(**changes)


@pytest.mark.parametrize("alias, canonical", [("gelu_new", "gelu_tanh"), ("gelu_pytorch_tanh", "gelu_tanh"), ("relu", "relu")])
def test_activation_aliases(alias, canonical):
    assert BertConfig(hidden_act=alias).hidden_act == canonical


@pytest.mark.parametrize("style, file_name", [("google", "bert_config.json"), ("hf", "config.json")])
@pytest.mark.parametrize("hidden_act", ["gelu", "gelu_tanh", "relu"])
def test_json_round_trip(tmp_path, style, file_name, hidden_act):
    config = BertConfig(vocab_size=1000, hidden_size=96, num_attention_heads=3, type_vocab_size=3, hidden_act=hidden_act)
    path = tmp_path / file_name
    config.write_json(path, style=style)
    assert BertConfig.from_json_file(path) == config
    if style == "hf":
        assert json.loads(path.read_text())["model_type"] == "bert"


@pytest.mark.parametrize("hidden_act, google_name, hf_name",
                         [("gelu_tanh", "gelu", "gelu_pytorch_tanh"), ("gelu", "gelu_exact", "gelu"), ("relu", "relu", "relu")])
def test_activation_names_per_format(hidden_act, google_name, hf_name):
    # google-research/bert's "gelu" is the tanh approximation, and it has no exact GELU.
    config = BertConfig(hidden_act=hidden_act)
    assert (config.to_google_dict()["hidden_act"], config.to_hf_dict()["hidden_act"]) == (google_name, hf_name)


@pytest.mark.parametrize("file_name, extra, style, hidden_act",
                         [("bert_config.json", {}, None, "gelu_tanh"), ("config.json", {}, None, "gelu"),
                          ("model.json", {"model_type": "bert"}, None, "gelu"), ("config.json", {}, "google", "gelu_tanh"),
                          ("bert_config.json", {}, "hf", "gelu")])
def test_gelu_means_what_the_file_format_means(tmp_path, file_name, extra, style, hidden_act):
    path = tmp_path / file_name
    path.write_text(json.dumps({"hidden_act": "gelu", **extra}))
    assert BertConfig.from_json_file(path, style=style).hidden_act == hidden_act


def test_reads_google_bert_config_json(tmp_path):
    # The exact content of uncased_L-2_H-128_A-2/bert_config.json.
    (tmp_path / "bert_config.json").write_text(json.dumps({
        "hidden_size": 128, "hidden_act": "gelu", "initializer_range": 0.02, "vocab_size": 30522,
        "hidden_dropout_prob": 0.1, "num_attention_heads": 2, "type_vocab_size": 2, "max_position_embeddings": 512,
        "num_hidden_layers": 2, "intermediate_size": 512, "attention_probs_dropout_prob": 0.1}))
    assert BertConfig.from_json_file(tmp_path / "bert_config.json") == BertConfig.preset("tiny", hidden_act="gelu_tanh")


def test_bad_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="not found"):
        BertConfig.from_json_file(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        BertConfig.from_json_file(tmp_path / "bad.json")
    (tmp_path / "roberta.json").write_text(json.dumps({"model_type": "roberta"}))
    with pytest.raises(ValueError, match="Not a BERT config"):
        BertConfig.from_json_file(tmp_path / "roberta.json")
