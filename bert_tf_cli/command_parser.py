"""The argument parser of `bert-tf` and its commands: one-line errors, "did you mean" for a misspelt choice, old flag
spellings hidden.

A flag renamed so that one thing has one name across commands (`--out`, `--input`, `--seq-length`)
keeps its old spelling as a second option string that works and that the help no longer shows
(`OLD_SPELLINGS`).

Example:
    >>> parser = CommandParser(prog="demo")
    >>> _ = parser.add_argument("--task", choices=["classify", "ner"])
    >>> _ = parser.add_argument("--out", "--to", help="output directory")
    >>> parser.parse_args(["--to", "x"]).out
    'x'
    >>> "--to" in parser.format_help()
    False
"""

from __future__ import annotations

import argparse
import re

from bert_tf_cli.argument_checks import did_you_mean

# Earlier spellings of flags, still accepted, not shown: convert's --to (--out), embed's --in (--input), and
# --max-length (--seq-length) of embed, fill-mask and attention.
OLD_SPELLINGS = frozenset({"--to", "--in", "--max-length"})
INVALID_CHOICE = re.compile(r"invalid choice: '(?P<given>[^']*)' \(choose from (?P<choices>.*)\)$")


class _HelpWithoutOldSpellings(argparse.HelpFormatter):
    def _format_action_invocation(self, action):
        shown = [option for option in action.option_strings if option not in OLD_SPELLINGS]
        if len(shown) == len(action.option_strings):
            return super()._format_action_invocation(action)
        return super()._format_action_invocation(argparse.Action(shown, action.dest, nargs=action.nargs,
                                                                 metavar=action.metavar))


class CommandParser(argparse.ArgumentParser):
    """`argparse.ArgumentParser` (its subcommands' parsers too) whose errors are one line, an invalid choice's naming
    the closest choice, and whose help leaves out `OLD_SPELLINGS`."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", _HelpWithoutOldSpellings)
        super().__init__(*args, **kwargs)

    def parse_args(self, args=None, namespace=None):
        """As argparse's, but an argument that no parser knows is the error of the command given (`bert-tf serve:
        error: unrecognized arguments: ...`), where argparse makes it the top parser's."""
        parsed, unknown = self.parse_known_args(args, namespace)
        if unknown:
            commands = next((action.choices for action in self._actions
                             if isinstance(action, argparse._SubParsersAction)), {})
            commands.get(getattr(parsed, "command", None), self).error(f"unrecognized arguments: {' '.join(unknown)}")
        return parsed

    def error(self, message: str):
        """One line, as every error of the command line (no usage above it: `--help` shows it), and exit status 2."""
        invalid = INVALID_CHOICE.search(message)
        if invalid:
            message += did_you_mean(invalid["given"], re.findall(r"'([^']*)'", invalid["choices"]))
        self.exit(2, f"{self.prog}: error: {message}\n")
