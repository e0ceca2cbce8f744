"""The plan of a study's work: cells (model x benchmark shard) grouped into shards, one container per
shard (issue 18; ``shared/DESIGN.md``, "More than one machine").

``pointfail-runner plan --study records/<study>/study.toml`` reads the study through
:mod:`pointfail.inputs.study`, loads every benchmark's samples (sorted by ``sample_id``, as every loader
returns them) and splits each model's work into shards:

* a model's work is the list of ``(benchmark, sample_id)`` pairs, benchmarks in study order, samples
  in ``sample_id`` order;
* the list is cut into ``k`` contiguous shards of near-equal length (``k = ceil(total / shard_size)``,
  or ``shards`` when given; shard ``j`` holds items ``floor(j*total/k)`` to ``floor((j+1)*total/k)``),
  so a shard may span benchmarks;
* within a shard, the items of one benchmark form a **cell**: the unit of status and merge.

One container runs one shard: it loads the model once and answers every cell of the shard (the
worker takes one requests/responses pair per cell). With the default ``shard_size`` every model of
the default study is one shard, i.e. one container per model. Slurm array index ``i`` and a
Kubernetes Indexed Job's completion index ``i`` both pick shard ``i`` of their model.

The plan file is canonical JSON (sorted keys, two-space indent, ``\\n``): the same study, data and
options give the same bytes on any machine. It names no machine's paths; the folders a plan runs in
(data, weights, the run folder on shared storage) are given to ``submit``/``status``/``merge``.

Plan file::

    {"schema": "pointfail.plan/1", "study": "default", "study_file": "records/default/study.toml",
     "study_sha256": "<hex>", "shard_size": 500,
     "benchmarks": {"sheets": 150, ...},
     "models": [{"name": "center", "family": "center", "image": "center", "gpus": 0,
                 "shards": [{"index": 0, "cells": [{"benchmark": "sheets", "sample_ids": [...]}, ...]}]}]}
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Callable, Final, Iterator, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

PLAN_SCHEMA: Final = "pointfail.plan/1"
DEFAULT_SHARD_SIZE = 1000
"""Samples per shard when neither ``shard_size`` nor ``shards`` is given: large enough that each
model of the default study (400 samples) is one shard, one container."""
MAX_PLAN_BYTES = 256 << 20
"""Bytes of a plan file read back (a plan of a million samples is about 30 MB)."""


class PlanError(ValueError):
    """A plan cannot be made or used: the study or its data cannot be read, a plan file is invalid or
    was made for another version of the study file. The message says which and what to do."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


def _name(v: str) -> str:
    from pointfail.inputs.study import check_name

    return check_name(v)


class PlanCell(_Strict):
    """One cell: the samples of one benchmark that one shard of one model answers (``sample_ids``
    sorted, unique, non-empty)."""

    benchmark: str
    sample_ids: list[str] = Field(min_length=1)

    @field_validator("benchmark")
    @classmethod
    def _bench(cls, v: str) -> str:
        return _name(v)

    @field_validator("sample_ids")
    @classmethod
    def _ids(cls, v: list[str]) -> list[str]:
        if any(not s or len(s) > 512 for s in v):
            raise ValueError("sample ids are 1-512 characters")
        if v != sorted(set(v)):
            raise ValueError("sample_ids must be sorted and unique")
        return v


class PlanShard(_Strict):
    """Shard ``index`` of a model: its cells, in study benchmark order (one container runs them all)."""

    index: int = Field(ge=0)
    cells: list[PlanCell] = Field(min_length=1)

    @property
    def n_samples(self) -> int:
        """Samples in the shard (all cells)."""
        return sum(len(c.sample_ids) for c in self.cells)


class PlanModel(_Strict):
    """A model's shards. ``image`` names ``images/<image>/``; ``gpus`` is what each shard requests
    (0 on a CPU plan)."""

    name: str
    family: str
    image: str
    gpus: int = Field(default=0, ge=0, le=64)
    shards: list[PlanShard] = Field(min_length=1)

    @field_validator("name", "image")
    @classmethod
    def _names(cls, v: str) -> str:
        return _name(v)

    @model_validator(mode="after")
    def _indexed(self) -> "PlanModel":
        if [s.index for s in self.shards] != list(range(len(self.shards))):
            raise ValueError(f"model {self.name!r}: shard indices must be 0..{len(self.shards) - 1} in order")
        return self


class Plan(_Strict):
    """A study's work as shards of cells (see the module docstring)."""

    schema_: Literal["pointfail.plan/1"] = Field(default=PLAN_SCHEMA, alias="schema")
    study: str
    study_file: str
    study_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    shard_size: int = Field(ge=1)
    benchmarks: dict[str, int]
    models: list[PlanModel]

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, populate_by_name=True)

    @model_validator(mode="after")
    def _consistent(self) -> "Plan":
        _name(self.study)
        problems = []
        for m in self.models:
            counts: dict[str, int] = {}
            seen: set[tuple[str, str]] = set()
            for s in m.shards:
                for c in s.cells:
                    if c.benchmark not in self.benchmarks:
                        problems.append(f"model {m.name} shard {s.index}: unknown benchmark {c.benchmark!r}")
                        continue
                    counts[c.benchmark] = counts.get(c.benchmark, 0) + len(c.sample_ids)
                    for sid in c.sample_ids:
                        if (c.benchmark, sid) in seen:
                            problems.append(f"model {m.name}: {c.benchmark}/{sid} is in two cells")
                        seen.add((c.benchmark, sid))
            if counts != self.benchmarks:
                problems.append(f"model {m.name}: cells cover {counts}, the benchmarks have {self.benchmarks}")
        if len({m.name for m in self.models}) != len(self.models):
            problems.append("model names repeat")
        if problems:
            raise ValueError("; ".join(problems[:20]))
        return self

    def model(self, name: str) -> PlanModel:
        """The model called ``name``. Raises :class:`PlanError` naming the known ones."""
        for m in self.models:
            if m.name == name:
                return m
        raise PlanError(f"the plan has no model {name!r}; it has: {', '.join(m.name for m in self.models)}")

    def cells(self) -> Iterator[tuple[PlanModel, PlanShard, PlanCell]]:
        """Every ``(model, shard, cell)`` in plan order."""
        for m in self.models:
            for s in m.shards:
                for c in s.cells:
                    yield m, s, c

    def to_bytes(self) -> bytes:
        """The canonical plan file (sorted keys, two-space indent, UTF-8, ``\\n`` at the end)."""
        return (json.dumps(self.model_dump(mode="json", by_alias=True), sort_keys=True, indent=2,
                           ensure_ascii=False) + "\n").encode("utf-8")


def split_even(n: int, k: int) -> list[tuple[int, int]]:
    """``k`` contiguous ``[start, stop)`` ranges covering ``range(n)`` whose lengths differ by at most
    one (range ``j`` is ``floor(j*n/k)`` to ``floor((j+1)*n/k)``). Raises ``ValueError`` unless
    ``1 <= k <= n``."""
    if not 1 <= k <= n:
        raise ValueError(f"cannot split {n} items into {k} non-empty shards")
    return [(j * n // k, (j + 1) * n // k) for j in range(k)]


def shard_items(items: list[tuple[str, str]], *, shard_size: Optional[int] = None,
                shards: Optional[int] = None) -> list[list[PlanCell]]:
    """Cut a model's ``(benchmark, sample_id)`` items (in plan order) into shards of cells.

    ``shards`` (exact count, at most the number of items) wins over ``shard_size`` (target samples
    per shard; ``ceil(len(items) / shard_size)`` shards). Each shard's items are grouped into one cell
    per benchmark, in the order the benchmarks first appear."""
    n = len(items)
    k = shards if shards is not None else math.ceil(n / (shard_size or DEFAULT_SHARD_SIZE))
    out = []
    for a, b in split_even(n, min(max(k, 1), n)):
        cells: dict[str, list[str]] = {}
        for bench, sid in items[a:b]:
            cells.setdefault(bench, []).append(sid)
        out.append([PlanCell(benchmark=bench, sample_ids=sorted(ids)) for bench, ids in cells.items()])
    return out


def _sample_ids(benchmarks: list, data_dirs: dict[str, Path]) -> dict[str, list[str]]:
    """The sorted sample ids of each of ``benchmarks`` (study benchmark entries, in study order),
    each loaded by its loader from ``data_dirs[name]`` up to its ``limit``; keyed by benchmark name.

    Raises:
        PlanError: a benchmark does not load (the loader's message), its sample ids repeat, or it
            has no samples.
    """
    from pointfail.inputs.benchmarks import load as load_benchmark

    ids: dict[str, list[str]] = {}
    for b in benchmarks:
        try:
            samples = load_benchmark(b.loader, data_dirs[b.name], limit=b.limit)
        except Exception as e:  # a loader's BenchmarkError names every missing file
            raise PlanError(f"benchmark {b.name}: {e}") from None
        ids[b.name] = sorted(s.sample_id for s in samples)
        if len(set(ids[b.name])) != len(ids[b.name]):
            raise PlanError(f"benchmark {b.name}: sample ids repeat")
        if not ids[b.name]:
            raise PlanError(f"benchmark {b.name}: no samples in {data_dirs[b.name]}")
    return ids


def build_plan(study_file: Path, *, repo: Path, data_root: Optional[Path] = None,
               shard_size: Optional[int] = None, shards: Optional[int] = None,
               models: Optional[list[str]] = None, benchmarks: Optional[list[str]] = None,
               gpus: int = 0, log: Callable[[str], None] = print) -> Plan:
    """Plan ``study_file`` (rules in the module docstring).

    Args:
        repo: the checkout; ``study_file`` is recorded relative to it when inside it.
        data_root: the declared data root (default ``repo/data/<study>``); every benchmark's data must
            be there (its sample ids are read).
        shard_size / shards: target samples per shard, or an exact number of shards per model.
        models / benchmarks: a subset, by name (default: all, in study order).
        gpus: GPUs each shard of a weight-backed model requests (weight-free baselines request 0).

    Raises:
        PlanError: the study file is invalid, a data folder is missing or does not load, a served
            model is selected (served models run with ``pointfail-runner run``), or bad sizes.
    """
    from pointfail.inputs.study import ContainerModel, Roots, StudyError, load_study

    from .study import needs_weights

    if shard_size is not None and shard_size < 1:
        raise PlanError(f"shard size must be >= 1, got {shard_size}")
    if shards is not None and shards < 1:
        raise PlanError(f"shards must be >= 1, got {shards}")
    repo = Path(repo).resolve()
    try:
        study = load_study(study_file)
        roots = Roots.for_study(study, repo, data=data_root)
        sel_models = study.select_models(models)
        sel_benchmarks = study.select_benchmarks(benchmarks)
        data_dirs = {b.name: roots.data_dir(b) for b in sel_benchmarks}
    except StudyError as e:
        raise PlanError(str(e)) from None
    container_models = [m for m in sel_models if isinstance(m, ContainerModel)]
    served = [m.name for m in sel_models if not isinstance(m, ContainerModel)]
    if served:
        raise PlanError(f"models {', '.join(served)} are served (kind = \"server\"): a plan shards container "
                        "models; run served models with pointfail-runner run")
    if not sel_models or not sel_benchmarks:
        raise PlanError(f"{study.path}: nothing to plan ({len(sel_models)} model(s), {len(sel_benchmarks)} benchmark(s))")
    missing = [f"data for {n}: {d} (make data STUDY={study.name})" for n, d in data_dirs.items() if not d.is_dir()]
    if missing:
        raise PlanError("missing before planning:\n  " + "\n  ".join(missing))
    ids = _sample_ids(sel_benchmarks, data_dirs)
    items = [(b.name, sid) for b in sel_benchmarks for sid in ids[b.name]]
    size = shard_size or DEFAULT_SHARD_SIZE
    plan_models = []
    for m in container_models:
        cut = shard_items(items, shard_size=size, shards=shards)
        plan_models.append(PlanModel(name=m.name, family=m.family, image=m.image,
                                     gpus=gpus if needs_weights(m) else 0,
                                     shards=[PlanShard(index=i, cells=c) for i, c in enumerate(cut)]))
        sizes = ", ".join(str(sum(len(x.sample_ids) for x in c)) for c in cut)
        log(f"[plan] {m.name}: {len(items)} samples in {len(cut)} shard(s) of {sizes}")
    sf = study.file.resolve()
    return Plan(study=study.name, study_file=sf.relative_to(repo).as_posix() if sf.is_relative_to(repo) else str(sf),
                study_sha256=hashlib.sha256(sf.read_bytes()).hexdigest(), shard_size=size,
                benchmarks={b: len(v) for b, v in ids.items()}, models=plan_models)


def write_plan(plan: Plan, path: Path) -> Path:
    """Write ``plan`` to ``path`` atomically (canonical bytes). Returns ``path``."""
    from pointfail.safeio import atomic_write_bytes

    atomic_write_bytes(path, plan.to_bytes())
    return Path(path)


def load_plan(path: Path, *, repo: Optional[Path] = None) -> Plan:
    """Read and validate a plan file (a regular file of at most :data:`MAX_PLAN_BYTES`).

    When ``repo`` is given, the study file the plan names must still hash to ``study_sha256`` (a
    plan made for an earlier version of the study is refused: plan again).

    Raises:
        PlanError: unreadable, not JSON, invalid (every problem named), or stale.
    """
    from pointfail.safeio import UnsafeFileError, read_regular_file

    p = Path(path)
    try:
        data = read_regular_file(p, MAX_PLAN_BYTES)
        plan = Plan.model_validate(json.loads(data))
    except (OSError, UnsafeFileError) as e:
        raise PlanError(f"cannot read plan {p}: {e}") from None
    except ValueError as e:  # JSON and validation errors
        if isinstance(e, ValidationError):
            msg = "; ".join(f"{'.'.join(map(str, x['loc']))}: {x['msg']}" for x in e.errors(include_url=False)[:10])
        else:
            msg = str(e)
        raise PlanError(f"{p} is not a valid plan: {msg}") from None
    if repo is not None:
        sf = study_path(plan, repo)
        try:
            digest = hashlib.sha256(sf.read_bytes()).hexdigest()
        except OSError as e:
            raise PlanError(f"plan {p}: its study file {sf} cannot be read: {e}") from None
        if digest != plan.study_sha256:
            raise PlanError(f"plan {p} was made for another version of {sf} (sha256 {plan.study_sha256[:12]}…, "
                            f"now {digest[:12]}…): run pointfail-runner plan again")
    return plan


def study_path(plan: Plan, repo: Path) -> Path:
    """The study file a plan was made from (relative paths are inside ``repo``)."""
    p = Path(plan.study_file)
    return p if p.is_absolute() else Path(repo).resolve() / p
