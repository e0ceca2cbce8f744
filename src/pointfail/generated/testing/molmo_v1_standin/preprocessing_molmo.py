"""STAND-IN for Molmo v1's ``preprocessing_molmo.py`` (see this package's ``__init__``).

``MolmoProcessor.process(images=[image], text=prompt)``: the image is resized to one square crop
(``crop_size`` pixels, bilinear, Pillow only), cut into ``patch_size`` patches scaled to [-1, 1]; the
text is ``" User: {prompt} Assistant:"`` (Molmo v1's chat format) after the image tokens
``<im_start>``, one ``<im_patch>`` per patch, ``<im_end>``, and, as the released processor does, the
whole sequence follows one BOS token (the tokenizer's ``bos_token_id``, else its ``eos_token_id``: Qwen2
and OLMo have no BOS), with ``image_input_idx`` shifted by one for it. Returns ``input_ids`` (long, ``[seq]``),
``images`` (float, ``[1, patches, patch_size*patch_size*3]``), ``image_input_idx`` (long,
``[1, patches]``: positions of the ``<im_patch>`` tokens) and ``image_masks`` (float, ``[1, patches]``).
"""

import json
import os

import numpy as np
import torch
from transformers import PreTrainedTokenizerFast


class MolmoProcessor:
    """Tokenizer + image preprocessing of the stand-in (see the module docstring)."""

    def __init__(self, tokenizer, patch_size=14, crop_size=56):
        self.tokenizer = tokenizer
        self.patch_size = int(patch_size)
        self.crop_size = int(crop_size)

    @classmethod
    def register_for_auto_class(cls, auto_class="AutoProcessor"):
        """Called by ``AutoProcessor`` for local remote-code processors; nothing to register."""
        return None

    @classmethod
    def from_pretrained(cls, path, **kwargs):
        """Load from a checkpoint directory: its tokenizer and ``preprocessor_config.json``."""
        with open(os.path.join(path, "preprocessor_config.json"), encoding="utf-8") as f:
            cfg = json.load(f)
        tok = PreTrainedTokenizerFast.from_pretrained(path, local_files_only=True)
        return cls(tok, cfg.get("patch_size", 14), cfg.get("crop_size", 56))

    def process(self, images=None, text="", **kwargs):
        """Inputs for one example (see the module docstring)."""
        image = images[0].convert("RGB").resize((self.crop_size, self.crop_size))
        arr = np.asarray(image, dtype=np.float32) / 127.5 - 1.0
        p = self.patch_size
        g = self.crop_size // p
        patches = arr.reshape(g, p, g, p, 3).transpose(0, 2, 1, 3, 4).reshape(g * g, p * p * 3)
        tok = self.tokenizer
        start, patch, end = (tok.convert_tokens_to_ids(t) for t in ("<im_start>", "<im_patch>", "<im_end>"))
        text_ids = tok.encode(" User: " + text + " Assistant:", add_special_tokens=False)
        bos = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
        ids = [bos, start] + [patch] * (g * g) + [end] + text_ids
        return {
            "input_ids": torch.tensor(ids, dtype=torch.long),
            "images": torch.from_numpy(np.ascontiguousarray(patches))[None],
            "image_input_idx": torch.arange(2, 2 + g * g, dtype=torch.long)[None],
            "image_masks": torch.ones(1, g * g, dtype=torch.float32),
        }
