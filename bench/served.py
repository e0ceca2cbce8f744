"""Benchmark: the served backend's throughput against a real server, and its own overhead per request.

Part 1: samples per second at concurrency 1, 4 and 16 against ``transformers serve`` on loopback (the
tiny random-weight Qwen2.5-VL checkpoint, CPU), the same ``N`` samples each time (1024x768 images sent
at full size, the server resizing them by the checkpoint's budget, ``max_new_tokens`` fixed), from a
fresh responses file each run; ratios against concurrency 1 side by side. ``transformers serve``
without continuous batching generates one request at a time, so on it concurrency overlaps only the
client's work (image encoding, transfer) with generation: the ratio measures that overlap, not a
server's batching (vLLM, SGLang batch concurrent requests; not measured here: no GPU).

Part 2 (``latency``): requests per second at concurrency 1, 4 and 16 against the scripted fake server
answering every request after a fixed ``--latency`` (0.5 s; threads, so requests overlap as on a
batching server), on UI-like screenshots (a generated sheets suite, 1024x768, the family's published
budget), for ``resize = "client"`` (each image decoded, resized once to 1036x756 and PNG-encoded: the
behaviour before ``"auto"``) and ``resize = "auto"`` (the default: the PNG files sent as they are, the
server's 1036x756 confirmed by its token count), interleaved per concurrency; ratios against concurrency 1 side by
side in one run, and this process's CPU seconds per request (``time.process_time``; the issue's
targets: c=16 at least 12x c=1, at most 20 ms of client CPU per request). The ideal ratio is the
concurrency itself.

Part 3: the client's own cost per request against the scripted fake server with zero latency
(:mod:`pointfail.generated.testing.openai_fake`, a stdlib threading server, in a separate process so that its
work does not hold this process's interpreter lock): the whole ``run_served`` path (read the request,
open and decode the PNG, plan the frame, encode PNG and base64, one HTTP request, read the reply,
append the response through the job writer with fsync) divided by ``N``, at concurrency 1 and 16, for
1024x768 and 224x224 noise images sent at the family's budget (1024x768 resized once to 1036x756,
224x224 sent as it is; the stub counts the image tokens of what it receives, so the frame check
agrees) (the difference is the image's own cost: decode, resize, PNG encode, base64 and transfer). The stub still reads each body and the image header, so the numbers are an upper bound on
the client's cost; both share the machine's cores.

    python bench/served.py [--samples 12] [--max-new-tokens 16] [--stub-samples 40]
                           [--part all|both|serve|latency|stub] [--latency 0.5] [--latency-samples 32]
                           [--rounds 1] [--quick]

``both`` is serve and stub (as before); ``all`` adds latency. Prints a table per part (tabulate). Numbers are reported, not asserted.
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

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from _rounds import add_quick, load_line, ratio_line  # noqa: E402 (beside this file)


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
    """Wall seconds of one ``run_served`` over ``req`` into a fresh ``out``, and the samples answered."""
    from pointfail.running.served.backend import run_served
    from pointfail.inputs.study import model_spec

    out.unlink(missing_ok=True)
    m = model_spec({"kind": "server", "name": "bench", "family": "qwen2_5_vl", "base_url": base_url, "model": model,
                    "options": {"concurrency": concurrency, **opts}})
    t0 = time.perf_counter()
    s = run_served(m, req, out)
    return time.perf_counter() - t0, s.answered


def _stub(conn, reply: str, latency: float = 0.0) -> None:
    """Child process: a FakeOpenAI answering after ``latency`` seconds; sends its URL, serves until told
    to stop."""
    from pointfail.families import get_family
    from pointfail.generated.testing.openai_fake import FakeOpenAI, qwen_tokens
    from pointfail.running.served.inputs import PixelBudget

    budget = PixelBudget(**{k: get_family("qwen2_5_vl").resize[k] for k in ("factor", "min_pixels", "max_pixels")})

    def tokens(size):  # a server with the family's processor: it smart_resizes what it receives itself
        return qwen_tokens(budget.resize(size)) if size else 0

    with FakeOpenAI(None, default_reply=reply, model="stub", latency=latency, image_tokens=tokens) as fk:
        conn.send(fk.url)
        conn.recv()


def latency_part(root: Path, args) -> None:
    """Part 2: requests/s per concurrency against a stub with fixed latency, on generated screenshots;
    prints the table and the ratios to concurrency 1 (one run, side by side)."""
    import multiprocessing

    from tabulate import tabulate

    from pointfail.generated.suites import sheets

    suite = root / "latency-suite"
    sheets.generate(suite, n=args.latency_samples, seed=7)
    images = sorted((suite / "data").rglob("*.png"))
    req = root / "latency-requests.jsonl"
    with open(req, "w") as f:
        for i, p in enumerate(images):
            f.write(json.dumps({"sample_id": f"s{i:04d}", "image": str(p), "prompt": f"point to item {i}",
                                "task": "point", "max_new_tokens": args.max_new_tokens}) + "\n")
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_stub, args=(child, '[{"point_2d": [10, 10]}]', args.latency), daemon=True)
    proc.start()
    rows, rates = [], {}
    modes = ("client", "auto")  # "client": every image decoded, resized to 1036x756, PNG-encoded (main before #26.5)
    try:
        url = parent.recv()
        timed_run(url, "stub", req, root / "latency-warm.jsonl", max(args.concurrency), pixel_budget="family")
        for c in args.concurrency:
            for mode in modes:  # interleaved: both modes under the same load
                cpu0 = time.process_time()
                dt, n = timed_run(url, "stub", req, root / f"latency-{mode}-{c}.jsonl", c, pixel_budget="family",
                                  resize=mode)
                cpu = time.process_time() - cpu0
                rates[mode, c] = n / dt
                rows.append([mode, c, n, f"{dt:.2f}", f"{rates[mode, c]:.2f}",
                             f"{rates[mode, c] / rates[mode, args.concurrency[0]]:.2f}", f"{cpu / max(n, 1) * 1000:.1f}"])
    finally:
        parent.send("stop")
        proc.join(timeout=10)
    print(f"\nlatency stub ({args.latency} s per answer, another process), {len(images)} sheets screenshots "
          f"of 1024x768, family budget: resize client sends 1036x756 PNGs, auto the files as they are")
    print(tabulate(rows, headers=["resize", "concurrency", "samples", "seconds", "requests/s", "ratio to c=1",
                                  "client CPU ms per request"], tablefmt="github"), flush=True)
    c1, *others = args.concurrency
    for mode in modes:
        for c in others:  # wall time at c=1 over wall time at c: the throughput ratio (ideal: c)
            print(ratio_line(f"resize {mode}: requests/s at concurrency {c} / at concurrency {c1} (ideal {c / c1:g})",
                             [rates[mode, c]], [rates[mode, c1]]))


def main(argv: list[str] | None = None) -> int:
    """Run the parts asked for and print their tables; exit 0."""
    import multiprocessing

    from tabulate import tabulate

    from pointfail.generated.testing.tiny import build_qwen2_5_vl
    from pointfail.generated.testing.transformers_serve import TransformersServe

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=12)
    ap.add_argument("--max-new-tokens", type=int, default=16)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16])
    ap.add_argument("--stub-samples", type=int, default=40)
    ap.add_argument("--part", choices=["all", "both", "serve", "latency", "stub"], default="both")
    ap.add_argument("--latency", type=float, default=0.5, help="seconds the latency stub waits per answer")
    ap.add_argument("--latency-samples", type=int, default=32, help="screenshots per row of the latency part")
    ap.add_argument("--rounds", type=int, default=1, help="interleaved rounds of the stub part")
    add_quick(ap)
    args = ap.parse_args(argv)
    if args.quick:  # the stub parts only: transformers serve takes a minute to start
        args.part, args.stub_samples, args.rounds = "stub+latency", 4, 2
        args.latency, args.latency_samples, args.concurrency = 0.05, 4, [1, 4]
    print(load_line())
    budget = dict(resize="server", max_pixels=12544, min_pixels=3136, factor=28)
    # the stubs count the image tokens of the image they receive: the client sends the family's budget
    # (a 1024x768 image resized once to 1036x756, 224x224 as it is), which is what they then see
    stub_opts = dict(pixel_budget="family")
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        if args.part in ("all", "both", "serve"):
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
                  f"max_new_tokens {args.max_new_tokens}")
            print(tabulate(rows, headers=["concurrency", "samples", "seconds", "samples/s", "ratio to c=1"],
                           tablefmt="github"), flush=True)
        if args.part in ("all", "latency", "stub+latency"):
            latency_part(root, args)
        if args.part in ("all", "both", "stub", "stub+latency"):
            rows = []
            ctx = multiprocessing.get_context("spawn")
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=_stub, args=(child, '[{"point_2d": [10, 10]}]'), daemon=True)
            proc.start()
            try:
                url = parent.recv()
                sizes = ((1024, 768), (224, 224))
                sreqs = {size: make_requests(root, args.stub_samples, size, args.max_new_tokens)
                         for size in sizes}
                timed_run(url, "stub", sreqs[sizes[0]], root / "stub-warm.jsonl", 1, **stub_opts)  # imports, connection
                walls: dict[tuple[tuple[int, int], int], list[float]] = {(size, c): [] for size in sizes for c in (1, 16)}
                for k in range(args.rounds):
                    for (size, c), v in walls.items():  # a fresh job folder per run: nothing is resumed
                        out = root / f"stub-{size[0]}x{size[1]}-c{c}-r{k}.jsonl"
                        dt, n = timed_run(url, "stub", sreqs[size], out, c, **stub_opts)
                        v.append(dt)
                for (size, c), v in walls.items():
                    dt = statistics.median(v)
                    rows.append([f"{size[0]}x{size[1]}", c, args.stub_samples, f"{dt:.2f}", f"{dt / args.stub_samples * 1000:.1f}"])
            finally:
                parent.send("stop")
                proc.join(timeout=10)
            print()
            print(f"client overhead against a zero-latency stub (another process), {args.stub_samples} samples per "
                  "row (whole run / samples)")
            print(tabulate(rows, headers=["image", "concurrency", "samples", "seconds", "ms per request"],
                           tablefmt="github"), flush=True)
            for size in sizes:
                print(ratio_line(f"{size[0]}x{size[1]}: concurrency 1 / concurrency 16 wall time",
                                 walls[(size, 1)], walls[(size, 16)]))
            print(ratio_line("1024x768 / 224x224 at concurrency 1", walls[(sizes[0], 1)], walls[(sizes[1], 1)]))
    print(load_line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
