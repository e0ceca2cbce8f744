"""Figures from a study's records: the failure profile (interactive HTML and PNG), tolerance curves,
and a gallery with one hit and one example of each failure mode.

``pointfail report records/<study>`` writes ``records/<study>/report/``:

* ``failure_profile.html``: self-contained (plotly.js inlined, no network), one stacked bar per
  model × benchmark (and pooled): hit, the four failure modes, unlabeled, judge_unavailable,
  pending and no_prediction. Hovering a segment shows its exact count, n and share; clicking a legend
  entry isolates that outcome (double-click toggles one).
* ``failure_profile.png``: the same bars with matplotlib (Agg backend).
* ``tolerance.png``: hit rate if a point within t px counted, t = 0..50, one panel per benchmark
  and pooled, one line per model (from the same numbers as ``tables/tolerance.csv``).
* ``gallery.png``: one hit and one labeled miss of each failure mode, the target drawn in green
  and the primary point in red, on the record's image when the file exists (its path is tried as
  given, relative to the study directory and relative to the repository root two levels above);
  otherwise on a blank canvas of the image's size with a note saying the image is not available.

The figures are not part of ``SHA256SUMS`` (PNG bytes depend on the matplotlib and font versions);
the numbers they draw are the tables'.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any, Optional

from pointfail.aggregate import POOLED, Computed, _cells_keys, compute, load_study, records_files, tolerance_table
from pointfail.records import FAILURE_MODES, Record, read_records

REPORT_DIR = "report"

SEGMENTS: tuple[str, ...] = ("hit", *FAILURE_MODES, "unlabeled", "judge_unavailable", "pending", "no_prediction")
"""Stacking order of the failure-profile bars, bottom to top."""

COLORS: dict[str, str] = {
    "hit": "#2e7d32",
    "off_by_pixels": "#9ccc65",
    "wrong_instance": "#ffca28",
    "wrong_category": "#fb8c00",
    "hallucinated": "#d32f2f",
    "unlabeled": "#9e9e9e",
    "judge_unavailable": "#616161",
    "pending": "#cfd8dc",
    "no_prediction": "#5c6bc0",
}


def profile_counts(comp: Computed) -> list[tuple[str, str, dict[str, int], int]]:
    """``(model, benchmark, {segment: count}, n)`` per bar, in table order (benchmark ``pooled``
    last per model). Segment counts add up to n."""
    out = []
    for m, b in _cells_keys(comp.models, comp.benchmarks_of):
        c = comp.cells[(m, b)]
        seg = {"hit": c.hit, **c.modes, **c.apart, "no_prediction": c.no_prediction}
        out.append((m, b, seg, c.n))
    return out


def failure_profile_html(comp: Computed, title: str) -> str:
    """The failure profile as a self-contained HTML page (plotly, ``include_plotlyjs=True``)."""
    import plotly.graph_objects as go

    bars = profile_counts(comp)
    x = [[b for _, b, _, _ in bars], [m for m, _, _, _ in bars]]
    fig = go.Figure()
    for s in SEGMENTS:
        counts = [seg[s] for _, _, seg, _ in bars]
        if not any(counts):
            continue
        ns = [n for *_, n in bars]
        shares = [f"{100 * c / n:.1f}" if n else "n/a" for c, n in zip(counts, ns)]
        fig.add_trace(
            go.Bar(
                name=s,
                x=x,
                y=[100 * c / n if n else 0 for c, n in zip(counts, ns)],
                marker_color=COLORS[s],
                customdata=list(zip(counts, ns, shares)),
                hovertemplate="%{x}<br><b>" + s + "</b>: %{customdata[0]} of n = %{customdata[1]} (%{customdata[2]}%)<extra></extra>",
            )
        )
    fig.update_layout(
        barmode="stack",
        title=title,
        yaxis_title="share of samples (%)",
        legend=dict(itemclick="toggleothers", itemdoubleclick="toggle", title="click: isolate"),
        template="plotly_white",
        height=560,
    )
    return fig.to_html(include_plotlyjs=True, full_html=True, div_id="failure-profile")


def failure_profile_png(comp: Computed, path: Path, title: str) -> None:
    """The failure profile as stacked bars (matplotlib Agg): one bar per model × benchmark, grouped
    by benchmark with pooled bars last; the height of a segment is its share of n (%), the count is
    written in segments tall enough to hold it."""
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
        ax.bar(xs, vals, bottom=bottom, color=COLORS[s], label=s, edgecolor="white", linewidth=0.5, width=0.85)
        for i, (c, v) in enumerate(zip(counts, vals)):
            if c and v >= 5.0:
                ax.text(xs[i], bottom[i] + v / 2, str(c), ha="center", va="center", fontsize=7)
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.set_xticks(xs, labels, fontsize=7)
    ax.set_ylabel("share of samples (%); numbers are counts")
    ax.set_ylim(0, 100)
    ax.set_title(title)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def tolerance_png(comp: Computed, path: Path, title: str) -> None:
    """Tolerance curves: hit rate (%) against t = 0..50 px, one panel per benchmark and pooled."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tab = tolerance_table(comp)
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


def gallery_examples(study_dir: str | Path) -> dict[str, Optional[Record]]:
    """One record per gallery slot: ``hit`` and each failure mode, the first by (model, benchmark,
    sample_id) order; ``None`` where the study has no such record."""
    want = {"hit": None, **{m: None for m in FAILURE_MODES}}
    cands: dict[str, tuple[tuple[str, str, str], Record]] = {}
    for p in records_files(study_dir):
        for r in read_records(p):
            slot = "hit" if r.outcome == "hit" else r.failure_mode
            if slot is None:
                continue
            key = (r.model, r.benchmark, r.sample_id)
            if slot not in cands or key < cands[slot][0]:
                cands[slot] = (key, r)
    for k in want:
        want[k] = cands[k][1] if k in cands else None
    return want


def _resolve(path: str, study_dir: Path) -> Optional[Path]:
    p = Path(path)
    for c in (p, study_dir / p, study_dir.parent.parent / p):
        if c.is_file():
            return c
    return None


def _draw_example(ax: Any, slot: str, r: Optional[Record], study_dir: Path) -> None:
    import numpy as np
    from matplotlib.patches import Polygon, Rectangle

    ax.set_xticks([])
    ax.set_yticks([])
    if r is None:
        ax.set_title(slot, fontsize=10)
        ax.text(0.5, 0.5, f"no {slot} in this study", ha="center", va="center", transform=ax.transAxes, fontsize=9)
        return
    w, h = r.image.width, r.image.height
    img_path = _resolve(r.image.path, study_dir)
    note = None
    img = None
    if img_path is not None:
        try:
            from PIL import Image

            with Image.open(img_path) as im:
                img = np.asarray(im.convert("RGB"))
        except OSError as e:
            note = f"image unreadable: {e}"
    else:
        note = "image not available:\n" + textwrap.shorten(Path(r.image.path).name, width=40, placeholder="…")
    if img is None:
        img = np.full((h, w, 3), 235, dtype=np.uint8)
    ax.imshow(img, extent=(0, w, h, 0), interpolation="nearest")
    t = r.target
    if t.kind == "boxes" and t.boxes:
        for x0, y0, x1, y1 in t.boxes:
            ax.add_patch(Rectangle((x0, y0), x1 - x0, y1 - y0, fill=True, facecolor=(0, 0.8, 0, 0.25), edgecolor="lime", linewidth=1.5))
    elif t.kind == "polygon" and t.polygons:
        for poly in t.polygons:
            ax.add_patch(Polygon(poly, closed=True, facecolor=(0, 0.8, 0, 0.25), edgecolor="lime", linewidth=1.5))
    elif t.kind == "mask" and t.mask_path:
        mp = _resolve(t.mask_path, study_dir)
        if mp is not None:
            from PIL import Image

            with Image.open(mp) as mk:
                m = np.asarray(mk.convert("L")) > 0
            overlay = np.zeros((m.shape[0], m.shape[1], 4))
            overlay[m] = (0, 0.8, 0, 0.35)
            ax.imshow(overlay, extent=(0, w, h, 0), interpolation="nearest")
    if r.parse is not None and r.parse.points:
        x, y = r.parse.points[0]
        ax.plot([x * w], [y * h], marker="o", markersize=9, markerfacecolor="red", markeredgecolor="white", markeredgewidth=1.5)
    if r.parse is not None and r.parse.boxes:
        x0, y0, x1, y1 = r.parse.boxes[0]
        ax.add_patch(Rectangle((x0 * w, y0 * h), (x1 - x0) * w, (y1 - y0) * h, fill=False, edgecolor="red", linewidth=1.5))
    ax.set_xlim(0, w)
    ax.set_ylim(h, 0)
    ax.set_title(f"{slot}\n{r.model} · {r.benchmark} · {r.sample_id}", fontsize=9)
    for side in ax.spines.values():
        side.set_edgecolor(COLORS[slot])
        side.set_linewidth(3)
    instr = textwrap.shorten(r.prompt.original, width=90, placeholder=" …")
    ax.set_xlabel("\n".join(textwrap.wrap(instr, 45)), fontsize=7)
    if note:
        ax.text(0.5, 0.04, note, ha="center", va="bottom", transform=ax.transAxes, fontsize=7, color="#444444")


def gallery_png(study_dir: str | Path, path: Path, title: str) -> dict[str, Optional[Record]]:
    """The gallery: one hit and one example of each failure mode (target green, point red)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ex = gallery_examples(study_dir)
    fig, axes = plt.subplots(1, len(ex), figsize=(3.4 * len(ex), 3.8), dpi=110)
    for ax, (slot, r) in zip(axes, ex.items()):
        _draw_example(ax, slot, r, Path(study_dir))
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return ex


def make_report(study_dir: str | Path, out_dir: str | Path | None = None) -> list[Path]:
    """Write the report figures of a study (see the module docstring). Returns the paths written.

    Raises:
        RecordError, AggregateError: as :func:`pointfail.aggregate.load_study`.
    """
    d = Path(study_dir)
    study = load_study(d)
    comp = compute(study)
    out = Path(out_dir) if out_dir is not None else d / REPORT_DIR
    out.mkdir(parents=True, exist_ok=True)
    html = out / "failure_profile.html"
    with open(html, "w", encoding="utf-8", newline="\n") as f:
        f.write(failure_profile_html(comp, f"Failure profile: {study.name}"))
    png = out / "failure_profile.png"
    failure_profile_png(comp, png, f"Failure profile: {study.name}")
    tol = out / "tolerance.png"
    tolerance_png(comp, tol, f"Tolerance curves: {study.name}")
    gal = out / "gallery.png"
    gallery_png(d, gal, f"One hit and one miss of each failure mode: {study.name}")
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
    folder, and shows the headline table and the figures. Offline; no GPU; only pointfail and its
    dependencies. The study is ``$POINTFAIL_STUDY`` or, by default, the first study under
    ``records/``."""
    cells = [
        ("markdown", """
# pointfail: reproduce the tables and figures from committed records

Everything below runs offline, without a GPU or model weights: it reads the per-sample records
committed under `records/<study>/`, checks that they regenerate the committed tables byte for byte
(`pointfail verify`), regenerates the tables and figures into a scratch folder (`pointfail aggregate`,
`pointfail report`) and shows them. Set `POINTFAIL_STUDY` to choose a study directory.
"""),
        ("code", """
import os
import tempfile
from pathlib import Path

ROOT = Path.cwd() if (Path.cwd() / "records").is_dir() else Path.cwd().parent
if os.environ.get("POINTFAIL_STUDY"):
    STUDY = Path(os.environ["POINTFAIL_STUDY"])
else:
    from pointfail.aggregate import find_studies
    STUDY = find_studies(ROOT / "records")[0]
OUT = Path(tempfile.mkdtemp(prefix="pointfail-notebook-"))
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
print(result.headline)
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
print(files["failure_composition.md"].decode())
"""),
        ("markdown", "## 3. Figures: failure profile, tolerance curves, gallery"),
        ("code", """
from pointfail.report import make_report

figures = make_report(STUDY, OUT / "report")
print("\\n".join(str(p) for p in figures))
try:
    from IPython.display import HTML, Image, display
except ImportError:  # plain Python: the files are written, nothing to display
    display = None
if display is not None:
    for p in figures:
        if p.suffix == ".png":
            display(Image(filename=str(p)))
    display(HTML(filename=str(figures[0])))
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
