"""Per-job overhead of the container path against the in-process worker, on a tiny model.

One job = the worker answering N requests with the tiny random-weight Qwen2.5-VL checkpoint
(``pointfail.generated.testing.tiny``) on a generated sheets suite. Three ways, measured side by side in one
run, alternating, R repetitions each, medians reported:

* in-process: ``pointfail.running.worker.main([...])`` called in this interpreter (torch already imported);
* subprocess: ``python -m pointfail.running.worker`` in a fresh interpreter (the study's "one model per
  process" without a container);
* container: :func:`pointfail_runner.container.run_job` with the family image (create, start, no
  network, read-only root, worker, kill/remove).

Prints each median, the ratios container / in-process and container / subprocess, and the
container's fixed overhead per job (container minus subprocess). It also prints batched (batch 8)
against one-at-a-time (batch 1) in-process throughput (samples per second, ratio).

Per-job overhead before and after "one container per model runs all of its cells" (issue 18):
``--cells K`` cells (as a study's K benchmarks) of N requests each, answered

* before: one container per cell (:func:`pointfail_runner.container.run_job` K times: K fresh
  interpreters, K torch/transformers imports, K model loads);
* after: one container for the K cells (:func:`pointfail_runner.container.stage_cells` +
  :func:`~pointfail_runner.container.run_staged`, the worker taking K request/response pairs);

and prints both medians, their ratio and the overhead each extra job cost before, (before - after) /
(K - 1), which the shard container no longer pays.

Needs a Docker Engine (started via ensure_engine) and the family image (built if missing; wheels
from ``make wheels``). Usage: ``python bench/runner.py [--n 16] [--reps 3] [--quick]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _rounds import add_quick, load_line, ratio_line

REPO = Path(__file__).resolve().parents[1]
FAMILY = "qwen2_5_vl"


def _requests(suite: Path, n: int, prefix: str) -> list[dict]:
    pngs = sorted((suite / "data/test").glob("*.png"))
    return [{"sample_id": f"{prefix}{i:03d}", "image": str(pngs[i % len(pngs)]), "prompt": "Point to the cell B2.",
             "task": "point", "max_new_tokens": 16} for i in range(n)]


def _write(path: Path, reqs: list[dict]) -> None:
    import json

    path.write_text("".join(json.dumps(r) + "\n" for r in reqs))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=16, help="requests per job")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--cells", type=int, default=3, help="cells per model for the before/after comparison")
    ap.add_argument("--base-lock", type=Path, default=REPO / "images/base/base.lock.json",
                    help="base image lock (its base is built when the engine lacks it)")
    add_quick(ap)
    args = ap.parse_args()
    if args.quick:
        args.n, args.reps, args.cells = 2, 2, 2
    print(load_line())
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    from pointfail.running import worker
    from pointfail.generated.suites import sheets
    from pointfail.generated.testing import tiny
    from pointfail_runner import container as cmod
    from pointfail_runner.base import ensure_base
    from pointfail_runner.engine import ensure_engine
    from pointfail_runner import locks
    from pointfail_runner.images import build_image

    tmp = Path(tempfile.mkdtemp(prefix="pointfail-bench-"))
    suite = tmp / "suite"
    sheets.generate(suite, n=4, seed=5)
    weights = tiny.build(FAMILY, tmp / "tiny", seed=0)
    for p in [tmp, *tmp.rglob("*")]:  # the container user (10001) must read the mounts
        p.chmod(0o755 if p.is_dir() else 0o644)
    client = ensure_engine()
    ensure_base(client, args.base_lock, log=lambda s: None)
    image_dir, wheelhouse = REPO / "images" / FAMILY, REPO / "wheelhouse"
    try:  # the lock's wheels in the host wheelhouse, fetched when missing (a fresh clone has none)
        locks.verify_wheelhouse(image_dir, wheelhouse, "cpu")
    except locks.LockError:
        locks.download_wheels(image_dir, wheelhouse, "cpu")
    image = build_image(client, REPO, FAMILY, variant="cpu", wheelhouse=wheelhouse, base_lock=args.base_lock,
                        log=lambda s: None).tag

    def in_process(k: int, batch: int = 1) -> float:
        d = tmp / f"inproc{k}-{batch}"
        d.mkdir()
        _write(d / "req.jsonl", _requests(suite, args.n, "p"))
        t = time.perf_counter()
        rc = worker.main(["--family", FAMILY, "--weights", str(weights), "--requests", str(d / "req.jsonl"),
                          "--responses", str(d / "resp.jsonl"), "--batch-size", str(batch), "--device", "cpu"])
        assert rc == 0
        return time.perf_counter() - t

    def subproc(k: int) -> float:
        d = tmp / f"sub{k}"
        d.mkdir()
        _write(d / "req.jsonl", _requests(suite, args.n, "s"))
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "pointfail.running.worker", "--family", FAMILY, "--weights", str(weights),
                        "--requests", str(d / "req.jsonl"), "--responses", str(d / "resp.jsonl"),
                        "--device", "cpu"], check=True, capture_output=True)
        return time.perf_counter() - t

    def in_container(k: int) -> float:
        t = time.perf_counter()
        cmod.run_job(client, image, family=FAMILY, job_dir=tmp / f"ctr{k}", requests=_requests(suite, args.n, "c"),
                     weights_dir=weights, data_root=suite, gpu=False, progress=False, log=lambda s: None)
        return time.perf_counter() - t

    cell_names = [f"cell{j}" for j in range(args.cells)]

    def per_cell_containers(k: int) -> float:  # before: one container per (model, benchmark) job
        t = time.perf_counter()
        for c in cell_names:
            cmod.run_job(client, image, family=FAMILY, job_dir=tmp / f"before{k}" / c,
                         requests=_requests(suite, args.n, c), weights_dir=weights, data_root=suite, gpu=False,
                         progress=False, log=lambda s: None)
        return time.perf_counter() - t

    def one_container(k: int) -> float:  # after: one container answers every cell of the model
        job = tmp / f"after{k}"
        t = time.perf_counter()
        cmod.stage_cells(job, {c: _requests(suite, args.n, c) for c in cell_names}, {c: suite for c in cell_names})
        command = ["--family", FAMILY, "--weights", cmod.WEIGHTS_MOUNT, "--device", "cpu"]
        for c in cell_names:
            command += ["--requests", f"{cmod.REQUESTS_MOUNT}/{c}.jsonl", "--responses", f"{cmod.JOB_MOUNT}/{c}.jsonl"]
        res = cmod.run_staged(client, image, family=FAMILY, job_dir=job,
                              cells={c: {r["sample_id"] for r in _requests(suite, args.n, c)} for c in cell_names},
                              command=command, weights_dir=weights, log=lambda s: None)
        assert res.answered == args.n * args.cells
        return time.perf_counter() - t

    in_process(-1)  # warm-up: imports torch/transformers once, as a long-lived parent would
    times: dict[str, list[float]] = {"in-process": [], "subprocess": [], "container": [], "batch8": [],
                                     "before": [], "after": []}
    for k in range(args.reps):
        times["in-process"].append(in_process(k))
        times["subprocess"].append(subproc(k))
        times["container"].append(in_container(k))
        times["batch8"].append(in_process(k, batch=8))
        times["before"].append(per_cell_containers(k))
        times["after"].append(one_container(k))
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"tiny {FAMILY}, {args.n} requests per job, {args.reps} reps, medians (s):")
    for k in ("in-process", "subprocess", "container"):
        print(f"  {k:11s} {med[k]:7.2f}  ({args.n / med[k]:.1f} samples/s)")
    print(f"ratio container / in-process : {med['container'] / med['in-process']:.2f}")
    print(f"ratio container / subprocess : {med['container'] / med['subprocess']:.2f}")
    print(f"container overhead per job   : {med['container'] - med['subprocess']:+.2f} s over a fresh process")
    print(f"batched (8) vs one-at-a-time : {args.n / med['batch8']:.1f} vs {args.n / med['in-process']:.1f} "
          f"samples/s, ratio {med['in-process'] / med['batch8']:.2f}")
    k = args.cells
    print(f"{k} cells of {args.n} requests: one container per cell {med['before']:.2f} s, one container for all "
          f"{med['after']:.2f} s, ratio {med['before'] / med['after']:.2f}")
    print(f"per-job overhead before (saved per extra cell): {(med['before'] - med['after']) / max(k - 1, 1):+.2f} s")
    print(ratio_line("container / in-process", times["container"], times["in-process"]))
    print(ratio_line("container / subprocess", times["container"], times["subprocess"]))
    print(ratio_line("one container per cell / one container for all", times["before"], times["after"]))
    print(load_line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
