"""`TaskSpec`: what a model directory's task is: the settings every task shares, and the task's own settings.

One definition, written into the model directory (`bert_tf.json`'s `"task"`) by `save_pretrained` and
read back by `load_model_directory`; fine-tuning, evaluation, `predict`, the SavedModel and the TFLite
export all take their settings from it, so they cannot disagree. The shared fields are below; the task's
own are its settings class's (`bert_tf/tasks/<task>/settings.py`, found through the registry), in
`settings`, and are read as `spec.settings.NAME` or, for short, `spec.NAME`. A model directory records
only its task's settings.

Long inputs: every raw text is first cut to `max_text_bytes` UTF-8 bytes (a bound on the cost of tokenizing
it); then each task reads it its own way (classification truncates pairs with `truncation`; NER cuts a
sentence into windows of whole words; SQuAD reads the context in windows).

Example:
    >>> spec = TaskSpec.of("squad", seq_length=384, doc_stride=64)
    >>> spec.settings.doc_stride, spec.max_query_length, spec.text_inputs
    (64, 64, ('question', 'context'))
    >>> TaskSpec.from_metadata(spec.to_metadata()) == spec
    True
    >>> sorted(TaskSpec.of("ner", seq_length=128).to_metadata()["settings"])
    ['label_scheme']
"""

from __future__ import annotations

import dataclasses

from bert_tf.preprocessor import TRUNCATIONS
from bert_tf.tasks.settings import SETTINGS_CLASSES, TaskSettings


def settings_class(task: str) -> type[TaskSettings]:
    """The settings class of the registered task `task`."""
    if task not in SETTINGS_CLASSES:
        raise ValueError(f"Unknown task {task!r}; use one of {list(SETTINGS_CLASSES)}.")
    return SETTINGS_CLASSES[task]


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """A model's task: the shared text → features settings and the task's own (module docstring)."""

    task: str  # a task's name in bert_tf.tasks.registry
    seq_length: int  # tokens per model input, [CLS] and [SEP] included
    label_names: tuple[str, ...] = ()  # the names of the head's outputs (classes, tags); () without labels
    max_text_bytes: int = 65536  # each raw text is cut to this many UTF-8 bytes first (bert_tf.tasks.text_budget)
    # Whether the model reads two texts per example, and how a pair is cut to seq_length. "longest_first": the
    # longer text loses a token until the pair fits (Hugging Face's; see bert_tf.preprocessor for the others).
    text_pair: bool = False
    truncation: str = "longest_first"
    settings: TaskSettings | None = None  # the task's own settings; None: its defaults

    def __post_init__(self):
        kind = settings_class(self.task)
        settings = kind() if self.settings is None else self.settings
        if type(settings) is not kind:
            raise ValueError(f"Task {self.task!r} takes {kind.__name__}, not {type(settings).__name__}.")
        object.__setattr__(self, "settings", settings)
        if self.truncation not in TRUNCATIONS:
            raise ValueError(f"Unknown truncation {self.truncation!r}; use one of {list(TRUNCATIONS)}.")
        for name in ("seq_length", "max_text_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}.")
        if self.seq_length < self.shortest_seq_length():
            raise ValueError(f"seq_length {self.seq_length} is too short for task {self.task!r} "
                             f"(at least {self.shortest_seq_length()}).")
        object.__setattr__(self, "label_names", tuple(str(name) for name in self.label_names))

    def __getattr__(self, name: str):
        """A setting of the task's own (`spec.doc_stride` is `spec.settings.doc_stride`)."""
        if name.startswith("__") or name == "settings":
            raise AttributeError(name)
        try:
            return getattr(self.settings, name)
        except AttributeError:
            raise AttributeError(f"A {self.task} TaskSpec has no setting {name!r}.") from None

    @classmethod
    def of(cls, task: str, seq_length: int, **fields) -> "TaskSpec":
        """The spec of `task` with shared fields and the task's own settings given together by name."""
        shared = {field.name for field in dataclasses.fields(cls)} - {"task", "seq_length", "settings"}
        kind = settings_class(task)
        unknown = sorted(set(fields) - shared - set(kind.names()))
        if unknown:
            raise ValueError(f"Unknown settings {unknown} for task {task!r}; its own are {kind.names()}.")
        own = kind(**{name: value for name, value in fields.items() if name not in shared})
        return cls(task=task, seq_length=seq_length, settings=own,
                   **{name: value for name, value in fields.items() if name in shared})

    def shortest_seq_length(self) -> int:
        """The smallest seq_length that leaves room for text (SQuAD: its question and 8 context tokens)."""
        return self.settings.shortest_seq_length(self.text_pair)

    @property
    def text_inputs(self) -> tuple[str, ...]:
        """The names of the raw-text inputs (SavedModel and TFLite signatures)."""
        return self.settings.text_inputs(self.text_pair)

    def check_fits(self, config) -> None:
        """Raises if seq_length does not fit the encoder's `BertConfig` (`BertConfig.check_sequence_length`), or a
        setting of the task's does not (an embedding's `embedding_dims`, more than the vectors have)."""
        config.check_sequence_length(self.seq_length, shortest=self.shortest_seq_length())
        self.settings.check_fits(config)

    def to_metadata(self) -> dict:
        """JSON-ready form, as stored in `bert_tf.json`: the shared fields, and the task's own under "settings"."""
        metadata = {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}
        metadata["label_names"] = list(self.label_names)
        metadata["settings"] = self.settings.to_metadata()
        return metadata

    @classmethod
    def from_metadata(cls, metadata: dict) -> "TaskSpec":
        """The spec stored by `to_metadata`; unknown keys are an error naming them. A spec of the earlier layout,
        every task's settings side by side, is read too: the other tasks' settings (their defaults) are dropped."""
        metadata = dict(metadata)
        task = metadata.get("task")
        kind = settings_class(task)
        shared = {field.name for field in dataclasses.fields(cls)}
        if "settings" in metadata:
            unknown = sorted(set(metadata) - shared)
            if unknown:
                raise ValueError(f"Unknown task settings {unknown}; known: {sorted(shared)}.")
            return cls(**{**metadata, "settings": kind.from_metadata(metadata["settings"] or {})})
        every_setting = {name for each in SETTINGS_CLASSES.values() for name in each.names()}
        unknown = sorted(set(metadata) - shared - every_setting)
        if unknown:
            raise ValueError(f"Unknown task settings {unknown}; known: {sorted(shared | every_setting)}.")
        own = {name: value for name, value in metadata.items() if name in kind.names()}
        return cls(**{name: value for name, value in metadata.items() if name in shared},
                   settings=kind.from_metadata(own))

    def replace(self, **changes) -> "TaskSpec":
        """A copy with `changes`, to shared fields or to the task's own settings (by name)."""
        shared = {field.name for field in dataclasses.fields(self)}
        own = {name: value for name, value in changes.items() if name not in shared}
        changes = {name: value for name, value in changes.items() if name in shared}
        task = changes.get("task", self.task)
        settings = changes.pop("settings", self.settings)
        if type(settings) is not settings_class(task):
            settings = settings_class(task)()
        if own:
            unknown = sorted(set(own) - set(type(settings).names()))
            if unknown:
                raise ValueError(f"Unknown settings {unknown} for task {task!r}; its own are "
                                 f"{type(settings).names()}.")
            settings = settings.replace(**own)
        return dataclasses.replace(self, settings=settings, **changes)
