"""`TaskSpec`: what a model directory's task is, and every setting that shapes text → features → outputs.

One definition, written into the model directory (`bert_tf.json`'s `"task"`) by
`save_pretrained` and read back by `load_model_directory`; fine-tuning, evaluation,
`predict`, the SavedModel and the TFLite export all take their settings from it, so they
cannot disagree. The defaults here are the only ones (BERT's `run_squad.py` for SQuAD).

| task | model class | settings that matter |
|---|---|---|
| classify | `BertClassifier` | label_names, text_pair, truncation, multi_label(_threshold), columns, label_separator |
| ner | `BertTokenClassifier` | label_names, label_scheme |
| squad | `BertSpanLabeler` | doc_stride, max_query_length, max_answer_length, n_best_size, null_score_threshold, version_2 |
| embed | `BertEmbedder` | pooling, normalize, score_range, embedding_size, embedding_dims |
| encoder, pretrainer | `BertModel`, `BertPretrainer` | text_pair, truncation |

Long inputs: every raw text is first cut to `max_text_bytes` UTF-8 bytes (a bound on the cost of
tokenizing it); classification truncates (pairs with `truncation`); NER cuts a sentence into
consecutive windows of whole words, so every word is tagged; SQuAD reads the context in
windows `doc_stride` tokens apart and answers with the best span over all of them.

Example:
    >>> spec = TaskSpec(task="squad", seq_length=384)
    >>> spec.doc_stride, spec.max_query_length, spec.text_inputs
    (128, 64, ('question', 'context'))
    >>> TaskSpec.from_metadata(spec.to_metadata()) == spec
    True
"""

from __future__ import annotations

import dataclasses

from bert_tf.preprocessor import TRUNCATIONS

FINETUNED_TASKS = ("classify", "ner", "squad", "embed")
TASKS = (*FINETUNED_TASKS, "encoder", "pretrainer")
DEFAULT_SEQ_LENGTH = {"classify": 128, "ner": 128, "squad": 384, "embed": 128, "encoder": 128, "pretrainer": 128}
POOLINGS = ("mean", "cls", "max")  # how a sentence embedding is made of its token vectors


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """A model's task and its text → features → outputs settings (module docstring)."""

    task: str  # one of TASKS
    seq_length: int  # tokens per model input, [CLS] and [SEP] included
    label_names: tuple[str, ...] = ()  # classify: class names; ner: tags (BIO)
    max_text_bytes: int = 65536  # each raw text is cut to this many UTF-8 bytes first (bert_tf.tasks.text_budget)
    # Classification (and encoders): the text inputs and how pairs are cut to seq_length. "longest_first": the
    # longer text loses a token until the pair fits (Hugging Face's; see bert_tf.preprocessor for the others).
    text_pair: bool = False
    truncation: str = "longest_first"
    multi_label: bool = False  # each example has any number of labels (sigmoid per class)
    multi_label_threshold: float = 0.5  # a class is predicted when its sigmoid is at least this
    columns: tuple[str | None, ...] = (None, None, None)  # the data files' text, text pair and label columns
    label_separator: str = "|"  # between the labels of one example in a CSV/TSV cell (multi-label)
    # NER.
    label_scheme: str = "BIO"  # tags are trained and predicted as BIO (IOB1 files are converted on reading)
    # SQuAD.
    doc_stride: int = 128  # tokens between the starts of consecutive context windows
    max_query_length: int = 64  # question tokens kept
    max_answer_length: int = 30  # tokens of the longest answer considered
    n_best_size: int = 20  # start and end candidates considered per window
    null_score_threshold: float = 0.0  # SQuAD 2.0: answer "" when null score - best span score exceeds it
    version_2: bool = False  # SQuAD 2.0: unanswerable questions are possible
    # Sentence embeddings.
    pooling: str = "mean"  # POOLINGS: the mean of the real tokens' vectors, the [CLS] vector, or their maximum
    normalize: bool = True  # vectors of length 1 (cosine similarity is then their inner product)
    score_range: tuple[float, float] = (0.0, 5.0)  # the similarity scores of scored pairs (STS-B: 0 to 5)
    # The vectors' size: the encoder's width, or another through a learned linear projection after the pooling (a
    # distilled student's, into its teacher's space); 0: not known yet (the encoder's width when the model is built).
    embedding_size: int = 0
    embedding_dims: int = 0  # vectors cut to their first this many values (a Matryoshka size) and renormalised; 0: whole

    def __post_init__(self):
        if self.task not in TASKS:
            raise ValueError(f"Unknown task {self.task!r}; use one of {list(TASKS)}.")
        if self.pooling not in POOLINGS:
            raise ValueError(f"Unknown pooling {self.pooling!r}; use one of {list(POOLINGS)}.")
        if self.truncation not in TRUNCATIONS:
            raise ValueError(f"Unknown truncation {self.truncation!r}; use one of {list(TRUNCATIONS)}.")
        for name in ("seq_length", "max_text_bytes", "doc_stride", "max_query_length", "max_answer_length",
                     "n_best_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}.")
        if isinstance(self.embedding_dims, bool) or not isinstance(self.embedding_dims, int) or self.embedding_dims < 0:
            raise ValueError(f"embedding_dims must be an integer >= 0 (0: the whole vector), got {self.embedding_dims!r}.")
        if isinstance(self.embedding_size, bool) or not isinstance(self.embedding_size, int) or self.embedding_size < 0:
            raise ValueError(f"embedding_size must be an integer >= 0 (0: the encoder's width), got "
                             f"{self.embedding_size!r}.")
        if self.seq_length < self.shortest_seq_length():
            raise ValueError(f"seq_length {self.seq_length} is too short for task {self.task!r} "
                             f"(at least {self.shortest_seq_length()}).")
        object.__setattr__(self, "label_names", tuple(str(name) for name in self.label_names))
        object.__setattr__(self, "columns", tuple(self.columns))
        object.__setattr__(self, "score_range", tuple(float(value) for value in self.score_range))

    def shortest_seq_length(self) -> int:
        """The smallest seq_length that leaves room for text: SQuAD needs its question and 8 context tokens."""
        if self.task == "squad":
            return self.max_query_length + 3 + 8
        return 3 + self.text_pair

    @property
    def text_inputs(self) -> tuple[str, ...]:
        """The names of the raw-text inputs (SavedModel and TFLite signatures)."""
        if self.task == "squad":
            return ("question", "context")
        return ("text", "text_b") if self.text_pair else ("text",)

    def check_fits(self, config) -> None:
        """Raises if seq_length does not fit the encoder's `BertConfig` (`BertConfig.check_sequence_length`), or
        embedding_dims the vectors' size (`embedding_size`, else the encoder's width)."""
        config.check_sequence_length(self.seq_length, shortest=self.shortest_seq_length())
        size = self.embedding_size or config.hidden_size
        if self.embedding_dims > size:
            raise ValueError(f"embedding_dims {self.embedding_dims} is more than the model's {size} values.")

    def to_metadata(self) -> dict:
        """JSON-ready form, as stored in `bert_tf.json`."""
        metadata = dataclasses.asdict(self)
        metadata["label_names"] = list(self.label_names)
        metadata["columns"] = list(self.columns)
        metadata["score_range"] = list(self.score_range)
        return metadata

    @classmethod
    def from_metadata(cls, metadata: dict) -> "TaskSpec":
        """The spec stored by `to_metadata`; unknown keys are an error naming them."""
        known = {field.name for field in dataclasses.fields(cls)}
        unknown = sorted(set(metadata) - known)
        if unknown:
            raise ValueError(f"Unknown task settings {unknown}; known: {sorted(known)}.")
        return cls(**metadata)

    def replace(self, **changes) -> "TaskSpec":
        return dataclasses.replace(self, **changes)
