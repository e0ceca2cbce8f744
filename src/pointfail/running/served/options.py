"""The options of a served model (``options`` of a ``kind = "server"`` model in ``study.toml``), the
PointerBench frontier preset, and the structured-output schemas.

:class:`ServedOptions` is the one validated form of those options (pydantic, unknown keys rejected);
the study file's model entry holds ``base_url``, ``model``, ``family`` and ``api_key_env`` beside it.

Structured output (``structured = true``): the request carries ``response_format`` with a JSON schema
of the family's own answer syntax, for families whose answer is JSON (:data:`STRUCTURED_FAMILIES`). The
parser is unchanged: the reply is still read in the family's declared frame.

The PointerBench frontier preset (``preset = "pointerbench-frontier"``), from the PointerBench paper's
appendix ("Prompt", "Inference settings"): one fixed system prompt for every model (the ``json_pixels``
family's :data:`~pointfail.families.json_pixels.SYSTEM_PROMPT`, verbatim), the original image submitted
directly, the response format enforced through a JSON schema (``{"point": [x, y]}`` or
``{"bbox": [x0, y0, x1, y1]}``), a 512-token response cap (runs with reasoning disabled), and filtered or
budget-exhausted responses not retried. It applies to the ``json_pixels`` family only.
"""

from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, model_validator

PRESETS = ("pointerbench-frontier",)
"""Known protocol presets."""

POINTERBENCH_MAX_TOKENS = 512
"""PointerBench's response cap for runs with reasoning disabled (paper appendix, "Inference settings")."""


class ServedOptions(BaseModel):
    """Options of one served model.

    Attributes:
        concurrency: requests in flight at once (1..256).
        timeout_s: total deadline of one request in seconds, wall clock: connect, headers and the
            whole body (:class:`pointfail.running.served.bounded.BoundedTransport`; a server that drips its
            reply is given up when it runs out, and that counts as a timeout).
        max_body_bytes: byte cap on one response body (default 4 MiB); a body over it is that
            sample's error, not retried.
        retries: retries of one request after a transport failure (429, 408/409, 5xx, timeout, dropped
            connection, malformed body); refusals and content-filtered replies are never retried.
        backoff_initial, backoff_max: exponential backoff in seconds (``Retry-After`` honoured, capped).
        temperature: sampling temperature (0: greedy on servers that map it so, e.g. vLLM,
            ``transformers serve``). seed: request seed, when set.
        max_tokens: response cap; overrides the study's ``max_new_tokens`` when set.
        resize: for resized-pixel frames (Qwen2.5-VL and models built on it): ``"auto"`` (default)
            sends the image file's bytes as they are when the server's processor resizes it itself
            (a PNG or JPEG: no decode, no resize, no re-encode), records the size the server's
            ``smart_resize`` makes under the declared budget and confirms it per size with the
            server's ``usage.prompt_tokens`` (the frame check); it resizes on the client as
            ``"client"`` does for another format, and for every image once the server reports no
            usage (the frame would otherwise be assumed). ``"client"`` always sends the image already
            at the processor's ``smart_resize`` size for the declared budget, so the server's resize
            is the identity (for servers that report no usage). ``"server"`` always sends the
            original (PNG/JPEG as they are, other formats decoded and sent as PNG at their size).
        factor, min_pixels, max_pixels: the server processor's pixel budget (``smart_resize``); the
            budget is known when ``max_pixels`` is given (``factor`` and ``min_pixels`` default to the
            family's ``resize`` settings, ``min_pixels`` else to 3136).
        pixel_budget: ``"family"``: the server runs the checkpoint with the settings the family file
            gives (``Family.resize``). Without a budget a resized-pixel sample records that its
            model-input size is unknown.
        downscale_long_edge: the provider's documented cap on the long edge in pixels (images above it
            are downscaled by the provider, aspect kept): the record keeps the size received.
        structured: send ``response_format`` with the family's JSON schema.
        preset: ``"pointerbench-frontier"`` (see the module docstring).
        system_prompt: a system message to send before the user turn.

    Strict types (``concurrency = "4"`` is an error, not 4; an integer is accepted where a float is
    expected). Read as part of the study file (``pointfail.inputs.study.ServerModel.options``), so a bad option
    is an error when the study loads, naming ``models[N].options.<key>``.

    Raises:
        pydantic.ValidationError: unknown keys, out-of-range values, a budget without ``max_pixels``.
    """

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    concurrency: int = Field(default=4, ge=1, le=256)
    timeout_s: float = Field(default=120.0, gt=0)
    max_body_bytes: int = Field(default=4 * 1024 * 1024, ge=1024, le=1 << 30)
    retries: int = Field(default=6, ge=0, le=100)
    backoff_initial: float = Field(default=1.0, ge=0)
    backoff_max: float = Field(default=30.0, ge=0)
    temperature: float = Field(default=0.0, ge=0)
    seed: Optional[int] = None
    max_tokens: Optional[int] = Field(default=None, ge=1)
    resize: Literal["auto", "client", "server"] = "auto"
    factor: Optional[int] = Field(default=None, ge=1)
    min_pixels: Optional[int] = Field(default=None, ge=1)
    max_pixels: Optional[int] = Field(default=None, ge=1)
    pixel_budget: Optional[Literal["family"]] = None
    downscale_long_edge: Optional[int] = Field(default=None, ge=1)
    structured: bool = False
    preset: Optional[Literal["pointerbench-frontier"]] = None
    system_prompt: Optional[str] = None

    @model_validator(mode="after")
    def _check(self) -> "ServedOptions":
        if (self.factor is not None or self.min_pixels is not None) and self.max_pixels is None:
            raise ValueError("a pixel budget needs max_pixels (factor and min_pixels alone do not declare one)")
        if self.min_pixels is not None and self.max_pixels is not None and self.min_pixels > self.max_pixels:
            raise ValueError(f"min_pixels {self.min_pixels} > max_pixels {self.max_pixels}")
        return self

    def for_family(self, family: str) -> "ServedOptions":
        """These options with the preset applied and checked against ``family``.

        Raises:
            ValueError: the preset is for another family, or structured output for a family whose
                answer is not JSON.
        """
        opts = self
        if self.preset == "pointerbench-frontier":
            if family != "json_pixels":
                raise ValueError(f"preset pointerbench-frontier is the json_pixels convention, not {family!r}")
            from pointfail.families.json_pixels import SYSTEM_PROMPT

            opts = self.model_copy(update={"structured": True, "system_prompt": SYSTEM_PROMPT,
                                           "max_tokens": self.max_tokens or POINTERBENCH_MAX_TOKENS})
        if opts.structured and family not in STRUCTURED_FAMILIES:
            raise ValueError(f"structured output needs a JSON answer family ({', '.join(sorted(STRUCTURED_FAMILIES))}), "
                             f"not {family!r}")
        return opts


def _numbers(n: int) -> dict[str, Any]:
    return {"type": "array", "items": {"type": "number"}, "minItems": n, "maxItems": n}


def _object(key: str, n: int, label: bool) -> dict[str, Any]:
    props: dict[str, Any] = {key: _numbers(n)}
    if label:
        props["label"] = {"type": "string"}
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


def _pointerbench(task: str) -> tuple[str, dict[str, Any]]:
    if task == "box":
        return "pointerbench_bbox", _object("bbox", 4, False)
    return "pointerbench_point", _object("point", 2, False)


def _qwen(task: str) -> tuple[str, dict[str, Any]]:
    # a top-level object: strict JSON-schema modes require one; the family's parser reads the keyed list
    key, n = ("bbox_2d", 4) if task == "box" else ("point_2d", 2)
    item = _object(key, n, True)
    return f"qwen_{key}", {"type": "object", "properties": {"answers": {"type": "array", "items": item}},
                           "required": ["answers"], "additionalProperties": False}


STRUCTURED_FAMILIES = {"json_pixels": _pointerbench, "qwen2_5_vl": _qwen, "qwen3_vl": _qwen}
"""Families whose answer is JSON -> ``fn(task) -> (schema name, JSON schema)``: PointerBench's
``{"point": [x, y]}`` / ``{"bbox": [x0, y0, x1, y1]}`` (paper appendix), and Qwen's ``point_2d`` /
``bbox_2d`` objects with a label (Qwen2.5-VL grounding cookbook), wrapped in ``{"answers": [...]}``."""


def response_format(family: str, task: str) -> dict[str, Any]:
    """The ``response_format`` for ``family`` and ``task`` (``point`` or ``box``): ``{"type":
    "json_schema", "json_schema": {"name", "schema", "strict": true}}``. Raises ``KeyError`` for a
    family without a schema."""
    name, schema = STRUCTURED_FAMILIES[family](task)
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}
