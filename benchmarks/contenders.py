"""The same BERT in three packages: a KerasHub `BertBackbone` with random weights, and bert_tf and
transformers (PyTorch) models holding exactly its weights; and a transformers classifier written
as ONNX, for ONNX Runtime and OpenVINO.

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
# bert_tf's input names → transformers' (and the ONNX graph's, `export_onnx`).
HF_INPUT_NAMES = {"input_word_ids": "input_ids", "input_mask": "attention_mask", "input_type_ids": "token_type_ids"}


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


def torch_classifier(ours: bert_tf.BertClassifier, directory: str | Path, attention: str | None = None):
    """`transformers.BertForSequenceClassification` with the weights of the bert_tf classifier `ours`.

    The encoder and pooler go through `bert_tf.write_hf_directory` (which also writes the matching
    GELU variant), the classification head is copied. `attention`: transformers' attention
    implementation ("eager" for an ONNX export that ONNX Runtime's optimizer fuses), None for its default.
    """
    import torch
    import transformers

    bert_tf.write_hf_directory(ours.encoder, directory)
    use_all_cores_in_torch()
    options = {} if attention is None else {"attn_implementation": attention}
    model = transformers.BertForSequenceClassification.from_pretrained(
        str(directory), num_labels=ours.num_classes, **options).eval()
    with torch.no_grad():
        model.classifier.weight.copy_(torch.from_numpy(ours.classifier.kernel.numpy().T))
        model.classifier.bias.copy_(torch.from_numpy(ours.classifier.bias.numpy()))
    return model


def export_onnx(model, path: str | Path, opset: int = 17, output: str = "logits") -> Path:
    """Writes a transformers model as ONNX: int64 `input_ids`, `attention_mask`, `token_type_ids`
    [batch, sequence] (both dynamic) in, its `output` out (a classifier's `logits`, an encoder's
    `last_hidden_state`).

    Uses torch's TorchScript exporter (`dynamo=False`): with eager attention its graph is the one
    `onnxruntime.transformers.optimizer` fuses into Attention and EmbedLayerNormalization nodes (the
    dynamo exporter's graph gets only the GELU and LayerNorm fusions). transformers 5 models take their
    inputs by keyword only, so a wrapper passes them. The exporter traces the model on an example.
    """
    import torch

    class ByKeyword(torch.nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, token_type_ids):
            outputs = self.model(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
            return getattr(outputs, output)

    names = list(HF_INPUT_NAMES.values())
    # Two rows, one of them padded: the trace must not take the shortcut of a mask without padding.
    mask = torch.tensor([[1] * 8, [1] * 4 + [0] * 4])
    example = (mask, mask, torch.zeros_like(mask))  # any ids will do
    with torch.no_grad():
        torch.onnx.export(ByKeyword(model), example, str(path), input_names=names, output_names=[output],
                          dynamic_axes={name: {0: "batch", 1: "sequence"} for name in names}, opset_version=opset,
                          dynamo=False)
    return Path(path)


def random_ids(config: bert_tf.BertConfig, batch_size: int, seq_length: int, seed: int = 0) -> np.ndarray:
    """int32 word ids [batch, seq]: [CLS] ... [SEP] around random ids of ordinary tokens."""
    rng = np.random.default_rng(seed)
    low = min(1000, config.vocab_size // 2)  # above the special tokens of BERT vocabularies
    ids = rng.integers(low, config.vocab_size, (batch_size, seq_length)).astype(np.int32)
    ids[:, 0], ids[:, -1] = 101 % config.vocab_size, 102 % config.vocab_size
    return ids
