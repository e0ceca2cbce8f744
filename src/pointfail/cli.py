"""The ``pointfail`` command line.

Subcommands live one module each in ``pointfail/commands/``; each module defines
``register(subparsers) -> None`` which adds its parser(s) and sets ``func`` (called with the parsed
``argparse.Namespace``, returning an exit code). Command modules keep heavy imports inside their
functions so ``pointfail --help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from pointfail import __version__


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every subcommand found in ``pointfail.commands`` (sorted by module
    name, so ``--help`` output does not depend on directory order)."""
    parser = argparse.ArgumentParser(
        prog="pointfail",
        description="Measure how vision-language models fail at pointing.",
    )
    parser.add_argument("--version", action="version", version=f"pointfail {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    import pointfail.commands as pkg

    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"pointfail.commands.{info.name}")
        mod.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point: parse ``argv`` and run the chosen subcommand; returns its exit code
    (2 for usage errors, as argparse does)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    rc = args.func(args)
    return int(rc or 0)


if __name__ == "__main__":
    sys.exit(main())
