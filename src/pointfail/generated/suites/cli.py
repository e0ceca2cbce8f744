"""The ``pointfail generate sheets|text|web`` options shared by the suite modules, and the run wrapper."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from pointfail.generated.suites.errors import SuiteError

__all__ = ["add_absent_share_argument", "add_suite_arguments", "run_suite_command"]


def add_suite_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``pointfail generate sheets|text`` options: ``--n`` (default 200), ``--seed`` (default 1),
    ``--out`` (required)."""
    parser.add_argument("--n", type=int, default=200, help="number of samples (default 200)")
    parser.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    parser.add_argument("--out", required=True, help="output directory (created; an earlier suite there is replaced)")
    add_absent_share_argument(parser)


def add_absent_share_argument(parser: argparse.ArgumentParser) -> None:
    """``--absent-share F``: the fraction of rows whose referent is not in the image
    (:mod:`pointfail.generated.suites.absent`; default 0)."""
    parser.add_argument("--absent-share", type=float, default=0.0,
                        help="fraction of samples whose referent is absent from the image (default 0)")


def run_suite_command(suite: str, generate: Callable[..., dict[str, Any]], args: argparse.Namespace) -> int:
    """Run ``generate(args.out, n=args.n, seed=args.seed)`` and print a one-line summary. Returns 0,
    or 1 with a message on stderr on a :class:`SuiteError` (e.g. a missing font)."""
    import sys

    try:
        share = float(getattr(args, "absent_share", 0.0) or 0.0)
        m = generate(args.out, n=args.n, seed=args.seed, **({"absent_share": share} if share else {}))
    except SuiteError as e:
        print(f"pointfail generate {suite}: {e}", file=sys.stderr)
        return 1
    print(f"wrote {m['n']} {suite} samples (seed {m['seed']}) to {args.out}")
    return 0
