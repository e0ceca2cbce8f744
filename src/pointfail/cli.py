"""The ``pointfail`` command line.

Subcommands live one module each in ``pointfail/commands/``; each module defines
``register(subparsers) -> None`` which adds its parser(s) and sets ``func`` (called with the parsed
``argparse.Namespace``, returning an exit code). Command modules keep heavy imports inside their
functions so ``pointfail --help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys

from pointfail import __version__


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every subcommand found in ``pointfail.commands`` (sorted by module
    name, so ``--help`` output does not depend on directory order)."""
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
    (2 for usage errors, as argparse does).

    Two failures end the same way for every subcommand: a missing optional dependency
    (:class:`pointfail.extras.MissingExtra`) prints one line naming the extra to install and returns
    2; a reader that closed the pipe (``pointfail families | head``) ends output quietly (exit 141,
    as a process killed by SIGPIPE)."""
    from pointfail.extras import MissingExtra

    command = None
    try:
        parser = build_parser()
        args = parser.parse_args(argv)  # --help writes here
        command = getattr(args, "command", None)
        if not getattr(args, "func", None):
            parser.print_help()
            return 2
        rc = args.func(args)
        sys.stdout.flush()
    except MissingExtra as e:
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
