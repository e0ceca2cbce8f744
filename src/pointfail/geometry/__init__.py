"""Target geometry: masks, points, boxes, polygons, the PointerBench box rule and target regions.

One module per job; every box and mask computation of pointfail lives in one of them:

* :mod:`~pointfail.geometry.shapes`: normalized points to pixels and pixel lookup, boxes (sorted
  corners, area, centre, containment, distance) and polygons (even-odd containment, distance, area,
  clipping): the coordinate conventions are stated there.
* :mod:`~pointfail.geometry.boxrule`: the PointerBench box rule (IoU, coverage, precision, class).
* :mod:`~pointfail.geometry.masks`: mask files (the one binarization rule, the one decoded-mask
  cache, the loaders' non-raising check), point-in-mask and mask distances.
* :mod:`~pointfail.geometry.regions`: :class:`TargetRegion`, a sample's target ready for scoring.
* :mod:`~pointfail.geometry.errors`: the errors.

Names are resolved lazily (PEP 562): ``from pointfail.geometry import point_in_box`` imports only
:mod:`~pointfail.geometry.shapes` (no numpy), so parsers and the judge can use box arithmetic
without the mask machinery.

Rules implemented here have fixed-case tests with the arithmetic written out
(``tests/test_geometry.py``) and property tests (``tests/test_geometry_props.py``).
"""

from __future__ import annotations

import importlib
from typing import Any

_MODULES = {
    "errors": ("GeometryError", "ImageError", "MaskError", "MaskSizeError"),
    "shapes": (
        "box_area", "box_cells", "box_center", "clip_polygon_to_box", "pixel_index", "pixel_of", "point_box_distance",
        "point_in_box", "point_in_polygon", "point_polygon_distance", "polygon_area", "polygon_array",
        "sorted_box", "to_pixels", "union_area", "valid_box",
    ),
    "boxrule": (
        "POINTERBENCH_MIN_COVERAGE", "POINTERBENCH_MIN_PRECISION", "box_class", "box_coverage", "box_iou",
        "box_overlap", "box_precision", "box_score",
    ),
    "masks": (
        "MASK_CACHE_MAX", "MASK_CACHE_MAX_BYTES", "MaskCheck", "MaskInfo", "binarize_mask_image", "check_mask", "image_size", "load_mask", "load_mask_info",
        "mask_cache_clear", "mask_cache_info", "mask_distance", "mask_distance_px", "mask_pixels", "point_in_mask",
    ),
    "regions": ("TargetRegion",),
}
_WHERE = {name: mod for mod, names in _MODULES.items() for name in names}

__all__ = sorted(_WHERE)  # noqa: PLE0605 (the lazy-export table is the one list)


def __getattr__(name: str) -> Any:
    mod = _WHERE.get(name)
    if mod is None:
        raise AttributeError(f"module 'pointfail.geometry' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"pointfail.geometry.{mod}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
