"""What each TensorFlow made of each export (`Reading`), and the two tables the check prints.

- `version_table`: export kind → per TensorFlow version: does it load, with tensorflow-text's ops,
  and answer as the project's TensorFlow does (the largest difference), and which ops beyond
  TensorFlow's own it needs in the server;
- `serving_table` (README's): export kind → the oldest TensorFlow checked from which every newer one
  serves it (TF Serving 2.X ships TensorFlow 2.X), and those ops.

Example:
    >>> same = Outcome(loads=True, agreement=Agreement(1e-9))
    >>> unregistered = Outcome(loads=False, error="session: NotFoundError: Op type not registered 'X'")
    >>> readings = {"ids-only": {"2.20.0": Reading(same, same), "2.21.0": Reading(same, same)},
    ...             "classifier": {"2.20.0": Reading(unregistered, unregistered, ("X",)),
    ...                            "2.21.0": Reading(same, unregistered, ("X",))}}
    >>> labels = {"ids-only": "classifier --ids-only", "classifier": "classifier"}
    >>> print(serving_table(labels, readings))
    | export | oldest TensorFlow (= TF Serving) that serves it | ops the server needs beyond TensorFlow's |
    |---|---|---|
    | `classifier --ids-only` | 2.20.0 (the oldest checked) | none |
    | `classifier` | 2.21.0 | tensorflow-text's: X |
    >>> [(kind, version) for kind, version, _ in failures(readings)]
    [('classifier', '2.20.0')]
"""

from __future__ import annotations

from dataclasses import dataclass

from compat.comparison import Agreement


@dataclass(frozen=True)
class Outcome:
    """One reading of one export: did it load and run (else the error), and how its answers compare."""

    loads: bool
    error: str = ""
    agreement: Agreement | None = None

    @property
    def serves(self) -> bool:
        """It loaded and answered as the project's TensorFlow does."""
        return self.loads and not self.agreement.mismatches

    def describe(self) -> str:
        """`same (max difference 1e-09)`, `DIFFERENT: ...` or `does not load: the error`."""
        if not self.loads:
            return f"does not load: {self.error}"
        if self.agreement.mismatches:
            return f"DIFFERENT: {'; '.join(self.agreement.mismatches)}"
        return f"same (max difference {self.agreement.max_difference:.1g})"


@dataclass(frozen=True)
class Reading:
    """One TensorFlow's readings of one export: with tensorflow-text's ops, without them, and the ops the export
    holds that this TensorFlow does not register (or, for TFLite, its custom ops)."""

    with_text_ops: Outcome
    without_text_ops: Outcome
    foreign_ops: tuple[str, ...] = ()

    def describe(self) -> str:
        if self.with_text_ops.serves and self.without_text_ops.serves:
            return f"{self.with_text_ops.describe()}; the same without tensorflow-text"
        return self.with_text_ops.describe()


def server_ops(readings: dict[str, Reading]) -> str:
    """The ops beyond TensorFlow's that an export needs in the server, from its readings in the versions that
    serve it: "none" when each of them serves it without tensorflow-text's ops too."""
    serving = [reading for reading in readings.values() if reading.with_text_ops.serves]
    if all(reading.without_text_ops.serves for reading in serving):
        return "none"
    return f"tensorflow-text's: {', '.join(sorted({op for reading in serving for op in reading.foreign_ops}))}"


def oldest_serving(readings: dict[str, Reading]) -> str:
    """The oldest version from which every newer one (of those read) serves the export ("none" if the newest does
    not), with "(the oldest checked)" when that is the oldest read."""
    versions = sorted(readings, key=version_key, reverse=True)
    oldest = "none"
    for version in versions:
        if not readings[version].with_text_ops.serves:
            return oldest
        oldest = version
    return f"{oldest} (the oldest checked)"


def version_table(labels: dict[str, str], readings: dict[str, dict[str, Reading]]) -> str:
    """Markdown: a row per export kind, a column per TensorFlow version (oldest first), then the server's ops."""
    versions = sorted({version for by_version in readings.values() for version in by_version}, key=version_key)
    lines = ["| export | " + " | ".join(f"TF {version}" for version in versions) + " | ops beyond TensorFlow's |",
             "|---|" + "---|" * (len(versions) + 1)]
    for kind, by_version in readings.items():
        cells = [by_version[version].describe() if version in by_version else "not read" for version in versions]
        lines.append(f"| `{labels[kind]}` | " + " | ".join(cells) + f" | {server_ops(by_version)} |")
    return "\n".join(lines)


def serving_table(labels: dict[str, str], readings: dict[str, dict[str, Reading]]) -> str:
    """Markdown: a row per export kind: the oldest TensorFlow (and TF Serving) checked that serves it, and the ops."""
    lines = ["| export | oldest TensorFlow (= TF Serving) that serves it | ops the server needs beyond "
             "TensorFlow's |", "|---|---|---|"]
    lines += [f"| `{labels[kind]}` | {oldest_serving(by_version)} | {server_ops(by_version)} |"
              for kind, by_version in readings.items()]
    return "\n".join(lines)


def failures(readings: dict[str, dict[str, Reading]]) -> list[tuple[str, str, Outcome]]:
    """(kind, version, outcome) wherever, with tensorflow-text's ops, an export does not load or answers differently."""
    return [(kind, version, reading.with_text_ops) for kind, by_version in readings.items()
            for version, reading in by_version.items() if not reading.with_text_ops.serves]


def version_key(version: str) -> tuple[int, ...]:
    """A version's numbers, to sort by.

    >>> sorted(["2.9.1", "2.21.0", "2.18.1"], key=version_key)
    ['2.9.1', '2.18.1', '2.21.0']
    """
    return tuple(int(part) for part in version.split("."))
