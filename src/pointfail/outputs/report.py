"""Figures from a study's records: the failure profile (a self-contained HTML page and a PNG),
tolerance curves, and a gallery of annotated examples.

``pointfail report records/<study>`` writes ``records/<study>/report/``:

* ``failure_profile.html``: one self-contained page (CSS inlined, no script, no network): the
  study's title and description, sample counts, one stacked bar per model × benchmark and pooled
  (hit, the four failure modes, unlabeled, judge_unavailable, pending, no_prediction), every segment
  with its count written in it when it is wide enough and its name, count, n and share in its tooltip,
  a pattern and a legend label per segment (readable without colour), the headline table and the
  failure composition (and judge agreement when the study has two judges). The same page as the
  study page of ``pointfail view`` (:mod:`pointfail.outputs.view.pages`), without the links to samples.
* ``failure_profile.png``: the same bars with matplotlib (Agg backend), hatched per segment.
* ``tolerance.png``: hit rate if a point within t px counted, t = 0..50, one panel per benchmark
  and pooled, one line per model (from the same numbers as ``tables/tolerance.csv``).
* ``gallery.png``: one row per model: one hit and one labeled miss of each failure mode, drawn by
  :func:`pointfail.running.judges.render.render_annotated` (the judge's drawing rules: target tinted, every
  parsed point and box, the primary point marked), cropped around the target and the points. The
  image is looked up where the record says (relative to the checkout two levels above the study);
  when it is not there the panel draws the annotation on a blank canvas of the image's size and says
  which command brings the images (:func:`pointfail.outputs.view.images.missing_image_hint`).

The figures are not part of ``SHA256SUMS`` (PNG bytes depend on the matplotlib and font versions);
the numbers they draw are the tables'.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any, Optional

from pointfail.aggregate import POOLED, Counts, load_study
from pointfail.records import FAILURE_MODES, Record, iter_records, records_files
from pointfail.outputs.view.site import study_bars
from pointfail.outputs.view.style import COLORS, HATCHES, SEGMENTS

__all__ = [
    "COLORS", "SEGMENTS", "REPORT_DIR", "profile_counts", "failure_profile_html", "failure_profile_png",
    "tolerance_png", "gallery_examples", "gallery_png", "make_report", "reproduce_notebook", "write_notebook",
    "NOTEBOOK_PATH",
]

REPORT_DIR = "report"
GALLERY_SLOTS: tuple[str, ...] = ("hit", *FAILURE_MODES)
"""Columns of the gallery."""
CROP_MARGIN_PX = 48
"""Margin around the target and the points when a gallery panel is cropped."""
CROP_MIN = (360, 270)
"""Smallest crop (W, H) in pixels of the original image, so the context stays readable."""


def profile_counts(comp: Counts) -> list[tuple[str, str, dict[str, int], int]]:
    """``(model, benchmark, {segment: count}, n)`` per bar, in table order (benchmark ``pooled``
    last per model). Segment counts add up to n (:func:`pointfail.outputs.view.site.study_bars`)."""
    return study_bars(comp)


def failure_profile_html(study_dir: str | Path, comp: Counts, tables: dict[str, bytes]) -> str:
    """The failure profile as one self-contained page (see the module docstring)."""
    from pointfail.inputs.study import load_study
    from pointfail.outputs.view.pages import study_page_html

    d = Path(study_dir)
    name, description = d.resolve().name, ""
    if (d / "study.toml").is_file():
        st = load_study(d / "study.toml").study
        name, description = st.name, st.description
    errors = sum(comp.cells[(m, POOLED)].error for m in comp.models)
    summary = {"models": len(comp.models), "benchmarks": len(comp.benchmarks), "errors": errors}
    return study_page_html(name, description, profile_counts(comp), tables, links=False, inline_css=True, summary=summary)


def failure_profile_png(comp: Counts, path: Path, title: str) -> None:
    """The failure profile as stacked bars (matplotlib Agg): one bar per model × benchmark, grouped
    by benchmark with pooled bars last; the height of a segment is its share of n (%), the count is
    written in segments tall enough to hold it; every segment is hatched (readable without colour)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    bars = profile_counts(comp)
    order = sorted(bars, key=lambda t: (t[1] == POOLED, t[1], t[0]))
    xs: list[float] = []
    x = 0.0
    prev = None
    for _, b, _, _ in order:
        if prev is not None and b != prev:
            x += 0.6  # gap between benchmark groups
        xs.append(x)
        x += 1.0
        prev = b
    labels = [f"{m}\n{b}\nn={n}" for m, b, _, n in order]
    fig, ax = plt.subplots(figsize=(max(6.0, 1.0 * x + 3), 5.5), dpi=120)
    bottom = [0.0] * len(order)
    for s in SEGMENTS:
        counts = [seg[s] for _, _, seg, _ in order]
        if not any(counts):
            continue
        vals = [100.0 * c / n if n else 0.0 for c, (_, _, _, n) in zip(counts, order)]
        ax.bar(xs, vals, bottom=bottom, color=COLORS[s], label=s, edgecolor="white", linewidth=0.5, width=0.85,
               hatch=HATCHES[s])
        for i, (c, v) in enumerate(zip(counts, vals)):
            if c and v >= 5.0:
                ax.text(xs[i], bottom[i] + v / 2, str(c), ha="center", va="center", fontsize=7,
                        bbox=dict(boxstyle="round,pad=0.15", facecolor="white", edgecolor="none", alpha=0.85))
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.set_xticks(xs, labels, fontsize=7)
    ax.set_ylabel("share of samples (%); numbers are counts")
    ax.set_ylim(0, 100)
    ax.set_title(title)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def tolerance_png(comp: Counts, path: Path, title: str) -> None:
    """Tolerance curves: hit rate (%) against t = 0..50 px, one panel per benchmark and pooled."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tab = list(comp.tolerance_table())
    panels = comp.benchmarks + [POOLED]
    ncol = min(3, len(panels))
    nrow = -(-len(panels) // ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.2 * ncol, 3.3 * nrow), dpi=110, squeeze=False, sharey=True)
    for k, b in enumerate(panels):
        ax = axes[k // ncol][k % ncol]
        for m in comp.models:
            pts = [(t, 100 * h / n) for mm, bb, t, h, n in tab if mm == m and bb == b and n]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], label=m, linewidth=1.6, drawstyle="steps-post")
        ax.set_title(b, fontsize=10)
        ax.set_xlabel("tolerance t (px)")
        ax.set_xlim(0, 50)
        ax.set_ylim(0, 100)
        ax.grid(alpha=0.3)
        if k % ncol == 0:
            ax.set_ylabel("hit rate within t (%)")
    for k in range(len(panels), nrow * ncol):
        axes[k // ncol][k % ncol].axis("off")
    axes[0][0].legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def gallery_examples(study_dir: str | Path) -> dict[str, dict[str, Optional[Record]]]:
    """Per model, one record per gallery slot (``hit`` and each failure mode): the first by
    (benchmark, sample_id) order; ``None`` where the model has no such record. Records are streamed
    with :func:`pointfail.records.iter_records`."""
    cands: dict[str, dict[str, tuple[tuple[str, str], Record]]] = {}
    for p in records_files(study_dir):
        for r in iter_records(p):
            slot = "hit" if r.outcome == "hit" else r.failure_mode
            per = cands.setdefault(r.model, {})
            if slot is None:
                continue
            key = (r.benchmark, r.sample_id)
            if slot not in per or key < per[slot][0]:
                per[slot] = (key, r)
    return {m: {s: (per[s][1] if s in per else None) for s in GALLERY_SLOTS} for m, per in sorted(cands.items())}


def _crop_box(r: Record, raster_bbox: Optional[tuple[int, int, int, int]]) -> tuple[int, int, int, int]:
    """The part of the image a panel shows: the target's and the points' bounding box, plus
    :data:`CROP_MARGIN_PX`, at least :data:`CROP_MIN`, clipped to the image."""
    w, h = r.image.width, r.image.height
    xs: list[float] = []
    ys: list[float] = []
    if raster_bbox is not None:
        xs += [raster_bbox[0], raster_bbox[2]]
        ys += [raster_bbox[1], raster_bbox[3]]
    if r.parse is not None:
        for x, y in (p[:2] for p in r.parse.points):
            xs.append(min(max(x * w, 0), w))
            ys.append(min(max(y * h, 0), h))
        for b in r.parse.boxes:
            xs += [min(max(b[0] * w, 0), w), min(max(b[2] * w, 0), w)]
            ys += [min(max(b[1] * h, 0), h), min(max(b[3] * h, 0), h)]
    if not xs:
        return 0, 0, w, h
    x0, x1 = min(xs) - CROP_MARGIN_PX, max(xs) + CROP_MARGIN_PX
    y0, y1 = min(ys) - CROP_MARGIN_PX, max(ys) + CROP_MARGIN_PX
    mw, mh = min(CROP_MIN[0], w), min(CROP_MIN[1], h)
    if x1 - x0 < mw:
        c = (x0 + x1) / 2
        x0, x1 = c - mw / 2, c + mw / 2
    if y1 - y0 < mh:
        c = (y0 + y1) / 2
        y0, y1 = c - mh / 2, c + mh / 2
    dx = max(0.0, -x0) - max(0.0, x1 - w)
    dy = max(0.0, -y0) - max(0.0, y1 - h)
    x0, x1, y0, y1 = x0 + dx, x1 + dx, y0 + dy, y1 + dy
    return int(max(0, x0)), int(max(0, y0)), int(min(w, round(x1))), int(min(h, round(y1)))


def example_picture(r: Record, study_dir: str | Path) -> tuple[Any, tuple[int, int, int, int], Optional[str]]:
    """One record drawn as the gallery shows it: the image with the target tinted green and every
    parsed point and box drawn (the primary point marked), and the part of it to show.

    Args:
        r: the record; its image and mask paths are resolved inside the checkout that holds
            ``study_dir`` (``data/<study>/...``).
        study_dir: the study directory.

    Returns:
        ``(picture, crop, note)``: the full-size RGB ``PIL.Image``; ``crop`` ``(x0, y0, x1, y1)`` in
        pixels (the target's and the points' bounding box plus a margin, :func:`_crop_box`);
        ``note`` says why the picture is a blank canvas (image not available: which command brings
        it; unreadable image or mask), else ``None``.
    """
    import numpy as np
    from PIL import Image

    from pointfail.running.judges.render import render_annotated, target_raster
    from pointfail.scoring import primary_point
    from pointfail.outputs.view.images import find_checkout, missing_image_hint, resolve_inside

    study_dir = Path(study_dir)
    w, h = r.image.width, r.image.height
    roots = [find_checkout(study_dir)]
    img_path = resolve_inside(r.image.path, roots)
    note = None
    source: Any = img_path
    if img_path is None:
        note = "image not available: " + missing_image_hint(study_dir, r.benchmark)
        source = Image.new("RGB", (w, h), (235, 235, 235))
    target = r.target
    if target.kind == "mask":
        mp = resolve_inside(target.mask_path or "", roots)
        target = target.model_copy(update={"mask_path": str(mp)}) if mp is not None else target.model_copy(update={"kind": "absent"})
    try:
        raster = target_raster(target, (w, h))
        parse = r.parse
        pic = render_annotated(source, raster, parse.points if parse else [], parse.boxes if parse else [], primary_point(parse))
    except (OSError, ValueError) as e:  # an unreadable image or mask: say so in the panel
        note = f"cannot draw: {e}"
        raster = np.zeros((h, w), dtype=bool)
        pic = Image.new("RGB", (w, h), (235, 235, 235))
    rows = np.flatnonzero(raster.any(axis=1))
    bbox = None
    if rows.size:
        cols = np.flatnonzero(raster.any(axis=0))
        bbox = (int(cols[0]), int(rows[0]), int(cols[-1]) + 1, int(rows[-1]) + 1)
    return pic, _crop_box(r, bbox), note


def _draw_example(ax: Any, slot: str, r: Optional[Record], study_dir: Path, model: str) -> None:
    import numpy as np

    ax.set_xticks([])
    ax.set_yticks([])
    if r is None:
        ax.set_title(f"{slot}\n{model}", fontsize=9)
        ax.text(0.5, 0.5, f"no {slot} for {model}", ha="center", va="center", transform=ax.transAxes, fontsize=9)
        return
    w, h = r.image.width, r.image.height
    pic, (x0, y0, x1, y1), note = example_picture(r, study_dir)
    ax.imshow(np.asarray(pic.crop((x0, y0, x1, y1))), extent=(x0, x1, y1, y0), interpolation="lanczos")
    ax.set_title(f"{slot} · {r.model}\n{r.benchmark} · {r.sample_id}", fontsize=9)
    for side in ax.spines.values():
        side.set_edgecolor(COLORS[slot])
        side.set_linewidth(4)
    instr = textwrap.shorten(r.prompt.original, width=110, placeholder=" …")
    crop_txt = "" if (x0, y0, x1, y1) == (0, 0, w, h) else f" [crop x {x0}–{x1}, y {y0}–{y1} of {w}×{h}]"
    dist = r.geometry.distance_px
    ax.set_xlabel("\n".join(textwrap.wrap(instr, 55)) + f"\n{'' if dist is None else f'{dist:.1f} px from target'}{crop_txt}", fontsize=7)
    if note:
        ax.text(0.5, 0.5, "\n".join(textwrap.wrap(note, 48)), ha="center", va="center", transform=ax.transAxes, fontsize=7,
                color="#222222", bbox=dict(boxstyle="round", facecolor="white", edgecolor="#f9a825", alpha=0.92))


def gallery_png(study_dir: str | Path, path: Path, title: str) -> dict[str, dict[str, Optional[Record]]]:
    """The gallery (module docstring): one row per model, one hit and one example of each failure
    mode. Returns the records drawn (:func:`gallery_examples`)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ex = gallery_examples(study_dir)
    nrow = max(1, len(ex))
    fig, axes = plt.subplots(nrow, len(GALLERY_SLOTS), figsize=(4.6 * len(GALLERY_SLOTS), 4.6 * nrow), dpi=110, squeeze=False)
    for row, (model, slots) in zip(axes, ex.items()):
        for ax, slot in zip(row, GALLERY_SLOTS):
            _draw_example(ax, slot, slots[slot], Path(study_dir), model)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return ex


def make_report(study_dir: str | Path, out_dir: str | Path | None = None) -> list[Path]:
    """Write the report figures of a study (see the module docstring). Returns the paths written.

    Raises:
        RecordError, AggregateError: as :func:`pointfail.aggregate.load_study`.
        pointfail.extras.MissingExtra: matplotlib is not installed (nothing is written).
    """
    from pointfail.aggregate import build_tables
    from pointfail.extras import require

    require("report", "the report")  # before anything is written
    d = Path(study_dir)
    study = load_study(d)
    comp = study.counts
    out = Path(out_dir) if out_dir is not None else d / REPORT_DIR
    out.mkdir(parents=True, exist_ok=True)
    html = out / "failure_profile.html"
    with open(html, "w", encoding="utf-8", newline="\n") as f:
        f.write(failure_profile_html(d, comp, build_tables(study)))
    png = out / "failure_profile.png"
    failure_profile_png(comp, png, f"Failure profile: {study.name}")
    tol = out / "tolerance.png"
    tolerance_png(comp, tol, f"Tolerance curves: {study.name}")
    gal = out / "gallery.png"
    gallery_png(d, gal, f"One hit and one miss of each failure mode, per model: {study.name}")
    return [html, png, tol, gal]


NOTEBOOK_PATH = "notebooks/reproduce.ipynb"


def _cell(kind: str, source: str, idx: int) -> dict[str, Any]:
    cell: dict[str, Any] = {"cell_type": kind, "id": f"cell-{idx:02d}", "metadata": {}, "source": source.strip("\n").splitlines(keepends=True)}
    if kind == "code":
        cell["execution_count"] = None
        cell["outputs"] = []
    return cell


def reproduce_notebook() -> dict[str, Any]:
    """The notebook ``notebooks/reproduce.ipynb`` (nbformat 4.5 JSON): from the committed records of a
    study it verifies the committed tables, regenerates every table and figure into a scratch
    folder, and shows the tables (rendered as tables in Jupyter, as Markdown text in plain Python)
    and the figures; the last cell removes the scratch folder (a ``tempfile.TemporaryDirectory``, so
    it is removed at the latest when the kernel exits). Offline; no GPU; only pointfail and its
    dependencies (and Jupyter to open it). The study is ``$POINTFAIL_STUDY`` (a relative path is read
    from the repository's root, wherever the kernel runs) or, by default, the first study under
    ``records/``."""
    cells = [
        ("markdown", """
# pointfail: reproduce the tables and figures from committed records

Everything below runs offline, without a GPU or model weights: it reads the per-sample records
committed under `records/<study>/`, checks that they regenerate the committed tables byte for byte
(`pointfail verify`), regenerates the tables and figures into a scratch folder (`pointfail aggregate`,
`pointfail report`) and shows them; the last cell removes the scratch folder. Set `POINTFAIL_STUDY`
to choose a study directory (`records/default`: relative to the repository's root).
"""),
        ("code", """
import os
import tempfile
from pathlib import Path

try:
    from IPython.display import HTML, Image, Markdown, display
except ImportError:  # plain Python: tables are printed as Markdown text, figures only written
    display = None


def show_table(markdown_text):
    \"\"\"A pointfail table: rendered as a table in Jupyter, printed as Markdown elsewhere.\"\"\"
    if display is not None:
        display(Markdown(markdown_text))
    else:
        print(markdown_text)


ROOT = Path.cwd() if (Path.cwd() / "records").is_dir() else Path.cwd().parent  # Jupyter runs in notebooks/
if os.environ.get("POINTFAIL_STUDY"):  # a relative path is read from the repository's root, as the README writes it
    STUDY = Path(os.environ["POINTFAIL_STUDY"])
    STUDY = STUDY if STUDY.is_absolute() or STUDY.is_dir() else ROOT / STUDY
else:
    from pointfail.aggregate import find_studies
    STUDY = find_studies(ROOT / "records")[0]
SCRATCH = tempfile.TemporaryDirectory(prefix="pointfail-notebook-")
OUT = Path(SCRATCH.name)
print("study:", STUDY)
print("scratch:", OUT)
"""),
        ("markdown", "## 1. The committed tables regenerate byte for byte"),
        ("code", """
from pointfail.aggregate import verify

result = verify(STUDY)
print("MATCH" if result.ok else "MISMATCH:\\n" + "\\n".join(result.problems))
for name, diff in sorted(result.diffs.items()):
    print(diff)
show_table(result.headline)
"""),
        ("markdown", "## 2. Regenerate every table"),
        ("code", """
import json

from pointfail.aggregate import aggregate

files = aggregate(STUDY, OUT / "tables")
print("\\n".join(sorted(files)))
summary = json.loads(files["summary.json"])
for model, s in sorted(summary["models"].items()):
    p = s["pooled"]
    print(f"{model}: n={p['n']} hit={p['hit']} miss={p['miss']} no_prediction={p['no_prediction']} errors={p['errors']} hit_rate={p['hit_rate']}")
show_table(files["failure_composition.md"].decode())
"""),
        ("markdown", "## 3. Figures: failure profile, tolerance curves, gallery"),
        ("code", """
from pointfail.outputs.report import make_report

figures = make_report(STUDY, OUT / "report")
print("\\n".join(str(p.relative_to(OUT)) for p in figures))
if display is not None:
    for p in figures:
        if p.suffix == ".png":
            display(Image(filename=str(p)))
    display(HTML(filename=str(figures[0])))
"""),
        ("markdown", "## 4. Clean up: the scratch folder goes; what is shown above stays in the notebook"),
        ("code", """
SCRATCH.cleanup()
print("removed", OUT)
"""),
    ]
    return {
        "cells": [_cell(k, s, i) for i, (k, s) in enumerate(cells)],
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def write_notebook(path: str | Path = NOTEBOOK_PATH) -> Path:
    """Write :func:`reproduce_notebook` as canonical JSON (sorted keys, 1-space indent, ``\\n``)."""
    import json

    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with open(p, "w", encoding="utf-8", newline="\n") as f:
        f.write(json.dumps(reproduce_notebook(), sort_keys=True, indent=1, ensure_ascii=False) + "\n")
    return p
