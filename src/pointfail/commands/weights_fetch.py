"""``pointfail weights fetch MODEL --study records/<study>/study.toml [--to DIR]``: a study model's
checkpoint from its hub repository, through the study's lock (:func:`pointfail.inputs.studylock.fetch_weights`):
the first fetch resolves an unpinned revision once and writes it with a sha256 per file to
``records/<study>/study.lock``; later fetches use the lock and refuse files that do not match.
``HF_ENDPOINT`` selects the hub (a mirror, or pointfail's loopback stand-in in rehearsals).
"""

from __future__ import annotations

import argparse
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``weights fetch``."""
    from pathlib import Path

    from pointfail.commands._help import add_command, prints_help

    p = add_command(
        subparsers, "weights", description="""\
Model weights on disk. fetch downloads a study model's checkpoint from its hub
repository through the study's lock: the first fetch resolves an unpinned revision
once and writes it, with a sha256 per file, to study.lock beside the study; later
fetches use the lock and refuse files that do not match. HF_ENDPOINT selects the hub.""",
        example="pointfail weights fetch qwen2.5-vl-3b --study records/pointfail-vlm/study.toml",
    )
    sub = p.add_subparsers(dest="weights_command", metavar="ACTION")
    f = add_command(
        sub, "fetch", help="download a study model's checkpoint at its locked commit, verified",
        description="""\
Download each named model's checkpoint of the study into the study's weights folder
(or --to) at the commit its lock holds, or resolve and lock it on the first fetch.
Exit 2 naming every file that does not match the lock.""",
        example="pointfail weights fetch molmo-7b-d molmoe-1b --study records/pointfail-vlm/study.toml",
    )
    f.add_argument("models", nargs="+", help="model names of the study")
    f.add_argument("--study", required=True, type=Path, help="records/<study>/study.toml")
    f.add_argument("--to", type=Path, help="target directory (one model only; default: the study's weights folder)")
    f.add_argument("--lock", type=Path, help="the lock file (default: study.lock beside the study)")
    f.set_defaults(func=_fetch)
    p.set_defaults(func=prints_help(p))


def _fetch(args: argparse.Namespace) -> int:
    from pointfail.inputs.studylock import LockError, fetch_weights

    if args.to is not None and len(args.models) > 1:
        print("error: --to takes one model", file=sys.stderr)
        return 2
    for name in args.models:
        try:
            out = fetch_weights(args.study, name, to=args.to, lock_file=args.lock)
        except LockError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        print(f"{name}: downloaded and verified into {out}")
    return 0
