"""Wall time of the default study's runs with 1, 2 and 4 concurrent shards on this machine (issue 18).

The default study (``center`` and ``ocr`` on sheets, text and web: 800 samples) is planned into
``--shards`` shards per model and run by the local executor (one container per shard, the hardened
settings, one model load per shard) with ``concurrency`` 1, 2 and 4, each into a fresh run folder,
the orders alternating over ``--reps`` repetitions. Printed per concurrency: the median wall time of
the runs (``submit`` less pinning and staging), the speed-up over one shard at a time, and the load
average before and after, since the machine is shared: with 2 cores, the curve is bounded by the CPU
(Tesseract in the ``ocr`` shards), and above 2 concurrent shards the containers only share it.

Needs data/default (``make data``) and a Docker Engine; the base image the lock names is built when
the engine lacks it (``make base``). Usage:
``python bench/shards.py [--shards 4] [--reps 1] [--concurrency 1 2 4] [--base-lock FILE]
[--models ocr] [--benchmarks text] [--quick]`` (a subset of the study's models and benchmarks, when three whole
runs do not fit the time there is; the default is the whole study).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _rounds import add_quick, load_line, ratio_line

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shards", type=int, default=4, help="shards per model")
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--base-lock", type=Path, default=REPO / "images/base/base.lock.json")
    ap.add_argument("--models", nargs="+", help="a subset of the study's models (default: all)")
    ap.add_argument("--benchmarks", nargs="+", help="a subset of the study's benchmarks (default: all)")
    add_quick(ap)
    args = ap.parse_args()
    if args.quick:
        args.shards, args.reps, args.concurrency = 2, 2, [1, 2]
        args.models, args.benchmarks = args.models or ["center"], args.benchmarks or ["sheets"]
    print(load_line())

    from pointfail_runner import plan as pmod
    from pointfail_runner.base import ensure_base
    from pointfail_runner.engine import ensure_engine
    from pointfail_runner.executors import local

    client = ensure_engine()
    ensure_base(client, args.base_lock, log=lambda s: None)
    tmp = Path(tempfile.mkdtemp(prefix="pointfail-bench-shards-"))
    plan = pmod.build_plan(REPO / "records/default/study.toml", repo=REPO, shards=args.shards, models=args.models,
                           benchmarks=args.benchmarks, log=lambda s: None)
    plan_file = pmod.write_plan(plan, tmp / "plan.json")
    n = sum(s.n_samples for m in plan.models for s in m.shards)
    runs: dict[int, list[float]] = {c: [] for c in args.concurrency}
    loads: dict[int, list[tuple]] = {c: [] for c in args.concurrency}
    for rep in range(args.reps):
        order = args.concurrency if rep % 2 == 0 else list(reversed(args.concurrency))
        for c in order:
            before = os.getloadavg()
            t0 = time.monotonic()
            sub = local.submit(plan_file, repo=REPO, run_dir=tmp / f"run-{rep}-{c}", concurrency=c, client=client,
                               base_lock=args.base_lock, log=lambda s: None)
            total = time.monotonic() - t0
            failed = [k for k, v in sub.detail.items() if isinstance(v, Exception)]
            if failed:
                raise SystemExit(f"shards failed at concurrency {c}: {failed}")
            runs[c].append(sub.detail["seconds"])
            loads[c].append((before, os.getloadavg()))
            print(f"rep {rep} concurrency {c}: runs {sub.detail['seconds']:.1f} s (submit {total:.1f} s), "
                  f"load {before[0]:.2f} -> {os.getloadavg()[0]:.2f}", flush=True)
    base = statistics.median(runs[args.concurrency[0]])
    print(f"default study ({', '.join(m.name for m in plan.models)} x {', '.join(plan.benchmarks)}), {n} samples, "
          f"{args.shards} shards per model, {os.cpu_count()} CPUs, medians of "
          f"{args.reps} rep(s):")
    for c in args.concurrency:
        med = statistics.median(runs[c])
        lb = statistics.mean(x[0][0] for x in loads[c])
        la = statistics.mean(x[1][0] for x in loads[c])
        print(f"  {c} concurrent shard(s): {med:7.1f} s  speed-up x{base / med:.2f}  ({n / med:.2f} samples/s)  "
              f"load average (1 min) {lb:.2f} before, {la:.2f} after")
    for c in args.concurrency[1:]:
        print(ratio_line(f"speed-up of {c} concurrent shards over {args.concurrency[0]}", runs[args.concurrency[0]], runs[c]))
    print(load_line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
