"""Benchmark loaders: a local directory in a benchmark's official layout → a list of
:class:`~pointfail.records.Sample`.

**Every benchmark is one file.** Each module here (not starting with ``_``) declares ``BENCHMARK``, a
:class:`~pointfail.inputs.benchmarks._spec.Benchmark` (or a tuple of them): its loader, metadata axes,
official rule (by name; the arithmetic is :mod:`pointfail.official`'s), source pin and stand-in
release. :func:`benchmarks` discovers them (:func:`pointfail.discovery.discover`, the rule model
families follow); the CLI, the study file's ``loader``, the runner, the official rule, the fetcher
and the stand-in hub read this registry, so adding a file adds a benchmark (``tests/test_add_benchmark.py``).

``load(name, data_dir, *, limit=None)`` dispatches through the registry (entering only the module that
declares ``name``: :data:`_INDEX`); the shipped ones:

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

from collections.abc import Iterable
from pathlib import Path
from typing import Any, Optional

from pointfail.discovery import Registry
from pointfail.records import Sample

from ._common import BenchmarkError
from ._spec import Benchmark, Loader, StandIn

__all__ = ["BENCHMARKS", "AXES", "Benchmark", "BenchmarkError", "Loader", "StandIn", "benchmarks", "load",
           "refresh", "require_images", "rule_of"]

_INDEX: dict[str, tuple[str, ...]] = {
    # module -> the benchmark names it declares (tests/test_discovery.py checks this against full
    # discovery); a module not listed here (a new file) is imported on every look-up, so it is found
    "archive": (),
    "fetch": (),
    "point_bench": ("point-bench",),
    "pointerbench": ("pointerbench-sheets", "pointerbench-text", "pointerbench-pro", "suite"),
    "refspatial": ("refspatial",),
    "screenspot_pro": ("screenspot-pro",),
    "where2place": ("where2place",),
}
"""What :meth:`pointfail.discovery.Registry.lookup` reads to import one module for one benchmark name."""

_REGISTRY: Registry[Benchmark] = Registry(__name__, "BENCHMARK", Benchmark, unique=True,
                                          loaded=lambda: _use_rules(), index=_INDEX)


def _use_rules() -> None:
    from pointfail.official import use_benchmark_rules

    use_benchmark_rules(rule_of)


def benchmarks() -> dict[str, Benchmark]:
    """Every declared benchmark by name, in module-name order (discovered once; :func:`refresh`
    forgets them).

    Raises:
        RuntimeError: two modules declare the same benchmark name.
    """
    return _REGISTRY.get()


def refresh() -> None:
    """Forget the discovered benchmarks, so the next lookup scans this package's ``__path__`` again
    (after a benchmark file was added while the process runs: the throwaway-benchmark test)."""
    _REGISTRY.refresh()


def rule_of(name: str) -> Optional[str]:
    """The official rule's name (a key of :data:`pointfail.official.RULES`) that benchmark ``name``
    declares; ``None`` for a name no module declares (a generated suite is named after itself) or one
    scored by each target's ``eval``."""
    b = _REGISTRY.lookup(name)
    return b.rule if b is not None else None


def __getattr__(name: str) -> Any:
    # BENCHMARKS and AXES are views of the registry, made when asked for (PEP 562), so a benchmark
    # file added at run time (and refresh()) shows in them
    if name == "BENCHMARKS":
        return {n: b.loader for n, b in benchmarks().items()}
    if name == "AXES":
        return {n: b.axes for n, b in benchmarks().items()}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


BENCHMARKS: dict[str, Loader]
"""Loader per benchmark name; each is ``loader(data_dir, *, limit=None) -> list[Sample]`` (a view of
:func:`benchmarks`)."""

AXES: dict[str, tuple[str, ...]]
"""Metadata axes per benchmark name (keys of ``Sample.metadata`` used for breakdowns; a subset may
lack some, e.g. ``surface`` exists only in PointerBench-Text; a view of :func:`benchmarks`)."""


def load(name: str, data_dir: str | Path, *, limit: int | None = None) -> list[Sample]:
    """Load benchmark ``name`` from ``data_dir`` (official layout) as samples sorted by ``sample_id``.

    Args:
        name: a declared benchmark (:func:`benchmarks`).
        data_dir: the benchmark's root directory.
        limit: keep only the first ``limit`` samples (after sorting); ``None`` keeps all.

    Raises:
        BenchmarkError: unknown ``name`` (listing the known ones), a missing ``data_dir``, or any
            missing/inconsistent file the loader finds.
        ValueError: ``limit`` < 0.
    """
    found = _REGISTRY.lookup(name)
    if found is None:
        raise BenchmarkError(name, [f"unknown benchmark {name!r}; known: {', '.join(sorted(benchmarks()))}"])
    loader = found.loader
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
