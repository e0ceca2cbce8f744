"""Shared machinery for the transformers backends (Qwen2.5-VL, Qwen3-VL, InternVL3, Molmo2).

A :class:`HFBackend` holds a model loaded with ``AutoModelForImageTextToText.from_pretrained`` and its
processor, and generates greedily (``do_sample=False``, one beam) for a batch of
:class:`~pointfail.running.backends.base.WorkItem`: each item becomes one user turn ``[image, prompt]`` put
through the checkpoint's own chat template (``processor.apply_chat_template`` with
``add_generation_prompt=True``); the batch is tokenized with **left padding** (decoder-only models
continue from the last position, so pads must precede the prompt), generated, and the new tokens are
decoded with special tokens skipped.

Token counts: ``prompt_tokens`` is the number of non-pad prompt tokens of that sample (including image
placeholder tokens); ``output_tokens`` counts generated tokens up to and including the first end-of-turn
token (pads after it are not counted).

Processors without torchvision: transformers 5.x loads a video processor for every video-capable
VLM processor, and its video processors need torchvision. When torchvision is not installed (as on
this project's CPU development machines), :func:`load_processor` uses the same processor class with
the video processor left out (an image-only subclass); image processing is unchanged. Family images
should install torchvision to use the library's default path.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Optional

from pointfail.running.backends.base import BackendError, TorchBackend, WorkItem, result

_IMAGE_ONLY: dict[str, type] = {}


def torchvision_available() -> bool:
    """Whether transformers can use torchvision (its video processors need it)."""
    from transformers.utils import is_torchvision_available

    return bool(is_torchvision_available())


def processor_class(name: str) -> Any:
    """The transformers processor class ``name`` (e.g. ``"Qwen2_5_VLProcessor"``); without torchvision,
    an image-only subclass of it with the same name that has no ``video_processor`` attribute.

    Raises:
        BackendError: transformers has no such class.
    """
    import transformers

    cls = getattr(transformers, name, None)
    if cls is None:
        raise BackendError(f"transformers {transformers.__version__} has no processor class {name}")
    if torchvision_available():
        return cls
    if name not in _IMAGE_ONLY:
        base_attrs = cls.get_attributes()

        def get_attributes(c, _a=tuple(base_attrs)):
            return [a for a in _a if a != "video_processor"]

        _IMAGE_ONLY[name] = type(name, (cls,), {"get_attributes": classmethod(get_attributes),
                                                "__module__": cls.__module__,
                                                "__doc__": f"{name} without its video processor (no torchvision)."})
    return _IMAGE_ONLY[name]


def load_processor(weights_dir: str | Path, default_class: str, **kwargs: Any):
    """Load the processor saved in ``weights_dir`` (offline). The class comes from the directory's
    ``processor_config.json`` (``processor_class``), else ``default_class``. Raises whatever
    transformers raises for a broken directory."""
    name = default_class
    pc = Path(weights_dir) / "processor_config.json"
    if pc.is_file():
        try:
            name = json.loads(pc.read_text(encoding="utf-8")).get("processor_class") or default_class
        except (OSError, json.JSONDecodeError):
            name = default_class
    if torchvision_available():
        from transformers import AutoProcessor

        return AutoProcessor.from_pretrained(str(weights_dir), local_files_only=True, **kwargs)
    return processor_class(name).from_pretrained(str(weights_dir), local_files_only=True, **kwargs)


def resolve_device(device: str) -> str:
    """``auto`` -> ``cuda`` when a CUDA device is visible, else ``cpu``; ``cuda`` without one raises
    :class:`BackendError`."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise BackendError("--device cuda requested but torch sees no CUDA device")
    if device not in ("cpu", "cuda"):
        raise BackendError(f"unknown device {device!r} (cpu, cuda or auto)")
    return device


def check_weights_dir(weights_dir: Optional[str | Path]) -> Path:
    """The weights directory as a Path; raises :class:`BackendError` when missing or without
    ``config.json``."""
    if not weights_dir:
        raise BackendError("--weights DIR is required for this family")
    p = Path(weights_dir)
    if not (p / "config.json").is_file():
        raise BackendError(f"weights directory {p} has no config.json")
    return p


InputSizeFn = Callable[[Any, Any, int, Any], Optional[list[int]]]
"""``fn(processor, inputs, index, image) -> [W, H] | None``: the model-input size for one sample."""


class HFBackend(TorchBackend):
    """A transformers image-text-to-text model with greedy, left-padded batched generation.

    Args:
        name: backend name (family). model/processor: loaded objects. device: ``cpu`` or ``cuda``.
        input_size: per-family function giving the model-input size ``[W, H]`` in pixels for sample
            ``index`` of a processed batch (see the family modules).
        info: provenance facts returned by :meth:`info`.
    """

    def __init__(self, name: str, model: Any, processor: Any, device: str, input_size: InputSizeFn,
                 info: dict[str, Any]):
        super().__init__(model, processor, device, info)
        self.name = name
        self._input_size = input_size
        tok = processor.tokenizer
        self.pad_id = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        eos = model.generation_config.eos_token_id
        self.eos_ids = set(eos if isinstance(eos, list) else [eos]) - {None}
        if tok.eos_token_id is not None:
            self.eos_ids.add(tok.eos_token_id)

    def messages(self, item: WorkItem) -> list[dict[str, Any]]:
        """One user turn: the image, then the prompt text (the layout of the model cards' examples)."""
        return [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": item.prompt}]}]

    def encode(self, batch: list[WorkItem]):
        """Chat-template, tokenize (left padding) and preprocess the images of ``batch``."""
        texts = [self.processor.apply_chat_template(self.messages(it), add_generation_prompt=True, tokenize=False)
                 for it in batch]
        self.processor.tokenizer.padding_side = "left"
        return self.processor(text=texts, images=[it.image for it in batch], padding=True, return_tensors="pt")

    def generate(self, batch: list[WorkItem]) -> list[dict[str, Any]]:
        """Greedy generation for ``batch`` (same ``max_new_tokens`` for all items, as the worker
        batches them); one result dict per item, in order."""
        import torch

        inputs = self.encode(batch)
        sizes = [self._input_size(self.processor, inputs, i, it.image) for i, it in enumerate(batch)]
        prompt_tokens = inputs["attention_mask"].sum(dim=1).tolist()
        inputs = inputs.to(self.device)
        if "pixel_values" in inputs and self.model.dtype != torch.float32:
            inputs["pixel_values"] = inputs["pixel_values"].to(self.model.dtype)
        with torch.inference_mode():
            out = self.model.generate(**inputs, max_new_tokens=batch[0].max_new_tokens, do_sample=False, num_beams=1,
                                      pad_token_id=self.pad_id)
        new = out[:, inputs["input_ids"].shape[1]:].tolist()
        results = []
        for i, ids in enumerate(new):
            n = len(ids)
            for j, t in enumerate(ids):
                if t in self.eos_ids:
                    n = j + 1
                    break
            text = self.processor.tokenizer.decode(ids[:n], skip_special_tokens=True)
            results.append(result(text, sizes[i], prompt_tokens[i], n))
        return results



def load_hf(name: str, weights_dir: Optional[str | Path], device: str, *, processor_default: str,
            input_size: InputSizeFn, model_class: str = "AutoModelForImageTextToText",
            backend_cls: type = HFBackend, **kwargs: Any) -> HFBackend:
    """Load a transformers VLM from ``weights_dir`` offline (``local_files_only``), in bfloat16 on CUDA
    and float32 on CPU, in eval mode.

    Raises:
        BackendError: missing weights directory or ``config.json``, CUDA requested but absent.
        Other exceptions from transformers propagate (the worker reports them and exits 2).
    """
    import torch
    import transformers

    path = check_weights_dir(weights_dir)
    dev = resolve_device(device)
    dtype = torch.bfloat16 if dev == "cuda" else torch.float32
    processor = load_processor(path, processor_default)
    model = getattr(transformers, model_class).from_pretrained(str(path), dtype=dtype, local_files_only=True,
                                                                **kwargs)
    model.to(dev).eval()
    info = {"backend": name, "checkpoint": str(path), "dtype": str(dtype).replace("torch.", ""), "device": dev,
            "transformers": transformers.__version__, "model_class": type(model).__name__}
    return backend_cls(name, model, processor, dev, input_size, info)
