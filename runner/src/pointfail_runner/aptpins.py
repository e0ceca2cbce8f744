"""Debian packages in images: recorded versions, installed from a moving archive, drift reported.

Debian's ``-security`` and ``-updates`` pockets keep only the newest version of a package, so an
exact ``apt-get install pkg=version`` breaks within weeks of a security update. Instead, an image
directory holds ``debian.lock`` (JSON, :func:`read_lock`)::

    {"release": "bookworm",
     "requested": ["chromium", "fonts-dejavu-core", ...],       # what the image asks for
     "installed": {"chromium": "156.0.8078.114-1~deb12u1", ...}} # every package the recorded build added

and the build runs this file inside the image (``python3 aptpins.py install debian.lock``, Debian's
own Python, standard library only, argument lists only):

1. With ``SNAPSHOT=<YYYYMMDDTHHMMSSZ>`` and ``SNAPSHOT_MIRROR=<URL>`` in the environment (build
   arguments), apt's sources become the snapshot archive of that moment (``<URL>/archive/debian/<ts>``
   and ``<URL>/archive/debian-security/<ts>``, the layout of Debian's snapshot service and of local
   mirrors of it; :func:`snapshot_sources`) and every recorded version must be installed exactly.
2. Otherwise the recorded versions the archive still has are requested exactly; when the archive no
   longer has some (or the exact set does not resolve), the requested package names are installed at
   the archive's versions within the same release.
3. The packages the step added (``dpkg`` status before and after) are compared with the recorded
   ones: each difference is a drift entry ``(package, recorded, installed)`` (``None`` for a package
   on one side only), printed as ``[debian] drift: pkg: recorded -> installed`` and written with the
   installed versions to a JSON report (``/usr/share/pointfail/debian.json`` in images) that the
   runner copies into the image's labels and the reproduce summary.

``python3 aptpins.py check LOCK ...`` (``make check-pins``) lists the recorded versions the configured
archive no longer has, with the version it has instead.

The runner imports this module for the lock format (:func:`read_lock`, :func:`drift`,
:func:`parse_madison`); inside images it runs as a script.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Iterable, Optional

RELEASE = "bookworm"
REPORT_PATH = "/usr/share/pointfail/debian.json"
"""Where the install step writes its report inside an image."""
SNAPSHOT_RE = re.compile(r"^\d{8}T\d{6}Z$")
"""Debian snapshot timestamps: ``20250520T000000Z``."""
_APT_ENV = {"DEBIAN_FRONTEND": "noninteractive", "LC_ALL": "C"}


class AptPinError(RuntimeError):
    """A lock that cannot be read, a snapshot setting that is malformed, or an apt step that failed
    (the message holds apt's last output lines)."""


def empty_lock(release: str = RELEASE) -> dict:
    """The lock of an image that installs no Debian packages."""
    return {"release": release, "requested": [], "installed": {}}


def read_lock(path: Optional[Path]) -> dict:
    """Read a ``debian.lock``; a missing path (``None`` or no file) is :func:`empty_lock`.

    Raises:
        AptPinError: not JSON, or ``requested``/``installed`` of the wrong shape.
    """
    if path is None or not Path(path).is_file():
        return empty_lock()
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise AptPinError(f"{path}: not a JSON debian.lock ({e})") from None
    req, inst = data.get("requested"), data.get("installed")
    if not isinstance(req, list) or not all(isinstance(p, str) for p in req):
        raise AptPinError(f"{path}: 'requested' must be a list of package names")
    if not isinstance(inst, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in inst.items()):
        raise AptPinError(f"{path}: 'installed' must map package names to versions")
    data.setdefault("release", RELEASE)
    return data


def lock_text(lock: dict) -> str:
    """Canonical bytes of a lock (sorted keys and packages, two-space indent, final newline)."""
    out = {"release": lock.get("release", RELEASE), "requested": sorted(set(lock["requested"])),
           "installed": dict(sorted(lock["installed"].items()))}
    return json.dumps(out, indent=2, sort_keys=True) + "\n"


def drift(recorded: dict[str, str], installed: dict[str, str]) -> list[tuple[str, Optional[str], Optional[str]]]:
    """``(package, recorded version, installed version)`` for every package whose version differs,
    sorted by package; ``None`` marks a package present on one side only."""
    return [(p, recorded.get(p), installed.get(p)) for p in sorted(set(recorded) | set(installed))
            if recorded.get(p) != installed.get(p)]


def drift_lines(entries: Iterable[Iterable]) -> list[str]:
    """``pkg: recorded -> installed`` per drift entry (``(none)`` for a missing side)."""
    return [f"{p}: {a or '(none)'} -> {b or '(none)'}" for p, a, b in entries]


def parse_madison(text: str) -> dict[str, list[str]]:
    """``apt-cache madison`` output -> ``{package: [versions the archive offers]}`` (only ``Packages``
    lines, not ``Sources``)."""
    out: dict[str, list[str]] = {}
    for line in text.splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) >= 3 and parts[0] and "Packages" in parts[2]:
            out.setdefault(parts[0], [])
            if parts[1] not in out[parts[0]]:
                out[parts[0]].append(parts[1])
    return out


def snapshot_sources(mirror: str, timestamp: str, release: str = RELEASE) -> str:
    """The ``sources.list`` of a snapshot archive: the release and ``-updates`` pockets from
    ``<mirror>/archive/debian/<timestamp>``, ``-security`` from ``.../debian-security/<timestamp>``,
    with ``check-valid-until=no`` (a snapshot's Release files have long expired).

    Raises:
        AptPinError: a timestamp not of the form ``YYYYMMDDTHHMMSSZ`` or an empty mirror.
    """
    if not SNAPSHOT_RE.match(timestamp or ""):
        raise AptPinError(f"SNAPSHOT must look like 20250520T000000Z, not {timestamp!r}")
    if not mirror:
        raise AptPinError("SNAPSHOT is set but SNAPSHOT_MIRROR (the snapshot archive's URL) is not")
    m = mirror.rstrip("/")
    opt = "[check-valid-until=no]"
    return (f"deb {opt} {m}/archive/debian/{timestamp} {release} main\n"
            f"deb {opt} {m}/archive/debian/{timestamp} {release}-updates main\n"
            f"deb {opt} {m}/archive/debian-security/{timestamp} {release}-security main\n")


def dpkg_installed() -> dict[str, str]:
    """``{package: version}`` of every package dpkg reports installed (``dpkg-query -W``)."""
    proc = subprocess.run(["dpkg-query", "-W", "-f=${db:Status-Abbrev}\t${Package}\t${Version}\n"],
                          capture_output=True, text=True, check=False)
    out = {}
    for line in proc.stdout.splitlines():
        status, _, rest = line.partition("\t")
        name, _, version = rest.partition("\t")
        if status.startswith("ii") and name:
            out[name] = version
    return out


def _apt(argv: list[str], what: str, check: bool = True) -> subprocess.CompletedProcess:
    env = dict(os.environ, **_APT_ENV)
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    if check and proc.returncode != 0:
        raise AptPinError(f"{what} failed ({proc.returncode}):\n{(proc.stdout + proc.stderr)[-3000:]}")
    return proc


def use_snapshot(log=print) -> Optional[str]:
    """When ``SNAPSHOT`` is set, point apt at the snapshot archive (:func:`snapshot_sources`) and
    return the timestamp; else ``None``."""
    ts = os.environ.get("SNAPSHOT", "").strip()
    if not ts:
        return None
    text = snapshot_sources(os.environ.get("SNAPSHOT_MIRROR", "").strip(), ts)
    Path("/etc/apt/sources.list").write_text(text)
    d = Path("/etc/apt/sources.list.d")
    if d.is_dir():
        for p in d.iterdir():
            if p.suffix in (".list", ".sources"):
                p.unlink()
    log(f"[debian] snapshot archive {ts}")
    return ts


def available(packages: Iterable[str]) -> dict[str, list[str]]:
    """Versions the configured archive offers for ``packages`` (one ``apt-cache madison`` call)."""
    names = sorted(set(packages))
    if not names:
        return {}
    return parse_madison(_apt(["apt-cache", "madison", *names], "apt-cache madison", check=False).stdout)


def install(lock: dict, *, report: Optional[Path] = None, log=print) -> dict:
    """Install ``lock``'s packages as described in the module docstring and return the report:
    ``requested``, ``recorded`` and ``installed`` (``{package: version}`` of what this step added),
    ``drift`` (list of ``[package, recorded, installed]``), ``exact`` (whether the exact recorded set
    was installed), ``snapshot`` (timestamp or ``None``).

    Raises:
        AptPinError: apt failed, or with a snapshot a recorded version is not in it.
    """
    requested, recorded = sorted(set(lock["requested"])), dict(lock["installed"])
    snapshot = None
    exact = True
    added: dict[str, str] = {}
    if requested:
        snapshot = use_snapshot(log)
        _apt(["apt-get", "update", "-q"], "apt-get update")
        before = dpkg_installed()
        offered = available(recorded)
        gone = {p: v for p, v in recorded.items() if v not in offered.get(p, [])}
        if snapshot and gone:
            raise AptPinError(f"snapshot {snapshot} lacks recorded versions: "
                              + ", ".join(f"{p}={v}" for p, v in sorted(gone.items())))
        for p, v in sorted(gone.items()):
            log(f"[debian] recorded {p}={v} is no longer in the archive (it has: "
                f"{', '.join(offered.get(p, [])) or 'nothing'})")
        base = ["apt-get", "install", "-y", "-q", "--no-install-recommends"]
        pinned = [f"{p}={v}" for p, v in sorted(recorded.items()) if p not in gone]
        pinned += [p for p in requested if p not in recorded or p in gone]
        proc = _apt(base + pinned, "apt-get install (recorded versions)", check=bool(snapshot)) if pinned else None
        if proc is None or proc.returncode != 0:
            exact = False
            if proc is not None:
                log("[debian] the recorded versions do not install together here; installing the requested "
                    "packages at the archive's versions")
            _apt(base + requested, "apt-get install")
        exact = exact and not gone
        after = dpkg_installed()
        added = {p: v for p, v in sorted(after.items()) if before.get(p) != v}
        _apt(["apt-get", "clean"], "apt-get clean")
        lists = Path("/var/lib/apt/lists")
        for p in lists.glob("*"):
            if p.is_file():
                p.unlink()
    entries = drift(recorded, added)
    for line in drift_lines(entries):
        log(f"[debian] drift: {line}")
    if requested:
        log(f"[debian] {len(added)} packages installed, {len(entries)} differ from the recorded versions")
    out = {"requested": requested, "recorded": recorded, "installed": added,
           "drift": [list(e) for e in entries], "exact": exact and not entries, "snapshot": snapshot}
    if report is not None:
        report.parent.mkdir(parents=True, exist_ok=True)
        report.write_text(json.dumps(out, indent=2, sort_keys=True) + "\n")
    return out


def check(locks: dict[str, dict], log=print) -> list[str]:
    """For each ``{label: lock}``, the recorded versions the configured archive (after ``apt-get
    update``; the snapshot when ``SNAPSHOT`` is set) no longer has, as lines ``label: pkg recorded
    (archive has: ...)``. Logs one line per lock and returns the problem lines."""
    use_snapshot(log)
    _apt(["apt-get", "update", "-q"], "apt-get update")
    problems = []
    for label, lock in sorted(locks.items()):
        offered = available(lock["installed"])
        gone = [(p, v) for p, v in sorted(lock["installed"].items()) if v not in offered.get(p, [])]
        for p, v in gone:
            problems.append(f"{label}: {p} {v} (archive has: {', '.join(offered.get(p, [])) or 'nothing'})")
        log(f"[check-pins] {label}: {len(lock['installed'])} recorded, {len(gone)} no longer in the archive")
    return problems


def main(argv: Optional[list[str]] = None) -> int:
    """``aptpins.py install LOCK [--report PATH]`` or ``aptpins.py check LOCK ...``; exit 0, or 1 with
    the reason (``check``: 1 when a recorded version is gone)."""
    ap = argparse.ArgumentParser(prog="aptpins.py", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    i = sub.add_parser("install")
    i.add_argument("lock", type=Path)
    i.add_argument("--report", type=Path, default=Path(REPORT_PATH))
    c = sub.add_parser("check")
    c.add_argument("locks", nargs="+", type=Path, help="lock files, each labelled with its file name's stem")
    args = ap.parse_args(argv)
    out = lambda s: print(s, flush=True)  # noqa: E731
    try:
        if args.cmd == "install":
            install(read_lock(args.lock), report=args.report, log=out)
            return 0
        problems = check({p.stem: read_lock(p) for p in args.locks}, log=out)
        for line in problems:
            out(f"[check-pins] gone: {line}")
        out("[check-pins] every recorded version is in the archive" if not problems
            else f"[check-pins] {len(problems)} recorded version(s) are no longer in the archive")
        return 1 if problems else 0
    except AptPinError as e:
        print(f"aptpins: {e}", file=sys.stderr, flush=True)
        return 1


if __name__ == "__main__":
    sys.exit(main())
