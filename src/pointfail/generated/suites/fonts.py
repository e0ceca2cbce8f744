"""Fonts the Pillow-drawn suites use, and the rendering environment recorded in a suite's manifest.

Identical pixels across machines need the same font files, FreeType and Pillow: :func:`load_font`
opens a declared font with Pillow's BASIC layout engine (FreeType only), and
:func:`environment_versions` records what renders (Pillow, FreeType, zlib, Python, each font file's
sha256 and Debian package) for the manifest's ``environment`` section.
"""

from __future__ import annotations

import os
import platform
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pointfail.records import sha256_file
from pointfail.generated.suites.errors import FontMissingError

__all__ = [
    "FONTS",
    "FONT_DIRS",
    "check_fonts",
    "environment_versions",
    "font_path",
    "load_font",
    "package_version",
]

FONT_DIRS: tuple[str, ...] = ("/usr/share/fonts/truetype/dejavu", "/usr/share/fonts/truetype/liberation")
"""Where Debian installs the declared font packages; ``POINTFAIL_FONT_DIR`` (os.pathsep-separated)
is searched first."""

FONTS: dict[str, tuple[str, str]] = {
    # name: (Debian package, file name)
    "dejavu-sans": ("fonts-dejavu-core", "DejaVuSans.ttf"),
    "dejavu-sans-bold": ("fonts-dejavu-core", "DejaVuSans-Bold.ttf"),
    "dejavu-serif": ("fonts-dejavu-core", "DejaVuSerif.ttf"),
    "dejavu-sans-mono": ("fonts-dejavu-core", "DejaVuSansMono.ttf"),
    "liberation-sans": ("fonts-liberation", "LiberationSans-Regular.ttf"),
    "liberation-sans-bold": ("fonts-liberation", "LiberationSans-Bold.ttf"),
    "liberation-serif": ("fonts-liberation", "LiberationSerif-Regular.ttf"),
    "liberation-mono": ("fonts-liberation", "LiberationMono-Regular.ttf"),
}
"""The fonts the suites use, all from Debian packages the project declares (fonts-dejavu-core,
fonts-liberation)."""


def font_path(name: str) -> Path:
    """Absolute path of font ``name`` (a key of :data:`FONTS`).

    Raises:
        KeyError: unknown font name.
        FontMissingError: the file is in none of the font directories; the message names the Debian
            package to install.
    """
    package, filename = FONTS[name]
    dirs = [d for d in os.environ.get("POINTFAIL_FONT_DIR", "").split(os.pathsep) if d] + list(FONT_DIRS)
    for d in dirs:
        p = Path(d) / filename
        if p.is_file():
            return p
    raise FontMissingError(
        f"font {filename!r} ({name}) not found in {', '.join(dirs)}; it comes from the Debian package "
        f"{package!r} (apt-get install {package}), or set POINTFAIL_FONT_DIR to a directory holding it"
    )


_FONT_CACHE: dict[tuple[str, int], Any] = {}


def load_font(name: str, size: int):
    """A Pillow ``FreeTypeFont`` for ``name`` at ``size`` pixels, with Pillow's BASIC layout engine
    (FreeType only, with kerning; no libraqm/HarfBuzz, so glyph positions do not depend on those
    libraries' versions). Cached. Raises :class:`FontMissingError` like :func:`font_path`."""
    key = (name, size)
    f = _FONT_CACHE.get(key)
    if f is None:
        from PIL import ImageFont

        f = ImageFont.truetype(str(font_path(name)), size, layout_engine=ImageFont.Layout.BASIC)
        _FONT_CACHE[key] = f
    return f


def check_fonts(names: Iterable[str]) -> None:
    """Raise :class:`FontMissingError` naming every missing font (all of them, not just the first),
    grouped by the Debian package that ships them, with the one ``apt-get install`` line for all:
    ``fonts missing: LiberationSans-Regular.ttf, LiberationSans-Bold.ttf (Debian package
    fonts-liberation); looked in ...; install: apt-get install fonts-liberation, or set
    POINTFAIL_FONT_DIR to a directory holding them``."""
    by_package: dict[str, list[str]] = {}
    for n in sorted(set(names)):
        try:
            font_path(n)
        except FontMissingError:
            package, filename = FONTS[n]
            by_package.setdefault(package, []).append(filename)
    if by_package:
        dirs = [d for d in os.environ.get("POINTFAIL_FONT_DIR", "").split(os.pathsep) if d] + list(FONT_DIRS)
        what = "; ".join(f"{', '.join(sorted(files))} (Debian package {pkg})" for pkg, files in sorted(by_package.items()))
        raise FontMissingError(
            f"fonts missing: {what}; looked in {', '.join(dirs)}; install: apt-get install "
            f"{' '.join(sorted(by_package))}, or set POINTFAIL_FONT_DIR to a directory holding them"
        )


def package_version(package: str) -> str | None:
    """Installed Debian package version via ``dpkg-query`` (argument list, no shell, 30 s timeout);
    ``None`` when dpkg is not available, times out or the package is not installed. Used for font
    packages here and documentation packages by the web suite."""
    try:
        out = subprocess.run(
            ["dpkg-query", "-W", "-f=${Version}", package], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    return out.stdout.strip() or None


def environment_versions(font_names: Iterable[str]) -> dict[str, Any]:
    """The manifest's ``environment`` section for suites drawn with Pillow: Pillow, FreeType and zlib
    versions, the Python version, and per font its file name, sha256 and Debian package with version."""
    import PIL
    from PIL import features

    fonts = {}
    for n in sorted(set(font_names)):
        p = font_path(n)
        package = FONTS[n][0]
        fonts[n] = {
            "file": p.name,
            "sha256": sha256_file(p),
            "package": package,
            "package_version": package_version(package),
        }
    return {
        "pillow": PIL.__version__,
        "freetype2": features.version("freetype2"),
        "zlib": features.version("zlib"),
        "python": platform.python_version(),
        "fonts": fonts,
    }


