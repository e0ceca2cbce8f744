"""``oracle``: exact failure modes from the scene graphs of generated suites (:mod:`pointfail.judge.oracle`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pointfail.running.judges.kinds import JudgeKind


class Oracle(JudgeKind):
    """Settings: ``oracle_tolerance_px`` (the ``off_by_pixels`` tolerance, default 8 px)."""

    name = "oracle"
    summary = "exact labels from the suite's scene graph (generated suites only)"
    needs_scene_graphs = True

    def make(self, settings: Mapping[str, Any]) -> list[Any]:
        from pointfail.judge.oracle import DEFAULT_TOLERANCE_PX, OracleJudge

        tol = settings.get("oracle_tolerance_px")
        return [OracleJudge(float(tol) if tol is not None else DEFAULT_TOLERANCE_PX)]


KIND = Oracle()
