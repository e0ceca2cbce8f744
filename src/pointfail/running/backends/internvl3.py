"""InternVL3 backend, hf-format checkpoints (``OpenGVLab/InternVL3-*-hf``) through transformers'
``InternVLForConditionalGeneration`` (via ``AutoModelForImageTextToText``) and ``InternVLProcessor``.

Model-input size: InternVL3's dynamic tiling (GotOcr2 image processor with ``crop_to_patches``)
resizes the image to a ``cols x rows`` grid of square tiles (448 px in the released models) whose
aspect ratio is closest to the image's, with ``min_patches <= cols * rows <= max_patches``, plus a
thumbnail tile. The recorded size is ``[cols * tile_w, rows * tile_h]``, computed with the processor
module's own ``get_optimal_tiled_canvas``; ``[tile_w, tile_h]`` when tiling is off. The internvl3 frame
is the 0-1000 grid, so the size is recorded for diagnostics.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from pointfail.running.backends.hf import HFBackend, load_hf


def tiled_input_size(processor: Any, inputs: Any, index: int, image: Any) -> Optional[list[int]]:
    """``[W, H]`` in pixels of the tiled canvas the GotOcr2 image processor resized ``image`` to."""
    ip = processor.image_processor
    size = ip.size
    th, tw = int(size["height"]), int(size["width"])
    if not getattr(ip, "crop_to_patches", False):
        return [tw, th]
    from transformers.models.got_ocr2.image_processing_pil_got_ocr2 import get_optimal_tiled_canvas

    w, h = image.size
    cols, rows = get_optimal_tiled_canvas((h, w), (th, tw), int(ip.min_patches), int(ip.max_patches))
    return [cols * tw, rows * th]


def load(weights_dir: Optional[str], device: str = "auto", **options: Any) -> HFBackend:
    """Load an hf-format InternVL3 checkpoint from ``weights_dir`` (see
    :func:`pointfail.running.backends.hf.load_hf`)."""
    return load_hf("internvl3", weights_dir, device, processor_default="InternVLProcessor",
                   input_size=tiled_input_size)


def build_tiny(out: str | Path, seed: int = 0) -> Path:
    """A tiny random-weight InternVL3 (hf format) checkpoint of the real architecture in ``out``, which :func:`load`
    loads offline (for the tests: :func:`pointfail.generated.testing.tiny.build_internvl`); returns the path."""
    from pointfail.generated.testing.tiny import build_internvl

    return build_internvl(out, seed=seed)
