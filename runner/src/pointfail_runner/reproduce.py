"""``make reproduce``: the whole study, in order, with the wall time of every stage.

Stages: fetch or check data and weights against the study lock → preflight (every benchmark row loads
from the publisher's files, every weights folder matches the lock: stops in seconds, before any image)
→ prerequisites (Debian packages, Docker Engine) → base image → images → data (generated suites,
rendered inside the pinned ``suites`` image and checked against the committed manifests) → runs (one
model container at a time) → judge (the oracle; an Ollama judge too when ``OLLAMA_HOST`` is set) →
aggregate (these two through the library's one sequence, :func:`pointfail.running.stages.run_stages`)
→ compare (the regenerated tables against the committed ``tables/`` byte for byte).

By default everything is written under ``work/reproduce/<study>/`` and compared with
``records/<study>/``; ``--publish`` writes into ``records/<study>/`` itself (how the committed records
were made). A study whose data or weights are missing stops before any work with the list of what is
missing and the command that fetches each.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional

if TYPE_CHECKING:
    from pointfail.judge.miss import Judge
    from pointfail.generated.suites.manifest import ManifestComparison

SUITES_IMAGE = "suites"
"""The pinned image that renders generated suites (Pillow + fonts for sheets/text, Chromium for web)."""

SUITE_MOUNT = "/out"


class ReproduceError(RuntimeError):
    """A stage failed; the message names the stage and why."""


def run_tool(client, image: str, command: list[str], rw_dir: Path, *, wall_clock_s: float = 1800,
             mem_limit: str = "4g", log: Callable[[str], None] = print) -> None:
    """Run a pinned tool image (not a model) with ``command``: no network, read-only root, a tmpfs
    ``/tmp``, the non-root container user, all capabilities dropped, no-new-privileges, a memory limit;
    ``rw_dir`` is the one writable mount, at ``/out``. The wall clock is enforced here (kill), and the
    container is always removed.

    Raises:
        ReproduceError: non-zero exit or the wall clock ran out (with the last log lines).
    """
    from .container import CONTAINER_UID, hardened_kwargs

    rw_dir = Path(rw_dir).resolve()
    rw_dir.mkdir(parents=True, exist_ok=True)
    if os.getuid() == 0:
        os.chown(rw_dir, CONTAINER_UID, CONTAINER_UID)
    container = client.containers.create(
        image, command=command,
        **hardened_kwargs(mem_limit=mem_limit, pids_limit=1024, tmpfs={"/dev/shm": "rw,nosuid,nodev,size=512m"}),
        volumes={str(rw_dir): {"bind": SUITE_MOUNT, "mode": "rw"}},
        environment={"HOME": "/tmp", "PYTHONUNBUFFERED": "1", "XDG_CACHE_HOME": "/tmp/cache"},
    )
    t0 = time.monotonic()
    try:
        container.start()
        while True:
            container.reload()
            if container.status in ("exited", "dead"):
                break
            if time.monotonic() - t0 > wall_clock_s:
                container.kill()
                raise ReproduceError(f"{image} {' '.join(command)}: killed after {wall_clock_s:.0f} s")
            time.sleep(1.0)
        code = container.wait(timeout=60).get("StatusCode")
        tail = container.logs(tail=30).decode("utf-8", "replace")
        if code != 0:
            raise ReproduceError(f"{image} {' '.join(command)} exited {code}:\n{tail}")
        log(tail.strip().splitlines()[-1] if tail.strip() else f"[reproduce] {image} done")
    finally:
        try:
            container.remove(force=True)
        except Exception:  # noqa: BLE001 - removal is best effort after a kill
            pass


def generator_command(bench) -> list[str]:
    """The ``pointfail generate`` arguments (the suites image's entrypoint) for one study benchmark
    (a :class:`pointfail.inputs.study.BenchmarkSpec`, or a mapping with the same keys)."""
    from pointfail.inputs.study import BenchmarkSpec

    b = bench if isinstance(bench, BenchmarkSpec) else BenchmarkSpec.model_validate(dict(bench, loader="suite"))
    if b.generator is None:
        raise ReproduceError(f"benchmark {b.name} is not a generated suite (no generator)")
    cmd = [b.generator, "--n", str(b.n), "--seed", str(b.seed), "--out", f"{SUITE_MOUNT}/{b.name}"]
    if b.generator == "web" and b.pages:
        cmd += ["--pages", b.pages]
    if b.absent_share:
        cmd += ["--absent-share", repr(float(b.absent_share))]
    return cmd


EXIT_OK = 0
"""Tables and suite content reproduced (environment drift, if any, is printed)."""
EXIT_CONTENT_DRIFT = 3
"""Every table matched, but a regenerated suite's content (pixels, targets, instructions, scene
graphs) differs from its committed manifest."""
EXIT_TABLES_DIFFER = 4
"""At least one regenerated table differs from the committed one (whatever the suites did)."""


@dataclass
class SuiteCheck:
    """One generated suite compared with its committed manifest: ``name``, the committed manifest's
    path and the :class:`pointfail.generated.suites.manifest.ManifestComparison` (``None`` when the manifest was
    written rather than compared, as with ``--publish``)."""

    name: str
    committed: Path
    comparison: Optional["ManifestComparison"]


def compare_manifest(generated: Path, committed: Path):
    """:func:`pointfail.generated.suites.manifest.compare_manifests` of two manifest files (committed first)."""
    from pointfail.generated.suites.manifest import compare_manifests

    return compare_manifests(json.loads(committed.read_text(encoding="utf-8")),
                             json.loads(generated.read_text(encoding="utf-8")))


def suite_report(checks: list["SuiteCheck"], repo: Path) -> tuple[list[str], list[str]]:
    """``(drift, content)``: readable lines for the reproduce summary. ``drift`` names every
    environment difference of suites whose content matched; ``content`` names, per differing suite,
    the files that differ and the environment changes that may explain them."""
    drift, content = [], []
    for c in checks:
        cmp = c.comparison
        if cmp is None:
            continue
        if cmp.content_matches:
            drift += [f"suite {c.name}: {line}" for line in cmp.drift_lines()]
            continue
        shown = cmp.content[:30] + ([f"... and {len(cmp.content) - 30} more"] if len(cmp.content) > 30 else [])
        env = cmp.drift_lines() or ["(no recorded environment version differs)"]
        content.append(f"suite {c.name} differs from {_shown(c.committed, repo)}:\n  " + "\n  ".join(shown)
                       + "\n  environment changes that may explain it:\n    " + "\n    ".join(env))
    return drift, content


def judge_digest(host: str, model: str) -> Optional[str]:
    """The digest an Ollama server at ``host`` lists for ``model`` (``/api/tags`` through the
    ``ollama`` package; ``model`` or ``model:latest``), ``None`` when it does not list it."""
    import ollama

    names = {model, f"{model}:latest"} if ":" not in model else {model}
    return next((m.digest for m in ollama.Client(host=host).list().models if m.model in names), None)


def _pin_ollama_digest(lock_file: Path, study, host: str, log: Callable[[str], None]) -> None:
    """Pin the Ollama judge's model digest in ``lock_file`` before any miss is sent
    (:func:`pointfail.inputs.studylock.pin_judge`); a server that cannot be asked is logged, not fatal (the
    judge stage reports it).

    Raises:
        ReproduceError: the digest differs from the lock or from ``[judge] ollama_digest``.
    """
    from pointfail.running.judges.client import DEFAULT_MODEL
    from pointfail.inputs.studylock import LockError, pin_judge

    model = study.judge.ollama_model or DEFAULT_MODEL
    try:
        how = pin_judge(lock_file, "ollama", model, judge_digest(host, model),
                        expected=study.judge.ollama_digest or None)
    except LockError as e:
        raise ReproduceError(f"judge: {e}") from None
    except Exception as e:  # noqa: BLE001 - the server cannot be asked: the stage reports it below
        log(f"[reproduce] judge ollama: digest not checked ({type(e).__name__}: {e})")
    else:
        log(f"[reproduce] judge ollama: {model} digest {how} in {_shown(lock_file, Path.cwd())}")


def judge_stage(records: Path, study, plan, *, data_root: Path, env: Optional[dict[str, str]] = None,
                lock_file: Optional[Path] = None, log: Callable[[str], None] = print) -> None:
    """The judge stage through the library (:func:`pointfail.running.judges.stage.judge_study`), as the study
    names its judges (:func:`pointfail.running.judges.lineage.judge_plan`): the primary judge fills
    ``Record.judge``, every compared judge ``other_judgments``. The oracle uses ``[judge]
    oracle_tolerance_px``; the Ollama judge ``[judge] ollama_model`` at ``OLLAMA_HOST`` (``env`` first:
    a rehearsal's stand-in judge). With a model judge at hand (``OLLAMA_HOST``) and the oracle primary,
    the Ollama judge is compared too; with more than one judge their agreement is printed.

    With ``lock_file``, the Ollama judge's model digest is pinned there before any miss is sent
    (:func:`pointfail.inputs.studylock.pin_judge`: recorded by the first run, refused when it changes, and
    checked against ``[judge] ollama_digest`` when the study sets one).

    Raises:
        ReproduceError: the primary judge left misses without a final verdict (pending or
            judge_unavailable), or a compared judge left misses pending; the judge's digest differs
            from the lock or the study's pin.
    """
    from pointfail.running.stages import run_stages

    run_stages(records, judges=judge_runs(study, plan, env=env, lock_file=lock_file, log=log), data_root=data_root,
               aggregate=False, after=_judge_checked(records, log))


def judge_runs(study, plan, *, env: Optional[dict[str, str]] = None, lock_file: Optional[Path] = None,
               log: Callable[[str], None] = print) -> list:
    """The study's judges as :class:`pointfail.running.stages.JudgeRun` s, in order (the plan's judges,
    the primary judge ``primary`` and every other ``other``; the Ollama judge added as a compared judge
    when ``OLLAMA_HOST`` is set and the oracle is primary), each made from the judge registry
    (:func:`pointfail.running.judges.kinds.make_judges`) in its turn, the Ollama judge's digest pinned
    in ``lock_file`` first (rules in :func:`judge_stage`)."""
    from pointfail.running.judges.kinds import make_judges
    from pointfail.running.stages import JudgeRun

    host = (env or {}).get("OLLAMA_HOST") or os.environ.get("OLLAMA_HOST")
    judges = list(plan.judges)
    if "ollama" not in judges and host and plan.primary == "oracle":
        judges.append("ollama")
    settings = {**study.judge.model_dump(), "host": host}

    def make(j: str) -> "Judge":
        if j == "ollama" and lock_file is not None and host:
            _pin_ollama_digest(lock_file, study, host, log)
        (judge,) = make_judges(j, settings)  # the judge registry: the one place a name becomes a judge
        return judge

    return [JudgeRun(functools.partial(make, j), role="primary" if j == plan.primary else "other") for j in judges]


def _judge_checked(records: Path, log: Callable[[str], None]) -> Callable[[str, object], None]:
    """:func:`pointfail.running.stages.run_stages`' ``after`` for the judge stage of :func:`judge_stage`:
    one line per judge, :class:`ReproduceError` for misses left without a verdict, the agreement of
    the judges when more than one ran."""
    def after(stage: str, result) -> None:
        if stage == "judge":
            role, rep = result
            log(f"[reproduce] judge {rep.judge} ({role}): {rep.misses} misses, {rep.judged} judged, "
                f"status {dict(sorted(rep.status.items()))}")
            left = rep.status.get("pending", 0) + (rep.status.get("judge_unavailable", 0) if role == "primary" else 0)
            if left:
                raise ReproduceError(f"the {role} judge {rep.judge} left {left} misses without a verdict:\n  "
                                     + "\n  ".join(rep.problems[:20]))
        elif stage == "judges" and len(result) > 1:
            from pointfail.judge.agreement import agreement_report, format_text

            log(format_text(agreement_report(records)))
    return after


def compare_tables(regenerated: Path, committed: Path) -> list[str]:
    """What differs between two ``tables/`` directories, by :func:`pointfail.aggregate.verify.compare_tables`
    (the comparison ``pointfail verify`` makes, the committed ``SHA256SUMS`` checked too): one line per
    table present on one side only or failing the committed ``SHA256SUMS``, and for each table that
    differs its unified diff (first 60 lines). Empty when byte-identical.

    ``records.sha256`` (a digest per record, :mod:`pointfail.integrity`) and its line in
    ``SHA256SUMS`` are left out: a rerun's records carry this machine's timings, image digest and PNG
    bytes, so their digests differ by design; ``pointfail verify`` checks the committed records
    against the committed digests instead."""
    from pointfail.aggregate.verify import compare_tables as compare
    from pointfail.integrity import DIGESTS_NAME

    fresh = {p.name: p.read_bytes() for p in sorted(regenerated.iterdir()) if p.is_file()}
    problems, diffs = compare(fresh, committed, committed.parent, skip=(DIGESTS_NAME,))
    differing = {f"{committed / name}: differs from the regenerated table" for name in diffs}
    return [line for line in problems if line not in differing] + [
        "\n".join(diffs[name].splitlines()[:60]) for name in sorted(diffs)]


def _shown(path: Path, repo: Path) -> str:
    """``path`` relative to the checkout when inside it (for messages), else as given."""
    p = Path(path).resolve()
    return str(p.relative_to(repo)) if p.is_relative_to(repo) else str(path)


def make_suites(client, repo: Path, study, image: str, data_root: Path, *, publish: bool = False,
                log: Callable[[str], None] = print) -> list[SuiteCheck]:
    """Render every generated benchmark of ``study`` with ``image`` (the pinned suites image) into
    ``data_root/<benchmark>`` and compare each with ``records/<study>/suites/<name>.manifest.json``
    (content and environment apart, :func:`compare_manifest`). A missing committed manifest (or
    ``publish``) is written instead. Returns one :class:`SuiteCheck` per suite."""
    checks: list[SuiteCheck] = []
    from pointfail.inputs.study import inside

    committed = study.dir
    for b in [b for b in study.benchmarks if b.generator]:
        dest = inside(data_root, b.name, f"benchmark {b.name} data")
        if dest.exists():
            shutil.rmtree(dest)
        run_tool(client, image, generator_command(b), data_root, log=log)
        manifest = dest / "manifest.json"
        committed_manifest = committed / "suites" / f"{b.name}.manifest.json"
        if publish or not committed_manifest.exists():
            committed_manifest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(manifest, committed_manifest)
            log(f"[data] wrote {committed_manifest}")
            checks.append(SuiteCheck(b.name, committed_manifest, None))
            continue
        cmp = compare_manifest(manifest, committed_manifest)
        checks.append(SuiteCheck(b.name, committed_manifest, cmp))
        if cmp.content_matches:
            log(f"[data] suite {b.name}: content matches {_shown(committed_manifest, repo)}"
                + (f" ({len(cmp.environment)} environment version(s) differ)" if cmp.environment else ""))
        else:
            log(f"[data] suite {b.name}: {len(cmp.content)} content difference(s) from "
                f"{_shown(committed_manifest, repo)}")
    return checks


def data(repo: Path, study_file: Path, *, variant: str = "cpu", base_lock: Optional[Path] = None,
         snapshot: Optional[str] = None, snapshot_mirror: Optional[str] = None,
         log: Callable[[str], None] = print) -> int:
    """``make data``: build the suites image if needed, render the study's generated suites into
    ``data/<study>/`` and compare them with the committed manifests. Returns :data:`EXIT_OK` when
    every suite's content matches (environment drift is printed), :data:`EXIT_CONTENT_DRIFT` otherwise.
    ``base_lock``: the base image lock to build on (default ``images/base/base.lock.json``; the base
    built for it is reused when the engine has it, else built; the lock is not rewritten)."""
    from . import base as bmod
    from . import images as imod
    from .engine import ensure_engine

    from .study import load_study

    repo = Path(repo).resolve()
    study = load_study(study_file)
    client = ensure_engine()
    base_lock = Path(base_lock or repo / "images/base/base.lock.json")
    bmod.ensure_base(client, base_lock, log=log, snapshot=snapshot, snapshot_mirror=snapshot_mirror)
    built = imod.ensure_image(client, repo, SUITES_IMAGE, variant=variant, base_lock=base_lock, log=log,
                              snapshot=snapshot, snapshot_mirror=snapshot_mirror)
    checks = make_suites(client, repo, study, built.tag, repo / "data" / study.name, log=log)
    drift, content = suite_report(checks, repo)
    for line in drift:
        log(f"[data] drift: {line}")
    for p in content:
        log(p)
    return EXIT_CONTENT_DRIFT if content else EXIT_OK


@dataclass
class Preflight:
    """What :func:`preflight` found: per benchmark the samples loaded (``loaded``), and one line per
    problem (``problems``); ``seconds`` its wall time."""

    loaded: dict[str, int]
    problems: list[str]
    seconds: float


def preflight(repo: Path, study, data_root: Path, lock_file: Path, *, log: Callable[[str], None] = print) -> Preflight:
    """Nothing learned late: before any image is built, load every row of every benchmark the study
    fetches from a hub (its loader, on the files its publisher ships: image headers are read and
    hashed, not decoded; archives unpacked safely beside them), and check every weights folder and
    data folder against ``lock_file`` (:func:`pointfail.inputs.studylock.verify_tree`) and a remote-code
    checkpoint against its weights manifest. Generated suites are rendered and checked later, in the
    data stage.

    Returns:
        :class:`Preflight`; ``problems`` names, per benchmark, the file and row at fault and the
        publisher's layout (the loader's documented release, ``docs/releases.md``), per model the
        file that differs from the lock or manifest. Empty when the study can run.
    """
    import warnings

    from pointfail.running.backends.base import BackendError
    from pointfail.running.backends.manifest import verify_weights
    from pointfail.inputs.benchmarks import BenchmarkError, load
    from pointfail.inputs.benchmarks.fetch import SOURCES
    from pointfail.inputs.study import Roots, StudyError, inside
    from pointfail.inputs.studylock import LockError, read_lock, verify_tree

    t0 = time.monotonic()
    roots = Roots.for_study(study, repo, data=data_root)
    problems: list[str] = []
    loaded: dict[str, int] = {}
    try:
        lock = read_lock(lock_file)
    except LockError as e:
        return Preflight({}, [f"study lock: {e}"], time.monotonic() - t0)
    for b in [b for b in study.benchmarks if not b.generator]:
        d = roots.data_dir(b)
        src = SOURCES.get(b.loader)
        layout = (f"the publisher's layout: {src.repo_id}: {src.note}; docs/releases.md" if src
                  else "docs/releases.md")
        entry = lock["benchmarks"].get(b.name)
        if entry is not None:
            problems += [f"benchmark {b.name}: {p} (locked in {_shown(lock_file, repo)})"
                         for p in verify_tree(d, entry["files"])]
        with warnings.catch_warnings(record=True) as notes:
            warnings.simplefilter("always")
            try:
                samples = load(b.loader, d, limit=b.limit)
            except BenchmarkError as e:
                problems.append(f"benchmark {b.name} ({_shown(d, repo)}) does not load as published ({layout}):\n    "
                                + "\n    ".join(e.problems[:20])
                                + (f"\n    ... and {len(e.problems) - 20} more" if len(e.problems) > 20 else ""))
                continue
        loaded[b.name] = len(samples)
        for note in notes:
            log(f"[preflight] {b.name}: note: {note.message}")
        if b.size is not None and b.limit is None and len(samples) != b.size:
            problems.append(f"benchmark {b.name} ({_shown(d, repo)}): {len(samples)} samples load, the study says "
                            f"size = {b.size} ({layout})")
        log(f"[preflight] {b.name}: {len(samples)} samples load from {_shown(d, repo)}")
    for m in study.models:
        if m.kind != "container" or not getattr(m, "checkpoint", ""):
            continue
        try:
            w = roots.weights_dir(m)
        except StudyError as e:
            problems.append(f"model {m.name}: {e}")
            continue
        entry = lock["models"].get(m.name)
        if entry is not None:
            problems += [f"model {m.name}: {p} (locked in {_shown(lock_file, repo)})" for p in verify_tree(w, entry["files"])]
        if getattr(m, "weights_manifest", None):
            try:
                n = verify_weights(w, inside(study.dir, m.weights_manifest, f"models {m.name!r} weights_manifest"))
                log(f"[preflight] {m.name}: {n} files match its weights manifest")
            except (BackendError, StudyError, OSError) as e:
                problems.append(f"model {m.name}: {e}")
    return Preflight(loaded, problems, time.monotonic() - t0)


def debian_report(base, built: dict) -> list[str]:
    """Lines naming every Debian package whose installed version differs from the recorded one, for
    the base (a :class:`pointfail_runner.base.LocalBase`) and each built image
    (:class:`pointfail_runner.images.BuiltImage`): ``image: package: recorded -> installed``."""
    from .aptpins import drift_lines

    out = [f"base: {line}" for line in drift_lines(base.drift)] if base is not None else []
    for name in sorted(built):
        out += [f"{name}: {line}" for line in drift_lines(built[name].drift)]
    return out


def reproduce(repo: Path, study_file: Path, *, publish: bool = False, variant: Optional[str] = None,
              out_root: Optional[Path] = None, install: bool = True, snapshot: Optional[str] = None,
              snapshot_mirror: Optional[str] = None, bundle: Optional[Path] = None,
              log: Callable[[str], None] = print) -> int:
    """Run every stage for ``study_file`` and print a table of stage wall times.

    With ``bundle`` (an archive from ``make bundle``, :mod:`pointfail_runner.bundle`), the first stage
    verifies its checksums, loads its images and restores its data; nothing is built, installed or
    downloaded afterwards, so it runs with no network at all.

    Debian packages in the base and the images come from the archive as it is now: versions that
    moved since they were recorded are listed in the summary (drift, not a failure). With
    ``snapshot`` (and ``snapshot_mirror``) they come from that snapshot archive at their recorded
    versions. With ``publish``, the versions this run used are recorded (base and ``debian.lock``
    files) beside the records.

    Returns :data:`EXIT_OK` when the regenerated tables and suite contents match the committed ones
    (environment drift is reported, not failed), :data:`EXIT_CONTENT_DRIFT` when a suite's content
    differs but every table matches, :data:`EXIT_TABLES_DIFFER` when a table differs.

    Raises:
        ReproduceError / StudyError / PrereqError / EngineError: a stage could not run (message says
            which and why); nothing after it runs.
    """
    from pointfail.inputs.study import Roots

    from .study import load_study, missing_inputs

    repo = Path(repo).resolve()
    study = load_study(study_file)
    committed = study.file.parent.resolve()
    work = Path(out_root or repo / "work" / "reproduce" / study.name).resolve()
    records = committed if publish else work / "records"
    data_root = repo / "data" / study.name
    generated = [b for b in study.benchmarks if b.generator]
    if publish and bundle:
        raise ReproduceError("--publish writes records from fresh builds; it does not take a bundle")
    stand_in = study.stand_in is not None
    # Before any work: the judges (out-of-family), the variant, and what is missing.
    from pointfail.running.judges.lineage import LineageError, judge_plan

    from . import prepare

    try:
        plan = judge_plan(study.model_dump())
    except LineageError as e:
        raise ReproduceError(f"study {study.name}: {e}") from None
    variant = prepare.choose_variant(variant, None, log=log)
    t_start = time.monotonic()
    marks: list[tuple[str, float, float]] = []

    def timed(name: str, fn):
        log(f"[reproduce] == {name}")
        t0 = time.monotonic()
        result = fn()
        marks.append((name, t0, time.monotonic()))
        return result

    client = None
    if bundle:
        from .bundle import open_bundle
        from .engine import ensure_engine

        client = timed("docker engine", ensure_engine)
        timed("bundle (checksums, docker load, data)",
              lambda: open_bundle(client, repo, Path(bundle).resolve(), study.name, log=log))
    # Data restored from a bundle counts.
    # A rehearsal's stand-in hub provides every benchmark and checkpoint in the fetch stage; otherwise
    # what is missing is listed with the command that provides it (the fetch commands lock revisions).
    missing = [] if stand_in else missing_inputs(study, study.models, [b for b in study.benchmarks if not b.generator],
                                                 Roots.for_study(study, repo, data=data_root), repo=repo,
                                                 require_revisions=True)
    missing += prepare.judge_missing(plan, study.model_dump(), stand_in)
    missing += prepare.variant_problems(repo, study, variant)
    if missing:
        raise ReproduceError(f"study {study.name} cannot run here; missing before any work:\n  "
                             + "\n  ".join(missing))
    committed_lock = committed / "study.lock"
    lock_file = committed_lock if publish else records / "study.lock"
    if not publish:
        records.mkdir(parents=True, exist_ok=True)
        if committed_lock.is_file():
            shutil.copyfile(committed_lock, lock_file)
        else:
            lock_file.unlink(missing_ok=True)

    with prepare.stand_ins(repo, study.model_dump(), log=log) as env:
        return _stages(repo, study, plan, env, committed, work, records, data_root, generated, lock_file, committed_lock,
                       publish=publish, variant=variant, install=install, log=log, client=client, timed=timed,
                       marks=marks, t_start=t_start, snapshot=snapshot, snapshot_mirror=snapshot_mirror,
                       bundle=bundle)


def _stages(repo, study, plan, env, committed, work, records, data_root, generated, lock_file, committed_lock, *,
            publish, variant, install, log, client, timed, marks, t_start, snapshot, snapshot_mirror, bundle) -> int:
    """The timed stages of :func:`reproduce` (the stand-ins, if any, are running)."""
    from tabulate import tabulate

    from pointfail.running.stages import run_stages

    from .engine import ensure_engine

    base_lock = repo / "images/base/base.lock.json"
    snap = dict(snapshot=snapshot, snapshot_mirror=snapshot_mirror)
    _checked_inputs(repo, study, env, data_root, lock_file, timed=timed, log=log)
    if client is None:
        client = timed("docker engine", ensure_engine)
    if not bundle:
        timed("prerequisites", lambda: _prerequisites(client, base_lock, snapshot, install=install, log=log))
    base = timed("base image", lambda: _base_image(client, repo, base_lock, snap, bundle=bundle, publish=publish,
                                                   log=log))
    if bundle:
        snap["allow_build"] = False
    built = timed("images", lambda: _build_images(client, repo, study, generated, variant, snap, publish=publish,
                                                  log=log))
    checks: list[SuiteCheck] = []
    timed("data (suites in the pinned image)",
          lambda: checks.extend(make_suites(client, repo, study, built[SUITES_IMAGE].tag if generated else "",
                                            data_root, publish=publish, log=log)))
    timed("runs (one model container at a time)",
          lambda: _runs(client, repo, study, work, records, committed, data_root, lock_file, variant, snap, log=log))
    judged = _judge_checked(records, log)

    def after(stage: str, result) -> None:
        judged(stage, result)
        if stage == "aggregate":
            log(f"[reproduce] aggregate: {len(result)} files in {records / 'tables'}")

    run_stages(records, judges=judge_runs(study, plan, env=env, lock_file=lock_file, log=log), data_root=repo,
               around=timed, after=after)  # the library's sequence: judge, then aggregate, each timed
    table_diffs: list[str] = []
    if publish:
        timed("compare with committed tables", lambda: None)
    else:
        timed("compare with committed tables",
              lambda: table_diffs.extend(_compare(repo, records, committed, lock_file, committed_lock, log=log)))
    rows = [(name, f"{t1 - t0:.1f}") for name, t0, t1 in marks]
    rows.append(("total", f"{time.monotonic() - t_start:.1f}"))
    log(tabulate(rows, headers=["stage", "seconds"], tablefmt="github"))
    return summarize(study.name, checks, table_diffs, repo, publish=publish, debian=debian_report(base, built),
                     log=log)


def _checked_inputs(repo, study, env, data_root, lock_file, *, timed, log) -> None:
    """Nothing learned late: fetch (a rehearsal's stand-in hub) or check against the lock, then load every
    benchmark row and check every weights folder, before the engine, the base or any image.

    Raises:
        ReproduceError: the preflight found problems (the first 40 listed).
    """
    from . import prepare

    needs_fetch = [b for b in study.benchmarks if not b.generator] + [m for m in study.models
                                                                     if getattr(m, "checkpoint", "") and m.kind == "container"]
    if not needs_fetch:
        return
    download = bool(env.get("HF_ENDPOINT"))
    timed("fetch (hub, through the study lock)" if download else "check data and weights against the lock",
          lambda: prepare.fetch_stage(repo, study, study.path, data_root, lock_file, env, download=download, log=log))
    pre = timed("preflight (every benchmark row, every weights folder)",
                lambda: preflight(repo, study, data_root, lock_file, log=log))
    if pre.problems:
        raise ReproduceError(f"study {study.name} stopped before any image was built ({pre.seconds:.1f} s of "
                             "checks):\n  " + "\n  ".join(pre.problems[:40]))


def _prerequisites(client, base_lock: Path, snapshot, *, install: bool, log) -> None:
    """The host needs only the engine and, to build the base, debootstrap; Tesseract, Chromium and
    fonts live in the images."""
    from . import base as bmod
    from . import prereqs

    if bmod.find_base(client, bmod.read_lock(base_lock), snapshot) is None:
        prereqs.ensure_packages(prereqs.REPRODUCE_PACKAGES, install=install, log=log)
    else:
        log("[prereqs] the base image is in the engine; nothing to install")


def _base_image(client, repo: Path, base_lock: Path, snap: dict, *, bundle, publish: bool, log):
    """The base image: the bundle's (never built), else :func:`pointfail_runner.base.ensure_base`."""
    from . import base as bmod

    if bundle:
        local = bmod.find_base(client, bmod.read_lock(base_lock), snap["snapshot"])
        if local is None:
            raise ReproduceError(f"the bundle holds no base for {_shown(base_lock, repo)}")
        return local
    return bmod.ensure_base(client, base_lock, record=publish, log=log, **snap)


def _build_images(client, repo: Path, study, generated, variant, snap: dict, *, publish: bool, log) -> dict:
    """Every container model's image and, with generated suites, the suites image (served models'
    images are run_study's own); with ``publish`` each one's Debian versions recorded."""
    from . import images as imod

    names = sorted({m.image for m in study.models if m.kind == "container"}
                   | ({SUITES_IMAGE} if generated else set()))
    built = {}
    for name in names:
        built[name] = imod.ensure_image(client, repo, name, variant=variant, log=log, **snap)
        if publish:
            imod.record_debian(repo, built[name], log=log)
    return built


def _runs(client, repo: Path, study, work: Path, records: Path, committed: Path, data_root: Path, lock_file: Path,
          variant, snap: dict, *, log) -> None:
    """The study's runs (:func:`pointfail_runner.study.run_study`) into ``records`` (the study file
    copied beside them when they are not the committed folder)."""
    from .study import run_study

    if records != committed:
        records.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(study.path, records / "study.toml")
    for m in study.models:
        (records / m.name).mkdir(parents=True, exist_ok=True)
    run_study(study.path, repo=repo, data_root=data_root, work_root=work / "jobs", records_root=records, variant=variant,
              wall_clock_s=3600, progress=sys.stderr.isatty(), fix_permissions=True, client=client,
              build_options=snap, log=log, lock_file=lock_file)


def _compare(repo: Path, records: Path, committed: Path, lock_file: Path, committed_lock: Path, *, log) -> list[str]:
    """The regenerated tables against the committed ones (:func:`compare_tables`) and the study lock
    this run wrote against the committed one, byte for byte: the differences, one entry each."""
    table_diffs = compare_tables(records / "tables", committed / "tables")
    if lock_file.is_file() and lock_file != committed_lock:
        if not committed_lock.is_file():
            log(f"[reproduce] study lock written to {_shown(lock_file, repo)}: copy it to "
                f"{_shown(committed_lock, repo)} and commit it to pin this study")
        elif lock_file.read_bytes() != committed_lock.read_bytes():
            table_diffs.append(f"study.lock: {_shown(lock_file, repo)} differs from {_shown(committed_lock, repo)}")
        else:
            log(f"[reproduce] study lock {_shown(lock_file, repo)} matches {_shown(committed_lock, repo)} byte for byte")
    if not table_diffs:
        log(f"[reproduce] every table matches {_shown(committed / 'tables', repo)} byte for byte")
    return table_diffs


def summarize(study_name: str, checks: list[SuiteCheck], table_diffs: list[str], repo: Path, *,
              publish: bool = False, debian: Optional[list[str]] = None, log: Callable[[str], None] = print) -> int:
    """Print the end of the reproduce summary (Debian drift, environment drift, content drift, table
    diffs, the verdict) and return the exit code: :data:`EXIT_OK`, :data:`EXIT_CONTENT_DRIFT` or
    :data:`EXIT_TABLES_DIFFER`. ``debian`` holds :func:`debian_report` lines."""
    if debian:
        log("[reproduce] Debian drift (package: recorded version -> installed version; the archive keeps only "
            "the newest):\n  " + "\n  ".join(debian))
    drift, content = suite_report(checks, repo)
    if drift:
        log("[reproduce] environment drift (versions differ, content identical):\n  " + "\n  ".join(drift))
    if content:
        log("[reproduce] CONTENT DRIFT: regenerated suite content differs from the committed manifests\n"
            + "\n".join(content))
    if table_diffs:
        log("[reproduce] TABLES DIFFER from the committed ones:\n" + "\n".join(table_diffs))
        log(f"[reproduce] FAILED: study {study_name}: tables differ"
            + (" (suite content drifted too, see above)" if content else ""))
        return EXIT_TABLES_DIFFER
    if content:
        log(f"[reproduce] FAILED: study {study_name}: suite content drifted; every table still matches byte for "
            "byte, so the drift changed no number")
        return EXIT_CONTENT_DRIFT
    log(f"[reproduce] OK: study {study_name} reproduced" + (" and published" if publish else "")
        + (" (with environment drift, listed above)" if drift or debian else ""))
    return EXIT_OK
