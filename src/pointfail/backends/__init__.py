"""Model backends: one module per family that runs a model inside its image.

Each module ``pointfail.backends.<name>`` defines ``load(weights_dir, device, **options) -> Backend``
(see :mod:`pointfail.backends.base`). The worker (:mod:`pointfail.worker`) picks the module named by
the family's ``backend`` attribute. Modules import torch/transformers inside functions only, so this
package is import-light.

Backends: ``center`` and ``ocr`` (baselines, no weights), ``qwen2_5_vl``, ``qwen3_vl``, ``internvl3``,
``molmo2`` (native transformers classes) and ``molmo`` (Molmo v1, remote code at a pinned revision).
"""

from __future__ import annotations

BACKENDS: tuple[str, ...] = ("center", "internvl3", "molmo", "molmo2", "ocr", "qwen2_5_vl", "qwen3_vl")
"""Names of the backend modules in this package, sorted."""
