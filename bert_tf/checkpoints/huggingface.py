"""Hugging Face BERT directories: `config.json` + `model.safetensors` (or `pytorch_model.bin`).

Hugging Face's names are Google's with dots (`encoder.layer.0.attention.self.query.weight`
is `encoder/layer_0/attention/self/query/kernel`), and its linear weights are stored
[out, in], the transpose of Google's kernels. The two rule functions below are each
other's inverse; nothing else differs.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import re
import shutil
import tempfile
import warnings
from pathlib import Path

import numpy as np

from bert_tf.checkpoints.contents import CheckpointContents
from bert_tf.config import BertConfig
from bert_tf.file_modes import readable_as_umask_allows
from bert_tf.text_files import json_file

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
    """All tensors of the directory's weight file(s), as NumPy arrays of the types stored (bfloat16 as float32),
    without running pickled code; a file cut short or damaged is a one-line error that names it."""
    single = directory / "model.safetensors"
    index = directory / "model.safetensors.index.json"
    if single.is_file() or index.is_file():
        from safetensors import SafetensorError
        from safetensors.numpy import load_file

        files = [single] if single.is_file() else sorted(
            {directory / f for f in json.loads(index.read_text())["weight_map"].values()}
        )
        tensors = {}
        for file in files:
            try:
                tensors.update(load_file(str(file)))
            except SafetensorError as error:
                raise ValueError(f"{file} is cut short or damaged ({error}); copy or download it again.") from None
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
        return {name: (t.float() if t.dtype == torch.bfloat16 else t).numpy() for name, t in state.items()}, str(binary)
    raise FileNotFoundError(f"No model.safetensors or pytorch_model.bin in {directory}.")


def is_hf_directory(path: Path) -> bool:
    if not (path.is_dir() and (path / "config.json").is_file()):
        return False
    config = json_file(path / "config.json")
    return isinstance(config, dict) and config.get("model_type") == "bert"


def read_hf_directory(path: str | Path) -> CheckpointContents:
    """Reads a Hugging Face BERT directory (BertModel, BertForPreTraining, BertForMaskedLM, ...)."""
    return read_hf_directory_and_head(path, head=None)[0]


def read_hf_directory_and_head(path: str | Path, head: str | None) -> tuple[CheckpointContents, dict[str, np.ndarray]]:
    """`read_hf_directory`, and the tensors of the task head named `head` (e.g. "classifier": `classifier.weight`,
    `classifier.bias`), set aside for the caller that loads them rather than reported as not BERT's."""
    directory = Path(path)
    config = BertConfig.from_json_file(directory / "config.json", style="hf")
    tensors, source = _read_tensors(directory)
    weights, ignored, unrecognized, head_tensors = {}, [], [], {}
    for hf_name, value in tensors.items():
        google_name = hf_to_google_name(hf_name)
        if head is not None and hf_name.startswith(f"{head}."):
            head_tensors[hf_name] = _float_weights(value, hf_name, source)
        elif hf_name.removeprefix("bert.") in _TIED_OR_BUFFERS:
            ignored.append(hf_name)
        elif google_name is None:
            unrecognized.append(hf_name)
        else:
            value = _float_weights(value, hf_name, source)
            weights[google_name] = value.T if _is_transposed(google_name) else value
    lower_case = None
    tokenizer_config = directory / "tokenizer_config.json"
    if tokenizer_config.is_file():
        lower_case = json_file(tokenizer_config, dict).get("do_lower_case")
    contents = CheckpointContents(
        config=config,
        weights=weights,
        source=source,
        format="hf",
        vocab_file=vocabulary_file(directory),
        lower_case=lower_case,
        ignored=sorted(ignored),
        unrecognized=sorted(unrecognized),
    )
    return contents, head_tensors


def vocabulary_file(directory: Path) -> Path | None:
    """The folder's `vocab.txt`; else the WordPiece vocabulary of its `tokenizer.json` (what transformers 5 saves
    instead), written once as a vocab.txt under the temporary folder (named by its content); else None."""
    vocab, tokenizer = directory / "vocab.txt", directory / "tokenizer.json"
    if vocab.is_file() or not tokenizer.is_file():
        return vocab if vocab.is_file() else None
    model = json_file(tokenizer, dict).get("model") or {}
    if model.get("type") != "WordPiece":
        return None
    tokens = [token for token, _ in sorted(model["vocab"].items(), key=lambda item: item[1])]
    text = "\n".join(tokens) + "\n"
    out = Path(tempfile.gettempdir()) / "bert_tf_vocabularies" / f"{hashlib.sha256(text.encode()).hexdigest()[:16]}.txt"
    if not out.is_file():
        out.parent.mkdir(parents=True, exist_ok=True)
        staging = out.with_suffix(f".{os.getpid()}.tmp")
        staging.write_text(text, encoding="utf-8")
        staging.replace(out)
    return out


def _float_weights(value: np.ndarray, name: str, source: str) -> np.ndarray:
    """`value` as float32; a tensor of integers or booleans is no weight (a damaged or foreign file): an error."""
    if not np.issubdtype(value.dtype, np.floating):
        raise ValueError(f"{source}: {name} holds {value.dtype} values, not floating-point weights: the file is damaged "
                         "or not a BERT checkpoint.")
    return np.asarray(value, dtype=np.float32)


def write_hf_directory(model, out_dir: str | Path, vocab_file: str | Path | None = None,
                       lower_case: bool | None = None) -> Path:
    """Writes a `BertModel` (or a `BertPretrainer`, with both heads) as a Hugging Face directory that
    `transformers.BertModel` (`BertForPreTraining`) `.from_pretrained` reads; its files as the umask allows.
    Fine-tuned task models: `bert_tf.write_hf_task_model`.

    Example:
        >>> write_hf_directory(model, "exported/")          # doctest: +SKIP
        >>> transformers.BertModel.from_pretrained("exported/")  # doctest: +SKIP
    """
    if not hasattr(model, "google_weights"):
        raise ValueError(f"write_hf_directory writes a BertModel or a BertPretrainer; a {type(model).__name__} is "
                         "written with bert_tf.write_hf_task_model.")
    encoder = getattr(model, "encoder", model)
    pretrainer = encoder is not model  # its encoder is `bert.` in BertForPreTraining
    config = {**encoder.config.to_hf_dict(), "architectures": ["BertForPreTraining" if pretrainer else "BertModel"]}
    return write_hf_files(out_dir, hf_tensors(model.google_weights(), "bert." if pretrainer else ""), config,
                          vocab_file, lower_case)


def hf_tensors(google_weights: dict, prefix: str = "") -> dict[str, np.ndarray]:
    """{Hugging Face name: array} of Google-named variables; encoder names get `prefix` (`bert.` in BertFor*)."""
    tensors = {}
    for google_name, variable in google_weights.items():
        value = np.asarray(variable.numpy(), dtype=np.float32)
        name = google_to_hf_name(google_name)
        tensors[name if google_name.startswith("cls/") else prefix + name] = np.ascontiguousarray(
            value.T if _is_transposed(google_name) else value)
    return tensors


def write_hf_files(out_dir: str | Path, tensors: dict[str, np.ndarray], config: dict,
                   vocab_file: str | Path | None = None, lower_case: bool | None = None) -> Path:
    """A Hugging Face directory: `model.safetensors`, `config.json`, and the vocabulary and casing if given."""
    from safetensors.numpy import save_file

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})
    readable_as_umask_allows(out / "model.safetensors")  # save_file writes it owner-only
    (out / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    if vocab_file is not None:
        shutil.copyfile(vocab_file, out / "vocab.txt")
    if lower_case is not None:
        (out / "tokenizer_config.json").write_text(
            json.dumps({"do_lower_case": lower_case, "tokenizer_class": "BertTokenizer"}, indent=2) + "\n"
        )
    return out
