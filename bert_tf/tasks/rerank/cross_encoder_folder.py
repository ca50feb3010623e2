"""Sentence-transformers' CrossEncoder folder, both ways: a BERT reranker (transformers' `BertForSequenceClassification`
with one label, in a Hugging Face folder) ↔ a `BertReranker`, so that rerankers trained there serve here and the
other way round.

Read: a folder whose `config.json` names `BertForSequenceClassification` with one label and that sentence-transformers
marked as a CrossEncoder's: `config_sentence_transformers.json` with `"model_type": "CrossEncoder"` (version 6, beside
its `modules.json`), a `sentence_transformers` entry in `config.json` (versions 4 and 5) or
`sbert_ce_default_activation_function` (before 4). The longest input is `tokenizer_config.json`'s `model_max_length`
(what `CrossEncoder(max_length=...)` saves). A plain transformers folder of one label is read as what it says it is,
a classifier (`bert_tf.read_hf_task_model`).
Written: the Hugging Face folder with the `sentence_transformers` entry of versions 4 and 5 (its activation the sigmoid,
as CrossEncoder's default for one label), which every version reads.

Example:
    >>> model, seq_length = RerankTask.folder_format.read("ms-marco-MiniLM-L6-v2/")  # doctest: +SKIP
    >>> RerankTask.folder_format.write(model, "exported/", seq_length=512)  # doctest: +SKIP
"""

from __future__ import annotations

import json
from pathlib import Path

from bert_tf.tasks.hf_format import read_hf_model_as, write_hf_model_as
from bert_tf.tasks.rerank.model import BertReranker
from bert_tf.text_files import json_file

ARCHITECTURE = "BertForSequenceClassification"
SIGMOID = "torch.nn.modules.activation.Sigmoid"  # CrossEncoder's activation of one label: its scores in 0 to 1


def _json(path: Path) -> dict:
    try:
        value = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (ValueError, UnicodeDecodeError):
        return {}
    return value if isinstance(value, dict) else {}


def is_cross_encoder_folder(path) -> bool:
    """Whether `path` is a sentence-transformers CrossEncoder folder of a BERT (module docstring)."""
    folder = Path(path)
    config = _json(folder / "config.json")
    marked = (_json(folder / "config_sentence_transformers.json").get("model_type") == "CrossEncoder"
              or "sentence_transformers" in config or "sbert_ce_default_activation_function" in config)
    return marked and (config.get("architectures") or [None])[0] == ARCHITECTURE


def read_cross_encoder_folder(path, model_task) -> tuple[BertReranker, int | None]:
    """The `BertReranker` of a CrossEncoder folder (read as `model_task`'s, the rerank task's) and the longest input
    it reads (None if unsaid)."""
    folder = Path(path)
    model = read_hf_model_as(folder, model_task)
    tokenizer_config = folder / "tokenizer_config.json"
    length = json_file(tokenizer_config, dict).get("model_max_length") if tokenizer_config.is_file() else None
    return model, length if isinstance(length, int) and 0 < length < 10**6 else None


def write_cross_encoder_folder(model: BertReranker, out_dir, vocab_file=None, lower_case=None,
                               seq_length: int | None = None, *, model_task) -> Path:
    """Writes `model` (`model_task`'s, the rerank task's) as a CrossEncoder folder (module docstring) that reads up
    to `seq_length` tokens (None: the encoder's positions)."""
    encoder = model.encoder
    out = write_hf_model_as(model, model_task, out_dir, vocab_file or encoder.vocab_file,
                            encoder.lower_case if lower_case is None else lower_case)
    tokenizer_config = out / "tokenizer_config.json"
    settings = json_file(tokenizer_config, dict) if tokenizer_config.is_file() else {"tokenizer_class": "BertTokenizer"}
    settings["model_max_length"] = seq_length or encoder.config.max_position_embeddings
    tokenizer_config.write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")
    return out
