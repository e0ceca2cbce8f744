"""``center`` baseline: always answers the image centre, in the ``json_pixels`` convention.

A floor for every benchmark (no weights). Its worker (``pointfail.running.backends.center``) writes
``{"point": [W/2, H/2]}`` in pixels of the original image; parsing is exactly :mod:`json_pixels`.
"""

from __future__ import annotations

from pointfail.families.json_pixels import JsonPixels


class Center(JsonPixels):
    """Image-centre baseline (json_pixels answers)."""

    name = "center"
    backend = "pointfail.running.backends.center"
    needs_weights = False


FAMILY = Center()
