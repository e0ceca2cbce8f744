"""The ``web`` suite: real HTML documentation rendered by headless Chromium, targets read from the DOM.

Pages are HTML documentation shipped in Debian packages (``python3.11-doc``, ``sqlite3-doc`` by
default), each named by package and version in the suite's metadata with the package's license. A
user's own saved pages work the same way (``--pages DIR`` or ``--pages LIST.txt``).

Rendering: Chromium (Debian's ``chromium``, driven by Playwright with the system executable) at a
1024x768 viewport, device scale 1, fixed user agent, locale ``en-US``, time zone UTC, reduced motion,
animations, transitions, (fading overlay) scrollbars and blurred shadows/filters (whose raster
was seen to differ between runs) disabled by an injected style sheet, one raster thread, every request other than ``file://``
aborted (no network), and fonts forced to DejaVu Sans / DejaVu Sans Mono (Debian's
``fonts-dejavu-core``). Each page is shown at several scroll offsets chosen from the seed.

Targets and boxes come from the DOM (``getBoundingClientRect``, clipped to the viewport; see
``web_dom.js``): links, buttons, inputs, headings, table cells, code identifiers, paragraphs. The
scene graph holds every visible element with its box (absolute pixels of the 1024x768 screenshot,
continuous coordinates, pixel column ``i`` covering ``[i, i+1)``, tested inclusively as PointerBench
does), category (``link``, ``button``, ``input``, ``heading``, ``cell``, ``text``) and
instance id. Instructions are written from what a person sees (visible text, role, and where the
text is not unique a region qualifier, then a reading-order ordinal), and each one is verified to
match exactly one element with :func:`match_elements` before it is kept. Point tasks for every
category; box tasks (PointerBench ``iou`` rule, coverage >= 0.9, precision >= 0.7) for headings and
paragraphs.

Determinism: the same pages, seed and browser version give byte-identical PNGs (re-encoded by
Pillow, no metadata chunks) and metadata. Rows and scene graphs hold content only (the page, its
package and license, the target, the instruction); the browser, the documentation packages' versions
and the fonts are recorded in the manifest's ``environment`` section, so a newer browser that renders
the same pixels is reported as drift, and one that renders other pixels names the files it changed.
"""

from __future__ import annotations

import argparse
import io
import random
import re
import subprocess
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from pointfail.generated.suites.cli import add_absent_share_argument
from pointfail.generated.suites.fonts import environment_versions, package_version
from pointfail.generated.suites.manifest import suite_manifest_fields
from pointfail.generated.suites.rows import reference_point, row_eval
from pointfail.generated.suites.scene import IMAGE_SIZE, SCENE_GRAPH_SCHEMA
from pointfail.generated.suites.writer import png_bytes, write_suite_files

VIEWPORT = IMAGE_SIZE
"""The browser viewport: PointerBench's 1024x768 frame."""
USER_AGENT = "Mozilla/5.0 (X11; Linux x86_64) pointfail-web-suite/1 Chromium"
CHROMIUM = "/usr/lib/chromium/chromium"
"""Debian's Chromium binary itself (``/usr/bin/chromium`` is a shell wrapper around it)."""
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run", "--disable-quic", "--disable-extensions",
    "--font-render-hinting=none", "--disable-lcd-text", "--force-color-profile=srgb",
    "--hide-scrollbars", "--num-raster-threads=1", "--disable-partial-raster", "--disable-dev-shm-usage",
]
FREEZE_CSS = (
    "*,*::before,*::after{animation:none!important;transition:none!important;"
    "caret-color:transparent!important;scroll-behavior:auto!important}"
    "*{font-family:'DejaVu Sans',sans-serif!important;scrollbar-width:none!important}"
    "::-webkit-scrollbar{display:none!important}"
    "*,*::before,*::after{box-shadow:none!important;text-shadow:none!important;filter:none!important;"
    "backdrop-filter:none!important}"
    "code,pre,tt,kbd,samp,span.pre,code *,pre *{font-family:'DejaVu Sans Mono',monospace!important}"
)
MIN_TARGET_PX = 4
BOX_SHARE = 0.25
"""Share of samples drawn as box tasks (headings and paragraphs); the rest are point tasks."""
MAX_POINT_TEXT = 60
CODE_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*(\(\))?$")
"""A code span is a point target only when it reads as an identifier (``os.path.join``, ``abs()``),
not a fragment such as ``int.`` or ``=``."""
ORDINALS = ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth"]


@dataclass(frozen=True)
class PageSet:
    """HTML pages from one Debian package: ``root`` directory, relative ``pages``, SPDX-style
    ``license`` of the documentation."""

    package: str
    root: str
    pages: tuple[str, ...]
    license: str


PAGE_SETS: dict[str, tuple[PageSet, ...]] = {
    "debian-docs": (
        PageSet(
            "python3.11-doc", "/usr/share/doc/python3.11/html",
            (
                "library/functions.html", "library/stdtypes.html", "library/os.path.html",
                "library/json.html", "library/re.html", "library/pathlib.html",
                "library/collections.html", "library/itertools.html", "library/string.html",
                "library/datetime.html", "tutorial/introduction.html", "tutorial/controlflow.html",
                "reference/datamodel.html", "glossary.html",
            ),
            "PSF-2.0",
        ),
        PageSet(
            "sqlite3-doc", "/usr/share/doc/sqlite3",
            (
                "lang_select.html", "lang_createtable.html", "datatype3.html", "lang_corefunc.html",
                "pragma.html", "cli.html", "lang_expr.html", "json1.html", "quickstart.html",
                "lang_aggfunc.html",
            ),
            "public-domain",
        ),
    ),
}
"""Named page sets for ``--pages``. ``debian-docs``: 24 pages from two documentation packages."""


@dataclass(frozen=True)
class Page:
    """One HTML file to render, with the package it came from (``None`` for a user's own pages)."""

    path: Path
    name: str
    package: Optional[str]
    package_version: Optional[str]
    license: Optional[str]


class WebSuiteError(RuntimeError):
    """A page set that cannot be rendered: missing browser, missing documentation package, no pages."""


def fontconfig_families() -> list[str]:
    """The font families fontconfig offers (``fc-list : family``, sorted). The style sheet forces
    DejaVu, but Chromium falls back to other installed fonts for glyphs DejaVu lacks, so this list
    is recorded in the manifest to explain pixel differences between machines. Empty when
    ``fc-list`` is not there."""
    try:
        out = subprocess.run(["fc-list", ":", "family"], capture_output=True, text=True, check=False, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return sorted({line.strip() for line in out.stdout.splitlines() if line.strip()})


def _named_set_pages(spec: str) -> list[Page]:
    """The pages of the named page set ``spec`` (a key of ``PAGE_SETS``), in the set's order.

    Each page carries its installed Debian package's name, version (:func:`package_version`) and license; its
    name is ``<package>:<path under the package root>``.

    Raises:
        WebSuiteError: a page of one of the set's packages is missing (naming the package and the
            ``apt-get install`` command)."""
    pages: list[Page] = []
    for ps in PAGE_SETS[spec]:
        version = package_version(ps.package)
        missing = [p for p in ps.pages if not (Path(ps.root) / p).is_file()]
        if missing:
            raise WebSuiteError(
                f"page set {spec!r}: {len(missing)} page(s) of {ps.package} missing under {ps.root} "
                f"(first: {missing[0]}); install it: apt-get install -y {ps.package}"
            )
        for p in ps.pages:
            pages.append(Page(Path(ps.root) / p, f"{ps.package}:{p}", ps.package, version, ps.license))
    return pages

def resolve_pages(spec: str) -> list[Page]:
    """Pages for ``--pages SPEC``: a named set (``debian-docs``), a directory (every ``*.html`` below
    it, sorted), or a text file listing one HTML path per line.

    Raises:
        WebSuiteError: a named set whose package or page is missing (naming the package and the
            ``apt-get install`` command), or a spec that yields no pages.
    """
    pages: list[Page] = []
    if spec in PAGE_SETS:
        return _named_set_pages(spec)
    path = Path(spec)
    if path.is_dir():
        files = sorted(path.rglob("*.html"))
        pages = [Page(f, str(f.relative_to(path)), None, None, None) for f in files]
    elif path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                f = Path(line)
                if not f.is_file():
                    raise WebSuiteError(f"{spec}: listed page not found: {line}")
                pages.append(Page(f, line, None, None, None))
    else:
        raise WebSuiteError(f"--pages {spec!r}: not a named page set ({', '.join(PAGE_SETS)}), directory or list file")
    if not pages:
        raise WebSuiteError(f"--pages {spec!r}: no HTML pages found")
    return pages


def normalize_text(s: str) -> str:
    """NFC, whitespace collapsed, stripped: how visible text is compared when matching."""
    return re.sub(r"\s+", " ", unicodedata.normalize("NFC", s)).strip()


def reading_order_key(el: dict[str, Any]) -> tuple:
    """Sort key for reading order: top edge, then left edge (pixels)."""
    return (el["box"][1], el["box"][0], el["box"][3], el["box"][2])


def match_elements(spec: dict[str, Any], elements: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The scene-graph elements an instruction spec refers to.

    ``spec``: ``category``, ``role``, ``text`` (exact visible text, or a prefix when ``match`` is
    ``"prefix"``), optional ``region`` and 1-based reading-order ``ordinal``. An instruction is kept
    only when this returns exactly one element, its target.
    """
    text = normalize_text(spec["text"])
    cands = [
        e for e in elements
        if e["category"] == spec["category"] and e.get("role") == spec["role"]
        and (normalize_text(e.get("text", "")).startswith(text) if spec.get("match") == "prefix"
             else normalize_text(e.get("text", "")) == text)
        and (spec.get("region") is None or e.get("region") == spec["region"])
    ]
    cands.sort(key=reading_order_key)
    if spec.get("ordinal"):
        k = spec["ordinal"] - 1
        return [cands[k]] if 0 <= k < len(cands) else []
    return cands


def _is_search_box(el: dict[str, Any]) -> bool:
    hay = " ".join(str(el.get(k) or "") for k in ("input_type", "name", "text")).lower()
    return "search" in hay or el.get("name") == "q"


def _phrase(spec: dict[str, Any], el: dict[str, Any]) -> str:
    """Instruction text for a spec, from what a person sees."""
    q = spec.get("ordinal")
    region = spec.get("region")
    where = f" in the {region}" if region else ""
    lead = f"the {ORDINALS[q - 1]} " if q else "the "
    t = spec["text"]
    role, task = spec["role"], spec["task"]
    if task == "box":
        if role == "heading":
            return f"Draw a bounding box around {lead}heading '{t}'{where}."
        return f"Draw a bounding box around {lead}paragraph that begins with '{t}'{where}."
    if role == "link":
        return f"Click {lead}'{t}' link{where}."
    if role == "button":
        return f"Press {lead}'{t}' button{where}."
    if role == "input":
        return f"Click {lead}search box{where}." if spec.get("search") else f"Click {lead}'{t}' input field{where}."
    if role == "heading":
        return f"Point to {lead}heading '{t}'{where}."
    if role == "cell":
        return f"Point to {lead}table cell containing '{t}'{where}."
    return f"Point to {lead}code '{t}'{where}."


def _eligible(el: dict[str, Any], task: str) -> bool:
    x0, y0, x1, y1 = el["box"]
    if el["box"] != el["full_box"] or not el.get("reachable") or el.get("rects", 1) != 1:
        return False
    if x1 - x0 < MIN_TARGET_PX or y1 - y0 < MIN_TARGET_PX:
        return False
    text = el.get("text") or ""
    if task == "box":
        return el["role"] in ("heading", "paragraph") and len(text) >= 3
    if el["role"] in ("paragraph", "code_block"):
        return False  # scene-graph context only: not point targets
    if el["role"] == "input":
        return bool(text) or _is_search_box(el)
    if el["role"] == "code" and not CODE_IDENTIFIER.match(text):
        return False
    return 0 < len(text) <= MAX_POINT_TEXT and "'" not in text and any(ch.isalnum() for ch in text)


def make_instruction(el: dict[str, Any], elements: list[dict[str, Any]], task: str) -> Optional[tuple[str, dict]]:
    """Write an instruction that picks out ``el`` among ``elements``: plain text first, then with its
    region, then with a reading-order ordinal within the region. Returns ``(instruction, spec)`` or
    ``None`` when no qualifier makes it unique (or the ordinal would exceed "tenth")."""
    text = normalize_text(el.get("text") or "")
    spec: dict[str, Any] = {"category": el["category"], "role": el["role"], "task": task}
    if task == "box" and el["role"] == "paragraph":
        words = text.split(" ")
        spec.update(text=" ".join(words[:6]).rstrip(".,;:"), match="prefix")
        if "'" in spec["text"]:
            return None
    elif el["role"] == "input" and not text:
        spec.update(text="", search=True)
    else:
        spec.update(text=text)
    if el["role"] == "input" and _is_search_box(el):
        spec["search"] = True
    for variant in ({}, {"region": el["region"]}):
        s = dict(spec, **variant)
        m = match_elements(s, elements)
        if len(m) == 1 and m[0]["id"] == el["id"]:
            return _phrase(s, el), s
    s = dict(spec, region=el["region"])
    m = match_elements(s, elements)
    ids = [e["id"] for e in m]
    if el["id"] in ids and ids.index(el["id"]) < len(ORDINALS):
        s["ordinal"] = ids.index(el["id"]) + 1
        m = match_elements(s, elements)
        if len(m) == 1 and m[0]["id"] == el["id"]:
            return _phrase(s, el), s
    return None


@dataclass
class View:
    """One screenshot: the page at a scroll offset, its PNG bytes and its scene-graph elements."""

    page: Page
    scroll_y: int
    png: bytes
    elements: list[dict[str, Any]]


def _canonical_png(data: bytes) -> bytes:
    """Re-encode a browser screenshot with the suites' deterministic PNG writer (no metadata chunks)."""
    from PIL import Image


    with Image.open(io.BytesIO(data)) as im:
        return png_bytes(im.convert("RGB"))


def render_views(pages: list[Page], seed: int, offsets_per_page: int = 3,
                 executable: str = CHROMIUM) -> tuple[list[View], str]:
    """Render every page at ``offsets_per_page`` scroll offsets (0 plus seeded random offsets,
    multiples of 8 px) and read back its elements. Returns the views and the browser version.

    Raises:
        pointfail.extras.MissingExtra: Playwright for Python is not installed.
        WebSuiteError: the browser executable is missing.
    """
    from pointfail.extras import require

    require("web", "the web suite")
    from playwright.sync_api import sync_playwright

    if not Path(executable).exists():
        raise WebSuiteError(f"browser not found at {executable}: apt-get install -y chromium")
    js = (Path(__file__).with_name("web_dom.js")).read_text(encoding="utf-8")
    rng = random.Random(seed)
    views: list[View] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS, headless=True)
        version = browser.version
        ctx = browser.new_context(
            viewport={"width": VIEWPORT[0], "height": VIEWPORT[1]}, device_scale_factor=1,
            user_agent=USER_AGENT, locale="en-US", timezone_id="UTC", reduced_motion="reduce",
            color_scheme="light",
        )
        ctx.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:") else route.abort())
        page = ctx.new_page()
        for pg in pages:
            page.goto(pg.path.resolve().as_uri(), wait_until="load")
            page.add_style_tag(content=FREEZE_CSS)
            page.evaluate("document.fonts.ready.then(() => true)")
            height = int(page.evaluate("document.documentElement.scrollHeight"))
            max_y = max(0, height - VIEWPORT[1])
            offsets = [0] + sorted(rng.randrange(0, max_y + 1) // 8 * 8 for _ in range(offsets_per_page - 1)) if max_y else [0]
            for y in sorted(set(offsets)):
                page.evaluate(f"window.scrollTo(0, {y})")
                page.evaluate("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
                actual = int(page.evaluate("Math.round(window.scrollY)"))
                png = _canonical_png(page.screenshot(type="png"))
                elements = page.evaluate(js)
                views.append(View(pg, actual, png, elements))
        browser.close()
    return views, version


def _scene_graph(view: View, image_name: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    els = sorted(view.elements, key=lambda e: (reading_order_key(e), e["category"], e["role"], e["text"]))
    out = []
    for i, e in enumerate(els):
        out.append({
            "id": f"el:{i:04d}", "category": e["category"], "role": e["role"], "box": e["box"],
            "text": normalize_text(e.get("text") or ""), "region": e["region"],
            "full_box": e["full_box"], "reachable": bool(e["reachable"]), "rects": int(e["rects"]),
            "input_type": e.get("input_type"), "name": e.get("name"),
        })
    graph = {"schema": SCENE_GRAPH_SCHEMA, "image": image_name, "width": VIEWPORT[0],
             "height": VIEWPORT[1], "elements": out}
    return graph, out


def generate(out: str | Path, *, n: int, seed: int, pages_spec: str = "debian-docs",
             offsets_per_page: int = 3, absent_share: float = 0.0) -> dict[str, Any]:
    """Render the pages and write an ``n``-sample suite in the PointerBench layout with scene graphs
    and a manifest (see ``docs/architecture.md``). Returns the manifest.

    Raises:
        WebSuiteError: missing browser/pages, or fewer than ``n`` unique targets available.
    """
    pages = resolve_pages(pages_spec)
    views, browser_version = render_views(pages, seed, offsets_per_page)
    rng = random.Random(seed + 1)
    out = Path(out)
    order = list(range(len(views)))
    rng.shuffle(order)
    per_view = max(1, -(-n // max(1, len(views))) + 1)
    rows: list[dict[str, Any]] = []
    images: dict[str, bytes] = {}
    graphs: dict[str, dict[str, Any]] = {}
    img_index = 0
    for vi in order:
        if len(rows) >= n:
            break
        view = views[vi]
        image_name = f"{img_index:04d}.png"
        graph, elements = _scene_graph(view, image_name)
        candidates: list[tuple[dict, str, dict]] = []
        for el in elements:
            for task in ("point", "box"):
                if _eligible(el, task):
                    made = make_instruction(el, elements, task)
                    if made:
                        candidates.append((el, made[0], made[1]))
        if not candidates:
            continue
        by_kind: dict[str, list] = {}
        for c in candidates:
            by_kind.setdefault(f"{c[2]['task']}:{c[0]['role']}", []).append(c)
        kinds = sorted(by_kind)
        taken = 0
        used: set[str] = set()
        while taken < per_view and len(rows) < n and kinds:
            want = "box" if rng.random() < BOX_SHARE else "point"
            pick = [k for k in kinds if k.startswith(want + ":")] or kinds
            kind = pick[rng.randrange(len(pick))]
            pool = [c for c in by_kind[kind] if c[0]["id"] not in used]
            if not pool:
                kinds.remove(kind)
                continue
            el, instruction, spec = pool[rng.randrange(len(pool))]
            used.add(el["id"])
            x0, y0, x1, y1 = el["box"]
            task = spec["task"]
            row = {
                "id": f"web_{len(rows):04d}",
                "file_name": image_name,
                "instruction": instruction,
                "bbox": [x0, y0, x1, y1],
                "point": reference_point([x0, y0, x1, y1]),
                "answer_type": "bbox" if task == "box" else "point",
                "eval": row_eval("bbox" if task == "box" else "point", [x0, y0, x1, y1]),
                "image_size": list(VIEWPORT),
                "data_type": el["category"],
                "category": el["role"],
                "region": el["region"],
                "qualifier": "ordinal" if spec.get("ordinal") else ("region" if spec.get("region") else "none"),
                "language": "en",
                "page": view.page.name,
                "package": view.page.package,
                "license": view.page.license,
                "scroll_y": view.scroll_y,
                "match": {k: v for k, v in spec.items() if k != "task"},
                "target_id": el["id"],
                "scene_graph": f"scene_graphs/{Path(image_name).stem}.json",
            }
            rows.append(row)
            taken += 1
        if taken:
            images[image_name] = view.png
            graphs[image_name] = graph
            img_index += 1
    if len(rows) < n:
        raise WebSuiteError(f"only {len(rows)} unique targets found for n={n}; add pages or offsets")
    env = environment_versions(FONT_NAMES)
    env.update({"browser": browser_version, "fontconfig_families": fontconfig_families()})
    env.update({p.package: p.package_version or "unknown" for p in pages if p.package})
    if absent_share:
        from pointfail.generated.suites.absent import make_absent_rows

        rows = make_absent_rows(rows, graphs, suite="web", seed=seed, share=absent_share)
    manifest_fields = suite_manifest_fields(
        suite="web", generator="pointfail.suites.web", generator_version=1, seed=seed, n=n, image_size=VIEWPORT,
        environment=env, absent_share=absent_share,
    )
    manifest_fields.update({
        "pages": pages_spec, "offsets": offsets_per_page,
        "licenses": {p.package: p.license for p in pages if p.package},
    })
    return write_suite_files(out, rows=rows, images=images, scene_graphs=graphs,
                             manifest_fields=manifest_fields, error=WebSuiteError)


FONT_NAMES = ("dejavu-sans", "dejavu-sans-mono")
"""The fonts the freeze style sheet forces (``pointfail.generated.suites.fonts.FONTS`` names)."""


def generator_args(manifest: dict[str, Any]) -> dict[str, Any]:
    """The :func:`generate` keyword arguments recorded in a web suite's ``manifest`` (``pages`` ->
    ``pages_spec``, ``offsets`` -> ``offsets_per_page``), for
    :func:`pointfail.generated.suites.manifest.verify_manifest` ``(regenerate=True)``; a key the manifest lacks
    is left to :func:`generate`'s default."""
    out: dict[str, Any] = {}
    if "pages" in manifest:
        out["pages_spec"] = manifest["pages"]
    if "offsets" in manifest:
        out["offsets_per_page"] = int(manifest["offsets"])
    return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``pointfail generate web``."""
    parser.add_argument("--pages", default="debian-docs",
                        help="named page set (debian-docs), a directory of HTML files, or a file listing HTML paths")
    parser.add_argument("--n", type=int, default=300, help="number of samples")
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    parser.add_argument("--offsets", type=int, default=3, help="scroll offsets per page")
    add_absent_share_argument(parser)
    parser.add_argument("--out", required=True, help="output suite directory")


def run(args: argparse.Namespace) -> int:
    """``pointfail generate web``: render and write the suite; print a one-line summary."""
    try:
        manifest = generate(args.out, n=args.n, seed=args.seed, pages_spec=args.pages, offsets_per_page=args.offsets,
                            absent_share=args.absent_share)
    except WebSuiteError as e:
        print(f"error: {e}")
        return 2
    print(f"web suite: {manifest.get('n', args.n)} samples in {args.out}")
    return 0
