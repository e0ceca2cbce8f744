"""The local executor: a plan's shards on this machine's Docker Engine, ``concurrency`` at a time
(``pointfail-runner submit --executor local``; issue 18).

Each shard is one container (:func:`pointfail_runner.shards.run_shard`: the hardened settings of
:func:`pointfail_runner.container.hardened_kwargs`, one model load for every cell of the shard).
With ``concurrency`` 1 (the default) shards run one after another in plan order, which is the
single-machine runner's "one model container at a time"; with more, a thread pool
(``concurrent.futures``) keeps that many containers running. A failed shard does not stop the
others; its responses so far stay in its folder and ``submit --missing`` reruns it.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Callable, Optional

from . import Executor, Submission, pin_models, prepare


def submit(plan_file: Path, *, repo: Path, run_dir: Optional[Path] = None, data_root: Optional[Path] = None,
           weights_root: Optional[Path] = None, models: Optional[list[str]] = None, missing: bool = False,
           variant: str = "cpu", concurrency: int = 1, mem_limit: str = "8g", wall_clock_s: float = 6 * 3600,
           client=None, progress: bool = False, base_lock: Optional[Path] = None,
           log: Callable[[str], None] = print) -> Submission:
    """Pin, stage and run the plan's shards here (module docstring). Returns a
    :class:`~pointfail_runner.executors.Submission` whose ``detail`` maps ``"model/index"`` to the
    shard's :class:`~pointfail_runner.container.JobResult` or the error that stopped it, plus
    ``"seconds"`` of wall time for running the shards.

    Raises:
        PlanError: the plan, its study or its data cannot be used.
    """
    from ..container import ContainerFailed
    from ..engine import ensure_engine
    from ..shards import run_shard, stage_shards

    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    plan, run, study, roots, shards = prepare(plan_file, repo=repo, run_dir=run_dir, data_root=data_root,
                                              weights_root=weights_root, models=models, missing=missing, log=log)
    client = client or ensure_engine()
    names = sorted({m.name for m, _ in shards}, key=[m.name for m in plan.models].index)
    pin_models(plan, run, repo=repo, study=study, roots=roots, models=names, variant=variant, client=client,
               reference=lambda built, name: built.id, base_lock=base_lock, log=log)
    stage_shards(plan, run, study=study, roots=roots, shards=shards, log=log)
    detail: dict = {}
    t0 = time.monotonic()

    def one(m, i):
        return run_shard(run, m.name, i, client=client, mem_limit=mem_limit, wall_clock_s=wall_clock_s,
                         progress=progress and concurrency == 1, log=log)

    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        futures = {pool.submit(one, m, i): f"{m.name}/{i}" for m, i in shards}
        for f in as_completed(futures):
            key = futures[f]
            try:
                detail[key] = f.result()
            except ContainerFailed as e:
                detail[key] = e
                log(f"[local] shard {key} failed: {e}")
    detail["seconds"] = round(time.monotonic() - t0, 3)
    by_model: dict[str, list[int]] = {}
    for m, i in shards:
        by_model.setdefault(m.name, []).append(i)
    return Submission(run, by_model, detail)


def submit_command(plan_file: Path, args, common: dict) -> int:
    """``pointfail-runner submit --executor local``: run the shards here (``--concurrency``,
    ``--mem-limit``, ``--wall-clock``); 1 when a shard failed (named; rerun with ``--missing``)."""
    res = submit(plan_file, concurrency=args.concurrency, mem_limit=args.mem_limit, wall_clock_s=args.wall_clock,
                 **common)
    failed = [k for k, v in res.detail.items() if isinstance(v, Exception)]
    print(f"[local] {sum(map(len, res.shards.values()))} shard(s) in {res.detail['seconds']} s"
          + (f"; failed: {', '.join(failed)} (rerun with --missing)" if failed else ""))
    return 1 if failed else 0


EXECUTOR = Executor("local", "this machine's Docker Engine, N shards at a time", submit_command)
