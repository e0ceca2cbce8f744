"""What ``make reproduce`` settles before any work: the image variant, what is missing (with the
command that provides each), the study's judges, the stand-ins of a rehearsal study, and the fetch
stage through the study lock.

* **Variant** (:func:`choose_variant`): ``cuda`` when the Docker Engine reports an NVIDIA runtime or
  the host has an NVIDIA device, else ``cpu``; ``VARIANT=``/``--variant`` overrides. A model whose
  checkpoint needs a package the chosen variant's image lacks (``Family.image_requirements``) stops
  the study before any work, with the reason.
* **Missing items**: data and weights folders come from :func:`pointfail_runner.study.missing_inputs`
  (the one check, each with the command that provides it: ``pointfail data fetch BENCH --study FILE``,
  ``pointfail weights fetch MODEL --study FILE``); :func:`judge_missing` adds a model judge's server.
* **Stand-ins** (:func:`stand_ins`): a study with a ``[stand_in]`` table (rehearsals) has its hub and
  judge started here, on loopback: ``hub = "<folder>"`` serves that stand-in hub directory
  (:class:`pointfail.generated.testing.hub.StandInHub`, ``HF_ENDPOINT``), ``judge = "ollama"`` starts the
  scripted Ollama-API server (:mod:`pointfail.generated.testing.ollama_fake`, ``OLLAMA_HOST``) with a
  deterministic label per rendered miss (:func:`standin_judge_label`).
* **Fetch** (:func:`fetch_stage`): for a stand-in study every benchmark and checkpoint is fetched
  through the real ``huggingface_hub`` client (the commands above, in subprocesses) and checked
  against the study lock; for other studies the files on disk are checked against the lock.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Callable, Iterator, Optional

class PrepareError(RuntimeError):
    """The study cannot start: something is missing or refused (every item listed with its fix)."""


def engine_has_gpu(client) -> bool:
    """True when the Docker Engine lists an ``nvidia`` runtime, or (no engine answer) the host has an
    NVIDIA device (``POINTFAIL_GPU=1``/``0`` overrides both)."""
    from .container import host_has_gpu

    env = os.environ.get("POINTFAIL_GPU")
    if env is not None:
        return env == "1"
    try:
        if client is None:
            import docker

            client = docker.from_env(timeout=5)
        runtimes = client.info().get("Runtimes") or {}
        if "nvidia" in runtimes:
            return True
    except Exception:  # noqa: BLE001 - no engine answers (yet): the host's devices decide
        pass
    return host_has_gpu()


def choose_variant(requested: Optional[str], client=None, log: Callable[[str], None] = print) -> str:
    """``requested`` when it is ``cpu`` or ``cuda``; else (``None`` or empty) ``cuda`` when
    :func:`engine_has_gpu`, otherwise ``cpu``. Logs the choice and why."""
    if requested:
        if requested not in ("cpu", "cuda"):
            raise PrepareError(f"variant must be cpu or cuda, not {requested!r}")
        log(f"[reproduce] image variant {requested} (requested)")
        return requested
    v = "cuda" if engine_has_gpu(client) else "cpu"
    log(f"[reproduce] image variant {v} ({'the engine has a GPU' if v == 'cuda' else 'no GPU in the engine'}; "
        "VARIANT=cpu|cuda overrides)")
    return v


def variant_problems(repo: Path, study, variant: str) -> list[str]:
    """One line per model that cannot run on ``variant``'s image: its checkpoint needs a package
    (``Family.image_requirements``) that ``images/<image>/requirements-<variant>.lock`` lacks."""
    from pointfail.families import get_family

    from . import locks

    out = []
    for m in study.models:
        if m.kind != "container":
            continue
        reqs = getattr(get_family(m.family), "image_requirements", {}) or {}
        lock = locks.lock_path(repo / "images" / m.image, variant)
        have = {e.name for e in locks.parse_lock(lock)} if lock.is_file() else set()
        for pkg, (why, checkpoints) in sorted(reqs.items()):
            if m.checkpoint in checkpoints and locks.normalize(pkg) not in have:
                out.append(f"model {m.name} ({m.checkpoint}) cannot run on the {variant} image: {why}, and "
                           f"{lock.relative_to(repo)} has no {pkg}"
                           + (" (run where the Docker Engine has a GPU, or VARIANT=cuda)" if variant == "cpu" else ""))
    return out


def _shown(p: Path, repo: Path) -> str:
    p = Path(p)
    return str(p.relative_to(repo)) if p.is_absolute() and p.is_relative_to(repo) else str(p)


def judge_missing(plan, raw: dict, stand_in: bool) -> list[str]:
    """The model judge's server when the study needs one and none is configured; for an
    OpenAI-compatible judge also :func:`openai_judge_missing`."""
    if stand_in:
        return []
    out = []
    if "ollama" in plan.judges and not os.environ.get("OLLAMA_HOST"):
        out.append(f"judge: OLLAMA_HOST is not set: serve {raw.get('judge', {}).get('ollama_model')} with Ollama "
                   "(images/judge/README.md), then export OLLAMA_HOST=http://HOST:11434")
    if "openai" in plan.judges:
        out += openai_judge_missing(raw.get("judge", {}))
    return out


def openai_judge_missing(jcfg: dict) -> list[str]:
    """What the OpenAI-compatible judge of a study's ``[judge]`` table (a mapping) lacks before any
    work: ``openai_base_url`` and ``openai_model``, the API key variable ``openai_api_key_env`` names,
    and a server answering at that address (:func:`pointfail.commands.judge.judge_reachable`)."""
    out = [f"judge: [judge] {k} is not set (the OpenAI-compatible judge's "
           f"{'API root, e.g. http://HOST:8000/v1' if k == 'openai_base_url' else 'model name on that server'})"
           for k in ("openai_base_url", "openai_model") if not jcfg.get(k)]
    key_env = jcfg.get("openai_api_key_env")
    if key_env and not os.environ.get(key_env):
        out.append(f"judge: {key_env} (the judge's API key, named by [judge] openai_api_key_env) is not set")
    if jcfg.get("openai_base_url"):
        from pointfail.commands.judge import judge_reachable

        problem = judge_reachable(jcfg["openai_base_url"])
        if problem:
            out.append(f"judge: {problem} <- serve the judge model (e.g. vllm serve MODEL) at {jcfg['openai_base_url']}")
    return out


def standin_judge_label(body: dict) -> str:
    """The stand-in judge's reply to one chat request: one of the four labels, chosen by the sha256
    of the first image it was sent (the rendered miss), so the same miss always gets the same label
    and the tables regenerate byte for byte. Labels no skill: it exercises the protocol."""
    from pointfail.records import FAILURE_MODES

    images = [i for msg in body.get("messages") or [] for i in (msg.get("images") or [])]
    digest = hashlib.sha256(str(images[0] if images else "").encode()).digest()
    return FAILURE_MODES[digest[0] % len(FAILURE_MODES)]


@contextlib.contextmanager
def stand_ins(repo: Path, raw: dict, log: Callable[[str], None] = print) -> Iterator[dict[str, str]]:
    """Start the study's ``[stand_in]`` servers (none when the study has no such table) and yield the
    environment for the commands that must talk to them (``HF_ENDPOINT``, ``OLLAMA_HOST``); the
    servers stop when the block ends."""
    cfg = raw.get("stand_in") or {}
    env: dict[str, str] = {}
    with contextlib.ExitStack() as stack:
        if cfg.get("hub"):
            from pointfail.generated.testing.hub import StandInHub

            root = (repo / cfg["hub"]).resolve()
            if not root.is_relative_to(repo) or not root.is_dir():
                raise PrepareError(f"[stand_in] hub {cfg['hub']!r} is not a folder of the checkout")
            hub = stack.enter_context(StandInHub.from_directory(root))
            env["HF_ENDPOINT"] = hub.url
            log(f"[stand-in] hub {_shown(root, repo)} ({len(hub.repos)} repositories) at {hub.url}")
        if cfg.get("judge"):
            if cfg["judge"] != "ollama":
                raise PrepareError(f"[stand_in] judge must be \"ollama\", not {cfg['judge']!r}")
            from pointfail.generated.testing.ollama_fake import FakeOllama

            model = raw.get("judge", {}).get("ollama_model") or "gemma4:31b"
            fake = stack.enter_context(FakeOllama(lambda n, body: standin_judge_label(body), model=model))
            env["OLLAMA_HOST"] = fake.url
            log(f"[stand-in] Ollama-API judge ({model}, scripted labels) at {fake.url}")
        yield env


def _fetch_jobs(study, roots) -> list[tuple[str, str, list[str], Path]]:
    """What ``study`` fetches from a hub, in study order: every benchmark without a generator, then
    every container model with a checkpoint. Each job is ``(lock section, name, pointfail
    arguments, destination folder)``, the section being ``"benchmarks"`` or ``"models"`` and the
    destination the folder ``roots`` (the study's ``Roots``) declares for it. Raises nothing of its
    own."""
    jobs = []
    for b in study.benchmarks:
        if not b.generator:
            jobs.append(("benchmarks", b.name, ["data", "fetch", b.name], roots.data_dir(b)))
    for m in study.models:
        if m.kind == "container" and m.checkpoint:
            jobs.append(("models", m.name, ["weights", "fetch", m.name], roots.weights_dir(m)))
    return jobs


def fetch_stage(repo: Path, study, study_file: Path, data_root: Path, lock_file: Path, env: dict[str, str], *,
                download: bool, log: Callable[[str], None] = print) -> list[str]:
    """Fetch (``download``) or check every hub-backed benchmark and checkpoint of ``study`` through
    the lock ``lock_file``. Downloads run the same commands ``missing_inputs`` prints, in
    subprocesses with ``env`` added. Returns the commands run.

    Raises:
        PrepareError: a fetch failed, or files on disk do not match the lock (each named).
    """
    from pointfail.inputs.study import Roots
    from pointfail.inputs.studylock import read_lock, verify_tree

    roots = Roots.for_study(study, repo, data=data_root)
    rel = _shown(Path(study_file).resolve(), repo)
    jobs = _fetch_jobs(study, roots)
    ran = []
    if download:
        for _kind, _name, args, dest in jobs:
            cmd = [*args, "--study", rel, "--to", _shown(dest, repo), "--lock", _shown(lock_file, repo)]
            log("[fetch] $ pointfail " + " ".join(cmd))
            rc = subprocess.run([sys.executable, "-m", "pointfail", *cmd], cwd=repo, env={**os.environ, **env},
                                check=False).returncode
            if rc != 0:
                raise PrepareError(f"pointfail {' '.join(cmd)} exited {rc}")
            ran.append("pointfail " + " ".join(cmd))
    lock = read_lock(lock_file)
    problems = []
    for kind, name, _, dest in jobs:
        entry = lock[kind].get(name)
        if entry is None:
            log(f"[fetch] {name}: not in {_shown(lock_file, repo)} (fetch it with the study to lock it)")
            continue
        problems += [f"{name}: {p}" for p in verify_tree(dest, entry["files"])]
    if problems:
        raise PrepareError(f"files on disk do not match {_shown(lock_file, repo)}:\n  " + "\n  ".join(problems[:30]))
    log(f"[fetch] every locked file matches {_shown(lock_file, repo)}")
    return ran
