"""The CLI reference in Markdown, generated from the parser itself so that the README cannot drift.

    python -m bert_tf_cli.reference            # print it
    python -m bert_tf_cli.reference --write README.md   # replace the README's reference section
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

from bert_tf_cli import build_parser

START, END = "<!-- cli-reference:start -->", "<!-- cli-reference:end -->"


def cli_reference(width: int = 100) -> str:
    """Every subcommand's `--help`, as Markdown, wrapped at `width` columns whatever the terminal."""
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(width)  # argparse wraps help to $COLUMNS
    try:
        parser = build_parser()
        commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))  # no public accessor
        sections = [f"```\n{parser.format_help().strip()}\n```"]
        for name, subparser in commands.choices.items():
            text = subparser.format_help().strip()
            module = sys.modules[subparser.get_default("run").__module__]  # the command's module
            if hasattr(module, "task_options_help"):  # options that depend on another (`finetune --task TASK`)
                text += "\n\n" + module.task_options_help()
            sections.append(f"### `bert-tf {name}`\n\n```\n{text}\n```")
    finally:
        if saved is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved
    return "\n\n".join(sections)


def with_reference(readme: str) -> str:
    """`readme` with the text between the reference markers replaced by the current reference."""
    if START not in readme or END not in readme:
        raise ValueError(f"README has no {START} ... {END} section.")
    pattern = re.compile(re.escape(START) + ".*?" + re.escape(END), re.DOTALL)
    return pattern.sub(lambda _: f"{START}\n{cli_reference()}\n{END}", readme)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Print or write the bert-tf CLI reference.")
    parser.add_argument("--write", metavar="README", help="replace the reference section of this file")
    args = parser.parse_args(argv)
    if args.write:
        path = Path(args.write)
        path.write_text(with_reference(path.read_text(encoding="utf-8")), encoding="utf-8")
    else:
        print(cli_reference())
    return 0


if __name__ == "__main__":
    sys.exit(main())
