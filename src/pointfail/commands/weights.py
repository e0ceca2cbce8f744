"""``pointfail weights-manifest``: record (or check) the sha256 of every file of a weights folder, so
checkpoints that run their own code load only from those exact files
(:mod:`pointfail.running.backends.manifest`)."""

from __future__ import annotations

import argparse
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``pointfail weights-manifest DIR [--out FILE | --check FILE]``."""
    from pointfail.commands._help import add_command

    p = add_command(
        subparsers, "weights-manifest",
        description="Write the sha256 and size of every file under DIR as a weights manifest (--out), or check\n"
        "DIR against a manifest (--check): every listed file present and unchanged, nothing unlisted, no\n"
        "symlinks. Remote-code families (Molmo v1) load only when the check passes.",
        example="pointfail weights-manifest weights/Molmo-7B-D-0924 --out records/pointfail-vlm/weights/molmo-7b-d.manifest.json",
    )
    p.add_argument("dir", help="weights folder")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--out", help="manifest file to write (keep it outside the weights folder, beside the study)")
    g.add_argument("--check", help="manifest file to check the folder against")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from pointfail.running.backends.base import BackendError
    from pointfail.running.backends.manifest import verify_weights, write_weights_manifest

    try:
        if args.out:
            m = write_weights_manifest(args.dir, args.out)
            print(f"{args.out}: {len(m['files'])} files of {args.dir}")
        else:
            n = verify_weights(args.dir, args.check)
            print(f"OK {args.dir}: {n} files match {args.check}")
    except BackendError as e:
        print(f"pointfail weights-manifest: {e}", file=sys.stderr)
        return 1
    return 0
