"""The scene graph of a generated suite image: every visible element a point could land on.

Format (``docs/architecture.md``, "Generated suites")::

    {"schema": "pointfail.scene_graph/1", "image": "0000.png", "width": 1024, "height": 768,
     "elements": [{"id": "cell:C7", "category": "cell", "box": [x0, y0, x1, y1], "text": "42"}]}

Coordinates: every box is ``[x0, y0, x1, y1]`` in absolute pixels of the 1024x768 image, origin
top-left, continuous (pixel column ``i`` covers ``[i, i+1)``), so a glyph whose ink occupies pixel
columns 10..14 has ``x0 = 10, x1 = 15``. A point is inside a box when ``x0 <= x <= x1`` and
``y0 <= y <= y1`` (inclusive, the PointerBench/ScreenSpot rule). An element list holds every visible
element a point could land on; containers (the whole sheet, the page body) are not elements.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pointfail.generated.suites.errors import SuiteError

__all__ = [
    "IMAGE_SIZE",
    "SCENE_GRAPH_SCHEMA",
    "Element",
    "Scene",
    "inside_image",
    "require_unique",
    "scene_graph_json",
    "union_box",
]

IMAGE_SIZE: tuple[int, int] = (1024, 768)
"""PointerBench's fixed frame (width, height) in pixels (the PointerBench paper, section 3)."""

SCENE_GRAPH_SCHEMA = "pointfail.scene_graph/1"
"""The ``schema`` value of every scene graph file (the oracle judge refuses any other)."""


@dataclass
class Element:
    """One visible element a point can land on.

    id: unique within the image (``cell:C7``, ``word:12``...). category: the suite's category name.
    box: ``[x0, y0, x1, y1]`` absolute pixels (see module docstring). text: what it shows, if any.
    style: an optional visual qualifier (the text suite's ink colour names), written only when set
    (an additive field of the scene graph format).
    """

    id: str
    category: str
    box: list[int]
    text: str | None = None
    style: str | None = None  # optional visual qualifier an instruction may use ("red", "bold", ...)

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"id": self.id, "category": self.category, "box": [int(v) for v in self.box]}
        if self.text is not None:
            d["text"] = self.text
        if self.style is not None:
            d["style"] = self.style
        return d


@dataclass
class Scene:
    """A rendered image and its scene graph, before it is written."""

    image: Any  # PIL.Image.Image, RGB, IMAGE_SIZE
    elements: list[Element] = field(default_factory=list)

    def by_id(self) -> dict[str, Element]:
        """Elements keyed by id. Raises ``SuiteError`` on a duplicate id (a generator bug)."""
        out: dict[str, Element] = {}
        for e in self.elements:
            if e.id in out:
                raise SuiteError(f"duplicate scene graph element id {e.id!r}")
            out[e.id] = e
        return out


def scene_graph_json(image_name: str, elements: list[Element]) -> dict[str, Any]:
    """The scene graph object of ``docs/architecture.md``; elements sorted by id."""
    return {
        "schema": SCENE_GRAPH_SCHEMA,
        "image": image_name,
        "width": IMAGE_SIZE[0],
        "height": IMAGE_SIZE[1],
        "elements": [e.to_json() for e in sorted(elements, key=lambda e: e.id)],
    }


def require_unique(matches: list[str], what: str) -> str:
    """Return the single element id in ``matches``.

    Raises:
        SuiteError: when ``matches`` is empty or has several ids (the instruction ``what`` would not
            name exactly one element); generators catch it and draw another target.
    """
    uniq = sorted(set(matches))
    if len(uniq) != 1:
        raise SuiteError(f"instruction {what!r} matches {len(uniq)} elements: {uniq[:5]}")
    return uniq[0]


def inside_image(box: list[int]) -> bool:
    """True when ``box`` lies within the 1024x768 frame and has positive area."""
    return 0 <= box[0] < box[2] <= IMAGE_SIZE[0] and 0 <= box[1] < box[3] <= IMAGE_SIZE[1]


def union_box(boxes: Iterable[list[int] | None]) -> list[int] | None:
    """Smallest box containing every non-``None`` box, or ``None`` when there is none."""
    bs = [b for b in boxes if b is not None]
    if not bs:
        return None
    return [min(b[0] for b in bs), min(b[1] for b in bs), max(b[2] for b in bs), max(b[3] for b in bs)]
