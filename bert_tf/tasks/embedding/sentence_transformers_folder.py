"""Sentence-transformers' model folder, both ways: a BERT `SentenceTransformer` (Transformer, Pooling[, Dense]
[, Normalize]) ↔ a `BertEmbedder`, so that models trained there serve here and the other way round.

Read: the layout of sentence-transformers 2 to 5, in which most published models are (`modules.json` naming
`sentence_transformers.models.Transformer`, `Pooling`, `Normalize`; `1_Pooling/config.json` with
`pooling_mode_mean_tokens`-style flags; `sentence_bert_config.json` with `max_seq_length`), and that of 6 (module
types under `sentence_transformers.base` and `.sentence_transformer`, `"pooling_mode": "mean"`, the length in
`tokenizer_config.json`'s `model_max_length`). The transformer's folder is a Hugging Face BERT directory
(`bert_tf.from_pretrained`); a Dense module without activation is the embedder's projection (`embedding_size`:
a distilled student's map to its teacher's size). Written: the 2-to-5 layout, which every version reads.
A model with another module (a Dense with an activation, another pooling) is refused in one line.

Example:
    >>> model, seq_length = read_sentence_transformers_folder("all-MiniLM-L6-v2/")  # doctest: +SKIP
    >>> model.pooling, model.normalize, seq_length  # doctest: +SKIP
    ('mean', True, 256)
    >>> write_sentence_transformers_folder(model, "exported/", seq_length=256)  # doctest: +SKIP
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from bert_tf.checkpoints import from_pretrained, write_hf_directory
from bert_tf.file_modes import readable_as_umask_allows
from bert_tf.tasks.base import FolderFormat
from bert_tf.tasks.embedding.model import BertEmbedder
from bert_tf.text_files import json_file, json_kind

MODULES_FILE = "modules.json"
LAYOUTS = (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"], ["Transformer", "Pooling", "Dense"],
           ["Transformer", "Pooling", "Dense", "Normalize"])
IDENTITY = "torch.nn.modules.linear.Identity"  # a Dense module's activation that is none
# bert-tf's pooling → the flag of the 2-to-5 layout's Pooling config.
POOLING_FLAGS = {"mean": "pooling_mode_mean_tokens", "cls": "pooling_mode_cls_token", "max": "pooling_mode_max_tokens"}
ALL_POOLING_FLAGS = (*POOLING_FLAGS.values(), "pooling_mode_mean_sqrt_len_tokens", "pooling_mode_weightedmean_tokens",
                     "pooling_mode_lasttoken")


def is_sentence_transformers_folder(path) -> bool:
    """Whether `path` holds a SentenceTransformer's `modules.json` (sentence-transformers 6 writes one beside a
    CrossEncoder too, whose `config_sentence_transformers.json` says so: that is a reranker's folder)."""
    folder = Path(path)
    marks = folder / "config_sentence_transformers.json"
    try:
        cross_encoder = marks.is_file() and json.loads(marks.read_text(encoding="utf-8")).get("model_type") == \
            "CrossEncoder"
    except (ValueError, UnicodeDecodeError, AttributeError):
        cross_encoder = False  # read as a SentenceTransformer's, whose reader says what is wrong
    return (folder / MODULES_FILE).is_file() and not cross_encoder


def _modules(folder: Path) -> list[tuple[str, Path | None]]:
    """(kind, folder) of each module that `modules.json` lists: "Transformer", "Pooling", ... (the last part of its
    class path) and its folder inside `folder` (None where it names none); what sentence-transformers could not
    read either is an error in one line naming the file and the field."""
    file = folder / MODULES_FILE
    modules = []
    for number, module in enumerate(json_file(file, list)):
        if not isinstance(module, dict):
            raise ValueError(f"{file}: module {number} is {json_kind(module)}, not an object with a type and a path.")
        kind = module.get("type")
        if not isinstance(kind, str):
            raise ValueError(f"{file}: module {number}'s type is {json_kind(kind)}, not a class path "
                             "(sentence_transformers.models.Pooling).")
        path = module.get("path")
        if path is not None and not isinstance(path, str):
            raise ValueError(f"{file}: module {number}'s path is {json_kind(path)}, not a folder name.")
        if path is not None and (Path(path).is_absolute() or ".." in Path(path).parts):
            raise ValueError(f"{file}: module {number}'s path {path!r} leads out of {folder}; a module's folder is "
                             "inside the model's (as sentence-transformers requires).")
        modules.append((kind.rsplit(".", 1)[-1], None if path is None else folder / path))
    return modules


def _module_folder(modules: list, index: int, folder: Path) -> Path:
    kind, path = modules[index]
    if path is None:
        raise ValueError(f"{folder / MODULES_FILE}: module {index} ({kind}) has no path, the folder of its files.")
    return path


def _pooling(config_file: Path) -> str:
    config = json_file(config_file, dict)
    if "pooling_mode" in config:  # sentence-transformers 6
        mode = config["pooling_mode"]
        if not isinstance(mode, str):
            raise ValueError(f"{config_file}: pooling_mode is {json_kind(mode)}; bert-tf pools by one of "
                             f"{', '.join(POOLING_FLAGS)}.")
        modes = [mode]
    else:
        modes = [flag for flag in ALL_POOLING_FLAGS if config.get(flag)]
    names = {flag: name for name, flag in POOLING_FLAGS.items()}
    modes = [names.get(mode, mode) for mode in modes]
    if len(modes) != 1 or modes[0] not in POOLING_FLAGS:
        raise ValueError(f"{config_file}: pooling {' + '.join(modes) or 'none'}; bert-tf pools by one of "
                         f"{', '.join(POOLING_FLAGS)}.")
    return modes[0]


def _seq_length(folder: Path, transformer: Path) -> int | None:
    for path, key in ((folder / "sentence_bert_config.json", "max_seq_length"),
                      (transformer / "sentence_bert_config.json", "max_seq_length"),
                      (transformer / "tokenizer_config.json", "model_max_length")):
        if path.is_file():
            value = json_file(path, dict).get(key)
            if isinstance(value, int) and 0 < value < 10**6:
                return value
    return None


def read_sentence_transformers_folder(path) -> tuple[BertEmbedder, int | None]:
    """The `BertEmbedder` of a sentence-transformers folder and the longest input it reads (None if unsaid)."""
    folder = Path(path)
    modules = _modules(folder)
    kinds = [kind for kind, _ in modules]
    if kinds not in LAYOUTS:
        raise ValueError(f"{folder / MODULES_FILE}: modules {' → '.join(kinds)}; bert-tf reads a Transformer, a "
                         "Pooling, an optional Dense and an optional Normalize.")
    transformer = modules[0][1] or folder
    pooling = _pooling(_module_folder(modules, 1, folder) / "config.json")
    dense = _dense(_module_folder(modules, 2, folder)) if "Dense" in kinds else None
    encoder = from_pretrained(transformer)
    if encoder.vocab_file is None:
        raise ValueError(f"{transformer}: no vocab.txt (nor a WordPiece tokenizer.json): the vocabulary the model "
                         "reads is missing.")
    model = BertEmbedder(encoder, pooling=pooling, normalize=kinds[-1] == "Normalize",
                         embedding_size=None if dense is None else dense[0].shape[0])
    if dense is not None:
        weight, bias = dense
        if weight.shape[1] != encoder.config.hidden_size:
            raise ValueError(f"{folder}: the Dense module reads {weight.shape[1]} values; the encoder makes "
                             f"{encoder.config.hidden_size}.")
        model.projection.kernel.assign(weight.T)
        model.projection.bias.assign(bias)
    return model, _seq_length(folder, transformer)


def _dense(folder: Path):
    """(weight [out, in], bias [out]) of a Dense module without activation."""
    from safetensors.numpy import load_file

    config = json_file(folder / "config.json", dict)
    if config.get("activation_function") != IDENTITY or not config.get("bias", True):
        raise ValueError(f"{folder / 'config.json'}: a Dense module with activation "
                         f"{config.get('activation_function')!r} (bias {config.get('bias', True)}); bert-tf reads a "
                         "linear one with a bias (the projection of an embedder).")
    file = folder / "model.safetensors"
    if not file.is_file():
        raise FileNotFoundError(f"{file} not found: the Dense module's weights.")
    try:
        tensors = load_file(str(file))
    except Exception as error:  # safetensors' own error type, for a file cut short or not safetensors at all
        raise ValueError(f"{file}: not a readable safetensors file ({str(error).splitlines()[0][:200]}).") from None
    for name in ("linear.weight", "linear.bias"):
        if name not in tensors:
            raise ValueError(f"{file}: no {name}; a Dense module holds linear.weight [out, in] and linear.bias [out].")
        if not np.issubdtype(tensors[name].dtype, np.floating) or not np.isfinite(tensors[name]).all():
            raise ValueError(f"{file}: {name} holds " + ("NaN or infinite values" if np.issubdtype(
                tensors[name].dtype, np.floating) else f"{tensors[name].dtype} values") + ", not weights.")
    weight, bias = tensors["linear.weight"], tensors["linear.bias"]
    if weight.ndim != 2 or 0 in weight.shape:
        raise ValueError(f"{file}: linear.weight has shape {list(weight.shape)}; a Dense module's is [out, in].")
    if bias.shape != weight.shape[:1]:
        raise ValueError(f"{file}: linear.bias has shape {list(bias.shape)}; linear.weight {list(weight.shape)} "
                         f"wants [{weight.shape[0]}].")
    return weight.astype(np.float32), bias.astype(np.float32)


def write_sentence_transformers_folder(model: BertEmbedder, out_dir, vocab_file=None, lower_case: bool | None = None,
                                       seq_length: int | None = None) -> Path:
    """Writes `model` as a sentence-transformers folder (the 2-to-5 layout) that `SentenceTransformer(out_dir)`
    loads; `vocab_file`, `lower_case`: the encoder's unless given. Its Pooling module pools one way: a "mean_max"
    model (whose halves sentence-transformers would put the other way round, max first) is refused."""
    if model.pooling not in POOLING_FLAGS:
        raise ValueError(f"A sentence-transformers folder pools by one of {', '.join(POOLING_FLAGS)}, not "
                         f"{model.pooling}.")
    encoder = model.encoder
    out = write_hf_directory(encoder, out_dir, vocab_file or encoder.vocab_file,
                             encoder.lower_case if lower_case is None else lower_case)
    kinds = ["Transformer", "Pooling", *(["Dense"] if model.projection is not None else []),
             *(["Normalize"] if model.normalize else [])]
    paths = ["" if index == 0 else f"{index}_{kind}" for index, kind in enumerate(kinds)]
    modules = [{"idx": index, "name": str(index), "path": path, "type": f"sentence_transformers.models.{kind}"}
               for index, (kind, path) in enumerate(zip(kinds, paths))]
    (out / MODULES_FILE).write_text(json.dumps(modules, indent=2) + "\n", encoding="utf-8")
    pooling = {"word_embedding_dimension": encoder.config.hidden_size,
               **{flag: name == model.pooling for name, flag in POOLING_FLAGS.items()},
               "pooling_mode_mean_sqrt_len_tokens": False, "pooling_mode_weightedmean_tokens": False,
               "pooling_mode_lasttoken": False, "include_prompt": True}
    (out / "1_Pooling").mkdir(exist_ok=True)
    (out / "1_Pooling" / "config.json").write_text(json.dumps(pooling, indent=2) + "\n", encoding="utf-8")
    if model.projection is not None:
        _write_dense(model.projection, out / "2_Dense")
    if model.normalize:
        (out / paths[-1]).mkdir(exist_ok=True)
    length = seq_length or encoder.config.max_position_embeddings
    (out / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": length, "do_lower_case": False})
                                                   + "\n", encoding="utf-8")
    (out / "config_sentence_transformers.json").write_text(json.dumps({"similarity_fn_name": "cosine"}) + "\n",
                                                           encoding="utf-8")
    return out


def _write_dense(projection, folder: Path) -> None:
    from safetensors.numpy import save_file

    kernel = projection.kernel.numpy()
    folder.mkdir(exist_ok=True)
    config = {"in_features": kernel.shape[0], "out_features": kernel.shape[1], "bias": True,
              "activation_function": IDENTITY}
    (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    save_file({"linear.weight": np.ascontiguousarray(kernel.T, np.float32),
               "linear.bias": np.asarray(projection.bias.numpy(), np.float32)}, str(folder / "model.safetensors"))
    readable_as_umask_allows(folder / "model.safetensors")


SENTENCE_TRANSFORMERS_FOLDER = FolderFormat("sentence-transformers", is_sentence_transformers_folder,
                                            read_sentence_transformers_folder, write_sentence_transformers_folder)
