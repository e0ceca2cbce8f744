"""The oracle judge: exact failure modes from a scene graph, for suites that have one.

The synthetic suites (``sheets``, ``text``) and the ``web`` suite write, per image, a scene graph listing
every visible element a point could land on, with its box, category and instance id (format in
``docs/architecture.md``, "Generated suites"). On such suites every miss can be labelled from geometry
alone, which is how judge validity is measured (``pointfail judge-agreement``).

Rules (in this order; the first that applies gives the label). ``p`` is the primary point in pixels of
the original image, continuous (normalized ``(x, y)`` times ``(W, H)``); boxes are ``[x0, y0, x1, y1]`` in
pixels with edges inclusive (the PointerBench / ScreenSpot rule, as ``docs/architecture.md`` states).

1. ``off_by_pixels``: the Euclidean distance from ``p`` to the target element's box (0 inside or on its
   edge) is at most ``tolerance_px`` (inclusive; default :data:`DEFAULT_TOLERANCE_PX`, the study file's
   ``[judge] oracle_tolerance_px``). This rule comes first, so a point a few pixels into a neighbouring
   element still counts as a near miss. A point inside the target element's box that the scorer called a
   miss (the scored region can be smaller than the element's box, e.g. a mask) is also ``off_by_pixels``.
2. Otherwise the elements whose box contains ``p`` (edges inclusive), excluding the target and the
   ignored containers (below), are the candidates (the issue's order of rules: another element of the
   target's kind first):
   - if any candidate has the target's **kind** → ``wrong_instance``. Overlays of other kinds at the
     same spot (a 6-pixel grid-line strip over a cell, a line around a word) therefore never hide the
     same-kind element under the point;
   - otherwise → ``wrong_category``.
   An element's kind is its ``role`` when it has one (the web suite: category ``text`` holds the roles
   ``code``, ``paragraph`` and ``code_block``, which are different kinds of thing), else its
   ``category``.
   The element named in ``detail`` is the **smallest** candidate of the chosen kind (by box area, ties
   broken by the smaller ``id`` in string order, so the element list's order never matters): nested
   elements resolve to the innermost one, and a point exactly on the shared edge of two equal-size
   neighbours names the one with the smaller id.
3. No candidate contains ``p`` (background, margins, a point outside the image, blank space inside a
   tiled container) → ``hallucinated``.

**Absent referent** (``target_id`` is ``None``: the suite row's referent is nowhere in the image, as its
scene-graph proof of absence shows): any located answer points at something that is not there, the
failure the source study calls ``hallucinated``, whatever element lies under the point; ``detail``
names that element (or "no element") for the audit.

**Containers** (rule for "what the point landed on"). Some elements are boxes around other elements and
cover the blank space between them: the text suite's ``line`` (the union of its glyph boxes, which also
spans the gaps between words) and ``paragraph`` (the union of its lines, which also spans the leading
between lines); :data:`TILED_CONTAINER_CATEGORIES`. Their content is *tiled* by smaller elements:
every glyph is a ``char``/``punctuation`` element, every gap between words a ``space``, every
position between characters a ``caret``. So when the point lies inside such a container but on none of
those smaller elements, what is actually under it is blank space: the container is **ignored** as
"what the point landed on", unless the target itself is of that container's category (a ``line`` target
with the point on another line is ``wrong_instance``; a ``paragraph`` target likewise). A word target
missed into the blank leading between two lines of a paragraph is therefore ``hallucinated``
(detail: "blank space inside para:N"), not ``wrong_category`` on the paragraph.

The web suite's ``paragraph`` and ``code_block`` (category ``text``) are *not* tiled: their plain text
is not broken into elements (only links and code inside them are), so a point inside one and on no
smaller element may be on its text, and the scene graph cannot tell text from the blank between its
lines. They stay candidates, with their role as kind: a ``code`` or ``link`` target missed onto
paragraph text is ``wrong_category`` (never ``wrong_instance`` because a paragraph shares the category
``text`` with a code identifier), and a smaller element inside the paragraph (a link) still wins by
the innermost rule.

The judgment's ``detail`` names the distance and the element the point fell on, so every oracle label
can be audited from the record.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Optional, Sequence

from pointfail.geometry.shapes import box_area, point_box_distance, point_in_box
from pointfail.judge.miss import Miss, MissUnusable
from pointfail.records import FailureMode, Judgment

SCENE_GRAPH_SCHEMA = "pointfail.scene_graph/1"
"""The ``schema`` value of a scene graph this oracle reads."""

TILED_CONTAINER_CATEGORIES: frozenset[str] = frozenset({"line", "paragraph"})
"""Categories of container elements whose content is tiled by smaller elements (the text suite's
lines and paragraphs); ignored as landing elements unless the target is of the same category (see the
module docstring, "Containers")."""

DEFAULT_TOLERANCE_PX = 8.0
"""Default ``off_by_pixels`` tolerance in pixels of the original image (``[judge] oracle_tolerance_px``
in ``study.toml``)."""


class SceneGraphError(ValueError):
    """A scene graph that cannot be used: wrong schema, malformed element, or unknown target id."""


def load_scene_graph(path: str | Path) -> dict[str, Any]:
    """Read and validate a scene graph JSON file.

    Raises:
        OSError: the file cannot be read.
        SceneGraphError: not JSON, wrong ``schema``, or an element without ``id``/``category``/a
            4-number ``box`` (the message names the file).
    """
    p = Path(path)
    try:
        graph = json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise SceneGraphError(f"{p}: not valid JSON: {e}") from None
    try:
        validate_scene_graph(graph)
    except SceneGraphError as e:
        raise SceneGraphError(f"{p}: {e}") from None
    return graph


def validate_scene_graph(graph: Any) -> None:
    """Check a scene graph's structure (see ``docs/architecture.md``).

    Raises:
        SceneGraphError: naming the first problem (schema, element index, field).
    """
    if not isinstance(graph, dict):
        raise SceneGraphError("scene graph is not a JSON object")
    if graph.get("schema") != SCENE_GRAPH_SCHEMA:
        raise SceneGraphError(f"schema is {graph.get('schema')!r}, expected {SCENE_GRAPH_SCHEMA!r}")
    elements = graph.get("elements")
    if not isinstance(elements, list):
        raise SceneGraphError("'elements' is not a list")
    for i, el in enumerate(elements):
        if not isinstance(el, dict) or not isinstance(el.get("id"), str) or not isinstance(el.get("category"), str):
            raise SceneGraphError(f"element {i} lacks a string 'id' or 'category'")
        box = el.get("box")
        if (
            not isinstance(box, (list, tuple))
            or len(box) != 4
            or not all(isinstance(v, (int, float)) and math.isfinite(v) for v in box)
        ):
            raise SceneGraphError(f"element {i} ({el['id']}) has no finite [x0, y0, x1, y1] box")


def oracle_judgment(
    scene_graph: dict[str, Any],
    target_id: Optional[str],
    point_px: Sequence[float],
    tolerance_px: float = DEFAULT_TOLERANCE_PX,
) -> Judgment:
    """Label one miss exactly from a scene graph (rules in the module docstring).

    Args:
        scene_graph: a validated scene graph (``load_scene_graph``), boxes in pixels.
        target_id: the ``id`` of the target element (the metadata row's ``target_id``); ``None`` for
            an absent referent (the answer is ``hallucinated``).
        point_px: the primary point ``(x, y)`` in pixels of the original image, origin top-left.
        tolerance_px: the ``off_by_pixels`` tolerance in pixels (>= 0).

    Returns:
        ``Judgment(judge="oracle", status="labeled", label=..., options={"tolerance_px": ...},
        detail=...)``.

    Raises:
        SceneGraphError: the graph is malformed or has no element ``target_id``.
        ValueError: a non-finite point or a negative tolerance.
    """
    validate_scene_graph(scene_graph)
    if len(point_px) != 2 or not all(math.isfinite(float(v)) for v in point_px):
        raise ValueError(f"point must be two finite numbers, got {point_px!r}")
    if not (tolerance_px >= 0 and math.isfinite(tolerance_px)):
        raise ValueError(f"tolerance_px must be finite and >= 0, got {tolerance_px!r}")
    p = (float(point_px[0]), float(point_px[1]))
    elements = scene_graph["elements"]
    options = {"tolerance_px": float(tolerance_px)}
    if target_id is None:
        under = [el for el in elements if point_in_box(p, el["box"])]
        on = min(under, key=lambda el: (box_area(el["box"]), el["id"])) if under else None
        what = f"on {on['id']} ({_kind_name(on)})" if on else "on no element"
        return Judgment(
            judge="oracle",
            status="labeled",
            label="hallucinated",
            options=options,
            detail=f"the referent is absent from the image; point ({p[0]:.2f}, {p[1]:.2f}) px {what}",
        )
    targets = [el for el in elements if el["id"] == target_id]
    if not targets:
        raise SceneGraphError(f"target id {target_id!r} is not an element of the scene graph")
    target = targets[0]
    dist = point_box_distance(p, target["box"])
    where = f"point ({p[0]:.2f}, {p[1]:.2f}) px is {dist:.2f} px from target {target_id} ({target['category']})"
    if dist <= tolerance_px:
        return Judgment(
            judge="oracle",
            status="labeled",
            label="off_by_pixels",
            options=options,
            detail=f"{where}, within tolerance {float(tolerance_px):g} px",
        )
    under = [el for el in elements if el["id"] != target_id and point_in_box(p, el["box"])]
    ignored = [
        el for el in under
        if el["category"] in TILED_CONTAINER_CATEGORIES and el["category"] != target["category"]
    ]
    candidates = [el for el in under if el not in ignored]
    if not candidates:
        if ignored:
            inner = min(ignored, key=lambda el: (box_area(el["box"]), el["id"]))
            on = f"on no element (blank space inside {inner['id']} ({inner['category']}))"
        else:
            on = "on no element"
        return Judgment(
            judge="oracle",
            status="labeled",
            label="hallucinated",
            options=options,
            detail=f"{where}; {on}",
        )
    kind = element_kind(target)
    same = [el for el in candidates if element_kind(el) == kind]
    label: FailureMode = "wrong_instance" if same else "wrong_category"
    hit = min(same or candidates, key=lambda el: (box_area(el["box"]), el["id"]))
    return Judgment(
        judge="oracle",
        status="labeled",
        label=label,
        options=options,
        detail=f"{where}; on {hit['id']} ({_kind_name(hit)})",
    )


class OracleJudge:
    """The oracle as a judge of the stage (:class:`pointfail.judge.miss.Judge`): each miss is labelled
    by :func:`oracle_judgment` from the scene graph its record names (read once per run and cached),
    the record's ``metadata["target_id"]`` (``None`` for an absent referent) and its primary point in
    pixels.

    Args:
        tolerance_px: the ``off_by_pixels`` tolerance in pixels of the original image.
    """

    name = "oracle"

    def __init__(self, tolerance_px: float = DEFAULT_TOLERANCE_PX) -> None:
        self.tolerance_px = float(tolerance_px)
        self._graphs: dict[Path, dict[str, Any]] = {}

    async def __aenter__(self) -> "OracleJudge":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self._graphs.clear()

    async def judge_miss(self, miss: Miss) -> Judgment:
        """The oracle's label of one miss.

        Raises:
            MissUnusable: no scene graph named, or no ``metadata.target_id`` for a present referent.
            OSError, SceneGraphError: the scene graph cannot be read or used.
        """
        rec = miss.record
        target_id = rec.metadata.get("target_id")
        if rec.target.kind == "absent":
            target_id = None  # the referent is not in the image: a located answer is hallucinated
        elif not isinstance(target_id, str) or not target_id:
            raise MissUnusable("record has no metadata.target_id")
        path = miss.scene_graph_path()
        graph = self._graphs.get(path)
        if graph is None:
            graph = self._graphs[path] = load_scene_graph(path)
        return oracle_judgment(graph, target_id, miss.point_px, self.tolerance_px)


def element_kind(el: dict[str, Any]) -> str:
    """The kind compared by the ``wrong_instance`` rule: the element's ``role`` when it has one (web
    suite), else its ``category``."""
    role = el.get("role")
    return role if isinstance(role, str) and role else el["category"]


def _kind_name(el: dict[str, Any]) -> str:
    kind = element_kind(el)
    return kind if kind == el["category"] else f"{el['category']}/{kind}"
