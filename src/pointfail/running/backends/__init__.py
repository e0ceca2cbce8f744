"""Model backends: one module per family that runs a model inside its image.

Each module ``pointfail.running.backends.<name>`` defines ``load(weights_dir, device, **options) -> Backend``
(see :mod:`pointfail.running.backends.base`); a weight-backed one also ``build_tiny(out, seed=0)``, a tiny
random-weight checkpoint of its real architecture for the tests. The worker (:mod:`pointfail.running.worker`)
picks the module named by the family's ``backend`` attribute: the family registry
(:mod:`pointfail.families`) is the one list, and :func:`backend_modules` reads it. Modules import
torch/transformers inside functions only, so this package is import-light.
"""

from __future__ import annotations

__all__ = ["backend_modules"]


def backend_modules() -> dict[str, str]:
    """Family name -> backend module (``pointfail.running.backends.<name>``) for every registered family that
    runs locally (``Family.backend`` set), sorted by family name."""
    from pointfail.families import list_families

    return {f.name: f.backend for f in list_families() if f.backend is not None}
