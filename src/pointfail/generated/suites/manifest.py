"""A generated suite's manifest: what defines its content, how files are digested, how two manifests
and a suite on disk are compared.

Manifest (``DIR/manifest.json``, schema :data:`MANIFEST_SCHEMA`): the generation settings (suite,
generator, generator_version, seed, n, image_size, and generator-specific ones such as the web
suite's pages), ``files`` (relative path -> :func:`content_sha256`: the decoded pixels of a PNG, the
bytes of every other file) and ``environment`` (versions of what renders: Pillow, FreeType, zlib,
Python, font files with their Debian packages, and for the web suite the browser and documentation
packages; :func:`pointfail.generated.suites.fonts.environment_versions`). Content is compared as content; the
environment is reported as drift and is never written into per-sample files (rows, scene graphs).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pointfail.records import sha256_bytes
from pointfail.generated.suites.errors import FontMissingError, SuiteError
from pointfail.generated.suites.fonts import environment_versions

__all__ = [
    "CONTENT_KEYS",
    "MANIFEST_SCHEMA",
    "PIXELS_DOMAIN",
    "ManifestComparison",
    "VerifyResult",
    "compare_manifests",
    "content_sha256",
    "environment_differences",
    "file_content_sha256",
    "read_manifest",
    "suite_manifest_fields",
    "verify_manifest",
]

MANIFEST_SCHEMA = "pointfail.suite_manifest/2"
"""Version 2: ``files`` hold :func:`content_sha256` digests (decoded pixels for PNGs) and the rendering
environment lives in ``environment`` (version 1 hashed PNG bytes and called that section ``versions``)."""

CONTENT_KEYS: tuple[str, ...] = ("schema", "suite", "generator", "generator_version", "seed", "n", "image_size",
                                 "pages", "offsets", "absent_share")
"""Manifest settings that define a suite's content: a difference in any of them is a content difference."""

PIXELS_DOMAIN = b"pointfail.pixels/1"
"""The domain prefix of a PNG's pixel digest (:func:`content_sha256`)."""


def content_sha256(name: str, data: bytes) -> str:
    """The manifest digest of one suite file: for a ``.png``, sha256 over ``pointfail.pixels/1``,
    the decoded image's width and height and its RGB pixel bytes (row-major, 3 bytes per pixel), so a
    PNG re-encoded by another zlib or Pillow with identical pixels keeps its digest while one changed
    pixel changes it; for every other file, sha256 of its bytes.

    Raises:
        SuiteError: a ``.png`` that Pillow cannot decode.
    """
    if not name.lower().endswith(".png"):
        return sha256_bytes(data)
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as im:
            rgb = im.convert("RGB")
    except (UnidentifiedImageError, OSError, ValueError) as e:
        raise SuiteError(f"{name}: not a decodable PNG ({e})") from None
    h = hashlib.sha256(PIXELS_DOMAIN + b"\0")
    h.update(f"{rgb.width}x{rgb.height}\0".encode("ascii"))
    h.update(rgb.tobytes())
    return h.hexdigest()


def file_content_sha256(path: str | Path) -> str | None:
    """:func:`content_sha256` of the file at ``path``; ``None`` when it is a PNG that cannot be decoded
    (a damaged or replaced image: a content difference, never a crash). Raises ``OSError`` when the
    file is unreadable."""
    p = Path(path)
    try:
        return content_sha256(p.name, p.read_bytes())
    except SuiteError:
        return None


def suite_manifest_fields(*, suite: str, generator: str, generator_version: int, seed: int, n: int,
                          image_size: tuple[int, int], environment: dict[str, Any],
                          absent_share: float = 0.0) -> dict[str, Any]:
    """The manifest keys every generated suite has (``files`` is added by :class:`SuiteWriter`):
    :data:`MANIFEST_SCHEMA`, the generation settings and the rendering ``environment``;
    ``absent_share`` only when it is not 0 (so suites without absent referents keep their bytes)."""
    extra = {"absent_share": absent_share} if absent_share else {}
    return extra | {
        "schema": MANIFEST_SCHEMA,
        "suite": suite,
        "generator": generator,
        "generator_version": generator_version,
        "seed": seed,
        "n": n,
        "image_size": list(image_size),
        "environment": environment,
    }


def _flatten(obj: Any, prefix: str = "") -> dict[str, Any]:
    """Nested dicts as ``{"a.b.c": leaf}`` (lists and scalars are leaves)."""
    if not isinstance(obj, dict):
        return {prefix: obj}
    out: dict[str, Any] = {}
    for k in sorted(obj):
        out.update(_flatten(obj[k], f"{prefix}.{k}" if prefix else str(k)))
    return out


@dataclass
class ManifestComparison:
    """Outcome of :func:`compare_manifests`.

    content: one line per generation setting (:data:`CONTENT_KEYS`) or file that differs, is missing
    or is extra, e.g. ``data/test/0003.png: committed 1a2b3c4d5e6f, regenerated 9f8e7d6c5b4a``.
    environment: ``(key, committed, regenerated)`` for every environment entry that differs, with
    nested keys dotted (``fonts.dejavu-sans.package_version``).
    """

    content: list[str]
    environment: list[tuple[str, Any, Any]]

    @property
    def content_matches(self) -> bool:
        """True when every setting and file digest is identical (environment drift allowed)."""
        return not self.content

    def drift_lines(self) -> list[str]:
        """The environment differences as ``key: committed -> regenerated`` lines."""
        return [f"{k}: {a!r} -> {b!r}" for k, a, b in self.environment]


def compare_manifests(committed: dict[str, Any], regenerated: dict[str, Any]) -> ManifestComparison:
    """Compare two suite manifests: content (generation settings and every file's
    :func:`content_sha256`) and, separately, the rendering environment. Digests are shown to 12 hex
    digits."""
    content = []
    for k in CONTENT_KEYS:
        if committed.get(k) != regenerated.get(k):
            content.append(f"setting {k}: committed {committed.get(k)!r}, regenerated {regenerated.get(k)!r}")
    fa, fb = committed.get("files", {}), regenerated.get("files", {})
    for rel in sorted(set(fa) | set(fb)):
        if rel not in fb:
            content.append(f"{rel}: in the committed manifest, not regenerated")
        elif rel not in fa:
            content.append(f"{rel}: regenerated, not in the committed manifest")
        elif fa[rel] != fb[rel]:
            content.append(f"{rel}: committed {str(fa[rel])[:12]}, regenerated {str(fb[rel])[:12]}")
    ea, eb = _flatten(committed.get("environment", {})), _flatten(regenerated.get("environment", {}))
    env = [(k, ea.get(k), eb.get(k)) for k in sorted(set(ea) | set(eb)) if ea.get(k) != eb.get(k)]
    return ManifestComparison(content, env)


def read_manifest(suite_dir: str | Path) -> dict[str, Any]:
    """Read ``DIR/manifest.json``. Raises :class:`SuiteError` when missing or not valid JSON."""
    p = Path(suite_dir) / "manifest.json"
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SuiteError(f"{p} not found: not a generated suite") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise SuiteError(f"{p} is not valid JSON: {e}") from None


@dataclass
class VerifyResult:
    """Outcome of :func:`verify_manifest`.

    ok: every listed file present with its recorded sha256 (and, when regenerated, the regenerated
    suite identical too). mismatched / missing / extra: relative paths. environment: human-readable
    lines naming each font file, Pillow, FreeType or zlib version that differs from the manifest.
    """

    ok: bool
    mismatched: list[str]
    missing: list[str]
    extra: list[str]
    environment: list[str]
    regenerated: bool

    def explain(self) -> str:
        """A readable report: OK, or which files differ and the likely reason."""
        if self.ok:
            what = "regenerated and " if self.regenerated else ""
            return f"OK: every file {what}matches manifest.json"
        lines = []
        for label, items in (("differs", self.mismatched), ("missing", self.missing), ("not in manifest", self.extra)):
            for p in items[:20]:
                lines.append(f"{label}: {p}")
            if len(items) > 20:
                lines.append(f"{label}: ... and {len(items) - 20} more")
        if self.environment:
            lines.append("This machine renders with a different environment than the one that made the manifest:")
            lines.extend(f"  {e}" for e in self.environment)
            lines.append("Different fonts, FreeType or Pillow can give other pixels; install the recorded versions")
            lines.append("(or use the project's pinned suites image) to reproduce the suite's content exactly.")
        elif self.mismatched:
            lines.append("The rendering environment matches the manifest; the files were changed after generation.")
        return "\n".join(lines)


def environment_differences(recorded: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """Lines naming each version or font hash in ``recorded`` (a manifest's ``environment``) that differs
    from ``current`` (:func:`environment_versions` here). Python's version is not compared (it does
    not change rendered bytes)."""
    out = []
    for k in ("pillow", "freetype2", "zlib"):
        if recorded.get(k) != current.get(k):
            out.append(f"{k}: manifest {recorded.get(k)!r}, here {current.get(k)!r}")
    rf, cf = recorded.get("fonts", {}), current.get("fonts", {})
    for name in sorted(set(rf) | set(cf)):
        a, b = rf.get(name, {}), cf.get(name, {})
        if a.get("sha256") != b.get("sha256"):
            out.append(
                f"font {name} ({a.get('file') or b.get('file')}): manifest sha256 {str(a.get('sha256'))[:12]} "
                f"(package {a.get('package')} {a.get('package_version')}), here {str(b.get('sha256'))[:12]} "
                f"(package {b.get('package')} {b.get('package_version')})"
            )
    return out


def _regenerated_files(manifest: dict) -> dict[str, str]:
    """Generate a suite again from its manifest into a temporary directory and return its file digests.

    Input: the parsed ``manifest.json``. The generator is the manifest's ``generator`` (recorded as
    ``pointfail.suites.<kind>``, where the generators were when the records were made), called with the
    manifest's ``n`` and ``seed``, the keyword arguments of the module's optional ``generator_args(manifest)``
    and ``absent_share`` when the manifest sets one.

    Returns the regenerated manifest's ``files`` map (path relative to the suite -> sha256 hex); the temporary
    directory is removed. Raises SuiteError for a generator outside pointfail's suites and FontMissingError
    when a font it needs is not installed."""
    import importlib

    gen = manifest.get("generator", "")
    if not gen.startswith("pointfail.suites."):
        raise SuiteError(f"manifest generator {gen!r} is not a pointfail suite generator")
    mod = importlib.import_module(f"{__package__}.{gen.removeprefix('pointfail.suites.')}")
    with tempfile.TemporaryDirectory() as td:
        gen_kwargs = mod.generator_args(manifest) if hasattr(mod, "generator_args") else {}
        if manifest.get("absent_share"):
            gen_kwargs["absent_share"] = float(manifest["absent_share"])
        again = mod.generate(Path(td) / "suite", n=int(manifest["n"]), seed=int(manifest["seed"]), **gen_kwargs)
    return again["files"]

def verify_manifest(suite_dir: str | Path, *, regenerate: bool = False) -> VerifyResult:
    """Check a generated suite against its ``manifest.json``.

    Without ``regenerate``: every file listed must exist with its recorded :func:`content_sha256`, and no unlisted
    file may be under ``data/``. With ``regenerate``: the suite is generated again from the manifest's
    generator, seed and n (plus the keyword arguments the generator module's optional
    ``generator_args(manifest)`` reads back from the manifest, e.g. the web suite's page set and
    offsets) into a temporary directory and every file's sha256 compared with the manifest (the
    directory's own files are checked as well). In both modes, when anything differs
    the result names the environment differences (font file hashes, Pillow, FreeType, zlib) that
    explain it.

    Raises:
        SuiteError: no readable manifest, or an unknown generator.
        FontMissingError: regenerating needs a font that is not installed.
    """
    root = Path(suite_dir)
    manifest = read_manifest(root)
    files: dict[str, str] = manifest.get("files", {})
    mismatched, missing = [], []
    for rel, digest in sorted(files.items()):
        p = root / rel
        if not p.is_file():
            missing.append(rel)
        elif file_content_sha256(p) != digest:
            mismatched.append(rel)
    present = {str(p.relative_to(root)).replace(os.sep, "/") for p in (root / "data").rglob("*") if p.is_file()}
    extra = sorted(present - set(files))
    if regenerate:
        again = _regenerated_files(manifest)
        for rel, digest in sorted(files.items()):
            if again.get(rel) != digest and rel not in mismatched:
                mismatched.append(rel)
        for rel in sorted(set(again) - set(files)):
            extra.append(rel)
    try:
        current = environment_versions(manifest.get("environment", {}).get("fonts", {}).keys())
        env = environment_differences(manifest.get("environment", {}), current)
    except FontMissingError as e:
        env = [str(e)]
    ok = not (mismatched or missing or extra)
    return VerifyResult(ok, sorted(mismatched), missing, sorted(set(extra)), env, regenerate)
