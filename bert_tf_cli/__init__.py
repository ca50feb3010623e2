"""The `bert-tf` command line: one module per subcommand, each only parsing arguments and calling the library.

A package of its own, beside `bert_tf`, `pipelines` and `serving`: it uses all three and none of them
imports it, so `bert_tf` never depends on the other two. Building the parser imports none of them
(nor TensorFlow): commands import what they need when they run, so `--help` answers at once.
TensorFlow's own messages are silenced unless `-v` is given (`bert_tf_cli.quiet`).

Run `bert-tf --help` or `bert-tf COMMAND --help`.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import itertools
import logging
import sys

from bert_tf_cli.command_parser import CommandParser
from bert_tf_cli.quiet import quiet_tensorflow, show_tensorflow_logs

# Subcommand modules of this package, in the order `--help` lists them.
COMMAND_MODULES = ("quickstart", "prepare_corpus", "vocab", "pretrain", "convert", "serve", "export", "embed", "fill_mask", "attention", "finetune", "distill", "mine", "evaluate", "predict", "search")


def build_parser(argv: list[str] = ()) -> argparse.ArgumentParser:
    """The parser of every command; the command `argv` names also gets the options that depend on its other
    arguments (`add_task_arguments`: `finetune --task TASK`'s own, from the task's settings)."""
    parser = CommandParser(prog="bert-tf", description="BERT for TensorFlow/Keras.")
    parser.add_argument("--version", action="version", version=f"bert-tf {importlib.metadata.version('bert-tf')}")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="log what is loaded, skipped and served, and TensorFlow's own messages")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    chosen = next((arg for arg in argv if not arg.startswith("-")), None)
    for name in COMMAND_MODULES:
        module = importlib.import_module(f"bert_tf_cli.{name}")
        module.register(commands)
        if chosen == name.replace("_", "-") and hasattr(module, "add_task_arguments"):
            module.add_task_arguments(commands.choices[chosen], list(argv))
    return parser


def parse_arguments(argv: list[str]) -> argparse.Namespace:
    """`argv` parsed as the `bert-tf` command parses it (with the options that depend on others, as `--task`'s)."""
    return build_parser(argv).parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    # Decided before anything can import TensorFlow: -v/--verbose comes before the command.
    verbose = any(arg in ("-v", "--verbose") for arg in itertools.takewhile(lambda arg: arg.startswith("-"), argv))
    if verbose:
        show_tensorflow_logs()
    else:
        quiet_tensorflow()
    try:
        # First without the options that depend on others, whose parser may import TensorFlow (a task's settings): the
        # arguments' own checks (files, presets, choices) answer in a second.
        if not {"-h", "--help"} & set(argv):  # help lists the task's options too
            build_parser().parse_known_args(argv)
        parser = build_parser(argv)
        args = parser.parse_args(argv)
    except SystemExit as exit:  # --help and --version exit 0 as argparse does; a bad argument's status is returned
        if not exit.code:
            raise
        return exit.code
    if args.command is None:  # `bert-tf` alone
        parser.print_help()
        return 0
    # The server's lines come long after it started, among other programs' lines: each says whose it is.
    label = "bert-tf serve: " if args.command == "serve" else ""
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format=f"{label}%(levelname)s %(message)s")
    try:
        return args.run(args) or 0
    except (FileNotFoundError, ValueError, OSError) as error:
        print(f"bert-tf {args.command}: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"bert-tf {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
