"""Tiny random-weight checkpoints of the real model architectures, for tests and benchmarks.

``shared/DESIGN.md`` ("Testing without weights or a GPU"): real model code paths are tested with tiny
random-weight checkpoints of the real architectures, built offline from small configs, saved with
``save_pretrained`` and loaded back with ``from_pretrained``; tokenizers are built in memory.

Each builder writes a directory that ``AutoModelForImageTextToText.from_pretrained`` and
:func:`pointfail.running.backends.hf.load_processor` load offline: ``config.json``, ``model.safetensors``,
``generation_config.json``, ``tokenizer.json`` / ``tokenizer_config.json``, the processor's config and
a chat template. Sizes are a few hundred kB; building one takes about a second after the transformers
import.

The tokenizer is a byte-level BPE with no merges (the 256 byte symbols, so any prompt tokenizes) plus
the special tokens of the family's chat template and image placeholders (names as in the released
checkpoints' tokenizers: Qwen ``<|im_start|>``, ``<|image_pad|>``; InternVL ``<img>``, ``<IMG_CONTEXT>``;
Molmo2 ``<im_patch>``, ``<im_col>``, ...). The chat templates are minimal re-statements of each
family's turn format, not copies of the released templates.

Architectures (transformers 5.x native classes): Qwen2.5-VL (``Qwen2_5_VLForConditionalGeneration``),
Qwen3-VL (``Qwen3VLForConditionalGeneration``), InternVL3 hf-format (``InternVLForConditionalGeneration``),
Molmo2 (``Molmo2ForConditionalGeneration``). Molmo v1 has no native class (remote code only), so it
has no tiny builder. Molmo2's image processor exists only as a torchvision processor in transformers
5.x, so :func:`build_molmo2` needs torchvision (the other builders run without it, through the
image-only processors of :func:`pointfail.running.backends.hf.processor_class`). With torchvision installed,
every builder also saves the family's video processor (transformers' processors require one then, and
``AutoProcessor`` loads it back), so the same checkpoints load on both paths.

Weights are random (seeded): the generated text is gibberish, which is what the worker's tests need
(real generation, token counting, model-input size), not what a scorer would count as an answer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Optional

QWEN_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
                 "<|image_pad|>", "<|video_pad|>"]

_QWEN_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for c in m['content'] %}"
    "{% if c['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

_INTERNVL_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for c in m['content'] %}"
    "{% if c['type'] == 'image' %}<IMG_CONTEXT>\n"
    "{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

_MOLMO2_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for c in m['content'] %}"
    "{% if c['type'] == 'image' %}<|image|>"
    "{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def byte_level_tokenizer(specials: list[str], **kwargs: Any):
    """A ``transformers`` fast tokenizer over a byte-level BPE with no merges plus ``specials``.

    Ids: the 256 byte symbols in sorted order (0..255), then ``specials`` in the given order
    (256, 257, ...). ``kwargs`` go to the tokenizer constructor (``eos_token``, ``pad_token``,
    ``extra_special_tokens``, ...).
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    tok = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(alphabet)}, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(specials)
    return PreTrainedTokenizerFast(tokenizer_object=tok, **kwargs)


def _processor(cls_name: str, **parts: Any):
    from pointfail.running.backends.hf import processor_class

    return processor_class(cls_name)(**parts)


def _video_processor(cls_name: str, **kwargs: Any) -> dict[str, Any]:
    """``{"video_processor": transformers.<cls_name>(**kwargs)}`` when torchvision is installed, else ``{}``.

    With torchvision, transformers 5.x's VLM processors require a video processor argument (its
    ``ProcessorMixin`` checks every attribute's class) and ``AutoProcessor`` loads one back; without
    it, :func:`pointfail.running.backends.hf.processor_class` gives the image-only subclass, which takes none.
    The kwargs mirror the image processor's geometry so the saved checkpoint is self-consistent; the
    worker never sends videos.
    """
    from pointfail.running.backends.hf import torchvision_available

    if not torchvision_available():
        return {}
    import transformers

    return {"video_processor": getattr(transformers, cls_name)(**kwargs)}


def _save(model, processor, out: Path) -> Path:
    """Save model and processor to ``out``. A processor with a video processor also gets it written
    on its own as ``video_preprocessor_config.json`` (the layout of the released checkpoints):
    transformers 5.x keeps it only inside ``processor_config.json`` otherwise, and loaders that look
    for the separate file (``transformers serve``'s ``AutoProcessor`` path) fail without it."""
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    processor.save_pretrained(out)
    video = getattr(processor, "video_processor", None)
    if video is not None:
        video.save_pretrained(out)
    return out


def _seed(seed: int) -> None:
    import torch

    torch.manual_seed(seed)


def plain_answer_suppressions(tok: Any, specials: list[str], end_of_turn: str) -> list[int]:
    """Token ids a ``plain`` tiny checkpoint never generates: every special token but ``end_of_turn``,
    and the byte tokens of whitespace characters (``str.isspace``: tab, line feed, vertical tab, form
    feed, carriage return, the separators 0x1c-0x1f, space).

    Why: random weights emit both, a trained checkpoint writes neither at the edges of an answer, and
    decoders disagree on them: the worker's decode (``skip_special_tokens=True``) drops control tokens
    and keeps whitespace, while ``transformers serve`` reads the reply through its response template
    (``transformers/cli/serving/utils.py``, Qwen fallback), which keeps control tokens, closes the
    content at a turn marker and drops trailing whitespace. A plain checkpoint's answers decode to the
    same text on both paths, so served and in-container records can be compared byte for byte.
    """
    ids = [tok.convert_tokens_to_ids(t) for t in specials if t != end_of_turn]
    for ch in "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f ":
        enc = tok.encode(ch, add_special_tokens=False)
        if len(enc) != 1:
            raise ValueError(f"whitespace {ch!r} is not one byte token: {enc}")
        ids.append(enc[0])
    return sorted(set(ids))


def wire_answer(model: Any, tok: Any, pieces: list[str], eos_id: int, trigger: str = "\n",
                scale_in: float = 50.0, scale_out: float = 10.0) -> None:
    """Make greedy decoding of a random-weight checkpoint write ``"".join(pieces)`` and stop.

    ``pieces`` must be tokens of ``tok`` (added with ``tok.add_tokens`` before the model was built)
    and distinct. Token ``trigger`` (the last token of the chat template's generation prompt, ``"\n"``
    after ``<|im_start|>assistant``) and each piece get an input embedding of norm ``scale_in`` along
    their own axis ``k`` of the hidden space; the output-head row of the token that must follow gets
    ``scale_out`` along the same axis. The random transformer layers add a residual that is small next
    to these embeddings, so after the final norm the next token's logit (about ``scale_out *
    sqrt(hidden)``) dominates: the answer is fixed, whatever the image, while the real architecture
    (vision tower, attention, rotary positions, chat template, processor) still runs on every
    sample. The input and output embeddings must not be tied. Raises ``ValueError`` for too many or
    repeated pieces, or tied embeddings.
    """
    import torch

    emb = model.get_input_embeddings().weight
    head = model.get_output_embeddings().weight
    if emb.data_ptr() == head.data_ptr():
        raise ValueError("wire_answer needs untied input and output embeddings")
    trig = tok.encode(trigger, add_special_tokens=False)
    ids = [tok.convert_tokens_to_ids(p) for p in pieces]
    if len(trig) != 1 or len(set(ids)) != len(ids) or len(ids) + 1 > emb.shape[1]:
        raise ValueError(f"cannot wire {pieces!r}: trigger {trigger!r} -> {trig}, piece ids {ids}")
    chain = trig + ids
    nexts = ids + [eos_id]
    with torch.no_grad():
        for k, (cur, nxt) in enumerate(zip(chain, nexts)):
            axis = torch.zeros(emb.shape[1], dtype=emb.dtype)
            axis[k] = 1.0
            emb[cur] = scale_in * axis
            head[nxt] = scale_out * axis


def _qwen(out: Path, *, version: str, seed: int, plain: bool = False, answer: Optional[list[str]] = None) -> Path:
    import transformers as T

    _seed(seed)
    tok = byte_level_tokenizer(QWEN_SPECIALS, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    if answer:
        tok.add_tokens(list(answer))
    ids = {t: tok.convert_tokens_to_ids(t) for t in QWEN_SPECIALS}
    vocab = len(tok)
    token_ids = dict(image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
                     vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"])
    text = dict(vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
                num_key_value_heads=1, max_position_embeddings=1024, bos_token_id=None,
                eos_token_id=ids["<|im_end|>"], pad_token_id=ids["<|endoftext|>"])
    untied = {"tie_word_embeddings": False} if answer else {}
    text.update(untied)
    if version == "2.5":
        # head_dim 16 -> mrope sections (t, h, w) sum to head_dim / 2 = 8
        text["rope_parameters"] = {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 2, 4]}
        patch = 14
        cfg = T.Qwen2_5_VLConfig(
            text_config=text,
            vision_config=dict(depth=1, hidden_size=16, intermediate_size=32, num_heads=2, out_hidden_size=32,
                               patch_size=patch, spatial_merge_size=2, temporal_patch_size=2, window_size=56,
                               fullatt_block_indexes=[0]),
            **token_ids, **untied)
        model = T.Qwen2_5_VLForConditionalGeneration(cfg)
        proc_name = "Qwen2_5_VLProcessor"
    else:
        text.update(head_dim=16, rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                                  "mrope_section": [2, 3, 3], "mrope_interleaved": True})
        patch = 16
        cfg = T.Qwen3VLConfig(
            text_config=text,
            vision_config=dict(depth=2, hidden_size=16, intermediate_size=32, num_heads=2, out_hidden_size=32,
                               patch_size=patch, spatial_merge_size=2, temporal_patch_size=2,
                               num_position_embeddings=64, deepstack_visual_indexes=[0]),
            **token_ids, **untied)
        model = T.Qwen3VLForConditionalGeneration(cfg)
        proc_name = "Qwen3VLProcessor"
    factor = patch * 2
    # small images keep the tiny model fast: between 4 and 16 merged tokens per image
    ip = T.Qwen2VLImageProcessor(min_pixels=factor * factor * 4, max_pixels=factor * factor * 16, patch_size=patch,
                                 merge_size=2, temporal_patch_size=2)
    model.generation_config.pad_token_id = ids["<|endoftext|>"]
    model.generation_config.eos_token_id = ids["<|im_end|>"]
    if plain:
        model.generation_config.suppress_tokens = plain_answer_suppressions(tok, QWEN_SPECIALS, "<|im_end|>")
    if answer:
        wire_answer(model, tok, list(answer), ids["<|im_end|>"])
    vp = _video_processor("Qwen2VLVideoProcessor" if version == "2.5" else "Qwen3VLVideoProcessor",
                          min_pixels=factor * factor * 4, max_pixels=factor * factor * 16, patch_size=patch,
                          merge_size=2, temporal_patch_size=2)
    proc = _processor(proc_name, image_processor=ip, tokenizer=tok, chat_template=_QWEN_TEMPLATE, **vp)
    return _save(model, proc, out)


def build_qwen2_5_vl(out: str | Path, seed: int = 0, plain: bool = False, answer: Optional[list[str]] = None) -> Path:
    """Write a tiny Qwen2.5-VL checkpoint (1 text layer, hidden 32; 1 vision block, patch 14, merge 2;
    images resized by smart_resize with factor 28 to 4..16 merged tokens, i.e. ``min_pixels`` 3136,
    ``max_pixels`` 12544) to ``out``; returns the path. ``plain=True``: its generation config
    suppresses control and whitespace tokens (:func:`plain_answer_suppressions`), for comparing
    served and in-container answers byte for byte. ``answer``: token pieces the checkpoint writes
    greedily for every prompt (:func:`wire_answer`; untied embeddings)."""
    return _qwen(Path(out), version="2.5", seed=seed, plain=plain, answer=answer)


def build_qwen3_vl(out: str | Path, seed: int = 0) -> Path:
    """Write a tiny Qwen3-VL checkpoint (1 text layer, hidden 32; 2 vision blocks with one deepstack
    layer, patch 16, merge 2, factor 32) to ``out``; returns the path."""
    return _qwen(Path(out), version="3", seed=seed)


INTERNVL_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<img>", "</img>", "<IMG_CONTEXT>", "<video>"]


def build_internvl(out: str | Path, seed: int = 0, answer: Optional[list[str]] = None) -> Path:
    """Write a tiny InternVL (hf format, as InternVL3-*-hf) checkpoint to ``out``; returns the path.

    Vision: 1 layer, hidden 16, tile 56x56 pixels, patch 14 (16 patches per tile), pixel-shuffle
    downsample 0.5 -> 4 image tokens per tile; the image processor crops to 1..4 tiles plus a thumbnail
    (GotOcr2 dynamic tiling, as InternVL3). Text: a 1-layer Qwen2 decoder, hidden 32. ``answer``: token
    pieces the checkpoint writes greedily for every prompt (:func:`wire_answer`).
    """
    import transformers as T

    out = Path(out)
    _seed(seed)
    tok = byte_level_tokenizer(
        INTERNVL_SPECIALS, eos_token="<|im_end|>", pad_token="<|endoftext|>",
        extra_special_tokens={"start_image_token": "<img>", "end_image_token": "</img>",
                              "context_image_token": "<IMG_CONTEXT>", "video_token": "<video>"})
    if answer:
        tok.add_tokens(list(answer))
    ids = {t: tok.convert_tokens_to_ids(t) for t in INTERNVL_SPECIALS}
    tile = 56
    cfg = T.InternVLConfig(
        vision_config=dict(hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
                           image_size=[tile, tile], patch_size=[14, 14]),
        text_config=dict(model_type="qwen2", vocab_size=len(tok), hidden_size=32, intermediate_size=64,
                         num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
                         max_position_embeddings=1024, bos_token_id=None, eos_token_id=ids["<|im_end|>"],
                         pad_token_id=ids["<|endoftext|>"], tie_word_embeddings=False),
        image_token_id=ids["<IMG_CONTEXT>"], image_seq_length=4, downsample_ratio=0.5,
        vision_feature_layer=-1, tie_word_embeddings=False)
    model = T.InternVLForConditionalGeneration(cfg)
    model.generation_config.pad_token_id = ids["<|endoftext|>"]
    model.generation_config.eos_token_id = ids["<|im_end|>"]
    if answer:
        wire_answer(model, tok, list(answer), ids["<|im_end|>"])
    ip = T.GotOcr2ImageProcessor(size={"height": tile, "width": tile}, crop_to_patches=True, min_patches=1,
                                 max_patches=4)
    vp = _video_processor("InternVLVideoProcessor", size={"height": tile, "width": tile})
    proc = _processor("InternVLProcessor", image_processor=ip, tokenizer=tok, image_seq_length=4,
                      chat_template=_INTERNVL_TEMPLATE, **vp)
    return _save(model, proc, out)


MOLMO2_BASE_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
MOLMO2_IMAGE_SPECIALS = ["<im_start>", "<im_end>", "<im_patch>", "<im_col>", "<low_res_im_start>", "<frame_start>",
                         "<frame_end>", "<im_low>", "<|image|>", "<|video|>"]


def build_molmo2(out: str | Path, seed: int = 0) -> Path:
    """Write a tiny Molmo2 checkpoint to ``out``; returns the path. Needs torchvision (transformers'
    Molmo2 image processor has no PIL variant); raises ``RuntimeError`` saying so without it.

    Vision: 2 layers, hidden 16, crops of 56x56 pixels, patch 14, overlap margins 1 patch, at most 2
    crops, 2x2 pooling. Text: 1 layer, hidden 32. The image special tokens live in the additional
    vocabulary (ids >= ``vocab_size``), as in the released checkpoints, so they are never generated.
    """
    import transformers as T

    from pointfail.running.backends.hf import torchvision_available

    if not torchvision_available():
        raise RuntimeError("Molmo2ImageProcessor needs torchvision (transformers has no PIL variant for it); "
                           "install torchvision to build or run Molmo2")
    out = Path(out)
    _seed(seed)
    tok = byte_level_tokenizer(MOLMO2_BASE_SPECIALS + MOLMO2_IMAGE_SPECIALS, eos_token="<|im_end|>",
                               pad_token="<|endoftext|>", bos_token="<|endoftext|>",
                               extra_special_tokens={"image_token": "<|image|>", "video_token": "<|video|>"})
    ids = {t: tok.convert_tokens_to_ids(t) for t in MOLMO2_BASE_SPECIALS + MOLMO2_IMAGE_SPECIALS}
    base_vocab = 256 + len(MOLMO2_BASE_SPECIALS)
    crop = 56
    cfg = T.Molmo2Config(
        vision_config=dict(hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2,
                           num_key_value_heads=2, head_dim=8, image_size=[crop, crop], patch_size=14),
        adapter_config=dict(vision_feature_layer=[-1], hidden_size=16, num_attention_heads=2, num_key_value_heads=2,
                            head_dim=8, intermediate_size=32, text_hidden_size=32),
        text_config=dict(hidden_size=32, num_attention_heads=2, num_key_value_heads=1, head_dim=16,
                         vocab_size=base_vocab, additional_vocab_size=len(MOLMO2_IMAGE_SPECIALS),
                         num_hidden_layers=1, intermediate_size=64, max_position_embeddings=2048,
                         eos_token_id=ids["<|im_end|>"], pad_token_id=ids["<|endoftext|>"],
                         bos_token_id=ids["<|endoftext|>"]),
        image_start_token_id=ids["<im_start>"], low_res_image_start_token_id=ids["<low_res_im_start>"],
        image_end_token_id=ids["<im_end>"], image_patch_id=ids["<im_patch>"], image_col_id=ids["<im_col>"],
        frame_start_token_id=ids["<frame_start>"], frame_end_token_id=ids["<frame_end>"])
    model = T.Molmo2ForConditionalGeneration(cfg)
    model.generation_config.pad_token_id = ids["<|endoftext|>"]
    model.generation_config.eos_token_id = ids["<|im_end|>"]
    ip = T.Molmo2ImageProcessor(size={"height": crop, "width": crop}, max_crops=2, overlap_margins=[1, 1],
                                patch_size=14, pooling_size=[2, 2])
    vp = _video_processor("Molmo2VideoProcessor", size={"height": crop, "width": crop}, patch_size=14,
                          pooling_size=[2, 2])
    proc = _processor("Molmo2Processor", image_processor=ip, tokenizer=tok, chat_template=_MOLMO2_TEMPLATE, **vp)
    return _save(model, proc, out)


def build(family: str, out: str | Path, seed: int = 0) -> Path:
    """Build the tiny checkpoint of ``family`` into ``out`` through its backend's ``build_tiny`` (the
    backend module declares which builder fits its architecture).

    Raises:
        KeyError: the family's backend has no tiny checkpoint (names the families that have one).
    """
    builders = tiny_families()
    if family not in builders:
        raise KeyError(f"no tiny checkpoint builder for {family!r}; known: {', '.join(sorted(builders))}")
    return builders[family](out, seed=seed)


def tiny_families() -> dict[str, Callable[..., Path]]:
    """Family name -> its backend's ``build_tiny``, for every registered family whose backend module
    defines one (from the family registry; no list to keep)."""
    import importlib

    from pointfail.running.backends import backend_modules

    out = {}
    for family, module in backend_modules().items():
        fn = getattr(importlib.import_module(module), "build_tiny", None)
        if callable(fn):
            out[family] = fn
    return out
