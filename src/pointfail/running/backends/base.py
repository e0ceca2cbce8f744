"""The backend contract shared by every model backend and the worker.

A backend turns a batch of :class:`WorkItem` (an opened image plus the prompt actually sent) into one
result dict per item, in order::

    {"raw_text": str, "model_input_size": [W, H] | None, "prompt_tokens": int | None,
     "output_tokens": int | None}

``model_input_size`` is ``[width, height]`` in pixels of the image the processor actually fed the
model (e.g. Qwen's ``image_grid_thw`` times the patch size), ``None`` when the backend has no resized
input (baselines). The worker adds ``sample_id``, ``seconds`` and ``error``; see the responses format
in ``docs/architecture.md``. A backend raises on failure; the worker turns the exception into error
responses (retrying a failed batch one sample at a time).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Protocol, runtime_checkable


class BackendError(RuntimeError):
    """A backend cannot be loaded (missing weights, refused remote code, missing dependency).
    The worker reports it and exits non-zero: an infrastructure failure, never a model outcome."""


@dataclass
class WorkItem:
    """One request, ready for a backend.

    sample_id: the request's id. image: a ``PIL.Image.Image`` in RGB mode, fully decoded, original
    size (``image.size`` is ``(W, H)`` in pixels). image_path: where it was read from. prompt: the
    text sent to the model. task: ``"point"`` or ``"box"``. max_new_tokens: generation limit.
    instruction: the core instruction (``records.Prompt.core``) when the request carries it, for
    backends that read the task rather than a prompt (the ``ocr`` baseline). absent_possible: the
    prompt told the model how to decline.
    """

    sample_id: str
    image: Any
    image_path: str
    prompt: str
    task: str = "point"
    max_new_tokens: int = 128
    extra: dict[str, Any] = field(default_factory=dict)
    instruction: Optional[str] = None
    absent_possible: bool = False


@runtime_checkable
class Backend(Protocol):
    """What ``load()`` returns. ``generate(batch)`` returns one result dict per item, same order;
    ``info()`` returns provenance facts (checkpoint name, revision, dtype) as plain JSON values."""

    name: str

    def generate(self, batch: list[WorkItem]) -> list[dict[str, Any]]: ...

    def info(self) -> dict[str, Any]: ...


class TorchBackend:
    """Shared part of the torch model backends (:class:`pointfail.running.backends.hf.HFBackend`, Molmo's
    remote-code backend): holds ``model``, ``processor``, ``device`` (``"cpu"`` or ``"cuda"``) and
    the provenance facts for :meth:`info`; :meth:`recover` frees cached GPU memory. Subclasses
    set ``name`` and implement ``generate``. torch is imported only inside :meth:`recover`."""

    name: str = ""

    def __init__(self, model: Any, processor: Any, device: str, info: dict[str, Any]):
        self.model = model
        self.processor = processor
        self.device = device
        self._info = info

    def recover(self) -> None:
        """Free cached GPU memory after a failure (out of memory); nothing on CPU."""
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()

    def info(self) -> dict[str, Any]:
        """Provenance facts (a copy): backend, checkpoint path, revision, dtype, device, versions."""
        return dict(self._info)


def result(raw_text: str, model_input_size: Optional[list[int]] = None, prompt_tokens: Optional[int] = None,
           output_tokens: Optional[int] = None) -> dict[str, Any]:
    """Build one backend result dict (the shape documented in this module)."""
    return {
        "raw_text": raw_text,
        "model_input_size": None if model_input_size is None else [int(v) for v in model_input_size],
        "prompt_tokens": None if prompt_tokens is None else int(prompt_tokens),
        "output_tokens": None if output_tokens is None else int(output_tokens),
    }
