"""pointfail: measure how vision-language models fail at pointing.

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
