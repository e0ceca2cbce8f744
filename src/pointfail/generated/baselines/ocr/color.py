"""Colour fills: "the green column / cell / row", by hue ranges of the named colour."""

from __future__ import annotations

import re
from typing import Any, Optional

from pointfail.generated.baselines.ocr.instruction import unquoted
from pointfail.generated.baselines.ocr.sheet import SheetGrid

__all__ = ["COLOR_WORDS", "color_mask", "color_point"]


_HUES = {  # hue ranges in degrees (HSV), saturation floor; standard colour-name hues
    "red": ((345, 360), (0, 12), 0.35), "orange": ((12, 40), None, 0.35), "yellow": ((40, 70), None, 0.35),
    "green": ((70, 170), None, 0.25), "blue": ((190, 250), None, 0.25), "purple": ((250, 290), None, 0.15),
    "violet": ((250, 290), None, 0.15), "pink": ((290, 345), None, 0.2), "cyan": ((170, 190), None, 0.25),
}


COLOR_WORDS = r"\b(red|orange|yellow|green|blue|purple|violet|pink|cyan|gr[ae]y)\b"


def color_mask(image: Any, name: str):
    """Boolean array (H, W): pixels of the named fill colour (hue ranges of :data:`_HUES`; ``gray``/
    ``grey``: saturation under 0.08 and value 120..200 of 255)."""
    import numpy as np

    hsv = np.asarray(image.convert("HSV"), dtype=np.float32)
    h, s, v = hsv[..., 0] * 360 / 255, hsv[..., 1] / 255, hsv[..., 2]
    if name in ("gray", "grey"):
        return (s < 0.08) & (v >= 120) & (v <= 200)
    (a, b), extra, smin = _HUES[name]
    m = (h >= a) & (h < b)
    if extra:
        m |= (h >= extra[0]) & (h < extra[1])
    return m & (s >= smin) & (v >= 90)


def _covered_cells(mask: Any, grid: SheetGrid) -> list[tuple[int, int, float]]:
    """``(column interval, row interval, coverage)`` of the grid cells (3 px or more inside their
    lines) more than 35% covered by ``mask``."""
    cells = []
    for i in range(len(grid.vlines) - 1):
        for j in range(len(grid.hlines) - 1):
            x0, x1 = int(grid.vlines[i]) + 1, int(grid.vlines[i + 1])
            y0, y1 = int(grid.hlines[j]) + 1, int(grid.hlines[j + 1])
            if x1 - x0 < 3 or y1 - y0 < 3:
                continue
            f = float(mask[y0:y1, x0:x1].mean())
            if f > 0.35:
                cells.append((i, j, f))
    return cells


def _pick_cell(cells: list[tuple[int, int, float]], low: str) -> tuple[int, int]:
    """For a column (or row): the middle cell of the column (row) holding the most covered cells;
    otherwise the most covered cell."""
    if "column" in low or "row" in low:
        idx = 0 if "column" in low else 1
        groups: dict[float, list] = {}
        for c in cells:
            groups.setdefault(c[idx], []).append(c)
        best = max(groups.values(), key=len)
        best.sort(key=lambda c: c[1 - idx])
        i, j, _ = best[len(best) // 2]
    else:
        i, j, _ = max(cells, key=lambda c: c[2])
    return i, j


def _largest_region_point(mask: Any) -> Optional[tuple[float, float]]:
    """The pixel (centre, in pixels) of the largest connected region of ``mask`` nearest its
    centroid; ``None`` when the mask is empty."""
    import numpy as np
    from scipy import ndimage

    lab, n = ndimage.label(mask)
    if n == 0:
        return None
    sizes = ndimage.sum(mask, lab, range(1, n + 1))
    k = int(np.argmax(sizes)) + 1
    ys, xs = np.nonzero(lab == k)
    cy, cx = ys.mean(), xs.mean()
    i = int(np.argmin((ys - cy) ** 2 + (xs - cx) ** 2))
    return float(xs[i]) + 0.5, float(ys[i]) + 0.5


def color_point(image: Any, instruction: str, grid: Optional[SheetGrid]) -> Optional[tuple[float, float, str]]:
    """The point for "the green column / row / cell": the grid cell (or, without a grid, the pixel of
    the largest connected region) most covered by the named colour; for a column or row, the cell in
    the middle of the column/row with the most such cells. ``None`` when no colour word or region."""
    low = unquoted(instruction).lower()
    m = re.search(COLOR_WORDS, low)
    if not m:
        return None
    mask = color_mask(image, m.group(1))
    if grid is not None and grid.rowhead:
        mask[:, : int(grid.rowhead[1]) + 1] = False
    if grid is not None and grid.head:
        mask[: int(grid.head[1]) + 1, :] = False
    if mask.sum() < 30:
        return None
    if grid is not None and len(grid.vlines) > 1 and len(grid.hlines) > 1:
        cells = _covered_cells(mask, grid)
        if cells:
            i, j = _pick_cell(cells, low)
            return ((grid.vlines[i] + grid.vlines[i + 1]) / 2, (grid.hlines[j] + grid.hlines[j + 1]) / 2,
                    f"color_{m.group(1)}")
    pt = _largest_region_point(mask)
    return None if pt is None else (pt[0], pt[1], f"color_{m.group(1)}")
