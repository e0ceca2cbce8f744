"""What one benchmark module declares: :class:`Benchmark`, everything pointfail needs to know about a
benchmark in one object (its loader, metadata axes, official rule, source pin and stand-in release).

A module of :mod:`pointfail.inputs.benchmarks` (a file not starting with ``_``) holds it as
``BENCHMARK`` (one :class:`Benchmark`, or a tuple of them for a release with several benchmarks, as
PointerBench's three subsets); :func:`pointfail.discovery.discover` finds it, as model families are
found. Nothing else is edited to add a benchmark: the CLI's lists, the study file's ``loader``, the
runner, the official rule and the stand-in hub all read this registry.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Optional, Union

from pointfail.records import Sample

from .fetch import Source

__all__ = ["Benchmark", "Loader", "StandIn"]

Loader = Callable[..., list[Sample]]
"""``loader(data_dir, *, limit=None) -> list[Sample]`` (samples sorted by ``sample_id``)."""


@dataclass(frozen=True)
class StandIn:
    """The synthetic release the stand-in hub serves in place of the publisher's repository
    (:mod:`pointfail.generated.testing.standin`).

    Attributes:
        folder: the hub folder, ``datasets/<folder>`` (one folder per publisher repository).
        files: the writer, ``() -> {relative path: bytes}`` in the publisher's exact layout, or its
            ``"module:function"`` name (imported only when the hub is built; the writers need numpy
            and Pillow).
        real: what it stands in for, in words (``"RoboPoint's Where2Place"``).
        how: how the stand-in was made; ``None``: the hub's default (synthetic 96x64 scenes).
        order: position in the hub's catalogue (the committed ``catalog.json`` lists repositories in
            this order; ties by folder name).
    """

    folder: str
    files: Union[str, Callable[[], dict[str, bytes]]]
    real: str
    how: Optional[str] = None
    order: int = 100

    def writer(self) -> Callable[[], dict[str, bytes]]:
        """The writer function (importing it when given by name)."""
        if callable(self.files):
            return self.files
        import importlib

        mod, _, attr = self.files.partition(":")
        return getattr(importlib.import_module(mod), attr)


@dataclass(frozen=True)
class Benchmark:
    """One benchmark, declared by its module as ``BENCHMARK``.

    Attributes:
        name: the benchmark name (a study file's ``loader``, ``pointfail data check NAME``,
            ``Sample.benchmark`` of what it loads).
        loader: ``loader(data_dir, *, limit=None) -> list[Sample]`` for the official layout.
        axes: the ``Sample.metadata`` keys its samples carry for breakdowns (a subset may lack some).
        rule: the name of the official rule that scores it, a key of :data:`pointfail.official.RULES`
            (``where2place``, ``refspatial``, ``point-bench``, ``screenspot-pro``); ``None``: the rule
            follows each target's ``eval`` (PointerBench's ``point_in_bbox``/``iou``), or none applies.
        source: the publisher's repository and pinned commit (:mod:`pointfail.inputs.benchmarks.fetch`);
            ``None``: nothing to download (generated suites).
        standin: the stand-in hub's release for it, ``None`` when it has none (a release shared by
            several benchmarks is declared on one of them).

    Raises:
        ValueError: ``rule`` names no rule of :data:`pointfail.official.RULE_NAMES` (said when the
            module is imported, not when a reply is scored).
    """

    name: str
    loader: Loader
    axes: tuple[str, ...] = ()
    rule: Optional[str] = None
    source: Optional[Source] = None
    standin: Optional[StandIn] = None

    def __post_init__(self) -> None:
        from pointfail.official import RULE_NAMES

        if self.rule is not None and self.rule not in RULE_NAMES:
            raise ValueError(f"benchmark {self.name!r}: official rule {self.rule!r} is not one of {', '.join(RULE_NAMES)}")
