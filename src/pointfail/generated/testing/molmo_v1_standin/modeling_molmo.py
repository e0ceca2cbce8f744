"""STAND-IN for Molmo v1's ``modeling_molmo.py`` (see this package's ``__init__``).

``MolmoForCausalLM``: token embedding, image patches projected and added at the ``image_input_idx``
positions (Molmo's way of placing image features in the sequence), one pre-norm causal attention +
MLP block, a final norm and an output head. ``generate_from_batch`` decodes greedily until the
tokenizer's end-of-text token or ``generation_config.max_new_tokens``, as the model card's example
uses it, and returns the prompt followed by the new tokens, shape ``[batch, prompt + new]``.
"""

import torch
from torch import nn
from transformers import PreTrainedModel

from .config_molmo import MolmoConfig


class _Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.norm1 = nn.LayerNorm(cfg.hidden_size)
        self.attn = nn.MultiheadAttention(cfg.hidden_size, cfg.num_heads, batch_first=True)
        self.norm2 = nn.LayerNorm(cfg.hidden_size)
        self.mlp = nn.Sequential(nn.Linear(cfg.hidden_size, cfg.intermediate_size), nn.GELU(),
                                 nn.Linear(cfg.intermediate_size, cfg.hidden_size))

    def forward(self, x):
        n = x.shape[1]
        mask = torch.triu(torch.ones(n, n, dtype=torch.bool, device=x.device), diagonal=1)
        h = self.norm1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class MolmoForCausalLM(PreTrainedModel):
    """The stand-in network (see the module docstring)."""

    config_class = MolmoConfig
    base_model_prefix = "model"
    _no_split_modules = ["_Block"]

    def __init__(self, config):
        super().__init__(config)
        patch_dim = config.patch_size * config.patch_size * 3
        self.wte = nn.Embedding(config.vocab_size, config.hidden_size)
        self.wpe = nn.Embedding(config.max_position, config.hidden_size)
        self.image_projector = nn.Linear(patch_dim, config.hidden_size)
        self.block = _Block(config)
        self.ln_f = nn.LayerNorm(config.hidden_size)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.post_init()

    def get_input_embeddings(self):
        return self.wte

    def set_input_embeddings(self, value):
        self.wte = value

    def get_output_embeddings(self):
        return self.lm_head

    def _init_weights(self, module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=0.02)
            if getattr(module, "bias", None) is not None:
                nn.init.zeros_(module.bias)

    def forward(self, input_ids, images=None, image_input_idx=None, image_masks=None, **kwargs):
        """Logits ``[batch, seq, vocab]`` for ``input_ids`` ``[batch, seq]``; ``images``
        ``[batch, crops, patches, patch_dim]`` are added at ``image_input_idx`` (``-1``: none)."""
        b, n = input_ids.shape
        pos = torch.arange(n, device=input_ids.device).clamp(max=self.config.max_position - 1)
        x = self.wte(input_ids) + self.wpe(pos)[None]
        if images is not None and image_input_idx is not None:
            feats = self.image_projector(images.to(x.dtype))
            if image_masks is not None:
                feats = feats * image_masks.to(x.dtype)[..., None]
            feats = feats.reshape(b, -1, feats.shape[-1])
            idx = image_input_idx.reshape(b, -1)
            for i in range(b):
                valid = idx[i] >= 0
                x[i, idx[i][valid]] = x[i, idx[i][valid]] + feats[i][valid]
        x = self.ln_f(self.block(x))
        return self.lm_head(x)

    @torch.no_grad()
    def generate_from_batch(self, batch, generation_config=None, tokenizer=None, **kwargs):
        """Greedy decoding (the model card's call); stops at the tokenizer's end-of-text token (or
        ``generation_config.eos_token_id``) or after ``max_new_tokens``. As in the released code, a
        ``generation_config`` with ``max_new_tokens`` is required and it must keep ``use_cache``."""
        if generation_config is None or generation_config.max_new_tokens is None:
            raise ValueError("generate_from_batch needs a GenerationConfig with max_new_tokens (as the released code)")
        if not generation_config.use_cache:
            raise ValueError("generate_from_batch needs use_cache=True (the released code asserts it)")
        max_new = int(generation_config.max_new_tokens)
        eos = getattr(tokenizer, "eos_token_id", None)
        if eos is None and generation_config is not None:
            eos = generation_config.eos_token_id
        ids = batch["input_ids"]
        extra = {k: batch[k] for k in ("images", "image_input_idx", "image_masks") if k in batch}
        for _ in range(max_new):
            nxt = self.forward(ids, **extra)[:, -1].argmax(dim=-1, keepdim=True)
            ids = torch.cat([ids, nxt], dim=1)
            if eos is not None and bool((nxt == eos).all()):
                break
        return ids
