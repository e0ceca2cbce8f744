"""``python -m pointfail.running.served.transformers_server CHECKPOINT [transformers serve options]``: transformers'
own OpenAI-compatible server (``transformers serve``, the ``transformers[serving]`` extra) started the way
pointfail's in-container backends load a checkpoint.

transformers 5.x builds a video processor for every video-capable VLM processor, and its video
processors need torchvision; the family images do not carry torchvision (their backends load an
image-only processor instead: :func:`pointfail.running.backends.hf.processor_class`). Without torchvision,
``transformers serve`` would fail to load the checkpoint's processor. This entry point makes
``AutoProcessor.from_pretrained`` return that same image-only processor when torchvision is missing
(image processing unchanged), then hands the command line to transformers' CLI. With torchvision it
changes nothing. The runner uses it for ``serve = { engine = "transformers" }``
(:func:`pointfail_runner.serving.transformers_argv`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Optional


def image_only_processors() -> bool:
    """Make ``transformers.AutoProcessor.from_pretrained`` load local checkpoints with the image-only
    processor class when torchvision is not installed. Returns whether it did (``False``: torchvision
    is there, nothing changed)."""
    from pointfail.running.backends.hf import processor_class, torchvision_available

    if torchvision_available():
        return False
    import transformers

    auto = transformers.AutoProcessor
    original = auto.from_pretrained

    def from_pretrained(name_or_path: Any, *args: Any, **kwargs: Any) -> Any:
        pc = Path(str(name_or_path)) / "processor_config.json"
        if pc.is_file():
            try:
                name = json.loads(pc.read_text(encoding="utf-8")).get("processor_class")
            except (OSError, ValueError):
                name = None
            if name:
                kwargs.pop("trust_remote_code", None)
                return processor_class(name).from_pretrained(str(name_or_path), *args, **kwargs)
        return original(name_or_path, *args, **kwargs)

    auto.from_pretrained = staticmethod(from_pretrained)
    return True


def main(argv: Optional[list[str]] = None) -> int:
    """Run ``transformers serve`` with ``argv`` (default ``sys.argv[1:]``) after
    :func:`image_only_processors`."""
    image_only_processors()
    from transformers.cli.transformers import main as transformers_main

    sys.argv = ["transformers", "serve", *(sys.argv[1:] if argv is None else argv)]
    transformers_main()
    return 0


if __name__ == "__main__":
    sys.exit(main())
