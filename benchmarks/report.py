"""Writing results: one delimited section per benchmark in benchmarks/RESULTS.md, and one JSON file each.

RESULTS.md is shared with other scripts that append their own sections. This module only
touches the text between its own markers (`<!-- benchmarks.run:NAME start -->` ...
`<!-- benchmarks.run:NAME end -->`): a section is replaced in place when it exists and
appended otherwise; everything else in the file is kept as it is. Files are written to a
temporary name and renamed, so an interrupted run never leaves half a file. Commands are recorded as a reader
runs them from the checkout (`portable_command`).

Example:
    >>> result = BenchmarkResult("demo", "## Demo", {"answer": 42})
    >>> replace_section("# Results\\n", result.name, result.markdown).splitlines()[3]
    '## Demo'
"""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import tempfile
from pathlib import Path

from benchmarks.settings import DATA_DIR
from bert_tf.file_modes import file_creation_mask

BENCHMARKS_DIR = Path(__file__).resolve().parent
RESULTS_MD = BENCHMARKS_DIR / "RESULTS.md"
RESULTS_JSON_DIR = BENCHMARKS_DIR / "results"
SHARED_DATA = "../shared/data"  # the team data folder, where a checkout finds it (README: set-up)
WORK = '"$WORK"'  # what the recorded commands write goes under a folder the reader chooses


@dataclasses.dataclass
class BenchmarkResult:
    """What one benchmark produced: its RESULTS.md section (Markdown, with heading) and raw data for JSON."""

    name: str
    markdown: str
    data: dict


def _markers(name: str) -> tuple[str, str]:
    return f"<!-- benchmarks.run:{name} start -->", f"<!-- benchmarks.run:{name} end -->"


def replace_section(text: str, name: str, markdown: str) -> str:
    """`text` with the section `name` replaced by `markdown` (appended when not there yet)."""
    start, end = _markers(name)
    block = f"{start}\n{markdown.strip()}\n{end}"
    begin = text.find(start)
    finish = text.find(end, begin)
    if begin >= 0 and finish >= 0:
        return text[:begin] + block + text[finish + len(end):]
    return text.rstrip("\n") + "\n\n" + block + "\n"


def _write_atomically(path: Path, content: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, staging = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.chmod(staging, 0o666 & ~file_creation_mask())  # mkstemp makes it owner-only; results are shared
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(content)
        os.replace(staging, path)
    except BaseException:
        Path(staging).unlink(missing_ok=True)
        raise


def write_result(result: BenchmarkResult, results_md: Path = RESULTS_MD, json_dir: Path = RESULTS_JSON_DIR) -> None:
    """Replaces (or appends) the result's section in `results_md` and writes `json_dir/NAME.json`."""
    existing = results_md.read_text(encoding="utf-8") if results_md.exists() else "# Benchmark results\n"
    _write_atomically(results_md, replace_section(existing, result.name, result.markdown))
    _write_atomically(json_dir / f"{result.name}.json", json.dumps(result.data, indent=2, default=str) + "\n")


def portable_command(words: list[str], data_dir: Path = DATA_DIR) -> str:
    """`words` as a shell command a reader runs from the checkout, on any machine: a path in the team data folder
    `data_dir` becomes `../shared/data/...`, one in the temporary folder `"$WORK"/...` (a folder of the reader's).

    Example:
        >>> temporary = Path(tempfile.gettempdir())
        >>> portable_command(["bert-tf", "finetune", "--train", str(DATA_DIR / "sst2" / "train.tsv"),
        ...                   "--out", str(temporary / "quality" / "sst2_model")])
        'bert-tf finetune --train ../shared/data/sst2/train.tsv --out "$WORK"/quality/sst2_model'
    """
    def portable(word: str) -> str:
        path = Path(word)
        for root, name in ((Path(data_dir), SHARED_DATA), (Path(tempfile.gettempdir()), WORK)):
            if path.is_absolute() and path.is_relative_to(root) and path != root:
                return f"{name}/{shlex.quote(str(path.relative_to(root)))}"
        return shlex.quote(word)

    return " ".join(portable(word) for word in words)


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def run_missing(results_file: Path, keys, run, rerun: bool = False) -> dict:
    """Every key's result: `run(key)` for the keys not yet in `results_file` (all of them with `rerun`),
    the file rewritten after each, so that a stopped benchmark goes on where it stopped."""
    results = json.loads(results_file.read_text()) if results_file.exists() else {}
    for key in keys:
        if key in results and not rerun:
            continue
        results[key] = run(key)
        results_file.write_text(json.dumps(results, indent=2) + "\n")
    return results
