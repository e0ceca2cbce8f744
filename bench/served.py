"""Benchmark: the served backend's throughput against a real server, and its own overhead per request.

Part 1: samples per second at concurrency 1, 4 and 16 against ``transformers serve`` on loopback (the
tiny random-weight Qwen2.5-VL checkpoint, CPU), the same ``N`` samples each time (1024x768 images sent
at full size, the server resizing them by the checkpoint's budget, ``max_new_tokens`` fixed), from a
fresh responses file each run; ratios against concurrency 1 side by side. ``transformers serve``
without continuous batching generates one request at a time, so on it concurrency overlaps only the
client's work (image encoding, transfer) with generation: the ratio measures that overlap, not a
server's batching (vLLM, SGLang batch concurrent requests; not measured here: no GPU).

Part 2: the client's own cost per request against the scripted fake server with zero latency
(:mod:`pointfail.testing.openai_fake`, a stdlib threading server, in this process): the whole
``run_served`` path (read the request, open and decode a 1024x768 PNG, plan the frame, encode PNG and
base64, one HTTP request, read the reply, append the response with fsync) divided by ``N``, at
concurrency 1 and 16; and the same with a 224x224 image to separate the image cost from the rest.

    python bench/served.py [--samples 24] [--max-new-tokens 16] [--stub-samples 200]

Prints two tables (tabulate). Numbers are reported, not asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))


def make_requests(root: Path, n: int, size: tuple[int, int], max_new_tokens: int) -> Path:
    """``n`` requests on distinct noise images of ``size``."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    req = root / f"requests-{size[0]}x{size[1]}.jsonl"
    with open(req, "w") as f:
        for i in range(n):
            p = root / f"img-{size[0]}x{size[1]}-{i}.png"
            Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)).save(p)
            f.write(json.dumps({"sample_id": f"s{i:04d}", "image": str(p), "prompt": f"point to item {i}",
                                "task": "point", "max_new_tokens": max_new_tokens}) + "\n")
    return req


def timed_run(base_url: str, model: str, req: Path, out: Path, concurrency: int, **opts) -> tuple[float, int]:
    from pointfail.served.backend import ServedModel, run_served
    from pointfail.served.options import ServedOptions

    out.unlink(missing_ok=True)
    t0 = time.perf_counter()
    s = run_served(ServedModel(base_url, model, "qwen2_5_vl", options=ServedOptions(concurrency=concurrency, **opts)),
                   req, out)
    return time.perf_counter() - t0, s.answered


def main(argv: list[str] | None = None) -> int:
    """Run both parts and print the tables; exit 0."""
    from tabulate import tabulate

    from pointfail.testing.openai_fake import FakeOpenAI
    from pointfail.testing.tiny import build_qwen2_5_vl
    from pointfail.testing.transformers_serve import TransformersServe

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=24)
    ap.add_argument("--max-new-tokens", type=int, default=16)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16])
    ap.add_argument("--stub-samples", type=int, default=200)
    args = ap.parse_args(argv)
    budget = dict(resize="server", max_pixels=12544, min_pixels=3136, factor=28)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        ckpt = build_qwen2_5_vl(root / "ckpt", plain=True)
        req = make_requests(root, args.samples, (1024, 768), args.max_new_tokens)
        rows = []
        with TransformersServe(ckpt, log=root / "serve.log") as srv:
            timed_run(srv.base_url, srv.model, req, root / "warm.jsonl", 1, **budget)  # load and warm the model
            base = None
            for c in args.concurrency:
                dt, n = timed_run(srv.base_url, srv.model, req, root / f"out-{c}.jsonl", c, **budget)
                rate = n / dt
                base = base or rate
                rows.append([c, n, f"{dt:.2f}", f"{rate:.2f}", f"{rate / base:.2f}"])
        print(f"served: transformers serve (CPU, tiny Qwen2.5-VL), {args.samples} samples of 1024x768, "
              f"max_new_tokens {args.max_new_tokens}; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
        print(tabulate(rows, headers=["concurrency", "samples", "seconds", "samples/s", "ratio to c=1"],
                       tablefmt="github"))
        rows = []
        with FakeOpenAI(None, default_reply='[{"point_2d": [10, 10]}]', model="stub") as fk:
            for size in ((1024, 768), (224, 224)):
                sreq = make_requests(root, args.stub_samples, size, args.max_new_tokens)
                for c in (1, 16):
                    dt, n = timed_run(fk.url, "stub", sreq, root / "stub.jsonl", c, **budget)
                    rows.append([f"{size[0]}x{size[1]}", c, n, f"{dt:.2f}", f"{dt / n * 1000:.2f}"])
        print()
        print(f"client overhead against a zero-latency stub, {args.stub_samples} samples per row (whole run / samples)")
        print(tabulate(rows, headers=["image", "concurrency", "samples", "seconds", "ms per request"], tablefmt="github"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
