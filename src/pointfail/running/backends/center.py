"""The ``center`` baseline: always answers the centre of the image.

The answer is written in the ``json_pixels`` convention (the PointerBench paper's answer format:
``{"point": [x, y]}`` in absolute pixels of the original image). The centre of a ``W x H`` image in
continuous pixel coordinates (pixel column ``i`` covers ``[i, i+1)``) is ``(W / 2, H / 2)``, i.e. the
normalized point ``(0.5, 0.5)``. Box tasks get the same point answer (a point answer to a box task is
scored by the core library's documented rule). It needs no weights and no GPU.
"""

from __future__ import annotations

import json
from typing import Any

from pointfail.running.backends.base import WorkItem, result


def _fmt(v: float) -> int | float:
    return int(v) if float(v).is_integer() else float(v)


class CenterBackend:
    """Answers ``{"point": [W/2, H/2]}`` for every item (pixels of the original image)."""

    name = "center"

    def generate(self, batch: list[WorkItem]) -> list[dict[str, Any]]:
        """One result per item; ``model_input_size`` and token counts are ``None`` (no model)."""
        out = []
        for item in batch:
            w, h = item.image.size
            out.append(result(json.dumps({"point": [_fmt(w / 2), _fmt(h / 2)]})))
        return out

    def info(self) -> dict[str, Any]:
        """Provenance: the baseline's name, no checkpoint."""
        return {"backend": "center", "checkpoint": None}


def load(weights_dir: str | None = None, device: str = "cpu", **options: Any) -> CenterBackend:
    """Return the centre baseline. ``weights_dir``, ``device`` and ``options`` are ignored."""
    return CenterBackend()
