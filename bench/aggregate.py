"""Benchmark: `aggregate` and `verify` over ~54,000 generated records against reading and parsing the
same JSONL.

Issue 6 target: aggregate and verify within 2x the time just to read and parse the records
(ten times the source study's 5,436 attempts). The records are generated with a fixed seed (4 models
x 3 benchmarks x 4,500 samples, two prompts per image, metadata axes, judge labels and abstentions,
outages, infrastructure errors, a box-task share with box classes, official scores), written with
``records.write_records`` into a temporary directory, then timed side by side in this one run:

* ``json``      : ``json.loads`` of every line (plain parsing, no validation)
* ``read``      : ``records.read_records`` of every file (pydantic ``model_validate_json``: what
                  aggregate and verify must do anyway, since they reject records failing the schema)
* ``read_gc_paused``: the same with the cyclic garbage collector paused, as ``load_study`` does
                  (the stricter baseline: with the collector on, repeated full collections over the
                  growing heap of records cost about as much as the parsing itself)
* ``aggregate`` : ``pointfail.aggregate.aggregate`` (read + compute + write tables + SHA256SUMS)
* ``verify``    : ``pointfail.aggregate.verify`` (read + compute in a temp dir + byte comparison)

Each is the best of ``--repeat`` interleaved rounds, in CPU time of this process (wall time printed beside). Ratios are printed against ``read`` (the baseline the issue
names) and against ``json``. Usage: ``python bench/aggregate.py [--per-cell 4500] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import tempfile
import time
from pathlib import Path

from pointfail.aggregate import aggregate, records_files, verify
from pointfail.records import (
    FAILURE_MODES,
    BoxScore,
    Geometry,
    ImageRef,
    Judgment,
    JudgeAttempt,
    OfficialScore,
    ParseResult,
    Prompt,
    Record,
    Response,
    Target,
    write_records,
)

MODELS = ("molmo-7b-d", "molmoe-1b", "qwen2.5-vl-3b", "internvl3-2b")
BENCHMARKS = ("point-bench", "where2place", "refspatial")


def make_record(rng: random.Random, model: str, bench: str, i: int, skill: float) -> Record:
    """One plausible record (1024x768 image, a box target, metadata, judge verdict)."""
    sid = f"{bench}-{i:05d}"
    box_task = bench == "refspatial" and i % 5 == 0
    u = rng.random()
    if u < 0.004:
        outcome = "error"
    elif u < 0.004 + skill:
        outcome = "hit"
    elif u < 0.004 + skill + 0.12:
        outcome = "no_prediction"
    else:
        outcome = "miss"
    x0, y0 = rng.randrange(0, 900), rng.randrange(0, 700)
    w, h = rng.randrange(4, 120), rng.randrange(4, 60)
    pt = [rng.random(), rng.random()]
    parse = None
    resp = Response(raw_text=f'<point x="{pt[0] * 100:.1f}" y="{pt[1] * 100:.1f}">it</point>', seconds=0.5)
    if outcome in ("hit", "miss"):
        parse = ParseResult(family="molmo", frame="percent", points=[pt] if not box_task else [], boxes=[[pt[0], pt[1], min(1.0, pt[0] + 0.05), min(1.0, pt[1] + 0.05)]] if box_task else [])
    elif outcome == "no_prediction":
        parse = ParseResult(family="molmo", frame="percent", reason="no_coordinates")
    else:
        resp = Response(error="worker: CUDA out of memory")
    geom = Geometry()
    if outcome in ("hit", "miss"):
        d = 0.0 if outcome == "hit" else round(rng.expovariate(1 / 40), 3)
        box = None
        if box_task:
            box = BoxScore(iou=round(rng.random(), 4), coverage=round(rng.random(), 4), precision=round(rng.random(), 4), box_class="hit" if outcome == "hit" else rng.choice(["clipped", "oversized", "both", "malformed"]))
        geom = Geometry(in_target=outcome == "hit", distance_px=d, distance_norm=d / 1280.0, box=box)
    judge = None
    if outcome == "miss":
        v = rng.random()
        if v < 0.9:
            label = rng.choice(FAILURE_MODES)
            judge = Judgment(judge="ollama:gemma4:31b", status="labeled", label=label, attempts=[JudgeAttempt(attempt=1, reply=f"Label: {label}", verdict="accepted", label=label)])
        elif v < 0.97:
            judge = Judgment(judge="ollama:gemma4:31b", status="unlabeled", attempts=[JudgeAttempt(attempt=k, reply="maybe", verdict="rejected_no_label") for k in range(1, 6)])
        else:
            judge = Judgment(judge="ollama:gemma4:31b", status="judge_unavailable", transport_failures=5)
    return Record(
        study="bench",
        model=model,
        family="molmo",
        benchmark=bench,
        sample_id=sid,
        task="box" if box_task else "point",
        image=ImageRef(path=f"data/{bench}/{i // 2:05d}.png", width=1024, height=768, sha256=hashlib.sha256(f"{bench}/{i // 2}".encode()).hexdigest()),
        target=Target(kind="boxes", boxes=[[x0, y0, x0 + w, y0 + h]], area_px=float(w * h), sha256="0" * 64),
        metadata={"category": rng.choice(["object", "free_space", "part", "text"]), "language": rng.choice(["en", "de"]), "difficulty": rng.choice(["easy", "medium", "hard"])},
        prompt=Prompt(original="Point to the mug left of the kettle.", core="the mug left of the kettle", sent="Point to the mug left of the kettle."),
        response=resp,
        parse=parse,
        outcome=outcome,
        geometry=geom,
        official=OfficialScore(rule="where2place: in-mask fraction", score=1.0 if outcome == "hit" else 0.0) if bench == "where2place" and outcome != "error" else None,
        judge=judge,
    )


def generate(study: Path, per_cell: int, seed: int = 0) -> int:
    """Write len(MODELS) * len(BENCHMARKS) * per_cell records under ``study``. Returns the count."""
    rng = random.Random(seed)
    total = 0
    for k, m in enumerate(MODELS):
        for b in BENCHMARKS:
            recs = [make_record(rng, m, b, i, skill=0.5 - 0.1 * k) for i in range(per_cell)]
            total += write_records(study / m / f"{b}.jsonl", recs)
    return total


def timed(fn) -> tuple[float, float]:
    """(CPU seconds of this process, wall seconds) of one call. CPU time is the primary measure:
    on a shared machine other processes inflate wall time, not this process's CPU time."""
    c0, w0 = time.process_time(), time.perf_counter()
    fn()
    return time.process_time() - c0, time.perf_counter() - w0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-cell", type=int, default=4500, help="samples per model x benchmark (default 4500 -> 54,000 records)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    from pointfail.records import read_records

    with tempfile.TemporaryDirectory(prefix="pointfail-bench-") as tmp:
        study = Path(tmp) / "bench"
        t0 = time.perf_counter()
        n = generate(study, args.per_cell)
        size = sum(p.stat().st_size for p in records_files(study))
        print(f"generated {n} records ({size / 1e6:.1f} MB JSONL) in {time.perf_counter() - t0:.1f} s")

        def just_json() -> None:
            for p in records_files(study):
                with open(p, "rb") as f:
                    for line in f:
                        if line.strip():
                            json.loads(line)

        def just_read() -> None:
            for p in records_files(study):
                read_records(p)

        def read_gc_paused() -> None:
            import gc

            gc.disable()
            try:
                just_read()
            finally:
                gc.enable()

        steps = {
            "json": just_json,
            "read": just_read,
            "read_gc_paused": read_gc_paused,
            "aggregate": lambda: aggregate(study),
            "verify": lambda: verify(study),
        }
        steps["aggregate"]()  # warm-up: imports (numpy, tabulate) are not what is measured
        cpu = {k: float("inf") for k in steps}
        wall = {k: float("inf") for k in steps}
        for _ in range(args.repeat):  # rounds interleave the steps, so load changes hit all alike
            for k, fn in steps.items():
                c, w = timed(fn)
                cpu[k], wall[k] = min(cpu[k], c), min(wall[k], w)
        assert verify(study).ok
        base = cpu["read"]
        print(f"best of {args.repeat} interleaved rounds; ratios of CPU time")
        print(f"{'step':<22}{'cpu s':>8}{'wall s':>8}{'/ read':>8}{'/ json':>8}{'/ read_gc_paused':>18}")
        for k in steps:
            print(f"{k:<22}{cpu[k]:>8.2f}{wall[k]:>8.2f}{cpu[k] / base:>8.2f}{cpu[k] / cpu['json']:>8.2f}{cpu[k] / cpu['read_gc_paused']:>18.2f}")
        both = cpu["aggregate"] + cpu["verify"]
        print(f"{'aggregate + verify':<22}{both:>8.2f}{wall['aggregate'] + wall['verify']:>8.2f}{both / base:>8.2f}"
              f"{both / cpu['json']:>8.2f}{both / cpu['read_gc_paused']:>18.2f}")
        worst = max(cpu["aggregate"], cpu["verify"]) / base
        print(f"target (issue 6): aggregate / read <= 2 and verify / read <= 2 -> {'met' if worst <= 2 else 'NOT met'} ({worst:.2f})")


if __name__ == "__main__":
    main()
