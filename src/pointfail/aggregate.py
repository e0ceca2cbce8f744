"""Aggregate a study's per-sample records into canonical tables, and verify committed tables.

``records/<study>/<model>/<benchmark>.jsonl`` (exactly two levels below the study directory; the
``tables/`` and ``report/`` folders and hidden folders are skipped) → ``records/<study>/tables/``:

========================== ==========================================================================
``headline.{md,csv}``      hit rate (%) per model × benchmark and pooled, with bootstrap 95% CI
``outcomes.{md,csv}``      n, hit, miss, no_prediction, error, hit rate, CI per model × benchmark/pooled
``failure_composition.*``  the four failure-mode counts and shares over labeled misses; unlabeled,
                           judge_unavailable and pending counted apart
``breakdowns.{md,csv}``    hit rate by every metadata axis of each benchmark and by target-area quartile
``pointing.{md,csv}``      grounding-metrics ``pointing_accuracy`` (point tasks)
``tolerance.{md,csv}``     hits if a point within t px counted, t = 0..50
``box_outcomes.*``         PointerBench box classes (box tasks only)
``grounding.{md,csv}``     IoU sweep 0.25/0.5/0.75/0.9 for box tasks, absent referents apart
``absent.{md,csv}``        absent referents (targets of kind ``absent``)
``official.{md,csv}``      the benchmark's official-rule score beside pointfail's hit rate
``pairwise.{md,csv}``      exact McNemar test and point agreement for every pair of models
``judge_agreement.*``      primary judge vs every other judge on the same misses
``summary.json``           per model, benchmark and pooled counts and rates
``SHA256SUMS``             sha256 of every file above
========================== ==========================================================================

Files whose table would be empty (no box tasks, no absent targets, ...) are not written.

Counting rules (``shared/seeds/pointfail-study.txt``, "Computing the metrics"):

* ``n`` = hit + miss + no_prediction: every scored sample. A no_prediction counts against the hit
  rate exactly like a miss. Infrastructure ``error`` outcomes (the worker could not run the sample)
  are **not** model outcomes: they are counted apart in an ``error`` column and excluded from ``n``,
  from every rate and from every paired comparison; each table says so in its notes.
* Pooled rows sum raw counts over benchmarks; no percentage is ever averaged.
* Failure shares are over labeled misses only; ``unlabeled`` (judge abstained after five attempts),
  ``judge_unavailable`` (judge outage) and ``pending`` (not judged yet) are counted apart, never
  redistributed.
* Rates are exact fractions rounded once, half to even, to the decimals each column states.

Bootstrap settings: ``[aggregate] bootstrap_seed`` (default 0) and ``bootstrap_resamples`` (default
1000) in ``records/<study>/study.toml``, when present; both are printed in the tables' notes and in
``summary.json``.
``[aggregate] notes`` (a list of strings, default none) are added to every table's notes and to
``summary.json``: what the records cover when that is not the whole benchmark (``pointfail evaluate
--only-predicted`` writes it).

Determinism: files are read in sorted path order, every group is a dict keyed by strings and every
output row is sorted by explicit keys; bootstrap seeds derive from the study seed and the cell's
names through sha256; no output depends on locale, hash seed, time zone, directory order or the
order of lines in a records file.
"""

from __future__ import annotations

import contextlib
import difflib
import gc
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Optional

from pointfail import metrics
from pointfail.records import FAILURE_MODES, Record, read_records
from pointfail.tables import (
    NA,
    fmt_fraction,
    fmt_p,
    fmt_pct,
    json_number,
    parse_sha256sums,
    render_csv,
    render_json,
    render_md,
    sha256sums,
)

POOLED = "pooled"
"""Benchmark column value of pooled rows (raw counts summed over benchmarks). Reserved."""

TABLES_DIR = "tables"
SKIP_DIRS = frozenset({TABLES_DIR, "report"})
DEFAULT_BOOTSTRAP_SEED = 0
DEFAULT_BOOTSTRAP_RESAMPLES = 1000
BOX_CLASSES = ("hit", "clipped", "oversized", "both", "malformed")
JUDGE_APART = ("unlabeled", "judge_unavailable", "pending")
ERROR_NOTE = (
    "n = hit + miss + no_prediction (every scored sample); infrastructure errors (outcome `error`) "
    "are counted apart in `error` and excluded from n and from every rate."
)
SUMMARY_SCHEMA = "pointfail.summary/1"


class AggregateError(ValueError):
    """A study directory that cannot be aggregated (no records, duplicate samples, a reserved
    benchmark name). Records failing the schema raise :class:`pointfail.records.RecordError`."""


@dataclass(frozen=True, slots=True)
class Row:
    """The fields of one :class:`~pointfail.records.Record` the tables use (kept small so ~50k
    records aggregate quickly). Points are normalized ``(x, y)``, distances in pixels of the original
    image (``distance_px``) and image diagonals (``distance_norm``)."""

    model: str
    benchmark: str
    sample_id: str
    outcome: str
    task: str
    cluster: str
    judge_status: Optional[str]
    label: Optional[str]
    distance_px: Optional[float]
    distance_norm: Optional[float]
    point: Optional[tuple[float, float]]
    has_box: bool
    box_class: Optional[str]
    iou: Optional[float]
    area_px: Optional[float]
    target_absent: bool
    metadata: tuple[tuple[str, str], ...]
    numeric_keys: frozenset[str]
    official_rule: Optional[str]
    official_score: Optional[float]
    other: tuple[tuple[str, str, Optional[str]], ...] = field(default=())


def _meta_value(v: Any) -> Optional[str]:
    """A scalar metadata value as its canonical string, ``None`` for non-scalars."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return v
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v)
    return None


def row_from_record(r: Record) -> Row:
    """Reduce a :class:`Record` to a :class:`Row`."""
    judge = r.judge if r.outcome == "miss" else None
    status = None
    if r.outcome == "miss":
        status = judge.status if judge is not None else "pending"
    parse = r.parse
    point = None
    has_box = False
    if parse is not None:
        if parse.points:
            point = (float(parse.points[0][0]), float(parse.points[0][1]))
        has_box = bool(parse.boxes)
    g = r.geometry
    box = g.box
    meta = []
    numeric = []
    for k in sorted(r.metadata):
        v = r.metadata[k]
        sv = _meta_value(v)
        if sv is not None:
            meta.append((k, sv))
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                numeric.append(k)
    other = tuple(
        sorted((j.judge, j.status, j.label) for j in r.other_judgments)
    ) if r.outcome == "miss" else ()
    return Row(
        model=r.model,
        benchmark=r.benchmark,
        sample_id=r.sample_id,
        outcome=r.outcome,
        task=r.task,
        cluster=r.image.sha256 or r.image.path,
        judge_status=status,
        label=judge.label if (judge is not None and judge.status == "labeled") else None,
        distance_px=g.distance_px,
        distance_norm=g.distance_norm,
        point=point,
        has_box=has_box,
        box_class=(box.box_class if box is not None else ("malformed" if r.task == "box" else None)),
        iou=box.iou if box is not None else None,
        area_px=r.target.area_px,
        target_absent=r.target.kind == "absent",
        metadata=tuple(meta),
        numeric_keys=frozenset(numeric),
        official_rule=r.official.rule if r.official is not None else None,
        official_score=r.official.score if r.official is not None else None,
        other=other,
    )


@dataclass
class Study:
    """A study's records, reduced to rows: ``name`` (directory name), ``path``, ``files`` (records
    files read, sorted), ``rows`` (sorted by model, benchmark, sample_id), ``config`` (the
    ``[aggregate]`` table of ``study.toml`` when present)."""

    name: str
    path: Path
    files: list[Path]
    rows: list[Row]
    config: dict[str, Any]

    @property
    def bootstrap_seed(self) -> int:
        return int(self.config.get("bootstrap_seed", DEFAULT_BOOTSTRAP_SEED))

    @property
    def bootstrap_resamples(self) -> int:
        return int(self.config.get("bootstrap_resamples", DEFAULT_BOOTSTRAP_RESAMPLES))

    @property
    def notes(self) -> list[str]:
        """``[aggregate] notes``: notes every table of the study carries after its own (what the
        records cover, e.g. ``pointfail evaluate --only-predicted``'s scope); empty by default."""
        return [str(n) for n in self.config.get("notes", [])]


def records_files(study_dir: str | Path) -> list[Path]:
    """The records files of a study: ``<study>/<model>/<benchmark>.jsonl``, sorted by path (as
    UTF-8 bytes, not directory order), skipping ``tables/``, ``report/`` and hidden folders."""
    d = Path(study_dir)
    out = []
    for sub in d.iterdir():
        if not sub.is_dir() or sub.name in SKIP_DIRS or sub.name.startswith("."):
            continue
        out.extend(p for p in sub.glob("*.jsonl") if p.is_file())
    return sorted(out, key=lambda p: str(p.relative_to(d)).encode("utf-8"))


def is_study_dir(path: str | Path) -> bool:
    """Whether ``path`` holds records files two levels down (or a ``study.toml``)."""
    p = Path(path)
    return p.is_dir() and ((p / "study.toml").is_file() or bool(records_files(p)))


@contextlib.contextmanager
def _gc_paused():
    """Pause the cyclic garbage collector while tens of thousands of records and rows are built:
    they hold no reference cycles, and with the collector on, the repeated full collections over
    a growing heap cost more than reading the records (measured in ``bench/aggregate.py``)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def load_study(study_dir: str | Path) -> Study:
    """Read and validate every records file of a study.

    Raises:
        RecordError: a line failing the schema (names file and line).
        AggregateError: no records files; a (model, benchmark, sample_id) appearing twice; a
            benchmark named ``pooled``.
    """
    d = Path(study_dir)
    if not d.is_dir():
        raise AggregateError(f"{d}: not a directory")
    files = records_files(d)
    if not files:
        raise AggregateError(f"{d}: no records files (<model>/<benchmark>.jsonl)")
    config: dict[str, Any] = {}
    name = d.resolve().name
    toml_path = d / "study.toml"
    if toml_path.is_file():
        import tomllib

        with open(toml_path, "rb") as f:
            raw = tomllib.load(f)
        config = dict(raw.get("aggregate", {}))
        # the study's own name, so tables regenerated in another directory (make reproduce writes
        # under work/) carry the same title bytes as the committed ones
        name = str(raw.get("study", {}).get("name") or name)
    rows: list[Row] = []
    seen: dict[tuple[str, str, str], str] = {}
    with _gc_paused():
        _read_rows(files, rows, seen)
    rows.sort(key=lambda r: (r.model, r.benchmark, r.sample_id))
    return Study(name=name, path=d, files=files, rows=rows, config=config)


def _read_rows(files: list[Path], rows: list[Row], seen: dict[tuple[str, str, str], str]) -> None:
    for p in files:
        for rec in read_records(p):
            row = row_from_record(rec)
            if row.benchmark == POOLED:
                raise AggregateError(f"{p}: benchmark name {POOLED!r} is reserved for pooled rows")
            key = (row.model, row.benchmark, row.sample_id)
            if key in seen:
                raise AggregateError(
                    f"{p}: duplicate sample {row.sample_id!r} for model {row.model!r} on {row.benchmark!r} "
                    f"(also in {seen[key]})"
                )
            seen[key] = str(p)
            rows.append(row)


# ----------------------------------------------------------------------------------------------
# counting


@dataclass
class Cell:
    """Counts for one (model, benchmark) or (model, pooled) cell."""

    hit: int = 0
    miss: int = 0
    no_prediction: int = 0
    error: int = 0
    modes: dict[str, int] = field(default_factory=lambda: {m: 0 for m in FAILURE_MODES})
    apart: dict[str, int] = field(default_factory=lambda: {k: 0 for k in JUDGE_APART})

    @property
    def n(self) -> int:
        return self.hit + self.miss + self.no_prediction

    @property
    def labeled(self) -> int:
        return sum(self.modes.values())

    def add(self, r: Row) -> None:
        if r.outcome == "error":
            self.error += 1
            return
        setattr(self, r.outcome, getattr(self, r.outcome) + 1)
        if r.outcome == "miss":
            if r.judge_status == "labeled" and r.label in self.modes:
                self.modes[r.label] += 1
            else:
                self.apart[r.judge_status if r.judge_status in self.apart else "pending"] += 1

    def merge(self, o: "Cell") -> None:
        self.hit += o.hit
        self.miss += o.miss
        self.no_prediction += o.no_prediction
        self.error += o.error
        for k in self.modes:
            self.modes[k] += o.modes[k]
        for k in self.apart:
            self.apart[k] += o.apart[k]


def _group(rows: list[Row]) -> dict[tuple[str, str], list[Row]]:
    g: dict[tuple[str, str], list[Row]] = defaultdict(list)
    for r in rows:
        g[(r.model, r.benchmark)].append(r)
    return g


def _cells_keys(models: list[str], benchmarks_of: dict[str, list[str]]) -> list[tuple[str, str]]:
    """(model, benchmark) keys in table order: models sorted, each model's benchmarks sorted, then
    its pooled row."""
    out = []
    for m in models:
        out.extend((m, b) for b in benchmarks_of[m])
        out.append((m, POOLED))
    return out


@dataclass
class Computed:
    """Everything the tables need, computed once."""

    models: list[str]
    benchmarks: list[str]
    benchmarks_of: dict[str, list[str]]
    groups: dict[tuple[str, str], list[Row]]
    cells: dict[tuple[str, str], Cell]
    ci: dict[tuple[str, str], Optional[tuple[Fraction, Fraction]]]


def compute(study: Study) -> Computed:
    """Counts per cell and bootstrap 95% intervals (resampling images: clusters keyed by
    ``ImageRef.sha256``, or the image path when no hash is recorded; pooled intervals resample each
    benchmark's images on their own and add the replicates)."""
    groups = _group(study.rows)
    models = sorted({m for m, _ in groups})
    benchmarks = sorted({b for _, b in groups})
    benchmarks_of = {m: sorted(b for mm, b in groups if mm == m) for m in models}
    cells: dict[tuple[str, str], Cell] = {}
    ci: dict[tuple[str, str], Optional[tuple[Fraction, Fraction]]] = {}
    seed, resamples = study.bootstrap_seed, study.bootstrap_resamples
    for m in models:
        pooled = Cell()
        ph = pn = None
        for b in benchmarks_of[m]:
            c = Cell()
            clusters: dict[str, list[int]] = {}
            for r in groups[(m, b)]:
                c.add(r)
                if r.outcome != "error":
                    hn = clusters.setdefault(r.cluster, [0, 0])
                    hn[0] += r.outcome == "hit"
                    hn[1] += 1
            cells[(m, b)] = c
            pooled.merge(c)
            if clusters:
                ordered = [(clusters[k][0], clusters[k][1]) for k in sorted(clusters)]
                h, n = metrics.bootstrap_replicates(ordered, seed=metrics.derive_seed(seed, m, b), resamples=resamples)
                ci[(m, b)] = metrics.percentile_interval(h, n)
                ph = h if ph is None else ph + h
                pn = n if pn is None else pn + n
            else:
                ci[(m, b)] = None
        cells[(m, POOLED)] = pooled
        ci[(m, POOLED)] = metrics.percentile_interval(ph, pn) if ph is not None else None
    return Computed(models, benchmarks, benchmarks_of, groups, cells, ci)


def _rows_of(comp: Computed, m: str, b: str) -> list[Row]:
    if b == POOLED:
        return [r for bb in comp.benchmarks_of[m] for r in comp.groups[(m, bb)]]
    return comp.groups[(m, b)]


def _ci_cells(ci: Optional[tuple[Fraction, Fraction]]) -> tuple[str, str]:
    if ci is None:
        return NA, NA
    return fmt_fraction(ci[0], 1, scale=100), fmt_fraction(ci[1], 1, scale=100)


# ----------------------------------------------------------------------------------------------
# tables


def _t_headline(study: Study, comp: Computed) -> dict[str, bytes]:
    cols = comp.benchmarks + [POOLED]
    rows_md, rows_csv = [], []
    for m in comp.models:
        md = [m]
        for b in cols:
            c = comp.cells.get((m, b))
            if c is None:
                md.append("")
                continue
            lo, hi = _ci_cells(comp.ci[(m, b)])
            rate = fmt_pct(c.hit, c.n)
            md.append(f"{rate} [{lo}, {hi}]" if c.n else NA)
            rows_csv.append([m, b, str(c.n), str(c.hit), rate, lo, hi])
        rows_md.append(md)
    notes = [
        "Point-in-target hit rate (%) = hit / n, with a bootstrap 95% interval [low, high].",
        ERROR_NOTE,
        "`pooled` sums raw counts over the model's benchmarks (never an average of percentages).",
        f"Intervals: percentile bootstrap resampling images (not prompts), {study.bootstrap_resamples} "
        f"resamples, seed {study.bootstrap_seed}; pooled intervals resample each benchmark's images apart.",
    ]
    return {
        "headline.md": render_md(f"Hit rate (%): {study.name}", notes + study.notes, [(None, ["model", *cols], rows_md)]),
        "headline.csv": render_csv(["model", "benchmark", "n", "hit", "hit_rate_pct", "ci95_low_pct", "ci95_high_pct"], rows_csv),
    }


def _t_outcomes(study: Study, comp: Computed) -> dict[str, bytes]:
    headers = ["model", "benchmark", "n", "hit", "miss", "no_prediction", "error", "hit_rate_pct", "ci95_low_pct", "ci95_high_pct", "no_prediction_pct"]
    rows = []
    for m, b in _cells_keys(comp.models, comp.benchmarks_of):
        c = comp.cells[(m, b)]
        lo, hi = _ci_cells(comp.ci[(m, b)])
        rows.append([m, b, str(c.n), str(c.hit), str(c.miss), str(c.no_prediction), str(c.error), fmt_pct(c.hit, c.n), lo, hi, fmt_pct(c.no_prediction, c.n)])
    notes = [ERROR_NOTE, "Rates are % of n, rounded once to 0.1 (half to even).", "`pooled` sums raw counts."]
    return {
        "outcomes.md": render_md(f"Outcomes: {study.name}", notes + study.notes, [(None, headers, rows)]),
        "outcomes.csv": render_csv(headers, rows),
    }


def _t_failures(study: Study, comp: Computed) -> dict[str, bytes]:
    headers = ["model", "benchmark", "miss", "labeled", *FAILURE_MODES, *[f"{k}_pct" for k in FAILURE_MODES], *JUDGE_APART]
    rows = []
    for m, b in _cells_keys(comp.models, comp.benchmarks_of):
        c = comp.cells[(m, b)]
        lab = c.labeled
        rows.append(
            [m, b, str(c.miss), str(lab)]
            + [str(c.modes[k]) for k in FAILURE_MODES]
            + [fmt_pct(c.modes[k], lab) for k in FAILURE_MODES]
            + [str(c.apart[k]) for k in JUDGE_APART]
        )
    notes = [
        "Failure modes of misses, least to most severe; shares (%) are over labeled misses only.",
        "`unlabeled`: the judge gave no single clean label in five attempts (abstention); "
        "`judge_unavailable`: judge outage; `pending`: not judged yet. Counted apart, never redistributed: "
        "miss = labeled + unlabeled + judge_unavailable + pending.",
        ERROR_NOTE,
    ]
    return {
        "failure_composition.md": render_md(f"Failure composition: {study.name}", notes + study.notes, [(None, headers, rows)]),
        "failure_composition.csv": render_csv(headers, rows),
    }


def area_quartiles(rows: list[Row]) -> tuple[dict[str, int], list[tuple[int, float, float]]]:
    """Assign each sample of one benchmark to a target-area quartile.

    Thresholds are nearest-rank quartiles of the distinct samples' ``Target.area_px``:
    ``q_k = sorted_areas[ceil(k * N / 4) - 1]`` for k = 1, 2, 3; a sample is in quartile 1 when
    ``area <= q_1``, 2 when ``area <= q_2``, 3 when ``area <= q_3``, else 4 (tied areas share a
    quartile). Samples without an area are left out.

    Returns:
        ``({sample_id: quartile}, [(quartile, min_area, max_area), ...])``.
    """
    area: dict[str, float] = {}
    for r in rows:
        if r.area_px is not None and r.sample_id not in area:
            area[r.sample_id] = float(r.area_px)
    if not area:
        return {}, []
    s = sorted(area.values())
    n = len(s)
    q = [s[-(-k * n // 4) - 1] for k in (1, 2, 3)]
    assign = {}
    for sid, a in area.items():
        assign[sid] = 1 if a <= q[0] else 2 if a <= q[1] else 3 if a <= q[2] else 4
    ranges = []
    for k in (1, 2, 3, 4):
        vals = [area[sid] for sid, qq in assign.items() if qq == k]
        if vals:
            ranges.append((k, min(vals), max(vals)))
    return assign, ranges


MAX_NUMERIC_LEVELS = 20
"""A numeric metadata axis is broken down only when it has at most this many distinct values (a
level such as ``difficulty: 1..5``); continuous values (coordinates, sizes) are not categories."""


def _breakdown_axes(rows: list[Row]) -> list[str]:
    """Metadata axes of a benchmark worth a breakdown: scalar values with at least two distinct
    values; not an identifier (an axis whose every sample has its own value, e.g. ``source_id``);
    numeric axes only with at most :data:`MAX_NUMERIC_LEVELS` distinct values."""
    values: dict[str, dict[str, str]] = defaultdict(dict)
    numeric: set[str] = set()
    samples = set()
    for r in rows:
        samples.add(r.sample_id)
        numeric |= r.numeric_keys
        for k, v in r.metadata:
            values[k][r.sample_id] = v
    axes = []
    for k in sorted(values):
        distinct = set(values[k].values())
        if len(distinct) < 2:
            continue
        if len(distinct) == len(samples) and len(samples) > 4:
            continue
        if k in numeric and len(distinct) > MAX_NUMERIC_LEVELS:
            continue
        axes.append(k)
    return axes


AREA_AXIS = "target_area_quartile"


def _t_breakdowns(study: Study, comp: Computed) -> dict[str, bytes]:
    headers = ["benchmark", "axis", "value", "model", "n", "hit", "miss", "no_prediction", "error", "hit_rate_pct"]
    csv_rows: list[list[str]] = []
    sections = []
    for b in comp.benchmarks:
        brows = [r for m in comp.models for r in comp.groups.get((m, b), [])]
        models = [m for m in comp.models if (m, b) in comp.groups]
        axes = _breakdown_axes(brows)
        assign, ranges = area_quartiles(brows)
        range_txt = {k: f"Q{k} [{lo:.1f}, {hi:.1f}] px" for k, lo, hi in ranges}
        per_axis: list[tuple[str, dict[tuple[str, str], Cell]]] = []
        metas = [dict(r.metadata) for r in brows]
        for ax in axes + ([AREA_AXIS] if assign else []):
            cells: dict[tuple[str, str], Cell] = defaultdict(Cell)
            for r, meta in zip(brows, metas):
                if ax == AREA_AXIS:
                    qq = assign.get(r.sample_id)
                    v = range_txt[qq] if qq is not None else "(no area)"
                else:
                    v = meta.get(ax, "(none)")
                cells[(v, r.model)].add(r)
            per_axis.append((ax, cells))
        for ax, cells in per_axis:
            values = sorted({v for v, _ in cells})
            md_rows = []
            for v in values:
                md = [v]
                for m in models:
                    c = cells.get((v, m))
                    if c is None:
                        md.append("")
                        continue
                    csv_rows.append([b, ax, v, m, str(c.n), str(c.hit), str(c.miss), str(c.no_prediction), str(c.error), fmt_pct(c.hit, c.n)])
                    md.append(f"{fmt_pct(c.hit, c.n)} ({c.hit}/{c.n})")
                md_rows.append(md)
            sections.append((f"{b}: {ax}", [ax, *models], md_rows))
    notes = [
        "Hit rate (%) with (hit/n) per value of every metadata axis a benchmark carries (scalar axes with "
        f"at least two values; per-sample identifiers and numeric axes with more than {MAX_NUMERIC_LEVELS} "
        "distinct values left out) and per quartile of target area.",
        "Area quartiles: nearest-rank quartiles of Target.area_px over the benchmark's distinct samples; "
        "tied areas share a quartile; [min, max] area of the quartile's samples in pixels.",
        ERROR_NOTE,
    ]
    return {
        "breakdowns.md": render_md(f"Breakdowns: {study.name}", notes + study.notes, sections),
        "breakdowns.csv": render_csv(headers, csv_rows),
    }


def _t_pointing(study: Study, comp: Computed) -> dict[str, bytes]:
    headers = ["model", "benchmark", "n", "n_hits", "point_in_region_pct", "n_misses", "n_no_point", "mean_miss_distance_norm", "mean_miss_distance_px"]
    rows = []
    for m, b in _cells_keys(comp.models, comp.benchmarks_of):
        rs = [r for r in _rows_of(comp, m, b) if r.task == "point" and r.outcome != "error"]
        if not rs:
            continue
        items = [{"in_region": {"hit": True, "miss": False}.get(r.outcome), "distance": r.distance_norm} for r in rs]
        pa = metrics.pointing_accuracy(items)
        px = metrics.pointing_accuracy({"in_region": i["in_region"], "distance": r.distance_px} for i, r in zip(items, rs))
        rows.append([m, b, str(pa["n"]), str(pa["n_hits"]), fmt_fraction(pa["point_in_region"], 1, scale=100), str(pa["n_misses"]), str(pa["n_no_point"]), fmt_fraction(pa["mean_miss_distance"], 4), fmt_fraction(px["mean_miss_distance"], 1)])
    if not rows:
        return {}
    notes = [
        "Grounding-metrics `pointing_accuracy` over point tasks: point_in_region = n_hits / n (a sample with no point is not in the region).",
        "mean_miss_distance is over misses only (distance from the primary point to the nearest target pixel), "
        "in image diagonals (`_norm`) and in pixels of the original image (`_px`).",
        ERROR_NOTE,
    ]
    return {
        "pointing.md": render_md(f"Pointing accuracy: {study.name}", notes + study.notes, [(None, headers, rows)]),
        "pointing.csv": render_csv(headers, rows),
    }


TOLERANCE_MD_COLUMNS = (0, 1, 2, 5, 10, 20, 30, 50)


def tolerance_table(comp: Computed) -> list[tuple[str, str, int, int, int]]:
    """``(model, benchmark, t, hits_within_t, n)`` for every cell and t = 0..50 px."""
    out = []
    for m, b in _cells_keys(comp.models, comp.benchmarks_of):
        items = [(r.outcome, r.distance_px) for r in _rows_of(comp, m, b) if r.outcome != "error"]
        for t, h, n in metrics.tolerance_curve(items):
            out.append((m, b, t, h, n))
    return out


def _t_tolerance(study: Study, comp: Computed) -> dict[str, bytes]:
    tab = tolerance_table(comp)
    csv_rows = [[m, b, str(t), str(h), str(n), fmt_pct(h, n)] for m, b, t, h, n in tab]
    by = {(m, b, t): (h, n) for m, b, t, h, n in tab}
    md_rows = []
    for m, b in _cells_keys(comp.models, comp.benchmarks_of):
        md_rows.append([m, b] + [fmt_pct(*by[(m, b, t)]) for t in TOLERANCE_MD_COLUMNS])
    notes = [
        "Hit rate (%) if a point within t pixels (of the original image) of the target counted as a hit: "
        "hits plus misses with recorded distance_px <= t, over n; no_prediction never counts.",
        "tolerance.csv holds every t = 0..50.",
        ERROR_NOTE,
    ]
    return {
        "tolerance.md": render_md(f"Tolerance curve: {study.name}", notes + study.notes, [(None, ["model", "benchmark", *[f"t={t}" for t in TOLERANCE_MD_COLUMNS]], md_rows)]),
        "tolerance.csv": render_csv(["model", "benchmark", "t_px", "hits_within_t", "n", "rate_pct"], csv_rows),
    }


def _t_box(study: Study, comp: Computed) -> dict[str, bytes]:
    if not any(r.task == "box" for r in study.rows):
        return {}
    headers = ["model", "benchmark", "n_box", *BOX_CLASSES, *[f"{k}_pct" for k in BOX_CLASSES], "error"]
    rows = []
    g_headers = ["model", "benchmark", "n_scored", *[f"iou>={t}_pct" for t in ("0.25", "0.5", "0.75", "0.9")], "correctly_declined", "hallucinated_a_location", "missed_a_present_referent", "unanswered"]
    g_rows = []
    for m, b in _cells_keys(comp.models, comp.benchmarks_of):
        rs = [r for r in _rows_of(comp, m, b) if r.task == "box"]
        if not rs:
            continue
        scored = [r for r in rs if r.outcome != "error"]
        counts = {k: 0 for k in BOX_CLASSES}
        for r in scored:
            counts[r.box_class or "malformed"] += 1
        n = len(scored)
        rows.append([m, b, str(n)] + [str(counts[k]) for k in BOX_CLASSES] + [fmt_pct(counts[k], n) for k in BOX_CLASSES] + [str(len(rs) - n)])
        ga = metrics.grounding_accuracy(
            {"iou": r.iou, "truth_absent": r.target_absent, "prediction_absent": not r.has_box, "answered": r.outcome != "error"} for r in rs
        )
        g_rows.append([m, b, str(ga["n_scored"])] + [fmt_fraction(ga["at"][t]["accuracy"], 1, scale=100) for t in ("0.25", "0.5", "0.75", "0.9")] + [str(ga[k]) for k in ("correctly_declined", "hallucinated_a_location", "missed_a_present_referent", "unanswered")])
    notes = [
        "PointerBench box outcome classes: hit (coverage >= 0.90 and precision >= 0.70), clipped (coverage too low), "
        "oversized (precision too low), both, malformed (no valid box; counted as a failure). % of n_box.",
        "error: infrastructure errors, excluded from n_box.",
    ]
    g_notes = [
        "Grounding-metrics `grounding_accuracy` over box tasks: % of located present referents (n_scored) with IoU >= t.",
        "Not IoUs, so counted apart: correctly_declined / hallucinated_a_location (referent absent), "
        "missed_a_present_referent (referent present, no box given). unanswered = infrastructure errors, excluded.",
    ]
    return {
        "box_outcomes.md": render_md(f"Box outcomes: {study.name}", notes + study.notes, [(None, headers, rows)]),
        "box_outcomes.csv": render_csv(headers, rows),
        "grounding.md": render_md(f"Grounding accuracy (IoU sweep): {study.name}", g_notes + study.notes, [(None, g_headers, g_rows)]),
        "grounding.csv": render_csv(g_headers, g_rows),
    }


def _t_absent(study: Study, comp: Computed) -> dict[str, bytes]:
    if not any(r.target_absent for r in study.rows):
        return {}
    headers = ["model", "benchmark", "n_absent", "correctly_declined", "hallucinated_a_location", "declined_pct", "unanswered"]
    rows = []
    for m, b in _cells_keys(comp.models, comp.benchmarks_of):
        rs = [r for r in _rows_of(comp, m, b) if r.target_absent]
        if not rs:
            continue
        ga = metrics.grounding_accuracy(
            {"truth_absent": True, "prediction_absent": r.point is None and not r.has_box, "answered": r.outcome != "error"} for r in rs
        )
        n = ga["correctly_declined"] + ga["hallucinated_a_location"]
        rows.append([m, b, str(n), str(ga["correctly_declined"]), str(ga["hallucinated_a_location"]), fmt_pct(ga["correctly_declined"], n), str(ga["unanswered"])])
    notes = [
        "Samples whose referent is absent from the image (Target.kind = absent), counted apart as the grounding-metrics "
        "document does: correctly_declined (no point or box given), hallucinated_a_location (a location given anyway).",
        "unanswered: infrastructure errors, excluded from n_absent.",
    ]
    return {
        "absent.md": render_md(f"Absent referents: {study.name}", notes + study.notes, [(None, headers, rows)]),
        "absent.csv": render_csv(headers, rows),
    }


def _t_official(study: Study, comp: Computed) -> dict[str, bytes]:
    if not any(r.official_score is not None for r in study.rows):
        return {}
    headers = ["model", "benchmark", "n_official", "official_score_pct", "pointfail_n", "pointfail_hit_rate_pct", "rule"]
    rows = []
    for m, b in _cells_keys(comp.models, comp.benchmarks_of):
        rs = [r for r in _rows_of(comp, m, b) if r.official_score is not None and r.outcome != "error"]
        if not rs:
            continue
        mean = metrics.exact_mean([r.official_score for r in rs])
        c = comp.cells[(m, b)]
        rule = "(each benchmark's own rule)" if b == POOLED else "; ".join(sorted({r.official_rule or "" for r in rs}))
        rows.append([m, b, str(len(rs)), fmt_fraction(mean, 1, scale=100), str(c.n), fmt_pct(c.hit, c.n), rule])
    notes = [
        "Each benchmark's own scoring rule (OfficialScore in the records, mean over scored samples with one) beside "
        "pointfail's point-in-target hit rate; pooled rows pool the samples, not the percentages.",
        ERROR_NOTE,
    ]
    return {
        "official.md": render_md(f"Official-rule scores: {study.name}", notes + study.notes, [(None, headers, rows)]),
        "official.csv": render_csv(headers, rows),
    }


def _t_pairwise(study: Study, comp: Computed) -> dict[str, bytes]:
    if len(comp.models) < 2:
        return {}
    headers = ["benchmark", "model_a", "model_b", "n_paired", "both_hit", "a_only", "b_only", "neither", "mcnemar_p", "n_both_point", "mean_point_distance", "median_point_distance"]
    rows = []
    by_model: dict[str, dict[tuple[str, str], Row]] = defaultdict(dict)
    for r in study.rows:
        if r.outcome != "error":
            by_model[r.model][(r.benchmark, r.sample_id)] = r
    for i, a in enumerate(comp.models):
        for bm in comp.models[i + 1:]:
            common = sorted(by_model[a].keys() & by_model[bm].keys())
            per_bench: dict[str, list[tuple[str, str]]] = defaultdict(list)
            for k in common:
                per_bench[k[0]].append(k)
            for b in sorted(per_bench) + ([POOLED] if common else []):
                keys = common if b == POOLED else per_bench[b]
                ra = [by_model[a][k] for k in keys]
                rb = [by_model[bm][k] for k in keys]
                mc = metrics.mcnemar([r.outcome == "hit" for r in ra], [r.outcome == "hit" for r in rb])
                ag = metrics.agreement([r.point for r in ra], [r.point for r in rb])
                rows.append([b, a, bm, str(mc["n"]), str(mc["both"]), str(mc["a_only"]), str(mc["b_only"]), str(mc["neither"]), fmt_p(mc["p_value"]), str(ag["n_pairs"]), fmt_fraction(ag["mean_distance"], 4), fmt_fraction(ag["median_distance"], 4)])
    rows.sort(key=lambda r: (r[0] == POOLED, r[0], r[1], r[2]))
    notes = [
        "Paired comparison on the samples both models were scored on (errors on either side excluded): exact McNemar "
        "test, two-sided p = min(1, 2 P(X <= min(a_only, b_only))), X ~ Binomial(a_only + b_only, 1/2) "
        "(= scipy.stats.binomtest(a_only, a_only + b_only, 0.5).pvalue), exact, printed to 4 significant digits.",
        "Point agreement (grounding-metrics document): mean and median Euclidean distance between the two models' "
        "primary points in normalized image units (0 = same point), over samples where both gave a point.",
    ]
    return {
        "pairwise.md": render_md(f"Paired comparisons: {study.name}", notes + study.notes, [(None, headers, rows)]),
        "pairwise.csv": render_csv(headers, rows),
    }


def _t_judge_agreement(study: Study, comp: Computed) -> dict[str, bytes]:
    if not any(r.other for r in study.rows):
        return {}
    headers = ["model", "benchmark", "other_judge", "misses", "both_labeled", "agree", "agreement_pct", "other_unlabeled", "other_unavailable"]
    from pointfail.judge.agreement import agreement

    rows = []
    for m, b in _cells_keys(comp.models, comp.benchmarks_of):
        pairs: dict[str, list[tuple[Optional[str], str, Optional[str]]]] = defaultdict(list)
        for r in _rows_of(comp, m, b):
            if r.outcome != "miss":
                continue
            for judge, status, label in r.other:
                pairs[judge].append((r.label, status, label))
        for judge in sorted(pairs):
            a = agreement(pairs[judge])
            rows.append([m, b, judge, str(a["n"]), str(a["n_labeled"]), str(a["agree"]),
                         fmt_pct(a["agree"], a["n_labeled"]), str(a["abstentions"]), str(a["unavailable"])])
    notes = ["Agreement of each further judge with the study's primary judge on the same misses: % of misses both labeled that got the same label."]
    return {
        "judge_agreement.md": render_md(f"Judge agreement: {study.name}", notes + study.notes, [(None, headers, rows)]),
        "judge_agreement.csv": render_csv(headers, rows),
    }


def _summary(study: Study, comp: Computed) -> dict[str, bytes]:
    def cell_json(m: str, b: str) -> dict[str, Any]:
        c = comp.cells[(m, b)]
        ci = comp.ci[(m, b)]
        d: dict[str, Any] = {
            "n": c.n,
            "hit": c.hit,
            "miss": c.miss,
            "no_prediction": c.no_prediction,
            "errors": c.error,
            "hit_rate": json_number(Fraction(c.hit, c.n), 6) if c.n else None,
            "hit_rate_ci95": [json_number(ci[0], 6), json_number(ci[1], 6)] if ci else None,
            "labeled": c.labeled,
        }
        d.update(c.modes)
        d.update(c.apart)
        return d

    out: dict[str, Any] = {
        "schema": SUMMARY_SCHEMA,
        "study": study.name,
        "rules": {
            "n": "hit + miss + no_prediction; errors counted apart, excluded from n",
            "hit_rate": "hit / n, rounded once to 6 decimals",
            "pooled": "raw counts summed over benchmarks",
            "failure_modes": "counts of labeled misses; unlabeled, judge_unavailable and pending apart",
        },
        "bootstrap": {"seed": study.bootstrap_seed, "resamples": study.bootstrap_resamples, "level": 0.95, "cluster": "image"},
        "models": {
            m: {"benchmarks": {b: cell_json(m, b) for b in comp.benchmarks_of[m]}, POOLED: cell_json(m, POOLED)}
            for m in comp.models
        },
    }
    if study.notes:  # only when a study has them, so other studies' summaries keep their bytes
        out["notes"] = study.notes
    return {"summary.json": render_json(out)}


TABLE_BUILDERS = (
    _t_headline,
    _t_outcomes,
    _t_failures,
    _t_breakdowns,
    _t_pointing,
    _t_tolerance,
    _t_box,
    _t_absent,
    _t_official,
    _t_pairwise,
    _t_judge_agreement,
    _summary,
)


def build_tables(study: Study) -> dict[str, bytes]:
    """Every table file's name and bytes, ``SHA256SUMS`` included."""
    with _gc_paused():
        comp = compute(study)
        files: dict[str, bytes] = {}
        for f in TABLE_BUILDERS:
            files.update(f(study, comp))
    files["SHA256SUMS"] = sha256sums(files)
    return files


def write_tables(files: dict[str, bytes], out_dir: str | Path) -> list[Path]:
    """Write table files into ``out_dir`` (created). Table files a previous run wrote there (the
    names in its ``SHA256SUMS``) that this run does not produce are removed, so the folder never
    keeps a stale table; nothing else in the folder is touched. Returns the paths written."""
    d = Path(out_dir)
    d.mkdir(parents=True, exist_ok=True)
    old_sums = d / "SHA256SUMS"
    if old_sums.is_file():
        try:
            previous = parse_sha256sums(old_sums.read_bytes())
        except ValueError:
            previous = {}
        for name in previous:
            old = d / name
            if name not in files and "/" not in name and old.is_file():
                old.unlink()
    paths = []
    for name in sorted(files):
        p = d / name
        with open(p, "wb") as f:
            f.write(files[name])
        paths.append(p)
    return paths


def aggregate(study_dir: str | Path, out_dir: str | Path | None = None) -> dict[str, bytes]:
    """Aggregate ``study_dir``'s records into ``out_dir`` (default ``<study_dir>/tables``).

    Returns the files written (name → bytes).

    Raises:
        RecordError, AggregateError: see :func:`load_study`.
    """
    study = load_study(study_dir)
    files = build_tables(study)
    write_tables(files, Path(out_dir) if out_dir is not None else Path(study_dir) / TABLES_DIR)
    return files


@dataclass
class VerifyResult:
    """Outcome of :func:`verify` for one study: ``ok``; ``problems`` (one line each: a differing,
    missing or unexpected table, or a SHA256SUMS line that does not match its committed file);
    ``diffs`` (name → unified diff of committed vs regenerated); ``headline`` (regenerated
    headline.md text)."""

    study: str
    ok: bool
    problems: list[str]
    diffs: dict[str, str]
    headline: str


def _decode(b: bytes) -> list[str]:
    return b.decode("utf-8", errors="replace").splitlines(keepends=True)


def verify(study_dir: str | Path) -> VerifyResult:
    """Regenerate a study's tables in a temporary directory and compare them byte for byte with the
    committed ``<study>/tables/`` and its ``SHA256SUMS``.

    Raises:
        RecordError: a records line failing the schema (file and line in the message).
        AggregateError: see :func:`load_study`.
    """
    d = Path(study_dir)
    study = load_study(d)
    with tempfile.TemporaryDirectory(prefix="pointfail-verify-") as tmp:
        write_tables(build_tables(study), tmp)
        fresh = {p.name: p.read_bytes() for p in sorted(Path(tmp).iterdir())}
    committed_dir = d / TABLES_DIR
    problems: list[str] = []
    diffs: dict[str, str] = {}
    committed: dict[str, bytes] = {}
    if not committed_dir.is_dir():
        problems.append(f"{committed_dir}: no committed tables (run `pointfail aggregate {d}`)")
    else:
        for p in sorted(committed_dir.iterdir()):
            if p.is_file() and (p.suffix in {".md", ".csv", ".json"} or p.name == "SHA256SUMS"):
                committed[p.name] = p.read_bytes()
    if committed:
        if "SHA256SUMS" in committed:
            try:
                sums = parse_sha256sums(committed["SHA256SUMS"])
            except ValueError as e:
                sums = {}
                problems.append(f"{committed_dir / 'SHA256SUMS'}: {e}")
            from hashlib import sha256

            for name, h in sorted(sums.items()):
                if name not in committed:
                    problems.append(f"{committed_dir / name}: listed in SHA256SUMS but missing")
                elif sha256(committed[name]).hexdigest() != h:
                    problems.append(f"{committed_dir / name}: does not match its line in the committed SHA256SUMS")
        for name in sorted(set(fresh) | set(committed)):
            if name not in committed:
                problems.append(f"{committed_dir / name}: missing (regeneration produces it)")
            elif name not in fresh:
                problems.append(f"{committed_dir / name}: unexpected (regeneration does not produce it)")
            elif committed[name] != fresh[name]:
                problems.append(f"{committed_dir / name}: differs from the regenerated table")
                diffs[name] = "".join(
                    difflib.unified_diff(
                        _decode(committed[name]), _decode(fresh[name]),
                        fromfile=f"committed/{name}", tofile=f"regenerated/{name}",
                    )
                )
    return VerifyResult(study=study.name, ok=not problems, problems=problems, diffs=diffs, headline=fresh["headline.md"].decode("utf-8"))


def find_studies(path: str | Path) -> list[Path]:
    """``path`` itself when it is a study directory (records files or a ``study.toml``), else its
    subdirectories that hold records files (a records root such as ``records/``; a study with only
    a ``study.toml`` and no records yet is left out, see :func:`studies_without_records`), sorted by
    name.

    Raises:
        AggregateError: when neither holds any study with records.
    """
    p = Path(path)
    if is_study_dir(p):
        return [p]
    if p.is_dir():
        subs = sorted((s for s in p.iterdir() if s.is_dir() and not s.name.startswith(".") and records_files(s)), key=lambda s: s.name.encode("utf-8"))
        if subs:
            return subs
    raise AggregateError(f"{p}: no study with records here (expected <study>/<model>/<benchmark>.jsonl)")


def studies_without_records(root: str | Path) -> list[Path]:
    """Subdirectories of a records root with a ``study.toml`` but no records files yet."""
    p = Path(root)
    if not p.is_dir() or is_study_dir(p):
        return []
    return sorted((s for s in p.iterdir() if s.is_dir() and (s / "study.toml").is_file() and not records_files(s)), key=lambda s: s.name.encode("utf-8"))


__all__ = [
    "AggregateError",
    "Row",
    "Study",
    "VerifyResult",
    "aggregate",
    "area_quartiles",
    "build_tables",
    "find_studies",
    "load_study",
    "records_files",
    "row_from_record",
    "studies_without_records",
    "verify",
    "write_tables",
]
