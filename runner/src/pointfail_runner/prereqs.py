"""Prerequisites of ``make reproduce`` and the tests: Debian packages, checked and (as root on Debian
or Ubuntu) installed; elsewhere the exact command to run is printed instead.

No shell: ``dpkg-query`` and ``apt-get`` are run with argument lists.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

SLURM_PACKAGES: tuple[str, ...] = ("slurmctld", "slurmd", "slurm-client", "munge")
"""A single-node Slurm cluster for the Slurm executor's test (it starts its own daemons on loopback,
with a private munge key, ports and state; the packages' own services are not used)."""

PACKAGES: tuple[str, ...] = (
    "docker.io", "debootstrap", "make", *SLURM_PACKAGES,
    "tesseract-ocr", "tesseract-ocr-eng", "tesseract-ocr-deu", "tesseract-ocr-fra",
    "tesseract-ocr-spa", "tesseract-ocr-ita", "tesseract-ocr-nld",
    "fonts-dejavu-core", "fonts-liberation",
    "chromium", "libatomic1", "python3.11-doc", "sqlite3-doc",
    "nix-bin",
)
"""What the tests and the default study need on the host: the Docker Engine and debootstrap (images),
Tesseract with the suites' languages (OCR baseline tests), the fonts the synthetic suites draw with,
Chromium and the two documentation packages (web suite tests), libatomic1 (the Node.js driver Playwright
ships links ``libatomic.so.1``, which Debian's chromium does not pull in: without it every browser test
fails with "Connection closed while reading from the driver"), nix-instantiate (flake.nix check),
Slurm and munge (:data:`SLURM_PACKAGES`)."""


REPRODUCE_PACKAGES: tuple[str, ...] = ("debootstrap",)
"""What ``make reproduce`` needs on the host besides a Docker Engine (which
:func:`pointfail_runner.engine.ensure_engine` installs and starts): debootstrap, to build the base
image, and only when the engine does not hold it already. Tesseract, Chromium, fonts and documentation
pages are inside the images."""


class PrereqError(RuntimeError):
    """Packages are missing and cannot be installed here; the message holds the command to run."""


def missing_packages(packages: tuple[str, ...] = PACKAGES) -> list[str]:
    """The packages of ``packages`` that ``dpkg-query`` does not report installed (all of them when
    dpkg is not there)."""
    if shutil.which("dpkg-query") is None:
        return list(packages)
    out = []
    for p in packages:
        r = subprocess.run(["dpkg-query", "-W", "-f=${Status}", p], capture_output=True, text=True, check=False)
        if r.returncode != 0 or "install ok installed" not in r.stdout:
            out.append(p)
    return out


def _debian_like() -> bool:
    try:
        text = Path("/etc/os-release").read_text()
    except OSError:
        return False
    return any(w in text for w in ("ID=debian", "ID=ubuntu", "ID_LIKE=debian", 'ID_LIKE="debian'))


def ensure_packages(packages: tuple[str, ...] = PACKAGES, install: bool = True, log=print) -> list[str]:
    """Install the missing packages with apt-get when running as root on Debian/Ubuntu.

    Returns:
        The packages that were installed (empty when all were present).

    Raises:
        PrereqError: packages are missing and this is not root on Debian/Ubuntu (or ``install`` is
            false); the message gives the exact ``apt-get`` command to run.
    """
    missing = missing_packages(packages)
    if not missing:
        log("[prereqs] system packages: all present")
        return []
    cmd = "apt-get update && apt-get install -y --no-install-recommends " + " ".join(missing)
    if not install or os.geteuid() != 0 or not _debian_like() or shutil.which("apt-get") is None:
        raise PrereqError(f"missing system packages: {' '.join(missing)}\nrun as root: {cmd}")
    log(f"[prereqs] installing: {' '.join(missing)}")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "update", "-q"], check=True, env=env)
    subprocess.run(["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing], check=True, env=env)
    return missing
