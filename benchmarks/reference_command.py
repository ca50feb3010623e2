"""The command line of a sentence-transformers reference script: a recipe in (JSON), a result out (JSON).

    python -m benchmarks.sentence_transformers_reference --config recipe.json --out result.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def reference_main(module: str, description: str, benchmark: str, run, argv=None) -> int:
    """`python -m MODULE --config RECIPE --out RESULT`: `run(recipe)`'s result written as JSON; 0.

    >>> import tempfile; folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "recipe.json").write_text('{"steps": 2}')
    >>> reference_main("example", "Doubles.", "a benchmark", lambda recipe: {"twice": 2 * recipe["steps"]},
    ...                ["--config", str(folder / "recipe.json"), "--out", str(folder / "result.json")])
    0
    >>> json.loads((folder / "result.json").read_text())
    {'twice': 4}
    """
    parser = argparse.ArgumentParser(prog=f"python -m {module}", description=description)
    parser.add_argument("--config", type=Path, required=True, help=f"the recipe, JSON ({benchmark})")
    parser.add_argument("--out", type=Path, required=True, help="where the result goes, JSON")
    args = parser.parse_args(argv)
    result = run(json.loads(args.config.read_text(encoding="utf-8")))
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0
