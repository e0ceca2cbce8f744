"""``pointfail data``: fetch, list and check benchmark data on disk."""

from __future__ import annotations

import argparse
import sys

from pointfail.commands._help import add_command, prints_help


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``data fetch`` / ``data sources`` / ``data check``."""
    from pathlib import Path

    p = add_command(
        subparsers, "data",
        description="""\
Benchmark data on disk. fetch downloads a benchmark from its publisher's hub
repository at a pinned commit and checks every file's sha256; sources lists where
each benchmark comes from; check loads a local copy and reports what is missing or
inconsistent.""",
        example=("pointfail data sources", "pointfail data fetch refspatial --to data/refspatial",
                 "pointfail data check pointerbench-text data/pointerbench"),
    )
    sub = p.add_subparsers(dest="data_command", metavar="ACTION")
    f = add_command(
        sub, "fetch", help="download a benchmark (pinned commit, verified)",
        description="""\
Download a benchmark from its publisher's hub repository at the pinned commit and
check every file against its recorded sha256. Needs network access to the hub
(HF_ENDPOINT selects it). With --study, fetch the study's benchmark of that name
into the study's data folder through the study's lock: the first fetch resolves an
unpinned revision once and writes it, with a sha256 per file, to study.lock beside
the study; later fetches use the lock and refuse files that do not match.""",
        example=("pointfail data fetch refspatial --to data/refspatial",
                 "pointfail data fetch point-bench --study records/pointfail-vlm/study.toml"),
    )
    f.add_argument("benchmark", help="benchmark name (list: pointfail data sources; with --study: the study's name)")
    f.add_argument("--to", type=Path, help="target directory (required without --study)")
    f.add_argument("--revision", default=None, help="a 40-hex commit to use instead of the pinned one (without --study)")
    f.add_argument("--study", type=Path, help="records/<study>/study.toml: fetch through the study's lock")
    f.add_argument("--lock", type=Path, help="with --study: the lock file (default: study.lock beside the study)")
    f.set_defaults(func=_fetch)
    s = add_command(sub, "sources", help="list where each benchmark is downloaded from",
                    description="List each benchmark's hub repository, its pinned commit and what it holds.",
                    example="pointfail data sources")
    s.set_defaults(func=_sources)
    c = add_command(
        sub, "check", help="load a local benchmark copy and report problems",
        description="""\
Load a local copy of a benchmark (the files its publisher ships, archives included:
they are unpacked safely into DIR/_unpacked/) and report how many samples it has, by
task, how many have no image file, and the rows skipped as the official evaluator skips
them. Exit 2 listing every missing, unreadable or refused file by row.""",
        example=("pointfail data check point-bench data/point-bench",
                 "pointfail data check pointerbench-text data/pointerbench"),
    )
    c.add_argument("benchmark", help="benchmark name (pointerbench-text, where2place, suite, ...)")
    c.add_argument("data_dir", type=Path, metavar="DIR", help="the benchmark's directory")
    c.add_argument("--images", action="store_true", help="also require every image file (PointerBench)")
    c.set_defaults(func=_check)
    p.set_defaults(func=prints_help(p))


def _fetch(args: argparse.Namespace) -> int:
    from pointfail.inputs.benchmarks import BenchmarkError
    from pointfail.inputs.benchmarks.fetch import FetchError, fetch

    if args.study is not None:
        from pointfail.inputs.studylock import LockError, fetch_benchmark

        try:
            out = fetch_benchmark(args.study, args.benchmark, to=args.to, lock_file=args.lock)
        except LockError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        print(f"{args.benchmark}: downloaded and verified into {out}")
        return 0
    if args.to is None:
        print("error: --to DIR is required without --study", file=sys.stderr)
        return 2
    try:
        out = fetch(args.benchmark, args.to, revision=args.revision)
    except (BenchmarkError, FetchError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"{args.benchmark}: downloaded and verified into {out}")
    return 0


def _sources(args: argparse.Namespace) -> int:
    from tabulate import tabulate

    from pointfail.inputs.benchmarks.fetch import sources

    rows = [(n, s.repo_id, s.repo_type, s.revision or "(not pinned: pass --revision)", s.note)
            for n, s in sorted(sources().items())]
    print(tabulate(rows, headers=["benchmark", "repository", "type", "revision", "holds"]))
    return 0


def _check(args: argparse.Namespace) -> int:
    from collections import Counter

    from pointfail.inputs.benchmarks import BenchmarkError, load, require_images

    import warnings

    with warnings.catch_warnings(record=True) as notes:
        warnings.simplefilter("always")
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
    for w in notes:  # rows the official evaluator skips, masks that will be error records
        print(f"note: {w.message}")
    return 0
