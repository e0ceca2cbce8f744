"""``pointfail-runner``: the parent runner's command line (argparse; no shell).

Commands::

    pointfail-runner engine                      # ping the engine, start dockerd when none answers
    pointfail-runner base [--force]              # base image from Debian packages -> images/base/base.lock.json
    pointfail-runner lock [IMAGE ...] [--variant cpu|cuda|all]     # regenerate lock files (needs an index)
    pointfail-runner wheels [IMAGE ...] [--variant cpu|cuda]       # wheelhouse from the lock files
    pointfail-runner build [IMAGE ...] [--variant cpu|cuda] [--force]
    pointfail-runner run --study FILE [--models M ...] [--benchmarks B ...] [--limit N] ...
    pointfail-runner prereqs [--check]            # Debian packages the tests and studies need
    pointfail-runner reproduce --study FILE [--publish]   # every stage, timed; compare with committed

Exit codes: 0 success, 1 a failed step (the message says which and why), 2 bad arguments; ``reproduce``
and ``data`` also 3 (a generated suite's content differs from its committed manifest, every table
matched) and 4 (a table differs from the committed one).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional


def find_repo(start: Optional[Path] = None) -> Path:
    """The checkout: the nearest directory at or above ``start`` (default cwd) holding ``images/``
    and ``src/pointfail``."""
    p = Path(start or Path.cwd()).resolve()
    for d in (p, *p.parents):
        if (d / "images").is_dir() and (d / "src" / "pointfail").is_dir():
            return d
    raise SystemExit(f"pointfail-runner: no pointfail checkout at or above {p} (use --repo)")


def _images(repo: Path, names: list[str]) -> list[str]:
    from .images import image_names

    return names or image_names(repo)


def _variants(v: str) -> list[str]:
    return ["cpu", "cuda"] if v == "all" else [v]


def main(argv: Optional[list[str]] = None) -> int:
    """Entry point of ``pointfail-runner``; returns the exit code."""
    ap = argparse.ArgumentParser(prog="pointfail-runner", description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo", type=Path, default=None, help="pointfail checkout (default: found from cwd)")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("engine", help="ping the Docker Engine; start dockerd when none answers (root, Debian)")
    b = sub.add_parser("base", help="build pointfail/base from Debian packages (debootstrap + docker import)")
    b.add_argument("--force", action="store_true", help="rebuild even when the locked base is present")
    b.add_argument("--lock", type=Path, default=None, help="lock path (default images/base/base.lock.json)")
    lk = sub.add_parser("lock", help="resolve requirements*.in into lock files with hashes")
    lk.add_argument("images", nargs="*")
    lk.add_argument("--variant", default="cpu", choices=["cpu", "cuda", "all"])
    w = sub.add_parser("wheels", help="download the lock files' wheels into the wheelhouse")
    w.add_argument("images", nargs="*")
    w.add_argument("--variant", default="cpu", choices=["cpu", "cuda", "all"])
    w.add_argument("--wheelhouse", type=Path, default=None)
    bd = sub.add_parser("build", help="build images (missing ones only unless --force)")
    bd.add_argument("images", nargs="*")
    bd.add_argument("--variant", default="cpu", choices=["cpu", "cuda"])
    bd.add_argument("--force", action="store_true")
    bd.add_argument("--wheelhouse", type=Path, default=None)
    r = sub.add_parser("run", help="run a study's models over its benchmarks into records")
    r.add_argument("--study", type=Path, required=True, help="records/<study>/study.toml")
    r.add_argument("--models", nargs="*", default=None)
    r.add_argument("--benchmarks", nargs="*", default=None)
    r.add_argument("--data-root", type=Path, default=None)
    r.add_argument("--weights-root", type=Path, default=None)
    r.add_argument("--work", type=Path, default=None, help="job directories (default work/<study>)")
    r.add_argument("--records", type=Path, default=None, help="records directory (default beside the study)")
    r.add_argument("--limit", type=int, default=None, help="first N samples per benchmark (smoke runs)")
    r.add_argument("--variant", default=None, choices=["cpu", "cuda"], help="default: cuda when a GPU is present")
    r.add_argument("--wall-clock", type=float, default=6 * 3600, help="seconds per job before the kill")
    r.add_argument("--mem-limit", default="8g")
    r.add_argument("--batch-size", type=int, default=None)
    r.add_argument("--no-progress", action="store_true")
    r.add_argument("--fix-permissions", action="store_true",
                   help="as root: make data/weights readable by the container user (chmod -R o+rX) if they are not")
    pq = sub.add_parser("prereqs", help="check (and as root on Debian, install) the system packages needed")
    pq.add_argument("--check", action="store_true", help="only check; print the install command when missing")
    dt = sub.add_parser("data", help="render a study's generated suites in the pinned image; check the manifests")
    dt.add_argument("--study", type=Path, required=True)
    dt.add_argument("--variant", default="cpu", choices=["cpu", "cuda"])
    rp = sub.add_parser("reproduce", help="every stage of a study in order, timed; compare with the committed tables")
    rp.add_argument("--study", type=Path, required=True, help="records/<study>/study.toml")
    rp.add_argument("--publish", action="store_true",
                    help="write records, tables and suite manifests into records/<study>/ instead of comparing")
    rp.add_argument("--variant", default="cpu", choices=["cpu", "cuda"])
    rp.add_argument("--no-install", action="store_true", help="never install system packages; stop instead")
    args = ap.parse_args(argv)
    repo = args.repo.resolve() if args.repo else find_repo()

    from .base import BaseImageError
    from .container import ContainerFailed
    from .engine import EngineError
    from .images import ImageBuildError
    from .locks import LockError
    from .prereqs import PrereqError
    from .reproduce import ReproduceError
    from .study import StudyError

    try:
        if args.cmd == "prereqs":
            from .prereqs import ensure_packages

            ensure_packages(install=not args.check)
            return 0
        if args.cmd == "data":
            from .reproduce import data

            return data(repo, args.study, variant=args.variant)
        if args.cmd == "reproduce":
            from .reproduce import reproduce

            return reproduce(repo, args.study, publish=args.publish, variant=args.variant,
                             install=not args.no_install)
        if args.cmd == "engine":
            from .engine import ensure_engine

            v = ensure_engine().version()
            print(f"Docker Engine {v.get('Version')} (API {v.get('ApiVersion')})")
        elif args.cmd == "base":
            from .base import build_base, ensure_base
            from .engine import ensure_engine

            lock = args.lock or repo / "images/base/base.lock.json"
            c = ensure_engine()
            (build_base(c, lock) if args.force else ensure_base(c, lock))
        elif args.cmd == "lock":
            from .locks import compile_lock, uses_torch

            for name in _images(repo, args.images):
                for v in _variants(args.variant) if uses_torch(repo / "images" / name) else ["cpu"]:
                    print(f"[lock] {compile_lock(repo / 'images' / name, v)}")
        elif args.cmd == "wheels":
            from .locks import download_wheels, uses_torch

            for name in _images(repo, args.images):
                for v in _variants(args.variant) if uses_torch(repo / "images" / name) else ["cpu"]:
                    print(f"[wheels] {download_wheels(repo / 'images' / name, args.wheelhouse or repo / 'wheelhouse', v)}")
        elif args.cmd == "build":
            from .base import ensure_base
            from .engine import ensure_engine
            from .images import build_image

            c = ensure_engine()
            ensure_base(c, repo / "images/base/base.lock.json")
            for name in _images(repo, args.images):
                built = build_image(c, repo, name, variant=args.variant, wheelhouse=args.wheelhouse, force=args.force)
                print(f"[build] {built.tag} {built.id} built={built.built} seconds={built.seconds}")
        elif args.cmd == "run":
            from .study import run_study

            counts = run_study(args.study, repo=repo, models=args.models, benchmarks=args.benchmarks,
                               data_root=args.data_root, weights_root=args.weights_root, work_root=args.work,
                               records_root=args.records, variant=args.variant, limit=args.limit,
                               wall_clock_s=args.wall_clock, mem_limit=args.mem_limit,
                               batch_size=args.batch_size, progress=not args.no_progress,
                               fix_permissions=args.fix_permissions)
            for model, per in counts.items():
                for bench, n in per.items():
                    print(f"{model}\t{bench}\t{n} records")
    except (EngineError, BaseImageError, LockError, ImageBuildError, ContainerFailed, StudyError, PrereqError,
            ReproduceError) as e:
        print(f"pointfail-runner {args.cmd}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
