"""pointfail: measure how vision-language models fail at pointing.

The method, one study's lifecycle (each arrow names the type that crosses it; all in ``records.py``):

    benchmark row ──load──▶ Sample            image (ImageRef: path, W×H px, sha256), instruction,
                                              Target (mask file | polygons | boxes in original-image
                                              pixels | absent), metadata axes
    Sample ──prompts.build_prompt(family)──▶ Prompt       core instruction + the family's own directive
    Prompt ──a model (machinery)──▶ Response              raw_text (free text, capped), model_input_size
    Response ──Family.parse──▶ ParseResult                points / boxes as fractions of the ORIGINAL
                                              image (0..1), converted from the family's coordinate
                                              frame (frames.Frame: pixels, pixels_resized after
                                              smart_resize, 0..1000, unit, loc tokens), flags, reason
    ParseResult ──scoring.build_record──▶ Record          outcome hit | miss | no_prediction by
                                              point-in-mask on the geometry.TargetRegion, Geometry
                                              (in_target, distance px and normalized, BoxScore IoU/
                                              coverage/precision), OfficialScore (the publisher's rule)
    Record (miss) ──judge.miss.Miss ─▶ a Judge ──judge.protocol.read_label──▶ Judgment
                                              one FailureMode (off_by_pixels | wrong_instance |
                                              wrong_category | hallucinated) or none, every attempt kept
    [Record] ──aggregate.build_tables──▶ {file name: bytes}  Table / JsonDocument outputs (tables.py)
                                              with metrics.py's intervals, byte-reproducible, SHA256SUMS

Files a reader opens, in order (the method, all at this level):

1. ``records.py``: every type above, with its fields, units and frames.
2. ``families/``: one file per model family (``families/__init__.py`` has ``Family.parse``);
   ``frames.py``: the coordinate frames and ``smart_resize``; ``prompts.py``: what is sent.
3. ``geometry/``: target regions, masks, point-in-polygon, the box rule.
4. ``scoring.py``: outcome and geometry of one answer; ``official.py``: each benchmark's official rule.
5. ``judge/``: ``judge/miss.py`` (what a judge sees), ``judge/protocol.py`` (the prompt and the one-label
   rule), ``judge/oracle.py`` (exact labels from scene graphs), ``judge/agreement.py`` (judge validity).
6. ``aggregate/``: rows, counts and every table builder; ``metrics.py``: the statistics;
   ``tables.py``: the table formats; ``integrity.py``: what ``pointfail verify`` re-derives.

The machinery lives in wings the method never imports (``tests/test_layout.py`` checks it):
``running/`` (backends, served client, worker and job files, ``evaluate``, the judges' clients and
stage), ``inputs/`` (benchmark loaders and fetchers, study files and locks, replies files),
``generated/`` (synthetic suites, OCR baselines, stand-ins for tests), ``outputs/`` (report and
browser), ``commands/`` (one module per CLI command; ``cli.py`` is the entry point).

Import-light by design: ``import pointfail`` imports no torch, transformers, docker or ollama.
Public names are resolved lazily on first attribute access (PEP 562), so
``from pointfail import score_prediction`` only imports the modules that name needs.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

# public name -> "module:attribute"
_EXPORTS: dict[str, str] = {
    # records
    "Record": "pointfail.records:Record",
    "Sample": "pointfail.records:Sample",
    "Target": "pointfail.records:Target",
    "ImageRef": "pointfail.records:ImageRef",
    "ParseResult": "pointfail.records:ParseResult",
    "Judgment": "pointfail.records:Judgment",
    "RecordError": "pointfail.records:RecordError",
    "read_records": "pointfail.records:read_records",
    "write_records": "pointfail.records:write_records",
    "canonical_json": "pointfail.records:canonical_json",
    "FAILURE_MODES": "pointfail.records:FAILURE_MODES",
    # families and frames
    "get_family": "pointfail.families:get_family",
    "list_families": "pointfail.families:list_families",
    "smart_resize": "pointfail.frames:smart_resize",
    # scoring
    "score_prediction": "pointfail.scoring:score_prediction",
    "scorePrediction": "pointfail.scoring:scorePrediction",
    "build_record": "pointfail.scoring:build_record",
    "frame_compliance": "pointfail.scoring:frame_compliance",
    # geometry
    "TargetRegion": "pointfail.geometry:TargetRegion",
    "load_mask": "pointfail.geometry:load_mask",
    # benchmarks and prompts
    "load_benchmark": "pointfail.inputs.benchmarks:load",
    "build_prompt": "pointfail.prompts:build_prompt",
    "strip_directives": "pointfail.prompts:strip_directives",
}

__all__ = sorted(_EXPORTS) + ["__version__"]  # noqa: PLE0605 (the lazy-export table is the one list)


def __getattr__(name: str) -> object:
    target = _EXPORTS.get(name)
    if target is None:
        raise AttributeError(f"module 'pointfail' has no attribute {name!r}")
    module, attr = target.split(":")
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
