"""Shared machinery for the synthetic suites: layout, fonts, deterministic PNGs, manifest, verification.

Directory layout (fixed in ``docs/architecture.md``, "Generated suites"; it is PointerBench's own
``data/test/metadata.jsonl`` layout plus scene graphs)::

    DIR/manifest.json
    DIR/data/test/metadata.jsonl            one canonical JSON line per sample, sorted by id
    DIR/data/test/<stem>.png                1024x768 RGB
    DIR/data/test/scene_graphs/<stem>.json  {"schema": "pointfail.scene_graph/1", ...}

Coordinates: every box is ``[x0, y0, x1, y1]`` in absolute pixels of the 1024x768 image, origin
top-left, continuous (pixel column ``i`` covers ``[i, i+1)``), so a glyph whose ink occupies pixel
columns 10..14 has ``x0 = 10, x1 = 15``. A point is inside a box when ``x0 <= x <= x1`` and
``y0 <= y <= y1`` (inclusive, the PointerBench/ScreenSpot rule).

Determinism: a sample's random stream is ``random.Random(f"{suite}:{seed}:{index}:{attempt}")``
(string seeds are hashed with SHA-512 by :mod:`random`, independent of ``PYTHONHASHSEED``); PNGs are
written by Pillow with a fixed zlib level and no ancillary chunks (no time, text or gamma chunks);
JSON is :func:`pointfail.records.canonical_json`. Identical pixels across machines additionally
need the same font files, FreeType and Pillow; they are recorded in the manifest's ``environment``
section and :func:`verify_manifest` / :func:`compare_manifests` name the ones that differ.

Manifest (``DIR/manifest.json``, schema :data:`MANIFEST_SCHEMA`): the generation settings (suite,
generator, generator_version, seed, n, image_size, and generator-specific ones such as the web
suite's pages), ``files`` (relative path -> :func:`content_sha256`: the decoded pixels of a PNG, the
bytes of every other file) and ``environment`` (versions of what renders: Pillow, FreeType, zlib,
Python, font files with their Debian packages, and for the web suite the browser and documentation
packages). Content is compared as content; the environment is reported as drift and is never written
into per-sample files (rows, scene graphs).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import platform
import random
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pointfail.records import canonical_json, sha256_bytes, sha256_file

IMAGE_SIZE: tuple[int, int] = (1024, 768)
"""PointerBench's fixed frame (width, height) in pixels (pointerbench-paper.txt, section 3)."""

SCENE_GRAPH_SCHEMA = "pointfail.scene_graph/1"
PNG_COMPRESS_LEVEL = 6
"""zlib level for every PNG; fixed so bytes do not depend on Pillow's default."""

BOX_EVAL: dict[str, Any] = {"type": "iou", "min_coverage": 0.9, "min_precision": 0.7}
"""PointerBench's box rule for ``answer_type == "bbox"`` rows (pointerbench-paper.txt, section 3:
coverage >= 0.90 and precision >= 0.70), written into each row's ``eval`` with the box."""


class SuiteError(RuntimeError):
    """A suite cannot be generated or verified (missing font, bad directory, no unique target)."""


class FontMissingError(SuiteError):
    """A font file the generators need is not installed. The message names the file and the Debian
    package that ships it."""


# --------------------------------------------------------------------------------------------- fonts

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
    """Raise :class:`FontMissingError` naming every missing font (all of them, not just the first)."""
    missing = []
    for n in sorted(set(names)):
        try:
            font_path(n)
        except FontMissingError as e:
            missing.append(str(e))
    if missing:
        raise FontMissingError("; ".join(missing))


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


# ------------------------------------------------------------------------------------ png and random


def png_bytes(image) -> bytes:
    """Encode a Pillow RGB image as PNG bytes with zlib level :data:`PNG_COMPRESS_LEVEL`, no
    optimization pass and no ancillary chunks (Pillow writes only IHDR/IDAT/IEND unless given
    ``pnginfo``/``dpi``/``icc_profile``; we give none)."""
    if image.mode != "RGB":
        image = image.convert("RGB")
    image.info.clear()
    buf = io.BytesIO()
    image.save(buf, format="PNG", compress_level=PNG_COMPRESS_LEVEL, optimize=False)
    return buf.getvalue()


def sample_rng(suite: str, seed: int, index: int, attempt: int = 0) -> random.Random:
    """The random stream for one sample attempt: ``random.Random("suite:seed:index:attempt")``.
    String seeds go through SHA-512 in :mod:`random` (seed version 2), so the stream is the same on
    every run and platform."""
    return random.Random(f"{suite}:{seed}:{index}:{attempt}")


def category_schedule(weights: dict[str, int], n: int, suite: str, seed: int) -> list[str]:
    """The category of each of ``n`` samples: quotas proportional to ``weights`` by the largest-
    remainder method (ties broken by category name), shuffled with ``random.Random(f"{suite}:{seed}:
    schedule")``. Fixing the category per index (rather than drawing it per attempt) keeps the
    suite's mix at the weights even though some categories need more layout attempts than others.

    Example: weights {"a": 3, "b": 1}, n = 6 -> quotas 4.5 and 1.5 -> floors 4 and 1, one left over,
    equal remainders, so "a" (first by name) gets it: 5 x "a", 1 x "b".
    """
    total = sum(weights.values())
    if total <= 0:
        raise ValueError("weights must have a positive sum")
    names = sorted(weights)
    exact = {c: n * weights[c] / total for c in names}
    quota = {c: int(exact[c]) for c in names}
    left = n - sum(quota.values())
    for c in sorted(names, key=lambda c: (-(exact[c] - quota[c]), c))[:left]:
        quota[c] += 1
    out = [c for c in names for _ in range(quota[c])]
    random.Random(f"{suite}:{seed}:schedule").shuffle(out)
    return out


# -------------------------------------------------------------------------------------- scene graph


@dataclass
class Element:
    """One visible element a point can land on.

    id: unique within the image (``cell:C7``, ``word:12``...). category: the suite's category name.
    box: ``[x0, y0, x1, y1]`` absolute pixels (see module docstring). text: what it shows, if any.
    style: an optional visual qualifier (the text suite's ink colour names), written only when set
    (an additive field of the scene graph format).
    """

    id: str
    category: str
    box: list[int]
    text: str | None = None
    style: str | None = None  # optional visual qualifier an instruction may use ("red", "bold", ...)

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"id": self.id, "category": self.category, "box": [int(v) for v in self.box]}
        if self.text is not None:
            d["text"] = self.text
        if self.style is not None:
            d["style"] = self.style
        return d


@dataclass
class Scene:
    """A rendered image and its scene graph, before it is written."""

    image: Any  # PIL.Image.Image, RGB, IMAGE_SIZE
    elements: list[Element] = field(default_factory=list)

    def by_id(self) -> dict[str, Element]:
        """Elements keyed by id. Raises ``SuiteError`` on a duplicate id (a generator bug)."""
        out: dict[str, Element] = {}
        for e in self.elements:
            if e.id in out:
                raise SuiteError(f"duplicate scene graph element id {e.id!r}")
            out[e.id] = e
        return out


def scene_graph_json(image_name: str, elements: list[Element]) -> dict[str, Any]:
    """The scene graph object of ``docs/architecture.md``; elements sorted by id."""
    return {
        "schema": SCENE_GRAPH_SCHEMA,
        "image": image_name,
        "width": IMAGE_SIZE[0],
        "height": IMAGE_SIZE[1],
        "elements": [e.to_json() for e in sorted(elements, key=lambda e: e.id)],
    }


def _dumps(obj: Any) -> str:
    """Byte-identical to :func:`pointfail.records.canonical_json` (same ``json.dumps`` settings; NaN
    and infinity raise through ``allow_nan=False``) without its recursive pre-check, which costs more
    than the encoding itself on scene graphs with thousands of integer boxes."""
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n"


def box_center(box: list[int]) -> list[int]:
    """Reference point of a box: integer centre ``[(x0 + x1) // 2, (y0 + y1) // 2]`` (PointerBench
    rows carry such a point beside the box, e.g. box [146, 324, 231, 330] -> point [188, 327])."""
    return [(box[0] + box[2]) // 2, (box[1] + box[3]) // 2]


def require_unique(matches: list[str], what: str) -> str:
    """Return the single element id in ``matches``.

    Raises:
        SuiteError: when ``matches`` is empty or has several ids (the instruction ``what`` would not
            name exactly one element); generators catch it and draw another target.
    """
    uniq = sorted(set(matches))
    if len(uniq) != 1:
        raise SuiteError(f"instruction {what!r} matches {len(uniq)} elements: {uniq[:5]}")
    return uniq[0]


def inside_image(box: list[int]) -> bool:
    """True when ``box`` lies within the 1024x768 frame and has positive area."""
    return 0 <= box[0] < box[2] <= IMAGE_SIZE[0] and 0 <= box[1] < box[3] <= IMAGE_SIZE[1]


# ---------------------------------------------------------------------------------------- rows


@dataclass
class SampleSpec:
    """What a generator produced for one index: the scene plus the row fields.

    ``row`` holds the suite-specific fields (instruction, data_type, category, language, ...);
    ``target_id`` names the target element; ``answer_type`` is ``point`` or ``bbox``.
    """

    scene: Scene
    target_id: str
    instruction: str
    answer_type: str
    fields: dict[str, Any]


def build_row(sample_id: str, stem: str, spec: SampleSpec) -> dict[str, Any]:
    """One metadata row in PointerBench's format plus ``target_id`` and ``scene_graph``.

    The target box is the target element's box; ``point`` is its centre; ``eval`` is
    ``{"type": "point_in_bbox", "bbox": ...}`` for point rows and the :data:`BOX_EVAL` rule with the
    box for bbox rows (the exact shapes of the real rows in shared/data/pointerbench).

    Raises:
        SuiteError: target id not in the scene, or its box outside the frame.
    """
    els = spec.scene.by_id()
    if spec.target_id not in els:
        raise SuiteError(f"{sample_id}: target {spec.target_id!r} is not a scene graph element")
    box = [int(v) for v in els[spec.target_id].box]
    if not inside_image(box):
        raise SuiteError(f"{sample_id}: target box {box} is outside the {IMAGE_SIZE} frame")
    if spec.answer_type == "point":
        ev: dict[str, Any] = {"type": "point_in_bbox", "bbox": box}
    elif spec.answer_type == "bbox":
        ev = dict(BOX_EVAL, bbox=box)
    else:
        raise SuiteError(f"{sample_id}: unknown answer_type {spec.answer_type!r}")
    row = {
        "id": sample_id,
        "file_name": f"{stem}.png",
        "instruction": spec.instruction,
        "bbox": box,
        "point": box_center(box),
        "answer_type": spec.answer_type,
        "eval": ev,
        "image_size": list(IMAGE_SIZE),
        "target_id": spec.target_id,
        "scene_graph": f"scene_graphs/{stem}.json",
    }
    for k, v in spec.fields.items():
        if k in row:
            raise SuiteError(f"{sample_id}: generator field {k!r} would overwrite a row field")
        row[k] = v
    return row


# ------------------------------------------------------------------------------------ instructions

QUOTES: tuple[tuple[str, str], ...] = (('"', '"'), ("'", "'"), ("`", "`"), ("«", "»"))
"""Quotation mark pairs an instruction may put around a quoted value (the real PointerBench rows
use all four)."""


def quote(rng: random.Random, s: str) -> str:
    """``s`` between one pair of :data:`QUOTES` drawn with ``rng`` (one ``rng.choice`` call)."""
    a, b = rng.choice(QUOTES)
    return f"{a}{s}{b}"


def choose_category(rng: random.Random, weights: dict[str, tuple[str, int]], category: str | None) -> tuple[str, str]:
    """``(category, data_type)`` from a suite's ``{category: (data_type, weight)}`` table: ``category``
    itself when given, else one drawn with ``rng.choices`` over the categories sorted by name with
    their weights. Raises ``KeyError`` for a category not in ``weights``."""
    if category is None:
        cats = sorted(weights)
        category = rng.choices(cats, weights=[weights[c][1] for c in cats])[0]
    return category, weights[category][0]


# ------------------------------------------------------------------------------------ command line


def add_suite_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``pointfail generate sheets|text`` options: ``--n`` (default 200), ``--seed`` (default 1),
    ``--out`` (required)."""
    parser.add_argument("--n", type=int, default=200, help="number of samples (default 200)")
    parser.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    parser.add_argument("--out", required=True, help="output directory (created; an earlier suite there is replaced)")
    add_absent_share_argument(parser)


def add_absent_share_argument(parser: argparse.ArgumentParser) -> None:
    """``--absent-share F``: the fraction of rows whose referent is not in the image
    (:mod:`pointfail.suites.absent`; default 0)."""
    parser.add_argument("--absent-share", type=float, default=0.0,
                        help="fraction of samples whose referent is absent from the image (default 0)")


def run_suite_command(suite: str, generate: Callable[..., dict[str, Any]], args: argparse.Namespace) -> int:
    """Run ``generate(args.out, n=args.n, seed=args.seed)`` and print a one-line summary. Returns 0,
    or 1 with a message on stderr on a :class:`SuiteError` (e.g. a missing font)."""
    import sys

    try:
        share = float(getattr(args, "absent_share", 0.0) or 0.0)
        m = generate(args.out, n=args.n, seed=args.seed, **({"absent_share": share} if share else {}))
    except SuiteError as e:
        print(f"pointfail generate {suite}: {e}", file=sys.stderr)
        return 1
    print(f"wrote {m['n']} {suite} samples (seed {m['seed']}) to {args.out}")
    return 0


# ------------------------------------------------------------------------------------ write / manifest

MAX_ATTEMPTS = 50


class SuiteWriter:
    """Writes one suite's files into a fresh temporary directory beside ``out_dir`` and moves it into
    place in :meth:`finish`, so an interrupted run never leaves a half-written suite; on an exception
    inside ``with SuiteWriter(...)`` the temporary directory is removed.

    Layout (``docs/architecture.md``): ``data/test/<name>.png``, ``data/test/scene_graphs/<stem>.json``
    (canonical JSON), ``data/test/metadata.jsonl`` (rows as canonical JSON lines sorted by ``id``) and
    ``manifest.json`` (the caller's fields plus ``files``: relative path -> :func:`content_sha256`,
    sorted).

    Raises:
        ``error`` (default :class:`SuiteError`): ``out_dir`` exists and holds something other than a
            suite (an existing suite, i.e. a directory with ``manifest.json``, or an empty directory,
            is replaced).
    """

    def __init__(self, out_dir: str | Path, *, error: type[Exception] = SuiteError):
        out = Path(out_dir)
        if out.exists():
            if not out.is_dir() or (any(out.iterdir()) and not (out / "manifest.json").is_file()):
                raise error(f"{out} exists and is not a generated suite (no manifest.json); refusing to overwrite")
        out.parent.mkdir(parents=True, exist_ok=True)
        self.out = out
        self.tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
        self.test_dir = self.tmp / "data" / "test"
        (self.test_dir / "scene_graphs").mkdir(parents=True)
        self.files: dict[str, str] = {}

    def __enter__(self) -> "SuiteWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def add_image(self, name: str, png: bytes, scene_graph: dict[str, Any]) -> None:
        """Write image ``name`` (e.g. ``"0000.png"``) and its scene graph ``scene_graphs/<stem>.json``."""
        (self.test_dir / name).write_bytes(png)
        self.files[f"data/test/{name}"] = content_sha256(name, png)
        sg = _dumps(scene_graph).encode("utf-8")
        rel = f"scene_graphs/{Path(name).stem}.json"
        (self.test_dir / rel).write_bytes(sg)
        self.files[f"data/test/{rel}"] = sha256_bytes(sg)

    def finish(self, rows: list[dict[str, Any]], manifest_fields: dict[str, Any]) -> dict[str, Any]:
        """Write ``metadata.jsonl`` and ``manifest.json`` (``manifest_fields`` plus ``files``), move the
        suite into place (replacing an earlier one) and return the manifest."""
        meta = "".join(canonical_json(r) for r in sorted(rows, key=lambda r: r["id"])).encode("utf-8")
        (self.test_dir / "metadata.jsonl").write_bytes(meta)
        self.files["data/test/metadata.jsonl"] = sha256_bytes(meta)
        manifest = dict(manifest_fields, files=dict(sorted(self.files.items())))
        (self.tmp / "manifest.json").write_bytes(canonical_json(manifest).encode("utf-8"))
        self.tmp.chmod(0o755)  # mkdtemp makes 0700; suites are read by other users (container workers)
        if self.out.exists():
            shutil.rmtree(self.out)
        self.tmp.rename(self.out)
        return manifest


MANIFEST_SCHEMA = "pointfail.suite_manifest/2"
"""Version 2: ``files`` hold :func:`content_sha256` digests (decoded pixels for PNGs) and the rendering
environment lives in ``environment`` (version 1 hashed PNG bytes and called that section ``versions``)."""

CONTENT_KEYS: tuple[str, ...] = ("schema", "suite", "generator", "generator_version", "seed", "n", "image_size",
                                 "pages", "offsets", "absent_share")
"""Manifest settings that define a suite's content: a difference in any of them is a content difference."""

PIXELS_DOMAIN = b"pointfail.pixels/1"


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


def write_suite_files(out_dir: str | Path, *, rows: list[dict[str, Any]], images: dict[str, bytes],
                      scene_graphs: dict[str, dict[str, Any]], manifest_fields: dict[str, Any],
                      error: type[Exception] = SuiteError) -> dict[str, Any]:
    """Write a whole suite held in memory (``images``: file name -> PNG bytes, ``scene_graphs``: the
    same file names -> scene graph JSON) with :class:`SuiteWriter`; returns the manifest. Raises
    ``error`` as :class:`SuiteWriter` does, ``KeyError`` when an image has no scene graph."""
    with SuiteWriter(out_dir, error=error) as w:
        for name, png in sorted(images.items()):
            w.add_image(name, png, scene_graphs[name])
        return w.finish(rows, manifest_fields)


def generate_suite(
    *,
    suite: str,
    generator: str,
    id_prefix: str,
    out_dir: str | Path,
    n: int,
    seed: int,
    make_sample: Callable[[random.Random, int], SampleSpec],
    font_names: Iterable[str],
    generator_version: int,
    absent_share: float = 0.0,
) -> dict[str, Any]:
    """Generate ``n`` samples into ``out_dir`` and write the manifest; returns the manifest.
    With ``absent_share`` > 0, that share of rows names a referent that is not in the image
    (:func:`pointfail.suites.absent.make_absent_rows`).

    ``make_sample(rng, index)`` builds one sample or raises :class:`SuiteError` when the drawn target
    is not unique; the index is then retried with the next attempt's stream (up to
    :data:`MAX_ATTEMPTS`), so retries are deterministic too. Files are written by
    :class:`SuiteWriter` (a temporary directory moved into place at the end, so an interrupted run
    never leaves a half-written suite); an existing ``out_dir`` must be empty or hold an earlier suite
    (manifest.json), which is replaced.

    Raises:
        FontMissingError: a font is not installed (checked before anything is rendered).
        SuiteError: ``out_dir`` exists and holds something other than a suite; or an index found no
            unique target in :data:`MAX_ATTEMPTS` attempts.
    """
    if n < 0:
        raise SuiteError(f"n must be >= 0, got {n}")
    font_names = sorted(set(font_names))
    check_fonts(font_names)
    with SuiteWriter(out_dir) as w:
        rows = []
        graphs: dict[str, dict[str, Any]] = {}
        for i in range(n):
            spec = None
            errors = []
            for attempt in range(MAX_ATTEMPTS):
                try:
                    spec = make_sample(sample_rng(suite, seed, i, attempt), i)
                    break
                except SuiteError as e:
                    errors.append(str(e))
            if spec is None:
                raise SuiteError(f"sample {i}: no unique target in {MAX_ATTEMPTS} attempts; last: {errors[-1]}")
            stem = f"{i:04d}"
            rows.append(build_row(f"{id_prefix}_{stem}", stem, spec))
            graphs[f"{stem}.png"] = scene_graph_json(f"{stem}.png", spec.scene.elements)
            w.add_image(f"{stem}.png", png_bytes(spec.scene.image), graphs[f"{stem}.png"])
        if absent_share:
            from pointfail.suites.absent import make_absent_rows

            rows = make_absent_rows(rows, graphs, suite=suite, seed=seed, share=absent_share)
        return w.finish(rows, suite_manifest_fields(
            suite=suite, generator=generator, generator_version=generator_version, seed=seed, n=n,
            image_size=IMAGE_SIZE, environment=environment_versions(font_names), absent_share=absent_share,
        ))


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
        import importlib

        gen = manifest.get("generator", "")
        if not gen.startswith("pointfail.suites."):
            raise SuiteError(f"manifest generator {gen!r} is not a pointfail suite generator")
        mod = importlib.import_module(gen)
        with tempfile.TemporaryDirectory() as td:
            gen_kwargs = mod.generator_args(manifest) if hasattr(mod, "generator_args") else {}
            if manifest.get("absent_share"):
                gen_kwargs["absent_share"] = float(manifest["absent_share"])
            again = mod.generate(Path(td) / "suite", n=int(manifest["n"]), seed=int(manifest["seed"]), **gen_kwargs)
        for rel, digest in sorted(files.items()):
            if again["files"].get(rel) != digest and rel not in mismatched:
                mismatched.append(rel)
        for rel in sorted(set(again["files"]) - set(files)):
            extra.append(rel)
    try:
        current = environment_versions(manifest.get("environment", {}).get("fonts", {}).keys())
        env = environment_differences(manifest.get("environment", {}), current)
    except FontMissingError as e:
        env = [str(e)]
    ok = not (mismatched or missing or extra)
    return VerifyResult(ok, sorted(mismatched), missing, sorted(set(extra)), env, regenerate)


def write_json(path: Path, obj: Any) -> None:
    """Write ``obj`` as canonical JSON (used by tests and tools); creates parent directories."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(canonical_json(obj).encode("utf-8"))



# ------------------------------------------------------------------------------------------ glyphs


@dataclass
class Glyph:
    """A character rendered once and reused: ``mask`` (Pillow ``L`` image of its ink, or ``None`` for
    blank characters), ``offset`` (x, y) of the mask's top-left relative to the pen position on the
    baseline, ``ink`` the tight box of non-zero mask pixels relative to the pen/baseline (or ``None``)."""

    mask: Any
    offset: tuple[int, int]
    ink: tuple[int, int, int, int] | None


@dataclass
class DrawnChar:
    """One drawn character: ``pen`` x of its pen position (the caret position before it), ``box``
    tight ink box in image pixels (``None`` for a space)."""

    ch: str
    pen: int
    box: list[int] | None


class TextPainter:
    """Draws strings glyph by glyph and reports each glyph's exact ink box.

    Glyph ``i`` of a string drawn at pen ``x`` sits at integer pen ``x + round(font.getlength(s[:i]))``
    (FreeType advances with kerning, Pillow BASIC layout), and is pasted from a cached mask rendered by
    Pillow at an integer origin, so the reported box (the mask's non-zero pixels, ``Image.getbbox``)
    is exactly where the ink lands. ``y`` is the baseline (Pillow anchor ``ls``).
    """

    def __init__(self) -> None:
        self._glyphs: dict[tuple[str, int, str], Glyph] = {}
        self._lengths: dict[tuple[str, int, str], float] = {}

    def glyph(self, font_name: str, size: int, ch: str) -> Glyph:
        """The cached :class:`Glyph` of ``ch``."""
        key = (font_name, size, ch)
        g = self._glyphs.get(key)
        if g is None:
            from PIL import Image, ImageDraw

            font = load_font(font_name, size)
            l, t, r, b = font.getbbox(ch, anchor="ls")
            if r <= l or b <= t:
                g = Glyph(None, (0, 0), None)
            else:
                m = Image.new("L", (r - l, b - t), 0)
                ImageDraw.Draw(m).text((-l, -t), ch, font=font, fill=255, anchor="ls")
                bb = m.getbbox()
                if bb is None:
                    g = Glyph(None, (0, 0), None)
                else:
                    g = Glyph(m, (l, t), (l + bb[0], t + bb[1], l + bb[2], t + bb[3]))
            self._glyphs[key] = g
        return g

    def _len(self, font_name: str, size: int, s: str) -> float:
        key = (font_name, size, s)
        v = self._lengths.get(key)
        if v is None:
            v = load_font(font_name, size).getlength(s)
            self._lengths[key] = v
        return v

    def prefix_lengths(self, font_name: str, size: int, s: str) -> list[float]:
        """``[getlength(s[:i]) for i in 0..len(s)]`` in linear time: ``L(i) = L(i-1) +
        getlength(s[i-2:i]) - getlength(s[i-2])`` (the pair's advance minus the first glyph's is the
        second glyph's advance plus the pair's kerning). FreeType works in 26.6 fixed point, so the
        sums are exact; ``tests/test_suites_common.py`` checks equality with ``getlength``."""
        out = [0.0]
        for i in range(1, len(s) + 1):
            if i == 1:
                out.append(self._len(font_name, size, s[0]))
            else:
                out.append(out[-1] + self._len(font_name, size, s[i - 2:i]) - self._len(font_name, size, s[i - 2]))
        return out

    def extend_length(self, font_name: str, size: int, width: float, s: str, suffix: str) -> float:
        """``getlength(s + suffix)`` given ``width == getlength(s)``, in time linear in ``suffix``
        (same pair rule as :meth:`prefix_lengths`); for word wrapping."""
        prev = s[-1] if s else None
        for ch in suffix:
            if prev is None:
                width = self._len(font_name, size, ch)
            else:
                width += self._len(font_name, size, prev + ch) - self._len(font_name, size, prev)
            prev = ch
        return width

    def length(self, font_name: str, size: int, s: str) -> float:
        """Advance width of ``s`` in pixels, equal to ``FreeTypeFont.getlength(s)`` (Pillow BASIC
        layout: advances plus kerning)."""
        return self.prefix_lengths(font_name, size, s)[-1] if s else 0.0

    def pens(self, font_name: str, size: int, x: int, s: str) -> list[int]:
        """Integer pen x of every caret position 0..len(s) of ``s`` drawn at ``x``:
        ``x + round(getlength(s[:i]))``."""
        return [x + round(v) for v in self.prefix_lengths(font_name, size, s)]

    def draw(self, image, x: int, baseline: int, s: str, font_name: str, size: int, color,
             char_colors: dict[int, tuple[int, int, int]] | None = None) -> list[DrawnChar]:
        """Draw ``s`` with its pen starting at ``(x, baseline)`` in ``color`` (RGB tuple), character
        ``i`` in ``char_colors[i]`` where given (geometry unchanged); returns one :class:`DrawnChar`
        per character (the end pen is ``pens(...)[-1]``)."""
        pens = self.pens(font_name, size, x, s)
        out = []
        for i, ch in enumerate(s):
            g = self.glyph(font_name, size, ch)
            px = pens[i]
            if g.mask is None:
                out.append(DrawnChar(ch, px, None))
                continue
            ox, oy = px + g.offset[0], baseline + g.offset[1]
            ink = char_colors.get(i, color) if char_colors else color
            image.paste(ink, (ox, oy, ox + g.mask.width, oy + g.mask.height), g.mask)
            il, it, ir, ib = g.ink
            out.append(DrawnChar(ch, px, [px + il, baseline + it, px + ir, baseline + ib]))
        return out


def union_box(boxes: Iterable[list[int] | None]) -> list[int] | None:
    """Smallest box containing every non-``None`` box, or ``None`` when there is none."""
    bs = [b for b in boxes if b is not None]
    if not bs:
        return None
    return [min(b[0] for b in bs), min(b[1] for b in bs), max(b[2] for b in bs), max(b[3] for b in bs)]
