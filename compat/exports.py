"""`write_exports`: every kind of export bert-tf writes, from tiny random-weight models, and the inputs to read them on.

The models and texts are the tests' (`tests/tiny_exports.py`, `tests/tiny_finetune_files.py`):
two-layer encoders with random weights, a 30-token vocabulary. Each kind is one call of its `write`:
`export_model` (`bert-tf export` with the options its `flags` name) or `index_corpus` (`bert-tf index`
of six tiny documents: hybrid with the embedding model, `--lexical-only`, or hybrid reranked by the
reranker). `manifest.json` lists the exports (path, format, precision) and `inputs.npz` holds one
array per input name any signature takes (`text`, `text_b`, `question`, `context`, `request`, the
three token ids, a reranker's `query` and `document` [batch, documents], the search settings `mode`,
`fusion` and `dense_weight`, scalars), and `KIND/name` where a kind reads its own (the lexical
index's mode), so that a reader needs neither bert_tf nor the model directories.

Example:
    >>> manifest = write_exports("/tmp/compat")                # doctest: +SKIP
    >>> manifest["exports"]["ids-only"]["format"]              # doctest: +SKIP
    'saved_model'
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import tensorflow as tf

import bert_tf
from bert_tf.tasks.rerank.model import BertReranker
from serving.export.saved_model import export_saved_model
from serving.export.search_index import SearchSettings, export_search_index
from serving.protocol import TFLITE_MODEL_FILE
from tests.tiny_exports import PAIRS, TEXTS, tiny_encoder, write_vocab
from tests.tiny_finetune_files import SQUAD_PARAGRAPHS

SEQ_LENGTH = 16
CLASSIFIER_LABELS = ["negative", "neutral", "positive"]
NER_LABELS = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
SQUAD_SETTINGS = {"max_query_length": 4, "max_answer_length": 5, "version_2": False, "doc_stride": 6}
DOCUMENTS = {"d1": "the film was great", "d2": "a dull movie, not good", "d3": "who lives in paris",
             "d4": "berlin is not paris", "d5": "a very good film", "d6": "the movie was bad"}  # the indexes' corpus
SEARCH_INPUTS = {"mode": "hybrid", "fusion": "weighted", "dense_weight": 0.25}  # not the index's defaults


def export_model(directories: dict[str, Path], folder: Path, name: str, kind: ExportKind) -> Path:
    """`bert-tf export` of the kind's model with its options: the version written."""
    return export_saved_model(directories[kind.model], folder, name, **kind.options)


def index_corpus(directories: dict[str, Path], folder: Path, name: str, kind: ExportKind) -> Path:
    """`bert-tf index` of `DOCUMENTS` with the kind's model (None: `--lexical-only`) and options (`reranker`: the
    model directory that reranks, and the other `SearchSettings`): the version written."""
    corpus = folder / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"_id": key, "text": text}) + "\n" for key, text in DOCUMENTS.items()))
    settings = {key: value for key, value in kind.options.items() if key != "reranker"}
    reranker = kind.options.get("reranker")
    return export_search_index(directories.get(kind.model), corpus, folder, name,
                               settings=SearchSettings(**settings), progress=False,
                               reranker=None if reranker is None else directories[reranker])


@dataclass(frozen=True)
class ExportKind:
    """One kind of export: the model directory it is made from (None: none), the command's flags, the options of
    `write` (the function that writes it: `export_model` or `index_corpus`), and the inputs it reads that differ
    from the shared ones (`reader_inputs`)."""

    model: str | None
    flags: str = ""
    options: dict = field(default_factory=dict)
    write: Callable[..., Path] = export_model
    inputs: dict = field(default_factory=dict)

    @property
    def precision(self) -> str:
        """float32, bf16 or int8: which tolerance its answers are compared with."""
        return {"bf16": "bf16", "int8": "int8"}.get(self.options.get("quantize"), "float32")

    @property
    def label(self) -> str:
        """How the table names it: the model, the command's flags, and what an int8 export writes."""
        written = " (model.tflite)" if self.precision == "int8" else ""
        return f"{self.model or ''} {self.flags}".strip() + written


# `bert-tf index`'s: hybrid by default; the chained one reranks the first stage's best 4 and returns 2
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
    "embedding": ExportKind("embedding"),
    "reranker": ExportKind("reranker"),
    "search-index": ExportKind("embedding", "index", write=index_corpus),
    "lexical-index": ExportKind(None, "index --lexical-only", {"mode": "lexical"}, index_corpus,
                                inputs={"mode": "lexical"}),
    "reranked-index": ExportKind("embedding", "index --rerank reranker --rerank-top-k 4",
                                 {"reranker": "reranker", "top_k": 2, "rerank_top_k": 4}, index_corpus),
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
        "embedding": (bert_tf.BertEmbedder(tiny_encoder(seed=6)), dict(task="embed")),
        "reranker": (BertReranker(tiny_encoder(seed=7, initializer_range=0.5)), dict(task="rerank", text_pair=True)),
    }
    return {name: bert_tf.save_pretrained(model, folder / name.replace(" ", "_"), vocab_file=vocab_file,
                                          seq_length=SEQ_LENGTH, **arguments)
            for name, (model, arguments) in models.items()}


def reader_inputs(vocab_file: Path) -> dict[str, np.ndarray]:
    """One array per input name: the tests' texts, SQuAD's questions and contexts, the texts' token ids, queries
    and their documents (a reranker's), the search settings; and `kind/name` for a kind's own (`ExportKind.inputs`)."""
    questions = [question for _, qas in SQUAD_PARAGRAPHS for question, _ in qas]
    contexts = [context for context, qas in SQUAD_PARAGRAPHS for _ in qas]
    preprocessor = bert_tf.BertPreprocessor(bert_tf.BertTokenizer(vocab_file), seq_length=SEQ_LENGTH)
    ids = {name: value.numpy() for name, value in preprocessor(tf.constant(TEXTS)).items()}
    documents = [[pair, text, ""] for pair, text in zip(PAIRS, reversed(TEXTS))]
    values = {"text": TEXTS, "text_b": PAIRS, "question": questions, "context": contexts, "request": ["", ""],
              "query": TEXTS, "document": documents, **SEARCH_INPUTS,
              **{f"{name}/{key}": value for name, kind in KINDS.items() for key, value in kind.inputs.items()}}
    return {**{name: as_array(value) for name, value in values.items()}, **ids}


def as_array(value) -> np.ndarray:
    """A string, a number or (nested) lists of strings as a signature takes it: strings as bytes, numbers float32.

    >>> as_array([["a", "é"]]), as_array("hybrid"), as_array(0.25)
    (array([[b'a', b'\\xc3\\xa9']], dtype='|S2'), array(b'hybrid', dtype='|S6'), array(0.25, dtype=float32))
    """
    array = np.array(value)
    return np.char.encode(array, "utf-8") if array.dtype.kind == "U" else array.astype(np.float32)


def write_exports(folder: str | Path) -> dict:
    """Writes the model directories, every kind of export, `inputs.npz` and `manifest.json` under `folder`;
    returns the manifest: {"inputs": path, "exports": {kind: {"path", "format", "precision"}}}."""
    folder = Path(folder)
    directories = write_model_directories(folder / "models")
    exports = {}
    for name, kind in KINDS.items():
        version = kind.write(directories, folder / "exports", name, kind)
        tflite = version / TFLITE_MODEL_FILE
        exports[name] = {"path": str(tflite if tflite.exists() else version),
                         "format": "tflite" if tflite.exists() else "saved_model", "precision": kind.precision}
    inputs = folder / "inputs.npz"
    np.savez(inputs, **reader_inputs(directories["classifier"] / "vocab.txt"))
    manifest = {"inputs": str(inputs), "exports": exports}
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return manifest
