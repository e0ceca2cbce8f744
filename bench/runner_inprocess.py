"""Batched against one-at-a-time generation in the in-process worker, on tiny random-weight models.

No Docker needed (``bench/runner.py`` adds the container path). For each family (default: the tiny
Qwen2.5-VL, Qwen3-VL and InternVL checkpoints of ``pointfail.generated.testing.tiny``), the model is loaded once
and :func:`pointfail.running.worker.run_worker` answers the same N requests (generated images of varied sizes,
``max_new_tokens`` fixed) with batch size 1 and with batch size B, alternating, R repetitions each,
into fresh responses files. Prints the median samples per second of each and the ratio
batched / one-at-a-time, measured side by side in one run.

Usage: ``python bench/runner_inprocess.py [--n 24] [--batch 8] [--reps 3] [--families qwen2_5_vl ...] [--quick]``.
:func:`measure` is importable (returns the numbers as a dict).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _rounds import add_quick, load_line, ratio_line


def _requests(d: Path, n: int, max_new_tokens: int) -> Path:
    from PIL import Image

    rows = []
    for i in range(n):
        p = d / f"img{i:03d}.png"
        Image.new("RGB", (80 + 17 * (i % 9), 60 + 23 * (i % 5)), (37 * i % 256, 90, 160)).save(p)
        rows.append({"sample_id": f"s{i:03d}", "image": str(p), "prompt": f"Point to the cell B{i + 2}.",
                     "task": "point", "max_new_tokens": max_new_tokens})
    req = d / "requests.jsonl"
    req.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return req


def measure(family: str, n: int = 24, batch: int = 8, reps: int = 3, max_new_tokens: int = 16) -> dict:
    """Median samples/second with batch size 1 and ``batch`` for ``family``'s tiny checkpoint (CPU).
    Returns ``{"family", "n", "batch", "one_sps", "batched_sps", "ratio", "one_s", "batched_s"}`` (the last two:
    wall seconds per repetition, interleaved)."""
    import importlib

    from pointfail.generated.testing import tiny
    from pointfail.running.worker import run_worker

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        weights = tiny.build(family, tmp / "w")
        backend = importlib.import_module(f"pointfail.running.backends.{family}").load(str(weights), "cpu")
        req = _requests(tmp, n, max_new_tokens)
        run_worker(backend, req, tmp / "warmup.jsonl", batch_size=batch)  # first-call costs out of the timing
        times: dict[int, list[float]] = {1: [], batch: []}
        for r in range(reps):
            for bs in (1, batch):
                out = tmp / f"resp_{bs}_{r}.jsonl"
                t0 = time.perf_counter()
                s = run_worker(backend, req, out, batch_size=bs)
                times[bs].append(time.perf_counter() - t0)
                assert s.answered == n, f"{family}: {s.errors} errors: {list(s.error_reasons.values())[:1]}"
    one, many = statistics.median(times[1]), statistics.median(times[batch])
    return {"family": family, "n": n, "batch": batch, "one_sps": n / one, "batched_sps": n / many,
            "ratio": one / many, "one_s": times[1], "batched_s": times[batch]}


def main(argv: list[str] | None = None) -> int:
    """Command line: print one line per family with both throughputs and their ratio."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=24)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--max-new-tokens", type=int, default=16)
    ap.add_argument("--families", nargs="+", default=["qwen2_5_vl", "qwen3_vl", "internvl3"])
    add_quick(ap)
    args = ap.parse_args(argv)
    if args.quick:
        args.n, args.batch, args.reps, args.max_new_tokens, args.families = 2, 2, 2, 2, ["qwen2_5_vl"]
    print(load_line())
    os.environ["HF_HUB_OFFLINE"] = "1"
    import logging

    logging.getLogger("pointfail.running.worker").setLevel(logging.WARNING)
    print(f"in-process worker, tiny checkpoints, CPU, {args.n} requests, {args.reps} reps, medians")
    for fam in args.families:
        m = measure(fam, args.n, args.batch, args.reps, args.max_new_tokens)
        print(f"{fam:12s} batch 1: {m['one_sps']:7.2f} samples/s   batch {m['batch']}: {m['batched_sps']:7.2f} "
              f"samples/s   batched/one-at-a-time: {m['ratio']:.2f}x")
        print(ratio_line(f"{fam} speed-up, batch {m['batch']} over batch 1", m["one_s"], m["batched_s"]))
    print(load_line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
