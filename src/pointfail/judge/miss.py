"""The interface every judge implements: one :class:`Miss` in, one :class:`~pointfail.records.Judgment` out.

The judge stage (:func:`pointfail.running.judges.stage.judge_study`) turns each miss of a study into a
:class:`Miss` (the record, its primary point, where its files are, this judge's earlier verdict) and
hands it to the judge, whichever it is: the oracle (:class:`pointfail.judge.oracle.OracleJudge`,
exact labels from the scene graph) or a model judge (:class:`pointfail.running.judges.client.ChatJudge`:
Ollama, or any OpenAI-compatible server). A judge is an async context manager (a model judge opens
its connection there) with a ``name`` (``oracle``, ``ollama:<model>``, ...) and
``judge_miss(miss)``.

A judge raises :class:`MissUnusable` (or ``OSError``) when a miss lacks what it needs (no scene
graph, an unreadable image); the stage records a ``pending`` judgment saying why, and a rerun tries
again. A judge that only covers some misses (human labels) raises :class:`NoVerdict` for the others:
nothing is stored for them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Protocol

from pointfail.records import Judgment, Record

__all__ = ["Judge", "Miss", "MissUnusable", "NoVerdict", "PathFinder"]

PathFinder = Callable[..., Path]
"""``find(path, extra=())``: a record's relative path (image, mask, scene graph) resolved under the
stage's roots (``extra`` folders first), or ``FileNotFoundError`` naming where it looked."""


class MissUnusable(ValueError):
    """A miss a judge cannot judge for a reason outside the judge (the message says why)."""


class NoVerdict(Exception):
    """This judge has nothing to say about this miss (a person who did not label it): the stage
    stores no judgment for it and counts it in ``StageReport.skipped``."""


@dataclass(frozen=True)
class Miss:
    """One miss as a judge sees it.

    Attributes:
        record: the record (``outcome == "miss"``).
        point: its primary point, normalized ``[x, y]`` (:func:`pointfail.scoring.primary_point`).
        find: resolves the record's relative paths (:data:`PathFinder`).
        resume: this judge's earlier judgment of this miss in the slot it fills (``judge_unavailable``
            or ``pending``), or ``None``.
    """

    record: Record
    point: list[float]
    find: PathFinder
    resume: Optional[Judgment] = None

    @property
    def point_px(self) -> tuple[float, float]:
        """The primary point in pixels of the original image, ``(x * W, y * H)``."""
        return (self.point[0] * self.record.image.width, self.point[1] * self.record.image.height)

    def image_path(self) -> Path:
        """The record's image file.

        Raises:
            FileNotFoundError: not found under the stage's roots.
        """
        return self.find(self.record.image.path)

    def scene_graph_path(self) -> Path:
        """The record's scene graph file (``Record.scene_graph``, as the loader found it).

        Raises:
            MissUnusable: the record names no scene graph, or the file is not found under the stage's
                roots.
        """
        sid = self.record.sample_id
        if not self.record.scene_graph:
            raise MissUnusable(f"no scene graph for {sid} (the record names none: its benchmark has no scene "
                               "graphs, or the record was written before records kept the loader's path)")
        try:
            return self.find(self.record.scene_graph)
        except FileNotFoundError as e:
            raise MissUnusable(f"no scene graph for {sid}: {e}") from None


class Judge(Protocol):
    """What the judge stage calls (see the module docstring)."""

    @property
    def name(self) -> str:
        """The judge's name as written in ``Judgment.judge``."""

    async def __aenter__(self) -> Any:
        """Open the judge (connections, caches) for a run of the stage."""

    async def __aexit__(self, *exc: Any) -> None:
        """Close what :meth:`__aenter__` opened."""

    async def judge_miss(self, miss: Miss) -> Judgment:
        """The judgment of one miss.

        Raises:
            MissUnusable, OSError: the miss lacks what this judge needs (recorded as ``pending``).
        """
