"""`write_exports`: every kind of export bert-tf writes, from tiny random-weight models, and the inputs to read them on.

The models and texts are the tests' (`tests/tiny_exports.py`, `tests/tiny_finetune_files.py`):
two-layer encoders with random weights, a 30-token vocabulary. Each kind is one call of
`export_saved_model` (`bert-tf export`) with the options its `flags` name. `manifest.json`
lists the exports (path, format, precision) and `inputs.npz` holds one array per input name
any signature takes (`text`, `text_b`, `question`, `context`, `request` and the three token
ids), so that a reader needs neither bert_tf nor the model directories.

Example:
    >>> manifest = write_exports("/tmp/compat")                # doctest: +SKIP
    >>> manifest["exports"]["ids-only"]["format"]              # doctest: +SKIP
    'saved_model'
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import tensorflow as tf

import bert_tf
from serving.export.saved_model import export_saved_model
from serving.protocol import TFLITE_MODEL_FILE
from tests.tiny_exports import PAIRS, TEXTS, tiny_encoder, write_vocab
from tests.tiny_finetune_files import SQUAD_PARAGRAPHS

SEQ_LENGTH = 16
CLASSIFIER_LABELS = ["negative", "neutral", "positive"]
NER_LABELS = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
SQUAD_SETTINGS = {"max_query_length": 4, "max_answer_length": 5, "version_2": False, "doc_stride": 6}


@dataclass(frozen=True)
class ExportKind:
    """One kind of export: the model directory it is made from and the `export_saved_model` options."""

    model: str
    flags: str = ""
    options: dict = field(default_factory=dict)

    @property
    def precision(self) -> str:
        """float32, bf16 or int8: which tolerance its answers are compared with."""
        return {"bf16": "bf16", "int8": "int8"}.get(self.options.get("quantize"), "float32")

    @property
    def label(self) -> str:
        """How the table names it: the model, the `bert-tf export` flags, and what an int8 export writes."""
        written = " (model.tflite)" if self.precision == "int8" else ""
        return f"{self.model} {self.flags}".strip() + written


KINDS = {
    "classifier": ExportKind("classifier"),
    "pair-classifier": ExportKind("pair classifier"),
    "ids-only": ExportKind("classifier", "--ids-only", {"ids_only": True}),
    "bf16": ExportKind("classifier", "--quantize bf16", {"quantize": "bf16"}),
    "encoder": ExportKind("encoder"),
    "ner": ExportKind("ner"),
    "squad": ExportKind("squad"),
    "int8": ExportKind("classifier", "--quantize int8", {"quantize": "int8"}),
    "int8-ids-only": ExportKind("classifier", "--quantize int8 --ids-only", {"quantize": "int8", "ids_only": True}),
}


def write_model_directories(folder: Path) -> dict[str, Path]:
    """The tiny model directories the exports are made from, by `ExportKind.model`."""
    folder.mkdir(parents=True, exist_ok=True)
    vocab_file = write_vocab(folder)
    models = {
        "classifier": (bert_tf.BertClassifier(tiny_encoder(seed=1), num_classes=3, label_names=CLASSIFIER_LABELS),
                       dict(task="classify")),
        "pair classifier": (bert_tf.BertClassifier(tiny_encoder(seed=2), num_classes=2),
                            dict(task="classify", text_pair=True)),
        "encoder": (tiny_encoder(seed=3), dict(task="encoder")),
        "ner": (bert_tf.BertTokenClassifier(tiny_encoder(seed=4), num_labels=len(NER_LABELS), label_names=NER_LABELS),
                dict(task="ner", settings={"label_names": NER_LABELS})),
        "squad": (bert_tf.BertSpanLabeler(tiny_encoder(seed=5)), dict(task="squad", settings=SQUAD_SETTINGS)),
    }
    return {name: bert_tf.save_pretrained(model, folder / name.replace(" ", "_"), vocab_file=vocab_file,
                                          seq_length=SEQ_LENGTH, **arguments)
            for name, (model, arguments) in models.items()}


def reader_inputs(vocab_file: Path) -> dict[str, np.ndarray]:
    """One array per input name: the tests' texts, SQuAD's questions and contexts, and the texts' token ids."""
    questions = [question for _, qas in SQUAD_PARAGRAPHS for question, _ in qas]
    contexts = [context for context, qas in SQUAD_PARAGRAPHS for _ in qas]
    preprocessor = bert_tf.BertPreprocessor(bert_tf.BertTokenizer(vocab_file), seq_length=SEQ_LENGTH)
    ids = {name: value.numpy() for name, value in preprocessor(tf.constant(TEXTS)).items()}
    texts = {"text": TEXTS, "text_b": PAIRS, "question": questions, "context": contexts, "request": ["", ""]}
    return {**{name: np.array([text.encode() for text in value]) for name, value in texts.items()}, **ids}


def write_exports(folder: str | Path) -> dict:
    """Writes the model directories, every kind of export, `inputs.npz` and `manifest.json` under `folder`;
    returns the manifest: {"inputs": path, "exports": {kind: {"path", "format", "precision"}}}."""
    folder = Path(folder)
    directories = write_model_directories(folder / "models")
    exports = {}
    for name, kind in KINDS.items():
        version = export_saved_model(directories[kind.model], folder / "exports", name, **kind.options)
        tflite = version / TFLITE_MODEL_FILE
        exports[name] = {"path": str(tflite if tflite.exists() else version),
                         "format": "tflite" if tflite.exists() else "saved_model", "precision": kind.precision}
    inputs = folder / "inputs.npz"
    np.savez(inputs, **reader_inputs(directories["classifier"] / "vocab.txt"))
    manifest = {"inputs": str(inputs), "exports": exports}
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return manifest
