"""``records/<study>/study.lock``: the commits and file hashes a study's data and weights were fetched at.

A study names its benchmarks and checkpoints; the hub repositories behind them move (branches get new
commits, files are replaced). So the first fetch of each repository **resolves** it once: the pinned
revision when the study (or pointfail's source table) has one, else the repository's current ``main``
commit, and writes that commit with the sha256 of every file it downloaded into the lock. Every later
fetch downloads exactly the locked commit and **refuses** files whose sha256 differs from the lock
(or files missing or extra), and a run checks the files on disk against the lock before any work
(:func:`verify_tree`). Commit the lock beside the study: it is what makes the study pin itself.

Format (canonical JSON: sorted keys, UTF-8, one trailing newline)::

    {"schema": "pointfail.study_lock/1",
     "benchmarks": {"<benchmark name>": ENTRY, ...},
     "models": {"<model name>": ENTRY, ...}}
    ENTRY = {"repo_id": "owner/name", "repo_type": "dataset" | "model", "revision": "<40 hex>",
             "files": {"<path relative to the download folder>": "<sha256 hex>", ...},
             "archives": {"<a .zip of files>": {"sha256": "<hex>", "members": ["<decoded name>", ...]}}}

A study whose misses a model judge labels also pins that judge: ``"judge": {"ollama": {"model":
"<name:tag>", "digest": "<the server's digest>"}}``, written by the first run that reaches the judge
(:func:`pin_judge`, trust on first pull, as for data and weights); later runs refuse another digest.

``archives`` (present when the download holds zip archives, as Point-Bench's release does) lists
every archive's sha256 and its member files under their decoded names
(:func:`pointfail.inputs.benchmarks.archive.archive_summary`, which also refuses an unsafe archive at the
first fetch); a later fetch refuses an archive whose member list differs from the lock.

Downloads go through ``huggingface_hub.snapshot_download`` (the Hub client, honouring
``HF_ENDPOINT``); before it, the file list comes from ``HfApi.repo_info(files_metadata=True)`` at the
resolved commit and every downloaded file is also checked against the Hub's own record (LFS sha256 or
git blob id), as :mod:`pointfail.inputs.benchmarks.fetch` does.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Optional

from pointfail.inputs.hub import COMMIT_ID, hub_expected_files, hub_offline
from pointfail.records import canonical_json, sha256_file

__all__ = ["LOCK_NAME", "SCHEMA", "LockError", "lock_path", "read_lock", "write_lock", "fetch_locked", "verify_tree",
           "resolve_revision", "pin_judge"]

LOCK_NAME = "study.lock"
SCHEMA = "pointfail.study_lock/1"
KINDS = ("benchmarks", "models")
_HEX64 = re.compile(r"^[0-9a-f]{64}$")


class LockError(RuntimeError):
    """The lock cannot be read, disagrees with the study, or downloaded/on-disk files do not match it
    (each problem named), or the hub refused. Nothing is written to the lock then."""


def lock_path(study_file: str | Path) -> Path:
    """``study.lock`` beside ``study_file``."""
    return Path(study_file).parent / LOCK_NAME


def read_lock(path: str | Path) -> dict[str, Any]:
    """The lock at ``path`` (an empty lock when the file does not exist).

    Raises:
        LockError: not JSON, another schema, or an entry breaking the format (named).
    """
    from pointfail.limits import MAX_STUDY_BYTES
    from pointfail.safeio import read_regular_file

    p = Path(path)
    if not p.exists():
        return {"schema": SCHEMA, "benchmarks": {}, "models": {}}
    try:
        data = json.loads(read_regular_file(p, 16 * MAX_STUDY_BYTES).decode("utf-8"))
    except (OSError, ValueError) as e:  # UnsafeFileError is a ValueError (a FIFO, a device, too large)
        raise LockError(f"{p}: cannot read the study lock: {e}") from None
    except RecursionError:
        raise LockError(f"{p}: cannot read the study lock: JSON nested too deeply") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise LockError(f"{p}: not a {SCHEMA} file")
    problems = []
    for kind in KINDS:
        entries = data.setdefault(kind, {})
        if not isinstance(entries, dict):
            problems.append(f"{kind}: not an object")
            continue
        for name, entry in entries.items():
            problems += _entry_problems(f"{kind}.{name}", entry)
    judges = data.get("judge", {})
    if not isinstance(judges, dict) or any(not isinstance(v, dict) or not isinstance(v.get("model"), str)
                                           or not isinstance(v.get("digest"), str) for v in judges.values()):
        problems.append("judge: must map a judge to its model and digest")
    if problems:
        raise LockError(f"{p}:\n  " + "\n  ".join(problems))
    return data


def _entry_problems(where: str, entry: Any) -> list[str]:
    """What breaks the lock format in one ``benchmarks`` or ``models`` entry, one line each prefixed with
    ``where`` (``kind.name``); empty when it holds.

    The entry needs a 40-hex ``revision`` and a ``files`` object; each file maps a relative path (no
    leading ``/``, no ``..`` part) to a 64-hex sha256; ``archives`` (optional) maps a locked file to its
    ``sha256`` (the same as in ``files``) and its ``members`` (a list of names).
    """
    if not isinstance(entry, dict) or not COMMIT_ID.match(str(entry.get("revision", ""))) \
            or not isinstance(entry.get("files"), dict):
        return [f"{where}: needs repo_id, repo_type, a 40-hex revision and files"]
    problems = []
    bad = [f for f, h in entry["files"].items() if not isinstance(h, str) or not _HEX64.match(h)
           or f.startswith("/") or ".." in f.split("/")]
    if bad:
        problems.append(f"{where}: bad file entries {bad[:3]}")
    archives = entry.get("archives", {})
    if not isinstance(archives, dict) or any(
            a not in entry["files"] or not isinstance(v, dict) or v.get("sha256") != entry["files"][a]
            or not isinstance(v.get("members"), list) or not all(isinstance(m, str) for m in v["members"])
            for a, v in archives.items()):
        problems.append(f"{where}: archives must map a locked file to its sha256 and member list")
    return problems


def write_lock(path: str | Path, lock: dict[str, Any]) -> None:
    """Write ``lock`` canonically and atomically (a temporary file, then ``os.replace``)."""
    p = Path(path)
    tmp = p.with_name(f".{p.name}.tmp")
    tmp.write_text(canonical_json(lock), encoding="utf-8")
    os.replace(tmp, p)


def resolve_revision(repo_id: str, repo_type: str, revision: str = "main") -> str:
    """The commit ``revision`` of ``repo_id`` names on the hub (``HfApi.repo_info(...).sha``).

    Raises:
        LockError: offline, or the hub refused (repository or revision not found, transport error).
    """
    if hub_offline():
        raise LockError(f"{repo_id}: offline (HF_HUB_OFFLINE is set): cannot resolve {revision!r}")
    from pointfail.extras import require

    require("hub", "fetching from a hub")
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HfHubHTTPError

    try:
        sha = HfApi().repo_info(repo_id, repo_type=repo_type, revision=revision).sha
    except (HfHubHTTPError, OSError) as e:
        raise LockError(f"{repo_id}: cannot resolve revision {revision!r}: {e}") from None
    if not sha or not COMMIT_ID.match(sha):
        raise LockError(f"{repo_id}: the hub answered revision {revision!r} with {sha!r}, not a commit id")
    return sha


def verify_tree(dest: str | Path, files: dict[str, str]) -> list[str]:
    """Problems of the files under ``dest`` against ``files`` (``{relative path: sha256}``): one line
    per missing file or different sha256, sorted by path; empty when all match. Files under ``dest``
    that the lock does not name are not read (a weights folder may hold more)."""
    d = Path(dest)
    out = []
    for rel in sorted(files):
        p = d / rel
        if not p.is_file():
            out.append(f"missing {p}")
            continue
        got = sha256_file(p)
        if got != files[rel]:
            out.append(f"{p}: sha256 {got} != locked {files[rel]}")
    return out


def fetch_locked(*, kind: str, name: str, repo_id: str, repo_type: str, dest: str | Path, lock_file: str | Path,
                 pinned: Optional[str] = None, allow_patterns: Optional[tuple[str, ...]] = None,
                 log=print) -> dict[str, Any]:
    """Download ``repo_id`` into ``dest`` at the locked commit, or resolve it once and lock it.

    Args:
        kind: ``"benchmarks"`` or ``"models"`` (the lock section); name: the study's name for it.
        repo_id / repo_type: the hub repository (``dataset`` or ``model``).
        dest: the download folder (created).
        lock_file: the study's ``study.lock`` (created when absent).
        pinned: a 40-hex commit the study or pointfail's table pins (``None``: resolve ``main``).
        allow_patterns: the files that make up the download (globs; ``None``: all).

    Returns:
        The lock entry (``repo_id``, ``repo_type``, ``revision``, ``files``).

    Raises:
        LockError: the lock names another repository or commit than the study pins; offline; the hub
            refused; a downloaded file differs from the hub's record or from the lock (every one
            named; the lock is not changed then).
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}")
    if pinned is not None and not COMMIT_ID.match(pinned):
        raise LockError(f"{name}: pinned revision {pinned!r} is not a 40-hex commit (branches and tags move)")
    entry = read_lock(lock_file)[kind].get(name)
    rev = _locked_revision(entry, kind=kind, name=name, repo_id=repo_id, repo_type=repo_type,
                           lock_file=lock_file, pinned=pinned, log=log)
    out = Path(dest)
    expected = _download(name, repo_id, repo_type, rev, out, allow_patterns)
    files = {rel: sha256_file(out / rel) for rel in sorted(expected)}
    archives = _archives(out, files, name)
    new: dict[str, Any] = {"repo_id": repo_id, "repo_type": repo_type, "revision": rev, "files": files}
    if archives:
        new["archives"] = archives
    if entry is not None:
        diff = _lock_differences(entry, files, archives)
        if diff:
            raise LockError(f"{name}: refusing {repo_id}@{rev}: {len(diff)} file(s) do not match {lock_file}:\n  "
                            + "\n  ".join(diff[:20]))
        log(f"[lock] {name}: {len(files)} files match the lock")
        return entry
    lock = read_lock(lock_file)  # re-read: another fetch may have locked another entry meanwhile
    lock[kind][name] = new
    write_lock(lock_file, lock)
    log(f"[lock] {name}: locked {len(files)} files at {rev} in {lock_file}")
    return new


def _locked_revision(entry: Optional[dict[str, Any]], *, kind: str, name: str, repo_id: str, repo_type: str,
                     lock_file: str | Path, pinned: Optional[str], log) -> str:
    """The 40-hex commit to download: the lock ``entry``'s (``None``: not locked yet), else ``pinned``,
    else ``main`` resolved on the hub (:func:`resolve_revision`); the choice is logged.

    Raises:
        LockError: the entry names another repository, or another commit than ``pinned`` (remove the
            entry to re-lock); resolving ``main`` failed.
    """
    if entry is None:
        rev = pinned or resolve_revision(repo_id, repo_type)
        log(f"[lock] {name}: {repo_id}@{rev} ({'pinned' if pinned else 'resolved from main'}; not locked yet)")
        return rev
    if entry.get("repo_id") != repo_id or entry.get("repo_type") != repo_type:
        raise LockError(f"{lock_file}: {kind}.{name} is locked to {entry.get('repo_type')} {entry.get('repo_id')}, "
                        f"the study names {repo_type} {repo_id}; remove the entry to re-lock")
    if pinned is not None and pinned != entry["revision"]:
        raise LockError(f"{lock_file}: {kind}.{name} is locked at {entry['revision']}, the study pins {pinned}; "
                        "remove the entry to re-lock")
    rev = entry["revision"]
    log(f"[lock] {name}: {repo_id}@{rev} (from {Path(lock_file).name})")
    return rev


def _download(name: str, repo_id: str, repo_type: str, rev: str, out: Path,
              allow_patterns: Optional[tuple[str, ...]]) -> dict[str, Any]:
    """Download ``repo_id@rev`` (the files ``allow_patterns`` match; ``None``: all) into ``out`` with
    ``huggingface_hub.snapshot_download``, check every file against the hub's record
    (:func:`hub_expected_files`, :func:`pointfail.inputs.benchmarks.fetch.verify_files`), and remove the
    client's bookkeeping (``out/.cache/huggingface``; ``out/.cache`` too when that leaves it empty) so the
    folder holds only the repository's files (a remote-code checkpoint loads only from a folder matching
    its manifest). Returns the hub's record of the expected files, keyed by relative path.

    Raises:
        LockError: offline (HF_HUB_OFFLINE), the hub refused or the transport failed, no file matches
            ``allow_patterns``, or a downloaded file differs from the hub's record (up to 20 named).
    """
    if hub_offline():
        raise LockError(f"{name}: offline (HF_HUB_OFFLINE is set); cannot download {repo_id}@{rev}")
    from pointfail.extras import require

    require("hub", "fetching from a hub")
    from huggingface_hub import HfApi, snapshot_download
    from huggingface_hub.errors import HfHubHTTPError

    from pointfail.inputs.benchmarks.fetch import verify_files

    try:
        info = HfApi().repo_info(repo_id, repo_type=repo_type, revision=rev, files_metadata=True)
        expected = hub_expected_files(info, allow_patterns)
        snapshot_download(repo_id, repo_type=repo_type, revision=rev, local_dir=out,
                          allow_patterns=list(allow_patterns) if allow_patterns else None)
    except (HfHubHTTPError, OSError) as e:
        raise LockError(f"{name}: could not download {repo_id}@{rev}: {e}") from None
    if not expected:
        raise LockError(f"{name}: {repo_id}@{rev} lists no files matching {allow_patterns}")
    problems = verify_files(out, expected)
    if problems:
        raise LockError(f"{name}: {len(problems)} file(s) differ from the hub's record of {repo_id}@{rev}:\n  "
                        + "\n  ".join(problems[:20]))
    import shutil

    shutil.rmtree(out / ".cache" / "huggingface", ignore_errors=True)
    if (out / ".cache").is_dir() and not any((out / ".cache").iterdir()):
        (out / ".cache").rmdir()
    return expected


def _lock_differences(entry: dict[str, Any], files: dict[str, str],
                      archives: dict[str, dict[str, Any]]) -> list[str]:
    """How the downloaded ``files`` (relative path -> sha256) and ``archives`` (:func:`_archives`) differ
    from the lock ``entry``, one line each: a different sha256, a file not in the lock, a locked file not
    served, an archive whose member list differs (counts and up to 3 names each way). Empty: they match.
    """
    locked = entry["files"]
    diff = [f"{rel}: sha256 {files[rel]} != locked {locked[rel]}" for rel in sorted(set(files) & set(locked))
            if files[rel] != locked[rel]]
    diff += [f"{rel}: not in the lock" for rel in sorted(set(files) - set(locked))]
    diff += [f"{rel}: locked but not served" for rel in sorted(set(locked) - set(files))]
    for a in sorted(set(archives) & set(entry.get("archives", {}))):
        want, got = set(entry["archives"][a]["members"]), set(archives[a]["members"])
        if want != got:
            diff.append(f"{a}: members differ from the lock ({len(got - want)} not locked, e.g. "
                        f"{sorted(got - want)[:3]}; {len(want - got)} missing, e.g. {sorted(want - got)[:3]})")
    return diff


def _archives(out: Path, files: dict[str, str], name: str) -> dict[str, dict[str, Any]]:
    """:func:`pointfail.inputs.benchmarks.archive.archive_summary` of every ``.zip`` among ``files``.

    Raises:
        LockError: an archive is refused (its one line)."""
    from pointfail.inputs.benchmarks.archive import ArchiveError, archive_summary

    found: dict[str, dict[str, Any]] = {}
    for rel in sorted(files):
        if rel.lower().endswith(".zip"):
            try:
                found[rel] = archive_summary(out / rel)
            except ArchiveError as e:
                raise LockError(f"{name}: {e}") from None
    return found


def pin_judge(lock_file: str | Path, judge: str, model: str, digest: Optional[str], *,
              expected: Optional[str] = None) -> str:
    """Pin a model judge's weights in the study lock: the first call records ``digest`` (what the
    judge server reports for ``model``, e.g. Ollama's ``/api/tags``) under ``judge.<judge>``; a later
    call with another model or digest is refused. ``expected`` (a digest the study or
    ``images/judge/model.lock`` pins) must match too. Returns ``"recorded"`` or ``"matches"``.

    Raises:
        LockError: no digest reported (the server lacks the model); a digest other than the lock's
            or ``expected`` (the tag now names other weights); the lock unreadable.
    """
    if not digest:
        raise LockError(f"judge {judge}: the server reports no digest for {model!r} (is it pulled?)")
    if expected and expected != digest:
        raise LockError(f"judge {judge}: {model} has digest {digest}, the study pins {expected}")
    lock = read_lock(lock_file)
    entry = lock.get("judge", {}).get(judge)
    if entry is not None:
        if entry.get("model") != model or entry.get("digest") != digest:
            raise LockError(f"{lock_file}: judge {judge} is locked to {entry.get('model')} {entry.get('digest')}; the "
                            f"server has {model} {digest}; refusing (remove the entry to re-lock)")
        return "matches"
    lock.setdefault("judge", {})[judge] = {"model": model, "digest": digest}
    write_lock(lock_file, lock)
    return "recorded"


# ----------------------------------------------------------------------------- study-side helpers


def study_checkout(study_file: str | Path) -> Path:
    """The checkout a study file belongs to: ``<checkout>/records/<study>/study.toml`` -> ``<checkout>``;
    for a study file elsewhere, the current directory."""
    p = Path(study_file).resolve()
    if p.parent.parent.name == "records":
        return p.parent.parent.parent
    return Path.cwd().resolve()


def _load(study_file: str | Path):
    from pointfail.inputs.study import Roots, StudyError, load_study

    try:
        study = load_study(study_file)
        return study, Roots.for_study(study, study_checkout(study_file))
    except StudyError as e:
        raise LockError(str(e)) from None


def fetch_benchmark(study_file: str | Path, bench_name: str, *, to: Optional[Path] = None,
                    lock_file: Optional[Path] = None, log=print) -> Path:
    """Fetch one benchmark of a study through its lock (:func:`fetch_locked`): the repository and
    file patterns of :data:`pointfail.inputs.benchmarks.fetch.SOURCES` for its ``loader``, the pin of the
    study (``revision``) or of that table, the study's data folder (or ``to``). Returns the folder.

    Raises:
        LockError: see :func:`fetch_locked`; an unknown benchmark; a loader with no hub source.
    """
    from pointfail.inputs.benchmarks.fetch import sources

    study, roots = _load(study_file)
    try:
        bench = study.benchmark(bench_name)
    except Exception as e:  # StudyError naming the known benchmarks
        raise LockError(str(e)) from None
    known = sources()
    src = known.get(bench.loader)
    if src is None:
        raise LockError(f"benchmark {bench_name}: loader {bench.loader!r} has no hub source "
                        f"(downloadable: {', '.join(sorted(known))})")
    dest = Path(to) if to else roots.data_dir(bench)
    fetch_locked(kind="benchmarks", name=bench_name, repo_id=src.repo_id, repo_type=src.repo_type, dest=dest,
                 lock_file=lock_file or lock_path(study_file), pinned=bench.revision or src.revision,
                 allow_patterns=src.allow_patterns, log=log)
    return dest


def fetch_weights(study_file: str | Path, model_name: str, *, to: Optional[Path] = None,
                  lock_file: Optional[Path] = None, log=print) -> Path:
    """Fetch one model's checkpoint of a study through its lock: ``checkpoint`` at ``revision`` (or
    resolved and locked), into the study's weights folder (or ``to``): a container model's, or a served
    model's whose server the runner starts (``serve.weights``). Returns the folder.

    Raises:
        LockError: see :func:`fetch_locked`; an unknown model; a model without a checkpoint.
    """
    study, roots = _load(study_file)
    try:
        model = study.model(model_name)
    except Exception as e:  # StudyError naming the known models
        raise LockError(str(e)) from None
    if not model.checkpoint or (model.kind == "server" and model.serve is None):
        raise LockError(f"model {model_name}: no checkpoint in {study_file} (nothing to fetch)")
    dest = Path(to) if to else roots.weights_dir(model)
    entry = fetch_locked(kind="models", name=model_name, repo_id=model.checkpoint, repo_type="model", dest=dest,
                         lock_file=lock_file or lock_path(study_file), pinned=model.revision or None, log=log)
    if getattr(model, "weights_manifest", None):  # container models only
        # checkpoints that run their own code load only from a folder matching this manifest
        # (pointfail.running.backends.manifest): written at the first fetch, checked at every later one
        from pointfail.running.backends.base import BackendError
        from pointfail.running.backends.manifest import verify_weights, write_weights_manifest

        from pointfail.inputs.study import StudyError, inside

        try:
            man = inside(study.dir, model.weights_manifest, f"models {model_name!r} weights_manifest")
            if man.is_file():
                verify_weights(dest, man)
                log(f"[lock] {model_name}: weights folder matches {man}")
            else:
                man.parent.mkdir(parents=True, exist_ok=True)
                write_weights_manifest(dest, man)
                log(f"[lock] {model_name}: weights manifest written to {man}")
        except (BackendError, StudyError) as e:
            raise LockError(f"model {model_name}: {e}") from None
    del entry
    return dest


def locked_revision(study_file: Optional[str | Path], kind: str, name: str,
                    lock_file: Optional[str | Path] = None) -> Optional[str]:
    """The commit the study's lock (``lock_file``, default ``study.lock`` beside ``study_file``) holds
    for ``kind``/``name`` (``None`` when not locked, or when neither file is given).

    Raises:
        LockError: the lock file is unreadable or malformed (:func:`read_lock`).
    """
    if lock_file is None:
        if study_file is None:
            return None
        lock_file = lock_path(study_file)
    entry = read_lock(lock_file)[kind].get(name)
    return entry["revision"] if entry else None
