"""Benchmark loaders: a local directory in a benchmark's official layout → a list of
:class:`~pointfail.records.Sample`.

``load(name, data_dir, *, limit=None)`` dispatches through :data:`BENCHMARKS`:

============================  ==========================================================
name                          layout (see each module's docstring)
============================  ==========================================================
``point-bench``               PointArena Point-Bench: ``data.json``, ``images/<category>/``, ``masks/``
``where2place``               RoboPoint Where2Place: ``point_questions.jsonl``, ``images/``, ``masks/NN.jpg``
``refspatial``                RoboRefer RefSpatial-Bench: ``Location|Placement|Unseen/question.json``
``pointerbench-sheets``       PointerBench subsets: ``data/test/metadata.jsonl`` (+ screenshots)
``pointerbench-text``
``pointerbench-pro``
``screenspot-pro``            ScreenSpot-Pro: ``annotations/*.json``, ``images/``
``suite``                     a generated suite (PointerBench layout + manifest + scene graphs)
============================  ==========================================================

Every loader validates what it reads and raises :class:`BenchmarkError` listing every missing or
inconsistent file by name; nothing is skipped silently. Samples come back sorted by ``sample_id``;
``limit`` keeps the first ``limit`` of them. Image paths are ``data_dir`` joined with the
benchmark's relative path (as given, not resolved).

:data:`AXES` names, per benchmark, the metadata axes its samples carry for breakdowns.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from pointfail.records import Sample

from ._common import BenchmarkError
from .point_bench import AXES as _PB_AXES, load_point_bench
from .pointerbench import AXES as _PTR_AXES, SUBSETS, load_suite, make_pointerbench_loader
from .refspatial import AXES as _RS_AXES, load_refspatial
from .screenspot_pro import AXES as _SSP_AXES, load_screenspot_pro
from .where2place import AXES as _W2P_AXES, load_where2place

__all__ = ["BENCHMARKS", "AXES", "BenchmarkError", "load", "require_images", "Loader"]

Loader = Callable[..., list[Sample]]

BENCHMARKS: dict[str, Loader] = {
    "point-bench": load_point_bench,
    "where2place": load_where2place,
    "refspatial": load_refspatial,
    **{name: make_pointerbench_loader(name) for name in SUBSETS},
    "screenspot-pro": load_screenspot_pro,
    "suite": load_suite,
}
"""Loader per benchmark name; each is ``loader(data_dir, *, limit=None) -> list[Sample]``."""

AXES: dict[str, tuple[str, ...]] = {
    "point-bench": _PB_AXES,
    "where2place": _W2P_AXES,
    "refspatial": _RS_AXES,
    **{name: _PTR_AXES for name in SUBSETS},
    "screenspot-pro": _SSP_AXES,
    "suite": _PTR_AXES,
}
"""Metadata axes per benchmark name (keys of ``Sample.metadata`` used for breakdowns; a subset may
lack some, e.g. ``surface`` exists only in PointerBench-Text)."""


def load(name: str, data_dir: str | Path, *, limit: int | None = None) -> list[Sample]:
    """Load benchmark ``name`` from ``data_dir`` (official layout) as samples sorted by ``sample_id``.

    Args:
        name: a key of :data:`BENCHMARKS`.
        data_dir: the benchmark's root directory.
        limit: keep only the first ``limit`` samples (after sorting); ``None`` keeps all.

    Raises:
        BenchmarkError: unknown ``name`` (listing the known ones), a missing ``data_dir``, or any
            missing/inconsistent file the loader finds.
        ValueError: ``limit`` < 0.
    """
    loader = BENCHMARKS.get(name)
    if loader is None:
        raise BenchmarkError(name, [f"unknown benchmark {name!r}; known: {', '.join(sorted(BENCHMARKS))}"])
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    root = Path(data_dir)
    if not root.is_dir():
        raise BenchmarkError(name, [f"data directory {root} does not exist"], [str(root)])
    return loader(root, limit=limit)


def require_images(samples: Iterable[Sample]) -> None:
    """Check that every sample's image file exists before a model is run on it.

    PointerBench ships annotations without screenshots; loading works without them, running a
    model does not.

    Raises:
        BenchmarkError: naming every missing image (``.files`` holds their paths), grouped under
            the first sample's benchmark.
    """
    missing: list[str] = []
    bench = ""
    for s in samples:
        bench = bench or s.benchmark
        if not Path(s.image.path).is_file():
            missing.append(s.image.path)
    if missing:
        raise BenchmarkError(
            bench or "benchmark", [f"missing image {p}" for p in missing], missing,
            hint=f"{len(missing)} image(s) missing; a model cannot run without them (download them, "
                 f"e.g. `pointfail data fetch {bench} --to DIR`, and load from DIR)")
