"""Run a study's models over its benchmarks and write records (issue 4: ``pointfail-runner run
--study FILE``; the study format is ``records/<study>/study.toml`` in ``docs/architecture.md``).

For each model (one container at a time, in the study's order) and each benchmark:

1. load the samples with ``pointfail.benchmarks.load(loader, data_dir)``;
2. build each prompt with ``pointfail.prompts.build_prompt(family, sample)``;
3. write the requests (image paths rewritten to the read-only data mount) and run the model's image
   with :func:`pointfail_runner.container.run_job` (samples already answered are skipped);
4. turn every response into a record with ``pointfail.scoring.build_record`` and write
   ``records/<study>/<model>/<benchmark>.jsonl`` (canonical, sorted by sample id).

The core library is imported lazily (this package has no torch and imports pointfail only here).
Job directories live under ``work/<study>/<model>/<benchmark>/`` (not committed).
"""

from __future__ import annotations

import json
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from . import container as cmod
from . import images as imod
from . import locks

PROVENANCE_PACKAGES = ("numpy", "pillow", "tokenizers", "torch", "transformers")


class StudyError(RuntimeError):
    """The study cannot run: bad study file, unknown model or benchmark name, missing data or weights
    (every missing item is listed, with what provides it), or a failed model container."""


@dataclass
class Study:
    """A parsed ``study.toml``: ``name``, ``benchmarks`` and ``models`` (lists of tables as written),
    ``path`` of the file and the whole ``raw`` mapping."""

    name: str
    benchmarks: list[dict]
    models: list[dict]
    path: Path
    raw: dict


def load_study(path: Path) -> Study:
    """Read and check a study file.

    Raises:
        StudyError: unreadable TOML, no ``[study].name``, a benchmark without ``name``/``loader`` or
            a model without ``name``/``family``/``image``.
    """
    p = Path(path)
    try:
        raw = tomllib.loads(p.read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise StudyError(f"cannot read study file {p}: {e}") from e
    name = raw.get("study", {}).get("name")
    if not name:
        raise StudyError(f"{p}: [study] name is missing")
    problems = []
    for b in raw.get("benchmarks", []):
        problems += [f"benchmark {b.get('name', '?')}: no {k}" for k in ("name", "loader") if not b.get(k)]
    for m in raw.get("models", []):
        required = ("name", "family", "base_url", "model") if m.get("kind") == "server" else ("name", "family", "image")
        problems += [f"model {m.get('name', '?')}: no {k}" for k in required if not m.get(k)]
        if m.get("kind") not in (None, "container", "server"):
            problems.append(f"model {m.get('name', '?')}: kind must be container or server, not {m.get('kind')!r}")
    if problems:
        raise StudyError(f"{p}: " + "; ".join(problems))
    return Study(name, list(raw.get("benchmarks", [])), list(raw.get("models", [])), p, raw)


def _select(items: list[dict], names: Optional[list[str]], what: str) -> list[dict]:
    if not names:
        return items
    known = {i["name"]: i for i in items}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise StudyError(f"unknown {what}: {', '.join(unknown)} (study has: {', '.join(known)})")
    return [known[n] for n in names]


def container_image_path(host_path: str, data_dirs: list[Path]) -> str:
    """Map an image path on the host to its path inside the container (``/data/<i>/<relative>``),
    where ``data_dirs[i]`` is the first mounted directory that contains it.

    Raises:
        StudyError: the image is under none of the mounted directories.
    """
    p = Path(host_path).resolve()
    for i, d in enumerate(data_dirs):
        try:
            rel = p.relative_to(d)
        except ValueError:
            continue
        return f"{cmod.DATA_MOUNT}/{i}/{rel.as_posix()}"
    raise StudyError(f"image {p} is outside the mounted data directories {[str(d) for d in data_dirs]}")


def _provenance(repo: Path, image_name: str, variant: str, image_id: Optional[str], model: dict):
    from pointfail.records import Provenance

    try:
        import pointfail

        version = getattr(pointfail, "__version__", None)
    except ImportError:  # pragma: no cover
        version = None
    lock = locks.lock_path(repo / "images" / image_name, variant)
    pins = {e.name: e.version for e in locks.parse_lock(lock)} if lock.is_file() else {}
    packages = {k: pins[k] for k in PROVENANCE_PACKAGES if k in pins}
    if lock.is_file():
        packages["lock_sha256"] = locks.file_sha256(lock)
    return Provenance(pointfail_version=version, checkpoint=model.get("checkpoint") or None,
                      model_revision=model.get("revision") or None, image_digest=image_id, packages=packages)


def _served_provenance(model: dict):
    """Provenance of a served model's records: the checkpoint (the study's ``checkpoint``, else the
    server's model name), its revision, no image digest (the server is not ours), and the version of
    the ``openai`` client that talked to it."""
    import openai

    from pointfail.records import Provenance

    try:
        import pointfail

        version = getattr(pointfail, "__version__", None)
    except ImportError:  # pragma: no cover
        version = None
    return Provenance(pointfail_version=version, checkpoint=model.get("checkpoint") or model["model"],
                      model_revision=model.get("revision") or None, image_digest=None,
                      packages={"openai": openai.__version__})


def _run_served_job(model: dict, job: Path, requests: list[dict], *, progress: bool,
                    log: Callable[[str], None]) -> None:
    """Answer a job through the model's server (``kind = "server"``): the requests (image paths on this
    machine) go to ``job/requests.jsonl``, :func:`pointfail.served.backend.run_served` appends
    ``job/responses.jsonl`` (samples already answered are skipped, so a killed run resumes).

    Raises:
        StudyError: invalid options, or the server became unavailable (responses so far are kept).
    """
    from pydantic import ValidationError

    from pointfail.records import append_jsonl
    from pointfail.served.backend import ServedModel, ServerUnavailable, run_served
    from pointfail.served.options import ServedOptions

    try:
        options = ServedOptions.model_validate(model.get("options", {}))
        served = ServedModel(model["base_url"], model["model"], model["family"], model.get("api_key_env"), options)
    except (ValidationError, ValueError) as e:
        raise StudyError(f"model {model['name']}: {e}") from e
    job.mkdir(parents=True, exist_ok=True)
    req = job / "requests.jsonl"
    tmp = job / "requests.jsonl.tmp"
    tmp.unlink(missing_ok=True)
    for r in requests:
        append_jsonl(tmp, r)
    os.replace(tmp, req)
    log(f"[run] {model['name']}: {len(requests)} samples through {model['model']} at {model['base_url']}")
    try:
        s = run_served(served, req, job / "responses.jsonl", progress=progress)
    except ServerUnavailable as e:
        raise StudyError(f"model {model['name']}: {e}") from e
    except ValueError as e:
        raise StudyError(f"model {model['name']}: {e}") from e
    log(f"[run] {model['name']}: {s.answered} answered ({s.refused} refused or filtered), {s.errors} errors, "
        f"{s.skipped} already answered, {s.requests} requests, {s.transport_failures} transport failures")


def repo_relative(record, repo: Path):
    """``record`` with its image and mask paths made relative to the checkout when they lie inside it
    (``data/<study>/...``), so committed records name no machine's directories and regenerate
    identically on another machine. Paths outside the checkout are kept as they are."""
    def rel(p):
        if p and Path(p).is_absolute():
            try:
                return str(Path(p).relative_to(repo))
            except ValueError:
                return p
        return p

    record.image.path = rel(record.image.path)
    record.target.mask_path = rel(record.target.mask_path)
    return record


def run_study(study_file: Path, *, repo: Path, models: Optional[list[str]] = None,
              benchmarks: Optional[list[str]] = None, data_root: Optional[Path] = None,
              weights_root: Optional[Path] = None, work_root: Optional[Path] = None,
              records_root: Optional[Path] = None, wheelhouse: Optional[Path] = None, variant: Optional[str] = None,
              limit: Optional[int] = None, wall_clock_s: float = 6 * 3600, mem_limit: str = "8g",
              batch_size: Optional[int] = None, progress: bool = True, client=None,
              base_lock: Optional[Path] = None, fix_permissions: bool = False,
              log: Callable[[str], None] = print) -> dict[str, dict[str, int]]:
    """Run ``study_file`` (see the module docstring) and return ``{model: {benchmark: n_records}}``.

    Data for a benchmark is read from its ``data_dir`` key (relative to the study file) or
    ``data_root/<benchmark name>`` (default ``repo/data/<study>/``); weights from a model's ``weights``
    key or ``weights_root/<model name>`` (default ``repo/weights``). Every missing data directory or
    weights directory is listed before any container runs.

    Raises:
        StudyError: see the class; ``ContainerFailed`` is re-raised as StudyError after the records of
            the completed jobs were written (responses of the failed job are kept for the rerun).
    """
    from pointfail.benchmarks import load as load_benchmark
    from pointfail.families import get_family
    from pointfail.prompts import build_prompt
    from pointfail.records import Response, write_records
    from pointfail.scoring import build_record

    from .engine import ensure_engine

    repo = Path(repo).resolve()
    study = load_study(study_file)
    sel_models = _select(study.models, models, "model(s)")
    sel_benchmarks = _select(study.benchmarks, benchmarks, "benchmark(s)")
    data_root = Path(data_root or repo / "data" / study.name)
    weights_root = Path(weights_root or repo / "weights")
    work_root = Path(work_root or repo / "work" / study.name)
    records_root = Path(records_root or study.path.parent)
    variant = variant or ("cuda" if cmod.host_has_gpu() else "cpu")

    missing = []
    data_dirs: dict[str, Path] = {}
    for b in sel_benchmarks:
        d = (study.path.parent / b["data_dir"]) if b.get("data_dir") else data_root / b["name"]
        data_dirs[b["name"]] = d.resolve()
        if not d.is_dir():
            missing.append(f"data for {b['name']}: {d} (make data STUDY={study.name})")
    weights: dict[str, Optional[Path]] = {}
    for m in sel_models:
        fam = get_family(m["family"])
        if m.get("kind") == "server":
            weights[m["name"]] = None
            continue
        needs = bool(m.get("checkpoint")) or m["family"] not in ("center", "ocr")
        if getattr(fam, "backend", None) is None and m["family"] not in ("center", "ocr"):
            missing.append(f"model {m['name']}: family {m['family']} has no worker backend")
        w = Path(m["weights"]) if m.get("weights") else weights_root / m["name"]
        weights[m["name"]] = w.resolve() if needs else None
        if needs and not w.is_dir():
            missing.append(f"weights for {m['name']} ({m.get('checkpoint') or m['family']}): {w} "
                           f"(pointfail data fetch-weights or huggingface-cli download {m.get('checkpoint', '')})")
    if missing:
        raise StudyError("missing before any work:\n  " + "\n  ".join(missing))

    if any(m.get("kind") != "server" for m in sel_models):
        client = client or ensure_engine()
    out: dict[str, dict[str, int]] = {}
    samples_by_bench = {b["name"]: load_benchmark(b["loader"], data_dirs[b["name"]], limit=limit or b.get("limit"))
                        for b in sel_benchmarks}
    for m in sel_models:
        fam = get_family(m["family"])
        served = m.get("kind") == "server"
        if served:
            built = None
            prov = _served_provenance(m)
        else:
            built = imod.ensure_image(client, repo, m["image"], variant=variant, wheelhouse=wheelhouse,
                                      base_lock=base_lock, log=log)
            prov = _provenance(repo, m["image"], variant, built.id, m)
        out[m["name"]] = {}
        for b in sel_benchmarks:
            samples = samples_by_bench[b["name"]]
            mounts = [data_dirs[b["name"]]]
            prompts, requests = {}, []
            for s in samples:
                pr = build_prompt(fam, s)
                prompts[s.sample_id] = pr
                image = str(Path(s.image.path).resolve()) if served else container_image_path(s.image.path, mounts)
                requests.append({"sample_id": s.sample_id, "image": image, "prompt": pr.sent, "task": s.task,
                                 "max_new_tokens": int(m.get("max_new_tokens", 128))})
            job = work_root / m["name"] / b["name"]
            if served:
                _run_served_job(m, job, requests, progress=progress, log=log)
            else:
                extra = ["--revision", m["revision"]] if m.get("revision") else []
                log(f"[run] {m['name']} on {b['name']}: {len(requests)} samples, image {built.tag}")
                try:
                    cmod.run_job(client, built.tag, family=m["family"], job_dir=job, requests=requests,
                                 weights_dir=weights[m["name"]], data_dirs=mounts,
                                 batch_size=int(batch_size or m.get("batch_size", 1)), mem_limit=mem_limit,
                                 wall_clock_s=wall_clock_s, extra_args=extra, progress=progress, log=log,
                                 fix_permissions=fix_permissions)
                except cmod.ContainerFailed as e:
                    raise StudyError(f"model {m['name']} on {b['name']} failed: {e}") from e
            responses = {}
            for raw in (job / "responses.jsonl").read_bytes().split(b"\n"):
                try:
                    r = json.loads(raw)
                except ValueError:
                    continue
                responses.setdefault(r.get("sample_id"), r)
            records = []
            for s in samples:
                r = responses.get(s.sample_id)
                if r is None:
                    raise StudyError(f"{m['name']} on {b['name']}: no response for {s.sample_id}")
                resp = Response(**{k: r.get(k) for k in Response.model_fields})
                records.append(build_record(study=study.name, model=m["name"], family=m["family"], sample=s,
                                            prompt=prompts[s.sample_id], response=resp, provenance=prov,
                                            base_dir=data_dirs[b["name"]]))
            dest = records_root / m["name"] / f"{b['name']}.jsonl"
            out[m["name"]][b["name"]] = write_records(dest, [repo_relative(r, repo) for r in records])
            log(f"[run] wrote {len(records)} records to {dest}")
    return out
