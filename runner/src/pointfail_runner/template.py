"""``pointfail-runner init``: a minimal study with one served model, every setting commented.

The text is a template for :func:`pointfail.inputs.study.parse_study` (``tests/test_cli_help.py`` parses what
:func:`write_study` writes with it): one generated spreadsheet suite (20 rows, the oracle judge labels
every miss from its scene graphs) and one ``kind = "server"`` model at ``http://127.0.0.1:8000/v1``
that the user edits to name their server, the name it serves the model under, and the model family.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

__all__ = ["TEMPLATE", "study_text", "write_study"]

TEMPLATE = '''\
# A pointfail study: one model you serve, on a generated spreadsheet suite.
# Written by `pointfail-runner init`; edit the [[models]] entry, then:
#
#   1. serve the model on an OpenAI-compatible endpoint, e.g.
#        transformers serve Qwen/Qwen2.5-VL-3B-Instruct --port 8000
#        vllm serve Qwen/Qwen2.5-VL-3B-Instruct --port 8000
#   2. render the suite (Docker: `make data STUDY={name}`; without Docker:
#        {generate})
#   3. pointfail-runner run --study {path}
#   4. pointfail judge {records} && pointfail aggregate {records} && pointfail view {records}
#
# Everything a study file may hold is described in README.md ("In a study").

[study]
name = "{name}"
description = "A served model on a generated spreadsheet suite"
# who labels the misses first: the oracle knows the suite's scene graphs exactly
primary_judge = "oracle"

[[benchmarks]]
name = "sheets"
# a generated suite: rows rendered from (generator, n, seed), the same bytes on every machine
loader = "suite"
generator = "sheets"
n = 20
seed = 1

[[models]]
# the model's name in records and tables (lower-case letters, digits, '.', '_', '-')
name = "served"
kind = "server"
# the coordinate convention its replies are read in: `pointfail families` lists them
family = "qwen2_5_vl"
# the server's OpenAI-compatible base URL (it must answer GET /v1/models)
base_url = "http://127.0.0.1:8000/v1"
# the name the server lists under /v1/models (vLLM: the path it was started with, or
# --served-model-name)
model = "Qwen/Qwen2.5-VL-3B-Instruct"
# a hosted API's key: the NAME of the environment variable that holds it (never the key itself)
# api_key_env = "OPENAI_API_KEY"
# pixel_budget = "family": images are sent at the family's published smart_resize size and the
# server's usage.prompt_tokens is checked against it; concurrency: requests in flight
options = {{ pixel_budget = "family", concurrency = 8 }}

[judge]
# pixels around the target box the oracle still counts as off_by_pixels
oracle_tolerance_px = 8
'''


def study_text(name: str, path: str, records: str) -> str:
    """The template filled in for study ``name`` written at ``path`` (records beside it in
    ``records``); raises ``ValueError`` for a name a study cannot have
    (:func:`pointfail.inputs.study.check_name`)."""
    from pointfail.inputs.study import check_name
    from pointfail.generated.suites import generate_command

    check_name(name)
    generate = generate_command("sheets", 20, 1, None, f"data/{name}/sheets")
    return TEMPLATE.format(name=name, path=path, records=records, generate=generate)


def write_study(name: str, out: Optional[Path] = None, *, repo: Path) -> Path:
    """Write the template for study ``name`` to ``out`` (default ``repo/records/<name>/study.toml``)
    and return the path. Raises ``FileExistsError`` when the file exists (it is never overwritten)
    and ``ValueError`` for a bad name."""
    out = (Path(out) if out is not None else repo / "records" / name / "study.toml").resolve()
    repo = repo.resolve()
    shown = out.relative_to(repo) if out.is_relative_to(repo) else out
    text = study_text(name, str(shown), str(Path(shown).parent))
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "x", encoding="utf-8") as f:
        f.write(text)
    return out
