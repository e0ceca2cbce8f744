"""Qwen3-VL backend (``Qwen3VLForConditionalGeneration`` via ``AutoModelForImageTextToText``).

Model-input size as for Qwen2.5-VL, with Qwen3-VL's patch size 16 (factor 32):
``[w * 16, h * 16]`` from ``image_grid_thw``. The qwen3_vl frame is the 0-1000 grid (Qwen3-VL model
card), so the size is recorded for diagnostics, not needed to convert.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from pointfail.running.backends.hf import HFBackend, load_hf
from pointfail.running.backends.qwen2_5_vl import grid_input_size


def load(weights_dir: Optional[str], device: str = "auto", **options: Any) -> HFBackend:
    """Load Qwen3-VL from ``weights_dir`` (see :func:`pointfail.running.backends.hf.load_hf`)."""
    return load_hf("qwen3_vl", weights_dir, device, processor_default="Qwen3VLProcessor", input_size=grid_input_size)


def build_tiny(out: str | Path, seed: int = 0) -> Path:
    """A tiny random-weight Qwen3-VL checkpoint of the real architecture in ``out``, which :func:`load`
    loads offline (for the tests: :func:`pointfail.generated.testing.tiny.build_qwen3_vl`); returns the path."""
    from pointfail.generated.testing.tiny import build_qwen3_vl

    return build_qwen3_vl(out, seed=seed)
