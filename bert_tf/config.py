"""`BertConfig`: the one place that says what shape a BERT encoder has.

It reads and writes both published formats: Google's `bert_config.json` and
Hugging Face's `config.json`. They differ in what `"gelu"` means: the tanh approximation in
Google's (google-research/bert's `modeling.gelu`, which computed every published checkpoint),
the exact erf GELU in Hugging Face's, as in `BertConfig` itself.

Example:
    >>> config = BertConfig.preset("tiny", hidden_act="gelu_tanh")
    >>> config.hidden_size, config.num_hidden_layers
    (128, 2)
    >>> config.to_google_dict()["hidden_act"], config.to_hf_dict()["hidden_act"]
    ('gelu', 'gelu_pytorch_tanh')
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, Mapping

# Canonical activation names, and the spellings Hugging Face uses for them.
ACTIVATION_ALIASES = {
    "gelu": "gelu",  # exact, erf-based
    "gelu_exact": "gelu",
    "gelu_tanh": "gelu_tanh",  # tanh approximation
    "gelu_new": "gelu_tanh",
    "gelu_pytorch_tanh": "gelu_tanh",
    "gelu_fast": "gelu_tanh",
    "relu": "relu",
}
# How Google's bert_config.json spells each canonical activation. google-research/bert has no exact
# GELU: "gelu_exact" makes its reader fail ("Unsupported activation") instead of computing another function.
GOOGLE_ACTIVATION_NAMES = {"gelu_tanh": "gelu", "gelu": "gelu_exact", "relu": "relu"}
_FROM_GOOGLE_ACTIVATION_NAMES = {google: canonical for canonical, google in GOOGLE_ACTIVATION_NAMES.items()}

# The "smaller BERT" family of google-research/bert: every layers x hidden size,
# heads = hidden / 64, feed-forward = 4 x hidden.
_SMALL_BERT_LAYERS = (2, 4, 6, 8, 10, 12)
_SMALL_BERT_HIDDEN = (128, 256, 512, 768)
PRESET_ALIASES = {
    "tiny": "bert_L2_H128",
    "mini": "bert_L4_H256",
    "small": "bert_L4_H512",
    "medium": "bert_L8_H512",
    "base": "bert_L12_H768",
    "large": "bert_L24_H1024",
}


@dataclasses.dataclass(frozen=True)
class BertConfig:
    """Hyper-parameters of a BERT encoder (defaults: BERT-base, uncased vocabulary)."""

    vocab_size: int = 30522  # rows of the word-embedding matrix
    hidden_size: int = 768  # width of every token vector
    num_hidden_layers: int = 12  # transformer blocks
    num_attention_heads: int = 12  # must divide hidden_size
    intermediate_size: int = 3072  # feed-forward inner width
    hidden_act: str = "gelu"  # "gelu" (exact erf), "gelu_tanh" or "relu"
    hidden_dropout_prob: float = 0.1  # dropout on embeddings and block outputs
    attention_probs_dropout_prob: float = 0.1  # dropout on attention probabilities
    max_position_embeddings: int = 512  # longest sequence the model accepts
    type_vocab_size: int = 2  # number of segment (token type) ids
    initializer_range: float = 0.02  # stddev of the truncated-normal initializer
    layer_norm_eps: float = 1e-12  # LayerNorm epsilon

    def __post_init__(self):
        activation = ACTIVATION_ALIASES.get(str(self.hidden_act).lower())
        if activation is None:
            raise ValueError(
                f"BertConfig: unknown hidden_act {self.hidden_act!r}; "
                f"use one of {sorted(set(ACTIVATION_ALIASES.values()))}."
            )
        object.__setattr__(self, "hidden_act", activation)
        for name in (
            "vocab_size",
            "hidden_size",
            "num_hidden_layers",
            "num_attention_heads",
            "intermediate_size",
            "max_position_embeddings",
            "type_vocab_size",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"BertConfig: {name} must be a positive integer, got {value!r}.")
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(
                f"BertConfig: hidden_size ({self.hidden_size}) must be divisible by "
                f"num_attention_heads ({self.num_attention_heads})."
            )
        for name in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ValueError(f"BertConfig: {name} must be in [0, 1), got {getattr(self, name)!r}.")
        if self.initializer_range <= 0 or self.layer_norm_eps <= 0:
            raise ValueError("BertConfig: initializer_range and layer_norm_eps must be positive.")

    @property
    def head_size(self) -> int:
        return self.hidden_size // self.num_attention_heads

    def check_sequence_length(self, length: int, name: str = "seq_length", shortest: int = 3) -> None:
        """`check_sequence_length(length, self.max_position_embeddings, name, shortest)`."""
        check_sequence_length(length, self.max_position_embeddings, name, shortest)

    def replace(self, **changes) -> "BertConfig":
        """A copy with some fields changed (and validated again)."""
        return dataclasses.replace(self, **changes)

    # ----- presets -------------------------------------------------------------

    @staticmethod
    def preset_names() -> list[str]:
        """Every preset name: the 24 smaller BERTs, large, and their common aliases."""
        names = [f"bert_L{layers}_H{hidden}" for layers in _SMALL_BERT_LAYERS for hidden in _SMALL_BERT_HIDDEN]
        return names + ["bert_L24_H1024"] + list(PRESET_ALIASES)

    @classmethod
    def preset(cls, name: str, **overrides) -> "BertConfig":
        """The configuration of a published size, e.g. `"tiny"`, `"base"` or `"bert_L4_H256"`."""
        canonical = PRESET_ALIASES.get(name, name)
        if canonical == "bert_L24_H1024":
            layers, hidden, heads = 24, 1024, 16
        else:
            try:
                _, l_part, h_part = canonical.split("_")
                layers, hidden = int(l_part[1:]), int(h_part[1:])
            except ValueError:
                layers = hidden = None
            if layers not in _SMALL_BERT_LAYERS or hidden not in _SMALL_BERT_HIDDEN or not canonical.startswith("bert_L"):
                raise ValueError(
                    f"Unknown BERT preset {name!r}. Known presets: {', '.join(cls.preset_names())}."
                )
            heads = hidden // 64
        return cls(
            hidden_size=hidden,
            num_hidden_layers=layers,
            num_attention_heads=heads,
            intermediate_size=4 * hidden,
            **overrides,
        )

    # ----- Google's bert_config.json -------------------------------------------

    def to_google_dict(self) -> dict[str, Any]:
        """The fields of Google's `bert_config.json` (plus `layer_norm_eps`, which its reader ignores)."""
        data = dataclasses.asdict(self)
        data["hidden_act"] = GOOGLE_ACTIVATION_NAMES[self.hidden_act]
        return data

    @classmethod
    def from_google_dict(cls, data: Mapping[str, Any]) -> "BertConfig":
        """Reads Google's fields, where "gelu" (also the default) is the tanh approximation."""
        hidden_act = str(data.get("hidden_act", "gelu")).lower()
        return cls._from_fields({**data, "hidden_act": _FROM_GOOGLE_ACTIVATION_NAMES.get(hidden_act, hidden_act)})

    # ----- Hugging Face's config.json ------------------------------------------

    def to_hf_dict(self) -> dict[str, Any]:
        """The fields of a Hugging Face `BertModel` `config.json`."""
        data = dataclasses.asdict(self)
        data["hidden_act"] = {"gelu": "gelu", "gelu_tanh": "gelu_pytorch_tanh", "relu": "relu"}[self.hidden_act]
        data.update(
            model_type="bert",
            architectures=["BertModel"],
            pad_token_id=0,
            position_embedding_type="absolute",
            dtype="float32",
        )
        return data

    @classmethod
    def from_hf_dict(cls, data: Mapping[str, Any]) -> "BertConfig":
        if data.get("model_type", "bert") != "bert":
            raise ValueError(f"Not a BERT config: model_type is {data.get('model_type')!r}.")
        if data.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError(
                f"Unsupported position_embedding_type {data['position_embedding_type']!r}: only 'absolute' is BERT."
            )
        return cls._from_fields(data)

    @classmethod
    def _from_fields(cls, data: Mapping[str, Any]) -> "BertConfig":
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    # ----- files ---------------------------------------------------------------

    @classmethod
    def from_json_file(cls, path: str | Path, style: str | None = None) -> "BertConfig":
        """Reads Google's `bert_config.json` (`style="google"`) or Hugging Face's `config.json` (`style="hf"`).

        Without `style`, a file named `config.json` or holding a `model_type` is Hugging Face's, any
        other Google's: a `bert_config.json` given for a random start means by "gelu" what Google's
        code computes (tanh), as when it comes with its checkpoint.
        """
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"BERT config file not found: {path}")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as error:
            raise ValueError(f"{path} is not valid JSON: {error}") from error
        if style is None:
            style = "hf" if path.name == "config.json" or "model_type" in data else "google"
        try:
            return {"google": cls.from_google_dict, "hf": cls.from_hf_dict}[style](data)
        except (TypeError, ValueError) as error:
            raise ValueError(f"{path}: {error}") from error

    def write_json(self, path: str | Path, style: str = "google") -> None:
        """Writes `bert_config.json` (`style="google"`) or `config.json` (`style="hf"`)."""
        data = {"google": self.to_google_dict, "hf": self.to_hf_dict}[style]()
        Path(path).write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def check_sequence_length(length: int, max_position_embeddings: int, name: str = "seq_length",
                          shortest: int = 3) -> None:
    """Raises unless `length` tokens ([CLS] and [SEP]s included) fit: `shortest` ≤ length ≤ max_position_embeddings.

    The one check of a sequence length against a model; `name` is how the message calls it.
    """
    if isinstance(length, bool) or not isinstance(length, int) or not shortest <= length <= max_position_embeddings:
        raise ValueError(f"{name} must be in [{shortest}, {max_position_embeddings}] (the model's "
                         f"max_position_embeddings), got {length!r}.")
