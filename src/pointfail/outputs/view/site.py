"""Write the failure browser of a study: a static site that works from ``file://``.

Layout of the output directory::

    index.html               the study page (chart, headline, failure composition, judge agreement)
    list.html                the sample list (filters, counts, paging, keyboard navigation)
    sample.html              one sample (``#r.model=…&r.benchmark=…&r.id=…`` plus the list's filters)
    review.html              the review mode: a person labels misses (``pointfail.outputs.view.review``)
    assets/style.css, app.js, review.js, review.css
    data/meta.js             the study's dictionaries, thumbnails and drawing constants
    data/index-NNN.js        the list rows, CHUNK_ROWS per file, columns dictionary-encoded
    data/annot/NNNN.js       what is drawn over each row's image, ANNOT_ROWS per file, loaded on demand
    data/detail/NNNN.js      whole records with what the sample page derives, SHARD_RECORDS per file,
                             loaded on demand by the sample page
    img/f, img/t, img/m      originals, thumbnails and target tint layers (see ``view.images``)

The data files are JavaScript (``PF.chunks.push({...})``, ``PF.addDetail(n, {...})``), not JSON,
because a page opened from ``file://`` may load scripts but not fetch files. Their content is JSON
written with ``ensure_ascii`` (so any byte a record holds arrives as an escape, never as markup).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from pointfail.records import FAILURE_MODES, Record, read_records
from pointfail.outputs.view.data import JUDGE_STATES, OUTCOME_ORDER

__all__ = ["ANNOT_ROWS", "CHUNK_ROWS", "SHARD_RECORDS", "PAGE_SIZE", "SiteResult", "build_site", "default_out_dir", "study_bars"]

CHUNK_ROWS = 10_000
"""List rows per ``data/index-NNN.js`` file."""
ANNOT_ROWS = 100
"""Annotations (what is drawn over each image) per ``data/annot/NNNN.js`` file, in list order; a
page loads only the files of the rows it shows."""
SHARD_RECORDS = 100
"""Records per ``data/detail/NNNN.js`` file (one file per model and benchmark at least)."""
PAGE_SIZE = 50
"""Rows per page of the sample list."""
VIEW_DIR = "view"
INSTRUCTION_CHARS = 160
"""The list shows the instruction cut to this many characters (the sample page shows all of it)."""


@dataclass
class SiteResult:
    """What :func:`build_site` wrote.

    Attributes:
        out_dir: the site root; open ``index.html``.
        records: records in the site.
        files: files written or reused; ``bytes``: their total size.
        images: counts of images copied (``full``), thumbnails (``thumb``) and tint layers (``tint``)
            made in this run, and images found already made (``reused``).
        missing_images: records whose image is not in the site, by benchmark, with the command that
            brings them.
        seconds: wall time per step.
    """

    out_dir: Path
    records: int
    files: int
    bytes: int
    images: dict[str, int]
    missing_images: dict[str, tuple[int, str]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)


def default_out_dir(study_dir: str | Path) -> Path:
    """``<study>/view``: the site lives beside the records, like ``report/`` and ``tables/``."""
    return Path(study_dir) / VIEW_DIR


def study_bars(comp: Any) -> list[tuple[str, str, dict[str, int], int]]:
    """The failure-profile bars of an ``aggregate.Counts``: ``(model, benchmark, {segment: count},
    n)`` in table order (models sorted, each model's benchmarks sorted, then its pooled bar). The
    counts are the failure-composition table's: hit, the four labeled modes, the misses counted apart
    (malformed_box and the judge's other states), no_prediction and error; they add up to n."""
    from pointfail.aggregate import POOLED

    out = []
    for m in comp.models:
        for b in [*comp.benchmarks_of[m], POOLED]:
            c = comp.cells[(m, b)]
            seg = {"hit": c.hit, **c.modes, **c.apart, "no_prediction": c.no_prediction, "error": c.error}
            out.append((m, b, seg, c.n))
    return out


def _js(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=True, separators=(",", ":"), allow_nan=False)


class _Index:
    """Dictionary-encoded list rows (columns), one per record."""

    def __init__(self) -> None:
        self.dicts: dict[str, dict[str, int]] = {k: {} for k in ("model", "benchmark", "category", "language")}
        # known values first, in table order; a value a newer pointfail writes is appended, never an error
        self.dicts["outcome"] = {o: k for k, o in enumerate(OUTCOME_ORDER)}
        self.dicts["judge"] = {j: k for k, j in enumerate(JUDGE_STATES)}
        self.thumbs: dict[str, int] = {}
        self.rows: list[tuple[Any, ...]] = []

    def code(self, kind: str, value: Optional[str]) -> int:
        if value is None:
            return -1
        d = self.dicts[kind]
        if value not in d:
            d[value] = len(d)
        return d[value]

    def thumb(self, path: Optional[str]) -> int:
        if path is None:
            return -1
        if path not in self.thumbs:
            self.thumbs[path] = len(self.thumbs)
        return self.thumbs[path]


def _meta_str(meta: dict[str, Any], key: str) -> Optional[str]:
    v = meta.get(key)
    if isinstance(v, bool) or v is None or isinstance(v, (dict, list)):
        return None
    return str(v)


def _sample_quartiles(comp: Any) -> tuple[dict[tuple[str, str], int], dict[str, list[list[float]]]]:
    """Per benchmark, each sample's difficulty quartile (``(benchmark, sample_id)`` -> 1..4, samples
    without one left out) and the quartiles' ranges ``[[k, lo, hi], ...]``, from
    :func:`pointfail.aggregate.breakdowns.sample_quartiles` over ``comp.samples``."""
    from pointfail.aggregate.breakdowns import sample_quartiles

    quart: dict[tuple[str, str], int] = {}
    qranges: dict[str, list[list[float]]] = {}
    for b, table in comp.samples.items():
        per_index, ranges = sample_quartiles(table)
        for sid, i in table.ids.items():
            if per_index[i]:
                quart[(b, sid)] = per_index[i]
        qranges[b] = [[k, lo, hi] for k, lo, hi in ranges]
    return quart, qranges


def _fresh_out_dir(d: Path, out_dir: str | Path | None) -> Path:
    """The site root (default ``<study>/view``), created, with its ``data/`` rewritten whole (an empty
    ``data/detail/``); images of an earlier build are kept and reused by hash."""
    out = Path(out_dir) if out_dir is not None else default_out_dir(d)
    out.mkdir(parents=True, exist_ok=True)
    for sub in ("data",):
        if (out / sub).is_dir():
            shutil.rmtree(out / sub)
    (out / "data" / "detail").mkdir(parents=True)
    return out


def _frame_info(rec: Record, frames: dict[str, dict[str, str]]) -> dict[str, str]:
    """The coordinate frame a record's reply was read in: ``{"name", "doc"}`` of its family's frame
    (cached in ``frames`` by family; an unknown family gets an empty name and a note), the name
    replaced by the parse's frame when the record has a parse."""
    from pointfail.families import get_family

    fam = rec.parse.family if rec.parse is not None else rec.family
    if fam not in frames:
        try:
            fr = get_family(fam).frame
            frames[fam] = {"name": fr.name, "doc": fr.doc}
        except KeyError:
            frames[fam] = {"name": "", "doc": f"family {fam} is not known to this pointfail"}
    frame = dict(frames[fam])
    if rec.parse is not None:
        frame["name"] = rec.parse.frame
    return frame


@dataclass
class _RecordPass:
    """State of the pass over the records: the list index, detail shards written so far, records
    without an image per benchmark (``[count, hint]``), each sample's segment per model, and the
    frame cache."""

    idx: _Index = field(default_factory=_Index)
    shard_no: int = 0
    missing: dict[str, list[Any]] = field(default_factory=dict)
    segs: dict[tuple[str, str], dict[str, str]] = field(default_factory=lambda: defaultdict(dict))
    frames: dict[str, dict[str, str]] = field(default_factory=dict)


def _add_record(rp: _RecordPass, rec: Record, store: Any, quart: dict[tuple[str, str], int]) -> tuple[str, Any]:
    """Append one record's list row to ``rp.idx`` and return its detail-shard entry ``(key, value)``."""
    from pointfail.outputs.view import data as vdata

    info = store.image(rec)
    if info.full is None:
        entry = rp.missing.setdefault(rec.benchmark, [0, store.hint(rec.benchmark)])
        entry[0] += 1
    tint = store.tint(rec)
    ann = vdata.annotation_json(rec, tint)
    seg = vdata.segment(rec)
    state = vdata.judge_state(rec)
    rp.segs[(rec.benchmark, rec.sample_id)][rec.model] = seg
    q = quart.get((rec.benchmark, rec.sample_id), 0)
    dist = rec.geometry.distance_px
    instr = rec.prompt.original
    if len(instr) > INSTRUCTION_CHARS:
        instr = instr[: INSTRUCTION_CHARS - 1] + "…"
    idx = rp.idx
    idx.rows.append((
        rec.model, rec.benchmark, rec.sample_id,
        idx.code("outcome", rec.outcome),
        FAILURE_MODES.index(seg) if seg in FAILURE_MODES else -1,
        idx.code("judge", state),
        idx.code("category", _meta_str(rec.metadata, "category")),
        idx.code("language", _meta_str(rec.metadata, "language")),
        q,
        round(dist, 2) if dist is not None else None,
        idx.thumb(info.thumb),
        rp.shard_no,
        instr,
        ann,
    ))
    frame = _frame_info(rec, rp.frames)
    return record_key(rec), {
        "record": rec.model_dump(mode="json"),
        "spans": vdata.raw_spans(rec),
        "frame": frame,
        "image": {"full": info.full, "note": info.note, "path": info.path, "file_sha256": info.sha256},
        "quartile": q,
    }


def _write_detail(d: Path, out: Path, store: Any, quart: dict[tuple[str, str], int],
                  say: Callable[[str], None]) -> _RecordPass:
    """Read every records file of study ``d`` (records sorted by sample id) and write the detail
    shards ``data/detail/NNNN.js`` (``SHARD_RECORDS`` records each), filling the list index."""
    from pointfail.records import records_files

    rp = _RecordPass()
    for path in records_files(d):
        recs = sorted(read_records(path), key=lambda r: r.sample_id)
        for start in range(0, len(recs), SHARD_RECORDS):
            shard = dict(_add_record(rp, rec, store, quart) for rec in recs[start : start + SHARD_RECORDS])
            with open(out / "data" / "detail" / f"{rp.shard_no:04d}.js", "w", encoding="utf-8", newline="\n") as f:
                f.write(f"PF.addDetail({rp.shard_no},{_js(shard)});\n")
            rp.shard_no += 1
        say(f"[view] {path.relative_to(d)}: {len(recs)} records")
    return rp


def _across(segs: dict[tuple[str, str], dict[str, str]], b: str, sid: str) -> int:
    """How the same (benchmark, sample) fares across models (an index of ``data.ACROSS``): 0 under one
    model only, 1 the same segment under every model, 2 different failure modes or judge states of a
    miss, 3 different outcomes."""
    from pointfail.outputs.view import data as vdata

    by_model = segs[(b, sid)]
    if len(by_model) < 2:
        return 0
    vals = set(by_model.values())
    if len(vals) == 1:
        return 1
    outcomes = {("miss" if v in FAILURE_MODES or v in vdata.JUDGE_STATES else v) for v in vals}
    return 3 if len(outcomes) > 1 else 2


_INDEX_COLUMNS = ("m", "b", "id", "o", "md", "j", "c", "l", "q", "x", "d", "t", "sh", "i")
"""The list index's columns: model, benchmark, sample id, outcome, failure mode, judge state,
category, language, quartile, across models, distance (px), thumbnail, detail shard, instruction."""


def _write_index(out: Path, rp: _RecordPass) -> int:
    """The list index as column chunks ``data/index-NNN.js`` (``CHUNK_ROWS`` rows each, rows sorted by
    model, benchmark, sample id; models and benchmarks dictionary-coded); returns the chunk count."""
    idx = rp.idx
    chunks = 0
    for start in range(0, len(idx.rows), CHUNK_ROWS):
        part = idx.rows[start : start + CHUNK_ROWS]
        cols: dict[str, list[Any]] = {k: [] for k in _INDEX_COLUMNS}
        for (m, b, sid, o, md, j, c, lang, q, dist, t, sh, instr, _ann) in part:
            row = (idx.code("model", m), idx.code("benchmark", b), sid, o, md, j, c, lang, q,
                   _across(rp.segs, b, sid), dist, t, sh, instr)
            for k, v in zip(_INDEX_COLUMNS, row):
                cols[k].append(v)
        with open(out / "data" / f"index-{chunks:03d}.js", "w", encoding="utf-8", newline="\n") as f:
            f.write(f"PF.chunks.push({_js(cols)});\n")
        chunks += 1
    return chunks


def _write_annotations(out: Path, idx: _Index) -> None:
    """The rows' annotations (what the list draws on thumbnails) as ``data/annot/NNNN.js``,
    ``ANNOT_ROWS`` rows each, in list order."""
    (out / "data" / "annot").mkdir()
    annots = 0
    for start in range(0, len(idx.rows), ANNOT_ROWS):
        anns = [row[-1] for row in idx.rows[start : start + ANNOT_ROWS]]
        with open(out / "data" / "annot" / f"{annots:04d}.js", "w", encoding="utf-8", newline="\n") as f:
            f.write(f"PF.addAnnot({annots},{_js(anns)});\n")
        annots += 1


def _write_meta(out: Path, study_name: str, rp: _RecordPass, chunks: int, qranges: dict[str, list[list[float]]]) -> None:
    """``data/meta.js``: counts, the dictionaries of the coded columns, the labels and the drawing colours."""
    from pointfail.outputs.view import data as vdata
    from pointfail.outputs.view.style import SEGMENT_LABELS, SEGMENTS
    from pointfail.running.judges.render import GREEN, RED, TINT_ALPHA

    idx = rp.idx
    meta = {
        "study": study_name,
        "records": len(idx.rows),
        "chunks": chunks,
        "shards": rp.shard_no,
        "annot_rows": ANNOT_ROWS,
        "page_size": PAGE_SIZE,
        "dicts": {k: list(v) for k, v in idx.dicts.items() if k not in ("outcome", "judge")},
        "outcomes": list(idx.dicts["outcome"]),
        "modes": list(FAILURE_MODES),
        "judge": list(idx.dicts["judge"]),
        "across": list(vdata.ACROSS),
        "across_labels": list(vdata.ACROSS_LABELS),
        "segments": list(SEGMENTS),
        "labels": SEGMENT_LABELS,
        "thumbs": list(idx.thumbs),
        "quartiles": qranges,
        "missing": {b: {"records": n, "hint": hint} for b, (n, hint) in rp.missing.items()},
        "draw": {"tint": "#{:02x}{:02x}{:02x}".format(*GREEN), "alpha": TINT_ALPHA, "box": "#{:02x}{:02x}{:02x}".format(*RED)},
    }
    with open(out / "data" / "meta.js", "w", encoding="utf-8", newline="\n") as f:
        f.write(f"PF.meta={_js(meta)};\n")


def _study_description(d: Path) -> str:
    """``[study] description`` of ``d/study.toml`` ("" without one)."""
    toml = d / "study.toml"
    if not toml.is_file():
        return ""
    import tomllib

    with open(toml, "rb") as fh:
        return str(tomllib.load(fh).get("study", {}).get("description", ""))


def _write_pages(out: Path, d: Path, study: Any, tables: Any, chunks: int, missing: dict[str, list[Any]]) -> None:
    """The assets, the list, sample and review pages, and the study page ``index.html``."""
    from pointfail.aggregate import POOLED
    from pointfail.outputs.view.pages import asset_text, shell_html, study_page_html
    from pointfail.outputs.view.review import ASSETS as REVIEW_ASSETS, review_html
    from pointfail.outputs.view.style import segment_css

    comp = study.counts
    (out / "assets").mkdir(exist_ok=True)
    (out / "assets" / "style.css").write_text(asset_text("style.css") + segment_css(), encoding="utf-8")
    (out / "assets" / "app.js").write_text(asset_text("app.js"), encoding="utf-8")
    scripts = ["data/meta.js", *(f"data/index-{k:03d}.js" for k in range(chunks))]
    for page in ("list", "sample"):
        (out / f"{page}.html").write_text(shell_html(study.name, page, scripts), encoding="utf-8")
    for name in REVIEW_ASSETS:
        (out / "assets" / name).write_text(asset_text(name), encoding="utf-8")
    (out / "review.html").write_text(review_html(study.name, scripts), encoding="utf-8")
    description = _study_description(d)
    notes = [f"{n} records of {b} have no image in this site: {hint}." for b, (n, hint) in sorted(missing.items())]
    summary = {"models": len(comp.models), "benchmarks": len(comp.benchmarks),
               "errors": sum(comp.cells[(m, POOLED)].error for m in comp.models)}
    (out / "index.html").write_text(
        study_page_html(study.name, description, study_bars(comp), tables, links=True, summary=summary, notes=notes),
        encoding="utf-8")


def _tree_size(out: Path) -> tuple[int, int]:
    """Files under ``out`` and their total size in bytes."""
    n_files = 0
    size = 0
    for root, _dirs, files in os.walk(out):
        for name in files:
            n_files += 1
            size += os.path.getsize(os.path.join(root, name))
    return n_files, size


def build_site(
    study_dir: str | Path,
    out_dir: str | Path | None = None,
    *,
    image_roots: Sequence[str | Path] = (),
    with_images: bool = True,
    log: Optional[Callable[[str], None]] = None,
) -> SiteResult:
    """Write the failure browser of one study (layout in the module docstring).

    Counts come from ``aggregate`` (``load_study``, ``build_tables``), so every number on the study
    page is the committed tables' number; the list and sample pages read every record through
    ``records.read_records``.

    Args:
        study_dir: ``records/<study>``.
        out_dir: the site root (default ``<study>/view``). Files of an earlier build are reused where
            their content hash matches (images) and replaced otherwise.
        image_roots: further directories record image paths may resolve into (besides the checkout
            two levels above the study).
        with_images: ``False`` writes the site without images (pages say so).
        log: progress lines (``None``: silent).

    Returns:
        :class:`SiteResult`.

    Raises:
        RecordError: a record failing the schema (names file and line).
        AggregateError: no records, a duplicate sample, a reserved benchmark name.
    """
    from pointfail.aggregate import build_tables, load_study
    from pointfail.outputs.view.images import ImageStore, find_checkout

    say = log or (lambda _msg: None)
    t0 = time.perf_counter()
    secs: dict[str, float] = {}
    d = Path(study_dir)
    study = load_study(d)
    tables = build_tables(study)
    secs["tables"] = time.perf_counter() - t0
    say(f"[view] {study.records} records, tables computed ({secs['tables']:.1f} s)")

    quart, qranges = _sample_quartiles(study.counts)
    out = _fresh_out_dir(d, out_dir)
    roots = [find_checkout(d), *(Path(r).resolve() for r in image_roots)]
    store = ImageStore(out, d, roots, with_images=with_images)

    t1 = time.perf_counter()
    rp = _write_detail(d, out, store, quart, say)
    secs["records"] = time.perf_counter() - t1

    rp.idx.rows.sort(key=lambda r: (r[0], r[1], r[2]))
    t2 = time.perf_counter()
    chunks = _write_index(out, rp)
    _write_annotations(out, rp.idx)
    _write_meta(out, study.name, rp, chunks, qranges)
    _write_pages(out, d, study, tables, chunks, rp.missing)
    secs["write"] = time.perf_counter() - t2
    secs["total"] = time.perf_counter() - t0

    n_files, size = _tree_size(out)
    say(f"[view] wrote {out}: {n_files} files, {size / 1e6:.1f} MB in {secs['total']:.1f} s")
    return SiteResult(out, len(rp.idx.rows), n_files, size, dict(store.made),
                      {b: (n, hint) for b, (n, hint) in rp.missing.items()}, secs)


def record_key(rec: Record) -> str:
    """The key of a record in the detail files: model, benchmark and sample id joined by U+0001."""
    return f"{rec.model}\x01{rec.benchmark}\x01{rec.sample_id}"
