"""The project venv the Makefile runs everything in (``python3 runner/src/pointfail_runner/bootstrap.py``).

Debian's and Ubuntu's own ``python3`` refuse ``pip install`` outside a virtual environment (PEP 668,
``error: externally-managed-environment``), and a machine's own Python may have an old setuptools and
no ``wheel``. So ``make`` never installs into the machine's Python: this script (standard library
only; it runs before anything is installed) makes ``.venv`` with ``python -m venv`` and installs into
it only what is missing:

* ``runtime`` (``make reproduce``, ``verify``, ``data``, ``bundle``, ``report``): the hashed host lock
  ``runner/requirements.lock`` (the library's and runner's dependencies at the versions the committed
  tables were made with, and setuptools/wheel, so pointfail builds without a package index), then
  this checkout's ``pointfail`` and ``pointfail-runner`` (editable, ``--no-build-isolation``).
* ``dev`` (``make test``): ``runtime``, then ``torch==2.14.1``, ``torchvision==0.29.1`` and
  ``requirements-dev.txt``.

Each set leaves a stamp file in the venv holding the sha256 of what it installed from (the Python
version, the lock and requirement files, both ``pyproject.toml``); a set whose stamp matches is not
installed again, so ``make verify`` on a ready venv spends milliseconds here. With ``--bundle PATH``
the runtime wheels come from the archival bundle (``host-wheels/`` inside it) with ``pip --no-index``:
no package index is needed at all.

Exit codes: 0 ready, 1 a step failed (the message says which and what to do).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Optional

MIN_PYTHON = (3, 11)
TORCH = ("torch==2.14.1", "torchvision==0.29.1")
HOST_LOCK = "runner/requirements.lock"
DEV_REQUIREMENTS = "requirements-dev.txt"
BUNDLE_WHEELS = "host-wheels/"
"""Folder of the bundle archive that holds the host lock's wheels (see :mod:`pointfail_runner.bundle`)."""


class BootstrapError(RuntimeError):
    """The venv cannot be made or filled; the message names the step and the fix."""


def _say(msg: str) -> None:
    print(f"[venv] {msg}", flush=True)


def venv_python(venv: Path) -> Path:
    """The venv's interpreter path."""
    return Path(venv) / "bin" / "python"


def _python_version(python: Path) -> Optional[str]:
    """The venv's Python version from its ``pyvenv.cfg`` (no interpreter start: this runs on every
    ``make`` call), or ``None`` when ``python`` or a readable version is missing, or the interpreter
    the venv was made from is gone."""
    python = Path(python)
    cfg = python.parent.parent / "pyvenv.cfg"
    if not python.exists() or not cfg.is_file():
        return None
    fields = {}
    for line in cfg.read_text(errors="replace").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            fields[key.strip()] = value.strip()
    home = fields.get("home")
    if home and not Path(home).is_dir():
        return None
    return fields.get("version_info") or fields.get("version")


def make_venv(venv: Path, python: str = sys.executable) -> Path:
    """Create ``venv`` with ``python -m venv`` unless a working one is there; returns its interpreter.

    Raises:
        BootstrapError: ``python`` is older than 3.11, or ``venv``/``ensurepip`` is missing (Debian
            and Ubuntu ship them in ``python3-venv``).
    """
    venv = Path(venv)
    py = venv_python(venv)
    if _python_version(py):
        return py
    if sys.version_info[:2] < MIN_PYTHON and python == sys.executable:
        raise BootstrapError(f"pointfail needs Python >= 3.11; {python} is {sys.version.split()[0]} "
                             "(run make PYTHON=/path/to/python3.11)")
    if venv.exists():
        shutil.rmtree(venv)  # a broken venv (its interpreter moved or was removed)
    _say(f"creating {venv} with {python}")
    proc = subprocess.run([python, "-m", "venv", str(venv)], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        hint = " (on Debian/Ubuntu: apt-get install python3-venv)" if "ensurepip" in proc.stdout + proc.stderr else ""
        raise BootstrapError(f"{python} -m venv {venv} failed{hint}:\n{(proc.stdout + proc.stderr)[-1500:]}")
    return py


def stamp_digest(repo: Path, what: str, python_version: str, extra: str = "") -> str:
    """sha256 of what set ``what`` is installed from: its name, the venv's Python version, the host
    lock, both ``pyproject.toml`` files (and ``requirements-dev.txt`` for ``dev``), plus ``extra``."""
    h = hashlib.sha256(f"{what}\0{python_version}\0{extra}\0".encode())
    files = [HOST_LOCK, "pyproject.toml", "runner/pyproject.toml"] + ([DEV_REQUIREMENTS] if what == "dev" else [])
    for rel in files:
        p = Path(repo) / rel
        h.update(rel.encode() + b"\0" + (p.read_bytes() if p.is_file() else b"") + b"\0")
    return h.hexdigest()


def _pip(py: Path, args: list[str], what: str) -> None:
    env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1")
    proc = subprocess.run([str(py), "-m", "pip", *args], env=env, check=False)
    if proc.returncode != 0:
        raise BootstrapError(f"pip {what} failed (exit {proc.returncode}); see pip's message above")


def check_bundle_digest(bundle: Path) -> str:
    """Check ``bundle`` against the ``<bundle>.sha256`` written beside it by ``make bundle`` (one line,
    ``<64 hex>  <file name>``, as ``sha256sum`` writes it) before anything reads the archive as an
    archive: the sums inside the bundle are checked later, but they travel with it, so only this
    outer digest can show that the file is the one that was made. Returns the digest.

    The ``.sha256`` file travels with the bundle too: compare the digest printed here with the one
    published with the artifact (``artifact.md``, "Archival bundle"), or run ``sha256sum <bundle>``
    and compare by eye.

    Raises:
        BootstrapError: no ``.sha256`` file, one that is not a single ``<digest>  <name>`` line for
            this file name, or a digest that differs (both shown).
    """
    bundle = Path(bundle)
    side = bundle.with_name(bundle.name + ".sha256")
    try:
        text = side.read_bytes()[:4096].decode("ascii", "replace").strip()
    except FileNotFoundError:
        raise BootstrapError(f"{bundle}: no {side.name} beside it; keep the .sha256 that make bundle wrote with "
                             "the bundle (and compare its digest with the one published in artifact.md)") from None
    except OSError as e:
        raise BootstrapError(f"{side}: cannot read it ({e.strerror or e})") from None
    digest, _, name = text.partition("  ")
    digest = digest.lower()
    if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest) or name.lstrip("*") != bundle.name:
        raise BootstrapError(f"{side}: not one '<sha256>  {bundle.name}' line")
    h = hashlib.sha256()
    try:
        with open(bundle, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    except OSError as e:
        raise BootstrapError(f"{bundle}: cannot read it ({e.strerror or e})") from None
    if h.hexdigest() != digest:
        raise BootstrapError(f"{bundle}: sha256 {h.hexdigest()} differs from {digest} in {side.name}; the bundle "
                             "is not the one that was made (nothing was read from it)")
    return digest


def extract_bundle_wheels(bundle: Path, dest: Path) -> Path:
    """Copy the bundle's ``host-wheels/*.whl`` into ``dest`` (reading the archive only until its
    host-wheel folder ends: it comes first), after :func:`check_bundle_digest`. Only plain files with
    a wheel name are taken.

    Raises:
        BootstrapError: the outer digest does not match, not a bundle archive, or it holds no host wheels.
    """
    digest = check_bundle_digest(bundle)
    _say(f"{bundle}: sha256 {digest} matches its .sha256; compare it with the digest published in artifact.md")
    dest.mkdir(parents=True, exist_ok=True)
    n = 0
    seen = False
    try:
        with tarfile.open(bundle, "r:*") as tar:
            for m in tar:
                inside = m.name.split("/", 1)[-1] if "/" in m.name else m.name
                if not inside.startswith(BUNDLE_WHEELS):
                    if seen:
                        break
                    continue
                seen = True
                name = Path(inside).name
                if not (m.isfile() and name.endswith(".whl") and "/" not in inside[len(BUNDLE_WHEELS):]):
                    continue
                src = tar.extractfile(m)
                if src is None:  # not a regular file after all
                    continue
                with open(dest / name, "wb") as f:
                    shutil.copyfileobj(src, f)
                n += 1
    except (tarfile.TarError, OSError) as e:
        raise BootstrapError(f"{bundle}: not a readable bundle archive ({e})") from None
    if not n:
        raise BootstrapError(f"{bundle}: no {BUNDLE_WHEELS} wheels in it (made by an older make bundle?)")
    return dest


def ensure(repo: Path, venv: Path, what: str, *, python: str = sys.executable, bundle: Optional[Path] = None) -> Path:
    """Make ``venv`` (when needed) and install set ``what`` (``runtime`` or ``dev``) unless its stamp
    matches. Returns the venv's interpreter.

    Raises:
        BootstrapError: see :func:`make_venv` and :func:`_pip`.
    """
    repo = Path(repo).resolve()
    venv = Path(venv) if Path(venv).is_absolute() else repo / venv
    py = make_venv(venv, python)
    version = _python_version(py) or "?"
    sets = ["runtime"] + (["dev"] if what == "dev" else [])
    for s in sets:
        stamp = venv / f".pointfail-{s}.stamp"
        digest = stamp_digest(repo, s, version)
        if stamp.is_file() and stamp.read_text().strip() == digest:
            continue
        _say(f"installing the {s} packages into {venv} (Python {version})")
        if s == "runtime":
            with tempfile.TemporaryDirectory(prefix="pointfail-wheels-") as tmp:
                source = []
                if bundle is not None:
                    source = ["--no-index", "--find-links", str(extract_bundle_wheels(Path(bundle), Path(tmp)))]
                _pip(py, ["install", "--quiet", "--require-hashes", "--no-deps", *source, "-r", str(repo / HOST_LOCK)],
                     f"install -r {HOST_LOCK}")
            _pip(py, ["install", "--quiet", "--no-deps", "--no-build-isolation", "--no-index", "-e", str(repo),
                      "-e", str(repo / "runner")], "install -e . -e runner")
        else:
            _pip(py, ["install", "--quiet", *TORCH], "install " + " ".join(TORCH))
            _pip(py, ["install", "--quiet", "-r", str(repo / DEV_REQUIREMENTS)], f"install -r {DEV_REQUIREMENTS}")
        stamp.write_text(digest + "\n")
    return py


def main(argv: Optional[list[str]] = None) -> int:
    """Command line: ``bootstrap.py [--venv .venv] [--bundle PATH] runtime|dev``."""
    ap = argparse.ArgumentParser(prog="bootstrap.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=["runtime", "dev"])
    ap.add_argument("--venv", default=".venv")
    ap.add_argument("--bundle", default="", help="install the runtime wheels from this bundle (no package index)")
    ap.add_argument("--repo", default=str(Path(__file__).resolve().parents[3]))
    args = ap.parse_args(argv)
    try:
        ensure(Path(args.repo), Path(args.venv), args.what, bundle=Path(args.bundle) if args.bundle else None)
    except BootstrapError as e:
        print(f"[venv] {e}", file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
