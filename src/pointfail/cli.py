"""The ``pointfail`` command line.

Subcommands live one module each in ``pointfail/commands/``; :data:`pointfail.commands.COMMANDS` is
the table of them (name -> module and the one line ``pointfail --help`` shows), and each module
defines ``register(subparsers) -> None``, which adds its parser(s) and sets ``func`` (called with the
parsed ``argparse.Namespace``, returning an exit code). :func:`main` imports and builds only the module
of the subcommand named on the command line, and ``pointfail --help`` imports none (the listing comes
from the table); command modules import their heavy dependencies inside their functions, so a start
costs little more than the interpreter and argparse (``bench/cli.py`` measures it).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from pointfail import __version__


def command_index() -> dict[str, tuple[str, str]]:
    """Every subcommand: name -> ``(module, one-line help)``, in the order ``pointfail --help`` lists
    them (:data:`pointfail.commands.COMMANDS`, module names made absolute). Imports no command module."""
    from pointfail.commands import COMMANDS

    return {name: (f"pointfail.commands.{module}", line) for name, (module, line) in COMMANDS.items()}


def _top_parser() -> argparse.ArgumentParser:
    """The ``pointfail`` parser itself: description, examples, ``--version``; no subcommands yet."""
    from pointfail.commands._help import HelpFormatter, example_epilog

    parser = argparse.ArgumentParser(
        prog="pointfail",
        description="Measure how vision-language models fail at pointing: parse each reply in its\n"
        "model family's coordinate convention, score it against the target, sort every miss\n"
        "into a failure mode (off_by_pixels, wrong_instance, wrong_category, hallucinated),\n"
        "and tabulate. 'pointfail COMMAND --help' describes each command.",
        epilog=example_epilog(
            "pointfail evaluate --benchmark suite --data suites/sheets --replies replies.jsonl --family molmo "
            "--out results/sheets",
            "pointfail families qwen2.5-vl",
            "pointfail verify records/default",
        ),
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"pointfail {__version__}")
    return parser


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``pointfail`` parser. With ``command``, only the module that adds that subcommand is
    registered (what :func:`main` does: one subcommand's parser, not all of them); without, every
    subcommand is registered in full (tests and documentation walk it).

    Raises:
        KeyError: an unknown ``command``.
    """
    parser = _top_parser()
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    index = command_index()
    modules = sorted({m for m, _ in index.values()}) if command is None else [index[command][0]]
    for module in modules:
        importlib.import_module(module).register(sub)
    return parser


class _Listed(argparse.ArgumentParser):
    """A subcommand as the listing shows it: its name and one line, no parser behind it. The listing
    parses only ``pointfail`` alone, ``--help``, ``--version`` or an unknown command, never a known
    subcommand's arguments (:func:`main` builds that command's real parser instead), so nothing is
    built: an ``ArgumentParser.__init__`` per command (its gettext look-ups) was most of the listing's
    cost. Given to ``add_subparsers(parser_class=)``; never call its methods."""

    def __init__(self, **kwargs: object) -> None:  # deliberately not ArgumentParser.__init__
        self.prog = str(kwargs.get("prog", ""))


def _listing_parser(index: dict[str, tuple[str, str]]) -> argparse.ArgumentParser:
    """The parser for ``pointfail`` alone, ``--help``, ``--version`` or an unknown command: every
    subcommand listed with its one line (in the table's order, as :func:`build_parser` lists them), none
    built."""
    parser = _top_parser()
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Listed)
    for name, (_, line) in index.items():
        sub.add_parser(name, help=line)
    return parser


def _command_of(argv: list[str], index: dict[str, tuple[str, str]]) -> str | None:
    """The subcommand ``argv`` names: its first argument when that is one (the top level has only
    ``--help`` and ``--version``, which take no value), else ``None``."""
    return argv[0] if argv and argv[0] in index else None


def main(argv: list[str] | None = None) -> int:
    """Entry point: parse ``argv`` and run the chosen subcommand; returns its exit code
    (2 for usage errors, as argparse does).

    Two failures end the same way for every subcommand: a missing optional dependency
    (:class:`pointfail.extras.MissingExtra`) prints one line naming the extra to install and returns
    2; a reader that closed the pipe (``pointfail families | head``) ends output quietly (exit 141,
    as a process killed by SIGPIPE)."""
    command = None
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        index = command_index()
        named = _command_of(argv, index)
        parser = build_parser(named) if named is not None else _listing_parser(index)
        args = parser.parse_args(argv)  # --help writes here
        command = getattr(args, "command", None)
        if not getattr(args, "func", None):
            parser.print_help()
            return 2
        rc = args.func(args)
        sys.stdout.flush()
    except ImportError as e:
        from pointfail.extras import MissingExtra  # imported only when it may be one: a start stays light

        if not isinstance(e, MissingExtra):
            raise
        print(f"pointfail {command}: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # the reader is gone: send whatever is still buffered nowhere, so the interpreter's own
        # flush at exit does not print a traceback either
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 141
    return int(rc or 0)


if __name__ == "__main__":
    sys.exit(main())
