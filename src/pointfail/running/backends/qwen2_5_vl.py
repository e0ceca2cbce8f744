"""Qwen2.5-VL backend (``Qwen2_5_VLForConditionalGeneration`` via ``AutoModelForImageTextToText``).

Model-input size: the Qwen2-VL image processor resizes each image with ``smart_resize`` (factor =
patch size x merge size = 28) and reports ``image_grid_thw = (t, h, w)`` in patches of ``patch_size``
(14) pixels; the image the model saw is therefore ``[w * 14, h * 14]`` pixels (width, height). The
qwen2_5_vl frame (absolute pixels of the resized input, Qwen2.5-VL technical report / model card)
converts with exactly this size.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from pointfail.running.backends.hf import HFBackend, load_hf


def grid_input_size(processor: Any, inputs: Any, index: int, image: Any) -> Optional[list[int]]:
    """``[W, H]`` in pixels from ``inputs["image_grid_thw"][index]`` times the image processor's
    ``patch_size`` (Qwen2-VL / Qwen2.5-VL / Qwen3-VL processors)."""
    grid = inputs.get("image_grid_thw")
    if grid is None:
        return None
    _, h, w = (int(v) for v in grid[index].tolist())
    patch = int(processor.image_processor.patch_size)
    return [w * patch, h * patch]


def load(weights_dir: Optional[str], device: str = "auto", **options: Any) -> HFBackend:
    """Load Qwen2.5-VL from ``weights_dir`` (see :func:`pointfail.running.backends.hf.load_hf`)."""
    return load_hf("qwen2_5_vl", weights_dir, device, processor_default="Qwen2_5_VLProcessor",
                   input_size=grid_input_size)


def build_tiny(out: str | Path, seed: int = 0) -> Path:
    """A tiny random-weight Qwen2.5-VL checkpoint of the real architecture in ``out``, which :func:`load`
    loads offline (for the tests: :func:`pointfail.generated.testing.tiny.build_qwen2_5_vl`); returns the path."""
    from pointfail.generated.testing.tiny import build_qwen2_5_vl

    return build_qwen2_5_vl(out, seed=seed)
