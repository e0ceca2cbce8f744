"""``pointfail data``: benchmark data on disk.

``pointfail data fetch BENCHMARK --to DIR [--revision SHA]`` downloads a benchmark from its
publisher's hub repository at a pinned commit and verifies every file
(:func:`pointfail.benchmarks.fetch.fetch`); ``pointfail data sources`` lists the table.
``pointfail data check BENCHMARK DIR`` loads a local copy and reports what is missing or
inconsistent.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``data fetch`` / ``data sources`` / ``data check``."""
    p = subparsers.add_parser("data", help="fetch or check benchmark data", description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="data_command", metavar="ACTION")
    f = sub.add_parser("fetch", help="download a benchmark (pinned commit, verified)")
    f.add_argument("benchmark", help="benchmark name (see `pointfail data sources`)")
    f.add_argument("--to", required=True, type=Path, help="target directory")
    f.add_argument("--revision", default=None, help="40-hex commit overriding the pinned one")
    f.set_defaults(func=_fetch)
    s = sub.add_parser("sources", help="list where each benchmark is downloaded from")
    s.set_defaults(func=_sources)
    c = sub.add_parser("check", help="load a local benchmark copy and report problems")
    c.add_argument("benchmark")
    c.add_argument("data_dir", type=Path)
    c.add_argument("--images", action="store_true", help="also require every image (PointerBench)")
    c.set_defaults(func=_check)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])


def _fetch(args: argparse.Namespace) -> int:
    from pointfail.benchmarks import BenchmarkError
    from pointfail.benchmarks.fetch import FetchError, fetch

    try:
        out = fetch(args.benchmark, args.to, revision=args.revision)
    except (BenchmarkError, FetchError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"{args.benchmark}: downloaded and verified into {out}")
    return 0


def _sources(args: argparse.Namespace) -> int:
    from tabulate import tabulate

    from pointfail.benchmarks.fetch import SOURCES

    rows = [(n, s.repo_id, s.repo_type, s.revision or "(not pinned: pass --revision)", s.note)
            for n, s in sorted(SOURCES.items())]
    print(tabulate(rows, headers=["benchmark", "repository", "type", "revision", "holds"]))
    return 0


def _check(args: argparse.Namespace) -> int:
    from collections import Counter

    from pointfail.benchmarks import BenchmarkError, load, require_images

    try:
        samples = load(args.benchmark, args.data_dir)
        if args.images:
            require_images(samples)
    except BenchmarkError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    tasks = Counter(s.task for s in samples)
    no_image = sum(1 for s in samples if s.image.sha256 is None)
    print(f"{args.benchmark}: {len(samples)} samples ({', '.join(f'{k} {v}' for k, v in sorted(tasks.items()))}); "
          f"{no_image} without an image file")
    return 0
