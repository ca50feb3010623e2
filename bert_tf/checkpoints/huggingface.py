"""Hugging Face BERT directories: `config.json` + `model.safetensors` (or `pytorch_model.bin`).

Hugging Face's names are Google's with dots (`encoder.layer.0.attention.self.query.weight`
is `encoder/layer_0/attention/self/query/kernel`), and its linear weights are stored
[out, in], the transpose of Google's kernels. The two rule functions below are each
other's inverse; nothing else differs.
"""

from __future__ import annotations

import dataclasses
import json
import pickle
import re
import shutil
import warnings
from pathlib import Path

import numpy as np

from bert_tf.checkpoints.contents import CheckpointContents, assign_weights
from bert_tf.config import BertConfig
from bert_tf.file_modes import readable_as_umask_allows

_SPECIAL_NAMES = {
    "cls.predictions.bias": "cls/predictions/output_bias",
    "cls.seq_relationship.weight": "cls/seq_relationship/output_weights",  # [2, hidden] in both formats
    "cls.seq_relationship.bias": "cls/seq_relationship/output_bias",
}
# Stored by Hugging Face but not weights of their own: the MLM decoder is tied to the word
# embeddings (its bias to cls.predictions.bias), and position_ids is a constant buffer.
_TIED_OR_BUFFERS = {"cls.predictions.decoder.weight", "cls.predictions.decoder.bias", "embeddings.position_ids"}
_LINEAR_LAYERS = {"query", "key", "value", "dense"}
_LAYER_NORM_LEAVES = {"weight": "gamma", "bias": "beta", "gamma": "gamma", "beta": "beta"}


def hf_to_google_name(hf_name: str) -> str | None:
    """`encoder.layer.0.output.dense.weight` → `encoder/layer_0/output/dense/kernel`; None if not BERT's."""
    name = hf_name.removeprefix("bert.")
    if name in _SPECIAL_NAMES:
        return _SPECIAL_NAMES[name]
    path = re.sub(r"(^|\.)layer\.(\d+)\.", r"\1layer_\2.", name).replace(".", "/")
    if "/" not in path:
        return None
    stem, leaf = path.rsplit("/", 1)
    if stem.endswith("LayerNorm") and leaf in _LAYER_NORM_LEAVES:
        return f"{stem}/{_LAYER_NORM_LEAVES[leaf]}"
    if stem.startswith("embeddings/") and stem.endswith("_embeddings") and leaf == "weight":
        return stem
    if leaf in ("weight", "bias") and stem.split("/")[-1] in _LINEAR_LAYERS:
        return f"{stem}/{'kernel' if leaf == 'weight' else 'bias'}"
    return None


def google_to_hf_name(google_name: str) -> str:
    """The inverse of `hf_to_google_name` (without the `bert.` prefix)."""
    for hf_name, name in _SPECIAL_NAMES.items():
        if name == google_name:
            return hf_name
    stem, leaf = google_name.rsplit("/", 1)
    if leaf.endswith("_embeddings"):
        stem, leaf = google_name, "weight"
    else:
        leaf = {"kernel": "weight", "bias": "bias", "gamma": "weight", "beta": "bias"}[leaf]
    return re.sub(r"layer_(\d+)", r"layer.\1", stem).replace("/", ".") + "." + leaf


def _is_transposed(google_name: str) -> bool:
    return google_name.endswith("/kernel")


def _read_tensors(directory: Path) -> tuple[dict[str, np.ndarray], str]:
    """All tensors of the directory's weight file(s), as float32 NumPy arrays, without running pickled code."""
    single = directory / "model.safetensors"
    index = directory / "model.safetensors.index.json"
    if single.is_file() or index.is_file():
        from safetensors.numpy import load_file

        files = [single] if single.is_file() else sorted(
            {directory / f for f in json.loads(index.read_text())["weight_map"].values()}
        )
        tensors = {}
        for file in files:
            tensors.update(load_file(str(file)))
        return tensors, str(files[0])
    binary = directory / "pytorch_model.bin"
    if binary.is_file():
        try:
            import torch
        except ImportError as error:
            raise ImportError(
                f"{binary} is a PyTorch pickle and needs torch to read; install torch, or convert the "
                "checkpoint to model.safetensors (the safe format) first."
            ) from error
        # weights_only=True: the unpickler accepts tensors only and never runs code from the file.
        try:
            with warnings.catch_warnings():  # a pickle torch.save did not write: refused below, or read all the same
                warnings.filterwarnings("ignore", message="Detected pickle protocol")
                state = torch.load(binary, map_location="cpu", weights_only=True)
        except (pickle.UnpicklingError, EOFError) as error:
            raise ValueError(f"{binary} was refused: it is not a pickle of tensors only (unpickling it could run "
                             "code from the file) or it is cut short. Use the checkpoint's model.safetensors, or "
                             "re-save the weights from a copy you trust.") from error
        return {name: t.float().numpy() for name, t in state.items()}, str(binary)
    raise FileNotFoundError(f"No model.safetensors or pytorch_model.bin in {directory}.")


def is_hf_directory(path: Path) -> bool:
    if not (path.is_dir() and (path / "config.json").is_file()):
        return False
    return json.loads((path / "config.json").read_text(encoding="utf-8")).get("model_type") == "bert"


def read_hf_directory(path: str | Path) -> CheckpointContents:
    """Reads a Hugging Face BERT directory (BertModel, BertForPreTraining, BertForMaskedLM, ...)."""
    directory = Path(path)
    config = BertConfig.from_json_file(directory / "config.json", style="hf")
    tensors, source = _read_tensors(directory)
    weights, ignored, unrecognized = {}, [], []
    for hf_name, value in tensors.items():
        google_name = hf_to_google_name(hf_name)
        if hf_name.removeprefix("bert.") in _TIED_OR_BUFFERS:
            ignored.append(hf_name)
        elif google_name is None:
            unrecognized.append(hf_name)
        else:
            value = np.asarray(value, dtype=np.float32)
            weights[google_name] = value.T if _is_transposed(google_name) else value
    lower_case = None
    tokenizer_config = directory / "tokenizer_config.json"
    if tokenizer_config.is_file():
        lower_case = json.loads(tokenizer_config.read_text(encoding="utf-8")).get("do_lower_case")
    vocab = directory / "vocab.txt"
    return CheckpointContents(
        config=config,
        weights=weights,
        source=source,
        format="hf",
        vocab_file=vocab if vocab.is_file() else None,
        lower_case=lower_case,
        ignored=sorted(ignored),
        unrecognized=sorted(unrecognized),
    )


def write_hf_directory(model, out_dir: str | Path, vocab_file: str | Path | None = None,
                       lower_case: bool | None = None) -> Path:
    """Writes a bert-tf model as a Hugging Face directory that transformers' class for it reads; its files as the
    umask allows. A `BertModel` becomes `BertModel`, a `BertPretrainer` `BertForPreTraining` (both heads), and a
    task model its task's class with its head and labels (`HF_TASK_CLASSES`).

    Example:
        >>> write_hf_directory(model, "exported/")          # doctest: +SKIP
        >>> transformers.BertModel.from_pretrained("exported/")  # doctest: +SKIP
    """
    from safetensors.numpy import save_file

    encoder = getattr(model, "encoder", model)  # the `bert.` of every BertFor* class
    if hasattr(model, "google_weights"):  # BertModel, or BertPretrainer: its heads are Google's cls/* variables
        architecture = "BertModel" if encoder is model else "BertForPreTraining"
        weights, head, config_extras = model.google_weights(), None, {}
    else:
        architecture, head_name, head, config_extras = _hf_task(model)
        weights = {name: variable for name, variable in encoder.google_weights().items()
                   if architecture == "BertForSequenceClassification" or not name.startswith("pooler/")}
    prefix = "" if encoder is model else "bert."
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tensors = {}
    for google_name, variable in weights.items():
        value = np.asarray(variable.numpy(), dtype=np.float32)
        name = google_to_hf_name(google_name)
        tensors[name if google_name.startswith("cls/") else prefix + name] = np.ascontiguousarray(
            value.T if _is_transposed(google_name) else value)
    if head is not None:  # a dense layer: [in, out] kernel, stored [out, in] as every linear weight
        tensors[f"{head_name}.weight"] = np.ascontiguousarray(np.asarray(head.kernel.numpy(), np.float32).T)
        tensors[f"{head_name}.bias"] = np.asarray(head.bias.numpy(), np.float32)
    save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})
    readable_as_umask_allows(out / "model.safetensors")  # save_file writes it owner-only
    config = {**encoder.config.to_hf_dict(), **config_extras, "architectures": [architecture]}
    (out / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    if vocab_file is not None:
        shutil.copyfile(vocab_file, out / "vocab.txt")
    if lower_case is not None:
        (out / "tokenizer_config.json").write_text(
            json.dumps({"do_lower_case": lower_case, "tokenizer_class": "BertTokenizer"}, indent=2) + "\n"
        )
    return out


# bert-tf's task models → transformers' class for the task and the name of its head's dense layer there.
HF_TASK_CLASSES = {"BertClassifier": ("BertForSequenceClassification", "classifier"),
                   "BertTokenClassifier": ("BertForTokenClassification", "classifier"),
                   "BertSpanLabeler": ("BertForQuestionAnswering", "qa_outputs")}
_PROBLEM_TYPES = {"single_label": "single_label_classification", "multi_label": "multi_label_classification",
                  "regression": "regression"}


def _hf_task(model):
    """(transformers class, head name, head dense layer, config entries) of a bert-tf task model."""
    name = type(model).__name__
    if name not in HF_TASK_CLASSES:
        raise ValueError(f"{name} has no Hugging Face class bert-tf writes; it writes BertModel, BertPretrainer, "
                         f"{', '.join(HF_TASK_CLASSES)}.")
    architecture, head_name = HF_TASK_CLASSES[name]
    if name == "BertSpanLabeler":
        return architecture, head_name, model.span_logits, {}
    head = model.classifier
    count = head.units
    labels = model.label_names or [f"LABEL_{index}" for index in range(count)]
    extras = {"id2label": dict(enumerate(labels)), "label2id": {label: index for index, label in enumerate(labels)}}
    if name == "BertClassifier":
        extras["problem_type"] = _PROBLEM_TYPES[model.mode]
    return architecture, head_name, head, extras


def read_hf_task_model(path: str | Path):
    """The bert-tf task model of a transformers `BertForSequenceClassification`, `BertForTokenClassification` or
    `BertForQuestionAnswering` directory (`architectures` in its config.json), with its head, label names
    (`id2label`) and classification mode (`problem_type`); None for a directory of another class.

    Example:
        >>> classifier = bert_tf.read_hf_task_model("bert-base-uncased-sst2/")  # doctest: +SKIP
        >>> bert_tf.save_pretrained(classifier, "sst2_model/")          # doctest: +SKIP
    """
    from bert_tf.classifier import BertClassifier
    from bert_tf.model import BertModel
    from bert_tf.span_labeler import BertSpanLabeler
    from bert_tf.token_classifier import BertTokenClassifier

    directory = Path(path)
    settings = json.loads((directory / "config.json").read_text(encoding="utf-8"))
    ours = {hf_class: name for name, (hf_class, _) in HF_TASK_CLASSES.items()}.get(
        (settings.get("architectures") or [None])[0])
    if ours is None:
        return None
    head_name = HF_TASK_CLASSES[ours][1]
    contents = read_hf_directory(directory)
    contents = dataclasses.replace(contents, unrecognized=[name for name in contents.unrecognized
                                                           if not name.startswith(f"{head_name}.")])
    encoder = BertModel(contents.config)
    labels = [str(label) for _, label in sorted((int(index), label)
                                                 for index, label in settings.get("id2label", {}).items())]
    count = len(labels) or settings.get("num_labels", 2)
    if ours == "BertClassifier":
        modes = {problem_type: mode for mode, problem_type in _PROBLEM_TYPES.items()}
        mode = modes.get(settings.get("problem_type"), "regression" if count == 1 else "single_label")  # as HF
        model = BertClassifier(encoder, num_classes=count, label_names=labels or None, mode=mode)
        head = model.classifier
    elif ours == "BertTokenClassifier":
        model = BertTokenClassifier(encoder, num_labels=count, label_names=labels or None)
        head = model.classifier
    else:
        model = BertSpanLabeler(encoder)
        head = model.span_logits
    variables = {name: variable for name, variable in encoder.google_weights().items()
                 if ours == "BertClassifier" or not name.startswith("pooler/")}  # the other two have no pooler
    assign_weights(variables, contents, what=ours)
    tensors, _ = _read_tensors(directory)
    head.kernel.assign(np.asarray(tensors[f"{head_name}.weight"], np.float32).T)
    head.bias.assign(np.asarray(tensors[f"{head_name}.bias"], np.float32))
    encoder.vocab_file, encoder.lower_case = contents.vocab_file, contents.lower_case
    return model
