"""Molmo2 backend (``allenai/Molmo2-*``) through transformers' native ``Molmo2ForConditionalGeneration``
(via ``AutoModelForImageTextToText``) and ``Molmo2Processor``.

Molmo2 answers points as ``<points coords="IMG ID X Y ...">`` on a 0-1000 grid of the original image
(the molmo2 family's frame), so the model-input size is recorded for diagnostics only: the size of
the overlapping-crop canvas the Molmo2 image processor resized the image to, computed with the
processor module's own ``compute_crop_geometry`` (``tests/test_tiny_models.py`` checks it against the
processor's ``image_grids`` output on a tiny checkpoint). transformers 5.x has only a torchvision
Molmo2 image processor, so this family needs torchvision installed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from pointfail.running.backends.hf import HFBackend, load_hf


def crop_input_size(processor: Any, inputs: Any, index: int, image: Any) -> Optional[list[int]]:
    """``[W, H]`` of the overlapping-crop canvas the Molmo2 image processor resizes ``image`` to
    (``compute_crop_geometry`` of the processor module with the processor's own ``max_crops``,
    ``overlap_margins``, crop size and ``patch_size``)."""
    from transformers.models.molmo2.image_processing_molmo2 import compute_crop_geometry

    ip = processor.image_processor
    w, h = image.size
    _, _, canvas_h, canvas_w = compute_crop_geometry(h, w, int(ip.max_crops), list(ip.overlap_margins),
                                                     int(ip.size["height"]), int(ip.patch_size))
    return [int(canvas_w), int(canvas_h)]


def load(weights_dir: Optional[str], device: str = "auto", **options: Any) -> HFBackend:
    """Load Molmo2 from ``weights_dir`` (see :func:`pointfail.running.backends.hf.load_hf`)."""
    return load_hf("molmo2", weights_dir, device, processor_default="Molmo2Processor", input_size=crop_input_size)


def build_tiny(out: str | Path, seed: int = 0) -> Path:
    """A tiny random-weight Molmo2 checkpoint of the real architecture in ``out``, which :func:`load`
    loads offline (for the tests: :func:`pointfail.generated.testing.tiny.build_molmo2`); returns the path."""
    from pointfail.generated.testing.tiny import build_molmo2

    return build_molmo2(out, seed=seed)
