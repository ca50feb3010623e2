"""`TaskSettings`: the base of a task's own settings (`bert_tf/tasks/<task>/settings.py`), and `setting`, one of them.

A task's settings are a frozen dataclass: each field has its default, the checks are in `check`, and a field made
with `setting(..., flag="--doc-stride")` is also a `bert-tf finetune --task TASK` option (`add_arguments` and
`from_arguments`). They are saved in the model directory's `bert_tf.json` (`to_metadata`) and read back
(`from_metadata`) inside the task's `TaskSpec` (`bert_tf.tasks.spec`); fine-tuning takes them in
`FinetuneConfig.settings`. A tuple default makes the field a tuple (JSON gives lists).

A settings class also answers what its fields decide of the task's text: the smallest sequence that fits
(`shortest_seq_length`), the names of the raw-text inputs (`text_inputs`) and whether they fit an encoder
(`check_fits`).

Example:
    >>> @dataclasses.dataclass(frozen=True)
    ... class WindowSettings(TaskSettings):
    ...     stride: int = setting(64, flag="--stride", type=int, help="tokens between windows")
    ...     def check(self):
    ...         positive_integers(self, "stride")
    >>> WindowSettings.from_metadata(WindowSettings(stride=32).to_metadata())
    WindowSettings(stride=32)
    >>> WindowSettings(stride=0)
    Traceback (most recent call last):
    ...
    ValueError: stride must be a positive integer, got 0.
"""

from __future__ import annotations

import argparse
import dataclasses
import math

# The settings class of each registered task by its name: filled by `bert_tf.tasks.registry.register_task` only.
SETTINGS_CLASSES: dict[str, type["TaskSettings"]] = {}


def setting(default, flag: str | None = None, **argparse_options):
    """A settings field with its `default`; with `flag`, also a command-line option (`argparse_options`: its `type`,
    `choices`, `help`, `nargs`, `metavar`). A boolean option flips the default: `--no-normalize` for a True one."""
    return dataclasses.field(default=default, metadata={"flag": flag, "argparse": argparse_options})


def positive_integers(settings, *names: str) -> None:
    """Raises unless each of the `names` fields of `settings` is an integer of at least 1."""
    for name in names:
        value = getattr(settings, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}.")


@dataclasses.dataclass(frozen=True)
class TaskSettings:
    """A task's own settings (none here: the encoder's and the pretrainer's); subclasses add fields and `check`."""

    description = ""  # what the task's data files are, for its command-line options' help

    def __post_init__(self):
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if isinstance(field.default, tuple):
                object.__setattr__(self, field.name, tuple(value))
            elif isinstance(value, float) and not math.isfinite(value):
                raise ValueError(f"{field.name} must be a finite number, got {value!r}.")
        self.check()

    def check(self) -> None:
        """Raises ValueError, naming the field, when a value is not allowed."""

    def shortest_seq_length(self, text_pair: bool) -> int:
        """The smallest seq_length that leaves room for text: [CLS], [SEP] and a token (per text of a pair)."""
        return 3 + text_pair

    def text_inputs(self, text_pair: bool) -> tuple[str, ...]:
        """The names of the raw-text inputs (SavedModel and TFLite signatures, `bert-tf predict`'s fields)."""
        return ("text", "text_b") if text_pair else ("text",)

    def check_fits(self, config) -> None:
        """Raises if a setting does not fit the encoder's `BertConfig`."""

    def replace(self, **changes) -> "TaskSettings":
        return dataclasses.replace(self, **changes)

    def to_metadata(self) -> dict:
        """JSON-ready form, as stored in `bert_tf.json` (tuples as lists)."""
        return {name: list(value) if isinstance(value, tuple) else value
                for name, value in dataclasses.asdict(self).items()}

    @classmethod
    def names(cls) -> list[str]:
        return [field.name for field in dataclasses.fields(cls)]

    @classmethod
    def from_metadata(cls, metadata: dict) -> "TaskSettings":
        """The settings stored by `to_metadata`; unknown keys are an error naming them."""
        unknown = sorted(set(metadata) - set(cls.names()))
        if unknown:
            raise ValueError(f"Unknown task settings {unknown}; known: {cls.names()}.")
        return cls(**metadata)

    @classmethod
    def flags(cls) -> dict[str, str]:
        """{field: its command-line flag} of the fields that are options."""
        return {field.name: field.metadata["flag"] for field in dataclasses.fields(cls)
                if field.metadata.get("flag")}

    @classmethod
    def add_arguments(cls, parser) -> None:
        """The options of the fields that have a flag, on `parser` (an argparse parser or group); an option not given
        leaves no attribute, so that the default here applies."""
        for field in dataclasses.fields(cls):
            flag = field.metadata.get("flag")
            if not flag:
                continue
            options = dict(field.metadata["argparse"])
            if isinstance(field.default, bool):
                options["action"] = "store_false" if field.default else "store_true"
            elif options.get("help") and field.default not in (None, ()):
                shown = " ".join(map(str, field.default)) if isinstance(field.default, tuple) else field.default
                options["help"] += f" (default: {shown})"
            parser.add_argument(flag, dest=field.name, default=argparse.SUPPRESS, **options)

    @classmethod
    def from_arguments(cls, args: argparse.Namespace) -> dict:
        """{field: value} of the options given in `args` (parsed with `add_arguments`)."""
        return {name: getattr(args, name) for name in cls.flags() if hasattr(args, name)}
