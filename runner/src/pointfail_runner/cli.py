"""``pointfail-runner``: the parent runner's command line (argparse; no shell).

Commands::

    pointfail-runner engine                      # ping the engine, start dockerd when none answers
    pointfail-runner base [--force] [--record]   # base image from Debian packages (--record: rewrite its lock)
    pointfail-runner lock [IMAGE ...] [--variant cpu|cuda|vllm|all]     # regenerate lock files (needs an index)
    pointfail-runner wheels [IMAGE ...] [--variant cpu|cuda|vllm]       # wheelhouse from the lock files
    pointfail-runner build [IMAGE ...] [--variant cpu|cuda|vllm] [--force] [--record]   # vllm: the serving variant (GPU)
    pointfail-runner check-pins [IMAGE ...]      # recorded Debian versions the archive no longer has
    pointfail-runner init [--name N] [--out FILE]  # a commented study with one served model, to edit
    pointfail-runner run --study FILE [--models M ...] [--benchmarks B ...] [--limit N] ...
    pointfail-runner prereqs [--check]            # Debian packages the tests and studies need
    pointfail-runner reproduce --study FILE [--publish] [--bundle PATH]   # every stage, timed; compare
    pointfail-runner bundle --study FILE         # archival bundle: images, data, records, locks, host wheels
    pointfail-runner pristine [--offline] [--mount P] -- make reproduce   # a fresh clone in a pristine Debian
    pointfail-runner plan --study FILE [--shard-size N | --shards K] [--out work/<study>/plan.json]
    pointfail-runner submit --plan FILE --executor local|slurm|k8s [--run-dir DIR] [--missing] [--cluster FILE]
    pointfail-runner status --plan FILE [--run-dir DIR]  # done / running / queued / failed / partial / pending cells
    pointfail-runner merge --plan FILE [--run-dir DIR] [--records DIR]   # per-shard responses -> records
    pointfail-runner shard --run-dir DIR --model M --index I  # the node step of the Docker executors

``base``, ``build``, ``data``, ``reproduce`` and ``check-pins`` take ``--snapshot=TIMESTAMP`` (empty: none)
with ``--snapshot-mirror URL`` (default ``$SNAPSHOT_MIRROR``): Debian packages then come from that
snapshot archive at their exact recorded versions.

Exit codes: 0 success, 1 a failed step (the message says which and why), 2 bad arguments; ``reproduce``
and ``data`` also 3 (a generated suite's content differs from its committed manifest, every table
matched) and 4 (a table differs from the committed one); ``status`` and ``merge`` 3 when a cell is not
done (``merge`` then writes only the complete benchmarks); ``submit --executor local`` 1 when a shard
failed; ``run`` 5 when samples ended in an infrastructure error (records written; rerun with
``--retry-errors`` once the cause is fixed).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any, Optional


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


def _flag(value: str) -> bool:
    """A Make-friendly boolean option value: empty, ``0``, ``no`` and ``false`` are off."""
    return value.strip().lower() not in ("", "0", "no", "false")


def _variants(v: str) -> list[str]:
    return ["cpu", "cuda"] if v == "all" else [v]


def _image_variants(image_dir: Path, variant: str) -> list[str]:
    """The variants of ``image_dir`` that ``--variant`` names: ``vllm`` only where the image has one
    (``requirements-vllm.in``); ``cpu``/``cuda``/``all`` for torch images, ``cpu`` (the one lock) for others."""
    from .locks import has_variant, uses_torch

    if variant == "vllm":
        return ["vllm"] if has_variant(image_dir, "vllm") else []
    return _variants(variant) if uses_torch(image_dir) else ["cpu"]


def build_parser() -> argparse.ArgumentParser:
    """The ``pointfail-runner`` parser; each command's help text is in :mod:`pointfail_runner.cli_help`."""
    from .cli_help import add

    from pointfail.commands._help import HelpFormatter

    ap = argparse.ArgumentParser(
        prog="pointfail-runner", formatter_class=HelpFormatter,
        description="The parent runner: builds the pinned images, runs a study's models (in containers, or\n"
                    "against a server) into records, reproduces and bundles studies, and spreads a study over\n"
                    "machines (plan, submit, status, merge). Each command's --help says what it reads and\n"
                    "writes, with an example and its exit codes.",
        epilog="examples:\n  pointfail-runner init --name my-study\n"
               "  pointfail-runner run --study records/my-study/study.toml")
    ap.add_argument("--repo", type=Path, default=None, help="pointfail checkout (default: found from cwd)")
    snap = argparse.ArgumentParser(add_help=False)
    snap.add_argument("--snapshot", default="", metavar="TIMESTAMP",
                      help="Debian snapshot timestamp (20250520T000000Z): install the exact recorded versions from it")
    snap.add_argument("--snapshot-mirror", default=os.environ.get("SNAPSHOT_MIRROR", ""), metavar="URL",
                      help="the snapshot archive's URL (default $SNAPSHOT_MIRROR)")
    sub = ap.add_subparsers(dest="cmd", required=True)
    add(sub, "engine")
    b = add(sub, "base", parents=[snap])
    b.add_argument("--force", action="store_true", help="rebuild even when the base built for the lock is present")
    b.add_argument("--record", nargs="?", const="1", default="", type=_flag,
                   help="write this build's package versions into the lock (--record, --record=1; --record= is off)")
    b.add_argument("--lock", type=Path, default=None, help="lock path (default images/base/base.lock.json)")
    add(sub, "lock-host")
    lk = add(sub, "lock")
    lk.add_argument("images", nargs="*", help=_IMAGES)
    lk.add_argument("--variant", default="cpu", choices=["cpu", "cuda", "vllm", "all"], help=_VARIANT)
    w = add(sub, "wheels")
    w.add_argument("images", nargs="*", help=_IMAGES)
    w.add_argument("--variant", default="cpu", choices=["cpu", "cuda", "vllm", "all"], help=_VARIANT)
    w.add_argument("--wheelhouse", type=Path, default=None, help="folder for the wheels (default wheelhouse/)")
    bd = add(sub, "build", parents=[snap])
    bd.add_argument("images", nargs="*", help=_IMAGES)
    bd.add_argument("--variant", default="cpu", choices=["cpu", "cuda", "vllm"], help=_VARIANT)
    bd.add_argument("--force", action="store_true", help="rebuild even when the image for these inputs is present")
    bd.add_argument("--record", nargs="?", const="1", default="", type=_flag,
                    help="write the Debian versions each image holds into its debian.lock (and the base's lock)")
    bd.add_argument("--wheelhouse", type=Path, default=None,
                    help="install the Python packages from this folder (pointfail-runner wheels)")
    cp = add(sub, "check-pins", parents=[snap])
    cp.add_argument("images", nargs="*", help=_IMAGES)
    it = add(sub, "init")
    it.add_argument("--name", default="my-study", help="the study's name (lower-case letters, digits, '.', '_', '-')")
    it.add_argument("--out", type=Path, default=None, help="the file to write (default records/<name>/study.toml)")
    r = add(sub, "run")
    r.add_argument("--study", type=Path, required=True, help="records/<study>/study.toml")
    r.add_argument("--models", nargs="*", default=None, help="only these models of the study (default: all)")
    r.add_argument("--benchmarks", nargs="*", default=None, help="only these benchmarks of the study (default: all)")
    r.add_argument("--data-root", type=Path, default=None, help=_DATA_ROOT)
    r.add_argument("--weights-root", type=Path, default=None, help=_WEIGHTS_ROOT)
    r.add_argument("--work", type=Path, default=None, help="job directories (default work/<study>)")
    r.add_argument("--records", type=Path, default=None, help="records directory (default beside the study)")
    r.add_argument("--limit", type=int, default=None, help="first N samples per benchmark (smoke runs)")
    r.add_argument("--variant", default=None, choices=["cpu", "cuda"], help="default: cuda when a GPU is present")
    r.add_argument("--wall-clock", type=float, default=6 * 3600, help="seconds per job before the kill")
    r.add_argument("--mem-limit", default="8g", help="memory limit of each model container (Docker's units)")
    r.add_argument("--batch-size", type=int, default=None, help="samples per forward pass (default: the image's)")
    r.add_argument("--no-progress", action="store_true", help="no progress bars")
    r.add_argument("--retry-errors", action="store_true",
                   help="ask a served model again for the samples whose response was an error (done by itself "
                   "when the model entry or the server changed)")
    r.add_argument("--base-lock", type=Path, default=None,
                   help="base image lock naming the base to build on (default images/base/base.lock.json)")
    r.add_argument("--fix-permissions", action="store_true",
                   help="as root: make data/weights readable by the container user (chmod -R o+rX) if they are not")
    pq = add(sub, "prereqs")
    pq.add_argument("--check", action="store_true", help="only check; print the install command when missing")
    dt = add(sub, "data", parents=[snap])
    dt.add_argument("--study", type=Path, required=True, help="records/<study>/study.toml")
    dt.add_argument("--variant", default="cpu", choices=["cpu", "cuda"], help=_VARIANT)
    rp = add(sub, "reproduce", parents=[snap])
    rp.add_argument("--study", type=Path, required=True, help="records/<study>/study.toml")
    rp.add_argument("--publish", action="store_true",
                    help="write records, tables and suite manifests into records/<study>/ instead of comparing")
    rp.add_argument("--variant", default="", choices=["", "cpu", "cuda"],
                    help="image variant (default or empty: cuda when the Docker Engine has a GPU, else cpu)")
    rp.add_argument("--no-install", action="store_true", help="never install system packages; stop instead")
    rp.add_argument("--bundle", default="", metavar="PATH",
                    help="reproduce from an archival bundle (make bundle): no network at all; empty: build as usual")
    pr = add(sub, "pristine")
    pr.add_argument("--offline", action="store_true", help="no network; apt and pip pointed at a closed port")
    pr.add_argument("--mount", action="append", default=[], metavar="PATH[:rw]",
                    help="a host path mounted at the same path (read-only unless :rw)")
    pr.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                    help="an environment variable for the command (repeatable)")
    pr.add_argument("--keep", action="store_true", help="keep the clone")
    pr.add_argument("--engine-socket", default="/var/run/docker.sock",
                    help="the engine socket given to the container (default this machine's)")
    pr.add_argument("--timeout", type=float, default=3600, help="seconds before the container is stopped")
    pr.add_argument("command", nargs=argparse.REMAINDER, help="the command, after --")
    bu = add(sub, "bundle")
    bu.add_argument("--study", type=Path, required=True, help="records/<study>/study.toml")
    bu.add_argument("--variant", default="cpu", choices=["cpu", "cuda"], help=_VARIANT)
    bu.add_argument("--out", type=Path, default=None, help="folder for the bundle (default bundles/)")
    _add_plan_commands(sub, add)
    return ap


_IMAGES = "image names (folders of images/; default: all)"
_VARIANT = "cpu, cuda (GPU torch), vllm (the serving variant, where an image has one); all: cpu and cuda"
_DATA_ROOT = "where the benchmarks' data folders are (default data/<study>/)"
_WEIGHTS_ROOT = "where the checkpoints are (default weights/)"


def _cmd_init(args, repo: Path, ap, snapshot: dict[str, Any]) -> int:
    """``init``: write a commented study with one served model; 1 when the file exists or the name is bad."""
    from .template import write_study

    try:
        print(f"[init] wrote {write_study(args.name, args.out, repo=repo)}: edit its [[models]] entry "
              "(base_url, model, family), then follow the steps at its top")
    except (FileExistsError, ValueError) as e:
        print(f"pointfail-runner init: {e}" + (" (not overwritten)" if isinstance(e, FileExistsError) else ""),
              file=sys.stderr)
        return 1
    return 0


def _cmd_prereqs(args, repo: Path, ap, snapshot: dict[str, Any]) -> int:
    """``prereqs``: install (or with ``--check`` only list) the Debian packages the tests need."""
    from .prereqs import ensure_packages

    ensure_packages(install=not args.check)
    return 0


def _cmd_data(args, repo: Path, ap, snapshot: dict[str, Any]) -> int:
    """``data``: the study's data stage; its exit code."""
    from .reproduce import data

    return data(repo, args.study, variant=args.variant, **snapshot)


def _cmd_reproduce(args, repo: Path, ap, snapshot: dict[str, Any]) -> int:
    """``reproduce``: every stage, timed and compared; its exit code."""
    from .reproduce import reproduce

    return reproduce(repo, args.study, publish=args.publish, variant=args.variant,
                     install=not args.no_install, bundle=Path(args.bundle) if args.bundle else None,
                     **snapshot)


def _cmd_pristine(args, repo: Path, ap, snapshot: dict[str, Any]) -> int:
    """``pristine``: the command after ``--`` in a fresh clone in a pristine Debian container."""
    from .engine import ensure_engine
    from .pristine import run_pristine

    argv = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not argv:
        ap.error("pristine: give the command after --")
    return run_pristine(ensure_engine(), repo, argv, offline=args.offline, mounts=tuple(args.mount),
                        env=dict(e.split("=", 1) for e in args.env), keep=args.keep, timeout_s=args.timeout,
                        engine_socket=args.engine_socket)


def _cmd_bundle(args, repo: Path, ap, snapshot: dict[str, Any]) -> int:
    """``bundle``: the study's archival bundle."""
    from .bundle import make_bundle

    make_bundle(repo, args.study, variant=args.variant, out_dir=args.out)
    return 0


def _cmd_check_pins(args, repo: Path, ap, snapshot: dict[str, Any]) -> int:
    """``check-pins``: recorded Debian versions the archive no longer has; its exit code."""
    from .images import check_pins

    return check_pins(repo, args.images, **snapshot)


def _cmd_engine(args, repo: Path, ap, snapshot: dict[str, Any]) -> int:
    """``engine``: ping the engine (starting dockerd when none answers) and print its version."""
    from .engine import ensure_engine

    v = ensure_engine().version()
    print(f"Docker Engine {v.get('Version')} (API {v.get('ApiVersion')})")
    return 0


def _cmd_base(args, repo: Path, ap, snapshot: dict[str, Any]) -> int:
    """``base``: the base image from its Debian lock (``--record``: rewrite the lock)."""
    from .base import ensure_base
    from .engine import ensure_engine

    lock = args.lock or repo / "images/base/base.lock.json"
    ensure_base(ensure_engine(), lock, force=args.force, record=args.record, **snapshot)
    return 0


def _cmd_lock_host(args, repo: Path, ap, snapshot: dict[str, Any]) -> int:
    """``lock-host``: regenerate runner/requirements.lock."""
    from .locks import compile_host_lock

    print(f"[lock] {compile_host_lock(repo / 'runner/requirements.in', repo / 'runner/requirements.lock')}")
    return 0


def _cmd_lock(args, repo: Path, ap, snapshot: dict[str, Any]) -> int:
    """``lock``: regenerate the lock file of each image and variant."""
    from .locks import compile_lock

    for name in _images(repo, args.images):
        for v in _image_variants(repo / "images" / name, args.variant):
            print(f"[lock] {compile_lock(repo / 'images' / name, v)}")
    return 0


def _cmd_wheels(args, repo: Path, ap, snapshot: dict[str, Any]) -> int:
    """``wheels``: the wheelhouse of each image and variant, from the lock files."""
    from .locks import download_wheels

    for name in _images(repo, args.images):
        for v in _image_variants(repo / "images" / name, args.variant):
            print(f"[wheels] {download_wheels(repo / 'images' / name, args.wheelhouse or repo / 'wheelhouse', v)}")
    return 0


def _cmd_build(args, repo: Path, ap, snapshot: dict[str, Any]) -> int:
    """``build``: the base image, then each image (``vllm``: only those with a serving variant)."""
    from .base import ensure_base
    from .engine import ensure_engine
    from .images import ensure_image, record_debian

    c = ensure_engine()
    ensure_base(c, repo / "images/base/base.lock.json", record=args.record, **snapshot)
    for name in _images(repo, args.images):
        if args.variant == "vllm" and not _image_variants(repo / "images" / name, "vllm"):
            continue  # only the family images that have a serving variant
        built = ensure_image(c, repo, name, variant=args.variant, wheelhouse=args.wheelhouse, force=args.force,
                             **snapshot)
        print(f"[build] {built.tag} {built.id} built={built.built} seconds={built.seconds} "
              f"debian_drift={len(built.drift)}")
        if args.record:
            record_debian(repo, built)
    return 0


def _cmd_run(args, repo: Path, ap, snapshot: dict[str, Any]) -> int:
    """``run``: the study's records; prints the count per model and benchmark and the next steps;
    5 when samples ended in an infrastructure error."""
    from .study import run_study

    counts = run_study(args.study, repo=repo, models=args.models, benchmarks=args.benchmarks,
                       data_root=args.data_root, weights_root=args.weights_root, work_root=args.work,
                       records_root=args.records, variant=args.variant, limit=args.limit,
                       wall_clock_s=args.wall_clock, mem_limit=args.mem_limit,
                       batch_size=args.batch_size, progress=not args.no_progress,
                       base_lock=args.base_lock, fix_permissions=args.fix_permissions,
                       retry_errors=args.retry_errors)
    for model, per in counts.items():
        for bench, n in per.items():
            err = counts.errors.get(model, {}).get(bench, 0)
            print(f"{model}\t{bench}\t{n} records" + (f"\t{err} errors" if err else ""))
    rec = args.records or args.study.parent
    print(f"next: pointfail judge {rec} && pointfail aggregate {rec} && pointfail view {rec} "
          "(label the misses, write the tables, build the failure browser)")
    if counts.n_errors:
        print(f"pointfail-runner run: {counts.n_errors} samples ended in an infrastructure error (listed "
              "above); fix the cause and run again with --retry-errors", file=sys.stderr)
        return 5
    return 0


_COMMANDS = {"init": _cmd_init, "prereqs": _cmd_prereqs, "data": _cmd_data, "reproduce": _cmd_reproduce,
             "pristine": _cmd_pristine, "bundle": _cmd_bundle, "check-pins": _cmd_check_pins,
             "engine": _cmd_engine, "base": _cmd_base, "lock-host": _cmd_lock_host, "lock": _cmd_lock,
             "wheels": _cmd_wheels, "build": _cmd_build, "run": _cmd_run}
"""The commands :func:`main` runs inside its error handling (``shard`` and the plan commands have their own)."""


def main(argv: Optional[list[str]] = None) -> int:
    """Entry point of ``pointfail-runner``; returns the exit code (1 when a step raises one of the
    runner's errors, its message on stderr)."""
    ap = build_parser()
    args = ap.parse_args(argv)
    if args.cmd == "shard":  # the node step needs the run folder only, not a checkout
        return _shard(args)
    repo = args.repo.resolve() if args.repo else find_repo()
    snapshot: dict[str, Any] = dict(snapshot=args.snapshot or None, snapshot_mirror=args.snapshot_mirror or None) \
        if hasattr(args, "snapshot") else {}

    from .aptpins import AptPinError
    from .base import BaseImageError
    from .bundle import BundleError
    from .container import ContainerFailed
    from .engine import EngineError
    from .images import ImageBuildError
    from .locks import LockError
    from .prereqs import PrereqError
    from .reproduce import ReproduceError
    from .study import StudyError

    if args.cmd in ("plan", "submit", "status", "merge"):
        return _plan_command(args, repo)
    command = _COMMANDS.get(args.cmd)
    if command is None:
        return 0
    try:
        return command(args, repo, ap, snapshot)
    except (EngineError, BaseImageError, LockError, ImageBuildError, ContainerFailed, StudyError, PrereqError,
            ReproduceError, AptPinError, BundleError) as e:
        print(f"pointfail-runner {args.cmd}: {e}", file=sys.stderr)
        return 1


def _add_plan_commands(sub, add) -> None:
    """``plan``, ``submit``, ``status``, ``merge`` and ``shard`` (issue 18: a study on several machines)."""
    pl = add(sub, "plan")
    pl.add_argument("--study", type=Path, required=True, help="records/<study>/study.toml")
    pl.add_argument("--out", type=Path, default=None, help="plan file (default work/<study>/plan.json)")
    g = pl.add_mutually_exclusive_group()
    g.add_argument("--shard-size", type=int, default=None, help="target samples per shard (default 1000)")
    g.add_argument("--shards", type=int, default=None, help="exactly this many shards per model")
    pl.add_argument("--models", nargs="*", default=None, help="only these models of the study (default: all)")
    pl.add_argument("--benchmarks", nargs="*", default=None, help="only these benchmarks of the study (default: all)")
    pl.add_argument("--data-root", type=Path, default=None, help=_DATA_ROOT)
    pl.add_argument("--gpus", type=int, default=0, help="GPUs per shard of a weight-backed model (default 0)")
    for name in ("submit", "status", "merge"):
        p = add(sub, name)
        p.add_argument("--plan", type=Path, required=True, help="the plan file")
        p.add_argument("--run-dir", type=Path, default=None,
                       help="the run folder on shared storage (default run/ beside the plan)")
        p.add_argument("--data-root", type=Path, default=None, help=_DATA_ROOT)
        p.add_argument("--weights-root", type=Path, default=None, help=_WEIGHTS_ROOT)
        if name == "merge":
            p.add_argument("--records", type=Path, default=None, help="records folder (default beside the study)")
        if name == "submit":
            from .executors import executors

            p.add_argument("--executor", required=True, choices=sorted(executors()),
                           help="where the shards run: " + "; ".join(f"{e.name}: {e.summary}" for e in executors().values()))
            p.add_argument("--models", nargs="*", default=None, help="only these models' shards (default: all)")
            p.add_argument("--missing", action="store_true", help="only shards with a cell that is not done")
            p.add_argument("--variant", default="cpu", choices=["cpu", "cuda"], help=_VARIANT)
            p.add_argument("--base-lock", type=Path, default=None,
                           help="base image lock images are built on (default images/base/base.lock.json)")
            p.add_argument("--cluster", type=Path, default=None, help="cluster settings TOML ([slurm], [k8s])")
            p.add_argument("--concurrency", type=int, default=1, help="local: shards running at once")
            p.add_argument("--mem-limit", default="8g", help="local: container memory limit")
            p.add_argument("--wall-clock", type=float, default=6 * 3600, help="local: seconds per shard")
            p.add_argument("--runtime", default=None, choices=["docker", "pyxis", "apptainer"], help="slurm runtime")
            p.add_argument("--partition", default=None, help="slurm: the partition to submit to")
            p.add_argument("--time-limit", default=None, help="slurm: time limit per shard")
            p.add_argument("--max-parallel", type=int, default=None, help="slurm: shards of a model at once")
            p.add_argument("--registry", default=None, help="k8s (and registry images on slurm)")
            p.add_argument("--dry-run", action="store_true", help="slurm: write the batch scripts, do not sbatch")
    sh = add(sub, "shard")
    sh.add_argument("--run-dir", type=Path, required=True, help="the staged run folder (on shared storage)")
    sh.add_argument("--model", required=True, help="the model whose shard this is")
    sh.add_argument("--index", type=int, required=True, help="the shard's index (the array task id)")
    sh.add_argument("--mem-limit", default="8g", help="memory limit of the shard's container (Docker's units)")
    sh.add_argument("--wall-clock", type=float, default=6 * 3600, help="seconds before the container is killed")


def _shard(args) -> int:
    from pointfail.running.jobs import JobBusy, JobFileError

    from .container import ContainerFailed
    from .engine import EngineError
    from .plan import PlanError
    from .shards import load_run, run_shard

    try:
        _, run = load_run(args.run_dir)
        run_shard(run, args.model, args.index, mem_limit=args.mem_limit, wall_clock_s=args.wall_clock)
    except (PlanError, ContainerFailed, EngineError, JobBusy, JobFileError) as e:
        print(f"pointfail-runner shard: {e}", file=sys.stderr)
        return 1
    return 0


def _plan_command(args, repo: Path) -> int:
    from tabulate import tabulate

    from pointfail.running.jobs import JobBusy, JobFileError

    from .container import ContainerFailed
    from .engine import EngineError
    from .images import ImageBuildError
    from .merge import cell_status, merge, study_and_roots
    from .plan import PlanError, build_plan, load_plan, write_plan
    from .shards import open_run

    try:
        if args.cmd == "plan":
            plan = build_plan(args.study, repo=repo, data_root=args.data_root, shard_size=args.shard_size,
                              shards=args.shards, models=args.models, benchmarks=args.benchmarks, gpus=args.gpus)
            out = args.out or repo / "work" / plan.study / "plan.json"
            write_plan(plan, out)
            print(f"[plan] {sum(len(m.shards) for m in plan.models)} shard(s), "
                  f"{sum(1 for _ in plan.cells())} cell(s) -> {out}")
            return 0
        from .executors import default_run_dir

        run_dir = args.run_dir or default_run_dir(args.plan)
        if args.cmd == "submit":
            common = dict(repo=repo, run_dir=run_dir, data_root=args.data_root, weights_root=args.weights_root,
                          models=args.models, missing=args.missing, variant=args.variant, base_lock=args.base_lock)
            from .executors import executors

            return executors()[args.executor].submit_command(args.plan, args, common)
        plan = load_plan(args.plan, repo=repo)
        run = open_run(plan, run_dir)
        if args.cmd == "status":
            from .executors.slurm import scheduler_states

            rows = cell_status(plan, run, scheduler=scheduler_states(run, plan))
            print(tabulate([(c.model, c.benchmark, c.shard, f"{c.answered}/{c.expected}", c.state, c.note)
                            for c in rows], headers=["model", "benchmark", "shard", "answered", "state", "note"],
                           tablefmt="github"))
            counts = {s: sum(1 for c in rows if c.state == s) for s in sorted({c.state for c in rows})}
            print("cells: " + ", ".join(f"{n} {s}" for s, n in counts.items()))
            return 0 if all(c.state == "done" for c in rows) else 3
        study, roots = study_and_roots(plan, repo, data_root=args.data_root, weights_root=args.weights_root,
                                       records_root=args.records)
        merged = merge(plan, run, repo=repo, study=study, roots=roots)
        print(f"[merge] {sum(merged.written.values())} records in {len(merged.written)} file(s)"
              + (f"; incomplete: {', '.join(f'{m}/{b} ({n} missing)' for (m, b), n in merged.incomplete.items())} "
                 f"(rerun: pointfail-runner submit --plan {args.plan} --missing ...)" if merged.incomplete else ""))
        return 3 if merged.incomplete else 0
    except (PlanError, ContainerFailed, EngineError, ImageBuildError, JobBusy, JobFileError) as e:
        print(f"pointfail-runner {args.cmd}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
