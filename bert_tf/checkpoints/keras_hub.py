"""KerasHub BERT: a live `keras_hub.models.BertBackbone`, or a preset directory saved by KerasHub.

KerasHub's BERT uses the tanh approximation of GELU, so an imported model gets
`hidden_act="gelu_tanh"` to stay numerically equal to its source.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from bert_tf.checkpoints.contents import CheckpointContents
from bert_tf.config import BertConfig

# KerasHub variable path (its tail) → Google name.
_NAME_RULES = [
    (r"token_embedding/embeddings", r"embeddings/word_embeddings"),
    (r"position_embedding/embeddings", r"embeddings/position_embeddings"),
    (r"segment_embedding/embeddings", r"embeddings/token_type_embeddings"),
    (r"embeddings_layer_norm/(gamma|beta)", r"embeddings/LayerNorm/\1"),
    (r"transformer_layer_(\d+)/self_attention_layer/(query|key|value)/(kernel|bias)",
     r"encoder/layer_\1/attention/self/\2/\3"),
    (r"transformer_layer_(\d+)/self_attention_layer/attention_output/(kernel|bias)",
     r"encoder/layer_\1/attention/output/dense/\2"),
    (r"transformer_layer_(\d+)/self_attention_layer_norm/(gamma|beta)", r"encoder/layer_\1/attention/output/LayerNorm/\2"),
    (r"transformer_layer_(\d+)/feedforward_intermediate_dense/(kernel|bias)", r"encoder/layer_\1/intermediate/dense/\2"),
    (r"transformer_layer_(\d+)/feedforward_output_dense/(kernel|bias)", r"encoder/layer_\1/output/dense/\2"),
    (r"transformer_layer_(\d+)/feedforward_layer_norm/(gamma|beta)", r"encoder/layer_\1/output/LayerNorm/\2"),
    (r"pooled_dense/(kernel|bias)", r"pooler/dense/\1"),
]


def keras_hub_to_google_name(path: str) -> str | None:
    for pattern, replacement in _NAME_RULES:
        match = re.search(rf"(?:^|/){pattern}$", path)
        if match:
            return match.expand(replacement)
    return None


def _to_google_layout(google_name: str, value: np.ndarray) -> np.ndarray:
    """KerasHub keeps attention weights per head ([in, heads, size], [heads, size, out]); Google flattens them."""
    if google_name.endswith("/attention/output/dense/kernel"):
        return value.reshape(-1, value.shape[-1])
    if "/attention/self/" in google_name:
        return value.reshape(value.shape[0], -1) if google_name.endswith("kernel") else value.reshape(-1)
    return value


def is_keras_hub_preset(path: Path) -> bool:
    config = path / "config.json"
    if not (path.is_dir() and config.is_file()):
        return False
    return "BertBackbone" in json.loads(config.read_text(encoding="utf-8")).get("registered_name", "")


def read_keras_hub_backbone(backbone, source: str = "keras_hub.models.BertBackbone") -> CheckpointContents:
    """Reads the weights of a live KerasHub `BertBackbone`."""
    settings = backbone.get_config()
    config = BertConfig(
        vocab_size=settings["vocabulary_size"],
        hidden_size=settings["hidden_dim"],
        num_hidden_layers=settings["num_layers"],
        num_attention_heads=settings["num_heads"],
        intermediate_size=settings["intermediate_dim"],
        hidden_act="gelu_tanh",
        hidden_dropout_prob=settings["dropout"],
        attention_probs_dropout_prob=settings["dropout"],
        max_position_embeddings=settings["max_sequence_length"],
        type_vocab_size=settings["num_segments"],
    )
    weights, unrecognized = {}, []
    for variable in backbone.weights:
        google_name = keras_hub_to_google_name(variable.path)
        if google_name is None:
            unrecognized.append(variable.path)
        else:
            weights[google_name] = _to_google_layout(google_name, np.asarray(variable.numpy(), dtype=np.float32))
    return CheckpointContents(config=config, weights=weights, source=source, format="keras_hub",
                              unrecognized=unrecognized)


def read_keras_hub_preset(path: str | Path) -> CheckpointContents:
    """Reads a KerasHub preset directory (`config.json`, `model.weights.h5`, `assets/tokenizer/vocabulary.txt`)."""
    import keras_hub  # imported here: it is slow to import and only this reader needs it

    directory = Path(path)
    # KerasHub deserializes with Keras' safe mode: no lambdas or arbitrary code from the files.
    backbone = keras_hub.models.BertBackbone.from_preset(str(directory))
    contents = read_keras_hub_backbone(backbone, source=str(directory))
    vocab = directory / "assets" / "tokenizer" / "vocabulary.txt"
    contents.vocab_file = vocab if vocab.is_file() else None
    tokenizer_config = directory / "tokenizer.json"
    if tokenizer_config.is_file():
        contents.lower_case = json.loads(tokenizer_config.read_text()).get("config", {}).get("lowercase")
    return contents
