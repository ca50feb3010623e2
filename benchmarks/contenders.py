"""The same BERT in three packages: a KerasHub `BertBackbone` with random weights, and bert_tf and
transformers (PyTorch) models holding exactly its weights.

KerasHub's BERT uses the tanh approximation of GELU; the bert_tf copy gets
`hidden_act="gelu_tanh"` from `bert_tf.from_pretrained(backbone)`, and the transformers copy
`gelu_pytorch_tanh` through `bert_tf.write_hf_directory`, so all three compute the same function.

Example:
    >>> backbone = keras_hub_backbone(bert_tf.BertConfig.preset("tiny", vocab_size=100))  # doctest: +SKIP
    >>> ours = bert_tf.from_pretrained(backbone)                                           # doctest: +SKIP
    >>> theirs = torch_encoder(ours, "/tmp/hf")                                             # doctest: +SKIP
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

import bert_tf
from benchmarks.harness import usable_cores

TORCH_NAME = "transformers BertModel (PyTorch eager)"


def keras_hub_backbone(config: bert_tf.BertConfig, seed: int = 0):
    """A KerasHub `BertBackbone` of `config`'s shape with seeded random weights (BERT's initializer)."""
    import keras
    import keras_hub

    keras.utils.set_random_seed(seed)
    return keras_hub.models.BertBackbone(
        vocabulary_size=config.vocab_size,
        num_layers=config.num_hidden_layers,
        num_heads=config.num_attention_heads,
        hidden_dim=config.hidden_size,
        intermediate_dim=config.intermediate_size,
        dropout=config.hidden_dropout_prob,
        max_sequence_length=config.max_position_embeddings,
        num_segments=config.type_vocab_size,
    )


def use_all_cores_in_torch() -> int:
    """Gives PyTorch one intra-op thread per usable core (as TensorFlow does by default); returns the count."""
    import torch

    threads = usable_cores()
    torch.set_num_threads(threads)
    return threads


def torch_encoder(ours: bert_tf.BertModel, directory: str | Path):
    """`transformers.BertModel` with the weights of `ours` (written to `directory` as a Hugging Face model)."""
    import transformers

    bert_tf.write_hf_directory(ours, directory)
    use_all_cores_in_torch()
    return transformers.BertModel.from_pretrained(str(directory)).eval()


def random_ids(config: bert_tf.BertConfig, batch_size: int, seq_length: int, seed: int = 0) -> np.ndarray:
    """int32 word ids [batch, seq]: [CLS] ... [SEP] around random ids of ordinary tokens."""
    rng = np.random.default_rng(seed)
    low = min(1000, config.vocab_size // 2)  # above the special tokens of BERT vocabularies
    ids = rng.integers(low, config.vocab_size, (batch_size, seq_length)).astype(np.int32)
    ids[:, 0], ids[:, -1] = 101 % config.vocab_size, 102 % config.vocab_size
    return ids
