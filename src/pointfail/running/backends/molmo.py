"""Molmo v1 backend (``allenai/Molmo-7B-D-0924``, ``allenai/MolmoE-1B-0924``): remote code, pinned.

Molmo v1 has no class in transformers; its checkpoints ship their own modelling code, loaded with
``trust_remote_code=True``. Running code from a checkpoint is only acceptable when the code is
pinned: this backend **refuses** to load unless a revision is given (``--revision``, or the
``POINTFAIL_MODEL_REVISION`` environment variable) that is a full 40-hex commit id, and, when the
weights directory is a hub snapshot directory (named by its commit), that the two agree; and unless
the weights folder matches, file for file and byte for byte, a weights manifest taken when it was
downloaded (``--weights-manifest FILE`` or ``POINTFAIL_WEIGHTS_MANIFEST``;
:mod:`pointfail.running.backends.manifest`): a revision names what was asked for, the manifest pins what
runs. Both checks happen before transformers is imported, so no code from the folder runs when one
fails. The remote
code needs the transformers 4.4x-4.5x line (issue 4; it is why Molmo v1 gets its own image).

Generation follows the model card: ``processor.process(images=[image], text=prompt)``, a batch
dimension added, ``model.generate_from_batch(inputs, GenerationConfig(max_new_tokens=N,
stop_strings="<|endoftext|>", use_cache=True), tokenizer=processor.tokenizer)`` with greedy decoding
(``use_cache`` explicit: the released ``generate_from_batch`` asserts it), new tokens
decoded with special tokens skipped. One sample per ``generate_from_batch`` call (the card's
processor takes one example); the worker's batch is run item by item. The molmo frame is percent of
the original image, so no model-input size is recorded.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Optional

from pointfail.running.backends.base import BackendError, TorchBackend, WorkItem, result
from pointfail.running.backends.hf import check_weights_dir, resolve_device

_COMMIT = re.compile(r"^[0-9a-f]{40}$")


def pinned_revision(weights_dir: Path, revision: Optional[str]) -> str:
    """The pinned revision to load remote code at.

    Raises:
        BackendError: no revision given, not a 40-hex commit id, or the weights directory is a hub
            snapshot (a directory named by a 40-hex commit) of another commit.
    """
    rev = revision or os.environ.get("POINTFAIL_MODEL_REVISION") or ""
    if not rev:
        raise BackendError("molmo runs the checkpoint's own code (trust_remote_code); refusing without a pinned "
                           "revision: pass --revision <40-hex commit> (or set POINTFAIL_MODEL_REVISION)")
    if not _COMMIT.match(rev):
        raise BackendError(f"molmo revision {rev!r} is not a full 40-hex commit id; branch and tag names move, "
                           "so remote code is only trusted at a commit")
    name = weights_dir.resolve().name
    if _COMMIT.match(name) and name != rev:
        raise BackendError(f"weights directory is hub snapshot {name}, not the pinned revision {rev}")
    return rev


class MolmoBackend(TorchBackend):
    """Molmo v1 through its remote code; see the module docstring."""

    name = "molmo"

    def generate(self, batch: list[WorkItem]) -> list[dict[str, Any]]:
        """Greedy generation, one item at a time (the card's processor takes a single example)."""
        import torch
        from transformers import GenerationConfig

        out = []
        for item in batch:
            inputs = self.processor.process(images=[item.image], text=item.prompt)
            inputs = {k: v.to(self.device).unsqueeze(0) for k, v in inputs.items()}
            # use_cache is said explicitly: the released generate_from_batch asserts it, and transformers 5.x
            # leaves GenerationConfig.use_cache None (4.48 defaults it to True)
            cfg = GenerationConfig(max_new_tokens=item.max_new_tokens, stop_strings="<|endoftext|>", do_sample=False,
                                   use_cache=True)
            with torch.inference_mode():
                ids = self.model.generate_from_batch(inputs, cfg, tokenizer=self.processor.tokenizer)
            new = ids[0, inputs["input_ids"].size(1):]
            text = self.processor.tokenizer.decode(new, skip_special_tokens=True)
            out.append(result(text, None, int(inputs["input_ids"].size(1)), int(new.numel())))
        return out



def load(weights_dir: Optional[str], device: str = "auto", revision: Optional[str] = None,
         weights_manifest: Optional[str] = None, **options: Any) -> MolmoBackend:
    """Load Molmo v1 from ``weights_dir`` with remote code at a pinned ``revision``, after checking the
    folder against ``weights_manifest`` (see the module docstring). Raises :class:`BackendError` when
    the revision is missing or does not match, when no manifest is given, or when the folder differs
    from it (a planted or changed file)."""
    from pointfail.running.backends.manifest import verify_weights

    path = check_weights_dir(weights_dir)
    rev = pinned_revision(path, revision)
    manifest = weights_manifest or os.environ.get("POINTFAIL_WEIGHTS_MANIFEST")
    if not manifest:
        raise BackendError("molmo runs the checkpoint's own code (trust_remote_code); refusing without a weights "
                           "manifest taken at download time: pass --weights-manifest FILE (make one with "
                           "`pointfail weights-manifest DIR --out FILE` right after downloading)")
    verify_weights(path, manifest)
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoProcessor

    dev = resolve_device(device)
    dtype = torch.bfloat16 if dev == "cuda" else torch.float32
    kw = dict(trust_remote_code=True, revision=rev, local_files_only=True)
    processor = AutoProcessor.from_pretrained(str(path), **kw)
    model = AutoModelForCausalLM.from_pretrained(str(path), torch_dtype=dtype, **kw)
    model.to(dev).eval()
    info = {"backend": "molmo", "checkpoint": str(path), "revision": rev, "dtype": str(dtype).replace("torch.", ""),
            "device": dev, "transformers": transformers.__version__}
    return MolmoBackend(model, processor, dev, info)
