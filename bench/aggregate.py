"""Benchmark: streaming aggregation, time against plain JSON parsing and peak memory against the
number of records; every other reader of records beside it.

Targets (issues 13 and 30), measured side by side in one run:

* time: ``aggregate`` (read + validate + fold + render + write) within 4x the time of parsing the
  same JSONL with the ``json`` module;
* memory: peak memory of aggregating depends on the number of table cells (and the images and samples
  the paired and quantile tables must match), not on the size of the records: each record is folded
  and dropped.

The records are generated with a fixed seed (4 models x 3 benchmarks x ``--per-cell`` samples, two
prompts per image, metadata axes, judge labels and abstentions, outages, infrastructure errors, a
box-task share with box classes, official scores; about 1.5 KB each; each derived from its raw reply
by ``scoring.build_record``, so ``verify`` re-derives them), written with
``records.write_records`` into a temporary directory. Steps (``--repeat`` interleaved rounds,
CPU time of this process; wall time beside). Ratios are taken per round and their min / median /
max printed, with the load average before and after:

* ``json``         : ``json.loads`` of every line (plain parsing, no validation): the baseline
* ``read``         : ``records.iter_records`` of every file (pydantic validation of the full schema)
* ``read_list``    : ``records.read_records`` of every file (the judge stage's reader: all records
                     kept, garbage collector paused)
* ``agreement``    : ``judge.agreement.collect_pairs`` (judge-agreement's reader, streaming)
* ``gallery``      : ``report.gallery_examples`` (the report's reader, streaming)
* ``aggregate``    : ``pointfail.aggregate.aggregate``
* ``verify``       : ``pointfail.aggregate.verify``
* ``write``        : ``records.write_records`` of one model's records (one walk over the values)
* ``write_2walks`` : the same with a second walk checking every float first (what writing did before)

Memory: for each record count of ``--memory`` (prefixes of the same files), a fresh process aggregates
the study and reports its peak resident set size (``VmHWM``) minus that of the same process
aggregating a 12-record study (imports, numpy, interpreter).

Usage: ``python bench/aggregate.py [--per-cell 4500] [--repeat 5] [--memory 6000,24000,96000] [--quick]``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _rounds import add_quick, load_line, ratio_line, ratio_stats, rounds

from pointfail.aggregate import aggregate, verify
from pointfail.inputs.benchmarks._common import boxes_sha256
from pointfail.records import (
    FAILURE_MODES,
    ImageRef,
    Judgment,
    JudgeAttempt,
    Prompt,
    Record,
    Response,
    Sample,
    Target,
    iter_records,
    read_records,
    records_files,
    write_records,
)
from pointfail.scoring import build_record

MODELS = ("molmo-7b-d", "molmoe-1b", "qwen2.5-vl-3b", "internvl3-2b")
BENCHMARKS = ("point-bench", "where2place", "refspatial")


def make_record(rng: random.Random, model: str, bench: str, i: int, skill: float) -> Record:
    """One plausible record (1024x768 image, a box target, metadata, judge verdict), made the way the
    pipeline makes it: the raw reply is written first and :func:`pointfail.scoring.build_record`
    derives the parse, outcome, geometry and official score from it, so ``verify`` re-derives every
    record the benchmark writes."""
    sid = f"{bench}-{i:05d}"
    box_task = bench == "refspatial" and i % 5 == 0
    u = rng.random()
    x0, y0 = rng.randrange(0, 900), rng.randrange(0, 700)
    w, h = rng.randrange(4, 120), rng.randrange(4, 60)
    boxes = [[x0, y0, x0 + w, y0 + h]]
    if u < 0.004:
        resp = Response(error="worker: CUDA out of memory")
    elif u < 0.004 + 0.12:
        resp = Response(raw_text="I cannot find it in the image.", seconds=0.5)
    else:
        if u < 0.124 + skill:  # inside the box (percent of 1024x768, Molmo's frame)
            px, py = (x0 + rng.random() * w) / 10.24, (y0 + rng.random() * h) / 7.68
        else:
            px, py = rng.random() * 100, rng.random() * 100
        resp = Response(raw_text=f'<point x="{px:.1f}" y="{py:.1f}" alt="it">it</point>', seconds=0.5)
    sample = Sample(
        sample_id=sid,
        benchmark=bench,
        image=ImageRef(path=f"data/{bench}/{i // 2:05d}.png", width=1024, height=768,
                       sha256=hashlib.sha256(f"{bench}/{i // 2}".encode()).hexdigest()),
        instruction="Point to the mug left of the kettle.",
        task="box" if box_task else "point",
        target=Target(kind="boxes", boxes=boxes, area_px=float(w * h), sha256=boxes_sha256(boxes)),
        metadata={"category": rng.choice(["object", "free_space", "part", "text"]), "language": rng.choice(["en", "de"]),
                  "difficulty": rng.choice(["easy", "medium", "hard"])},
    )
    prompt = Prompt(original=sample.instruction, core="the mug left of the kettle", sent=sample.instruction)
    rec = build_record(study="bench", model=model, family="molmo", sample=sample, prompt=prompt, response=resp)
    if rec.outcome == "miss":
        v = rng.random()
        if v < 0.9:
            label = rng.choice(FAILURE_MODES)
            rec.judge = Judgment(judge="ollama:gemma4:31b", status="labeled", label=label,
                                 attempts=[JudgeAttempt(attempt=1, reply=f"Label: {label}", verdict="accepted", label=label)])
        elif v < 0.97:
            rec.judge = Judgment(judge="ollama:gemma4:31b", status="unlabeled",
                                 attempts=[JudgeAttempt(attempt=k, reply="maybe", verdict="rejected_no_label") for k in range(1, 6)])
        else:
            rec.judge = Judgment(judge="ollama:gemma4:31b", status="judge_unavailable", transport_failures=5)
    return rec


def generate(study: Path, per_cell: int, seed: int = 0) -> int:
    """Write len(MODELS) * len(BENCHMARKS) * per_cell records under ``study``. Returns the count."""
    rng = random.Random(seed)
    total = 0
    for k, m in enumerate(MODELS):
        for b in BENCHMARKS:
            recs = [make_record(rng, m, b, i, skill=0.5 - 0.1 * k) for i in range(per_cell)]
            total += write_records(study / m / f"{b}.jsonl", recs)
    return total


def _two_walks(records: list[Record], path: Path) -> None:
    """Writing as it was before: a separate walk over every value to refuse NaN/infinity, then
    ``json.dumps`` (which walks them again)."""

    def check(obj) -> None:
        if isinstance(obj, float):
            if not math.isfinite(obj):
                raise ValueError(obj)
        elif isinstance(obj, dict):
            for v in obj.values():
                check(v)
        elif isinstance(obj, (list, tuple)):
            for v in obj:
                check(v)

    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for r in sorted(records, key=lambda r: r.sample_id):
            d = r.model_dump(mode="json")
            check(d)
            f.write(json.dumps(d, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n")


PEAK = """
import sys
from pointfail.aggregate import build_tables, load_study
build_tables(load_study(sys.argv[1]))
print(next(line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM:")))
"""
# VmHWM (kB): the process's own resident high-water mark. Not ru_maxrss: Linux keeps that across
# fork + exec, so a child would report this benchmark's own peak.


def _truncated(src: Path, dst: Path, per_cell: int) -> int:
    """A copy of study ``src`` keeping the first ``per_cell`` lines of each file. Returns the count."""
    n = 0
    for p in records_files(src):
        lines = p.read_bytes().split(b"\n")[:per_cell]
        q = dst / p.relative_to(src)
        q.parent.mkdir(parents=True, exist_ok=True)
        q.write_bytes(b"".join(x + b"\n" for x in lines if x))
        n += sum(1 for x in lines if x)
    return n


def _peak_kib(study: Path) -> int:
    out = subprocess.run([sys.executable, "-c", PEAK, str(study)], capture_output=True, text=True, check=True)
    return int(out.stdout.split()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-cell", type=int, default=4500, help="samples per model x benchmark (default 4500 -> 54,000 records)")
    ap.add_argument("--repeat", type=int, default=5, help="interleaved rounds (default 5)")
    ap.add_argument("--memory", default="6000,24000,96000", help="record counts for the memory curve (comma-separated; empty: skip)")
    add_quick(ap)
    args = ap.parse_args()
    if args.quick:
        args.per_cell, args.repeat, args.memory = 20, 2, "120,240"
    from pointfail.judge.agreement import collect_units
    from pointfail.outputs.report import gallery_examples

    print(load_line())
    counts = [int(x) for x in args.memory.split(",") if x.strip()]
    per_cell_gen = max([args.per_cell] + [-(-c // (len(MODELS) * len(BENCHMARKS))) for c in counts])
    with tempfile.TemporaryDirectory(prefix="pointfail-bench-") as tmp:
        full = Path(tmp) / "full"
        t0 = time.perf_counter()
        n = generate(full, per_cell_gen)
        print(f"generated {n} records in {time.perf_counter() - t0:.1f} s")
        study = Path(tmp) / "bench"
        n = _truncated(full, study, args.per_cell)
        size = sum(p.stat().st_size for p in records_files(study))
        print(f"timing study: {n} records ({size / 1e6:.1f} MB JSONL, {size / n:.0f} bytes each)")
        one_model = read_records(study / MODELS[0] / f"{BENCHMARKS[0]}.jsonl")

        def just_json() -> None:
            for p in records_files(study):
                with open(p, "rb") as f:
                    for line in f:
                        if line.strip():
                            json.loads(line)

        def just_read() -> None:
            for p in records_files(study):
                for _ in iter_records(p):
                    pass

        def read_list() -> None:
            for p in records_files(study):
                read_records(p)

        steps = {
            "json": just_json,
            "read": just_read,
            "read_list": read_list,
            "agreement": lambda: collect_units(study),
            "gallery": lambda: gallery_examples(study),
            "aggregate": lambda: aggregate(study),
            "verify": lambda: verify(study),
            "write": lambda: write_records(Path(tmp) / "w1.jsonl", one_model),
            "write_2walks": lambda: _two_walks(one_model, Path(tmp) / "w2.jsonl"),
        }
        steps["aggregate"]()  # warm-up: imports (numpy, tabulate) are not what is measured
        result = verify(study)
        if not result.ok:  # the generated records must re-derive, or verify's time is not verify's
            raise SystemExit("verify of the generated study failed:\n" + "\n".join(result.problems[:5]))
        cpu, wall = rounds(steps, args.repeat)
        print(f"{args.repeat} interleaved rounds; CPU time of this process (median), wall time beside; "
              "ratios per round, then their median")
        print(f"{'step':<16}{'cpu s':>8}{'wall s':>8}{'/ json':>8}{'/ read':>8}")
        med = {k: statistics.median(v) for k, v in cpu.items()}
        for k in steps:
            print(f"{k:<16}{med[k]:>8.2f}{statistics.median(wall[k]):>8.2f}"
                  f"{ratio_stats(cpu[k], cpu['json'])[1]:>8.2f}{ratio_stats(cpu[k], cpu['read'])[1]:>8.2f}")
        print(ratio_line("aggregate / json", cpu["aggregate"], cpu["json"], goal=4))
        print(ratio_line("verify / json", cpu["verify"], cpu["json"], goal=8))
        print(ratio_line(f"write {len(one_model)} records: one walk / two walks", cpu["write"], cpu["write_2walks"]))
        print(load_line())

        if counts:
            tiny = Path(tmp) / "tiny"
            _truncated(full, tiny, 1)
            base_kib = _peak_kib(tiny)
            print(f"\npeak memory of aggregating (fresh process; minus {base_kib / 1024:.0f} MiB for a 12-record study)")
            print(f"{'records':>10}{'JSONL MB':>10}{'peak MiB':>10}{'KiB/record':>12}")
            for c in counts:
                d = Path(tmp) / f"mem{c}"
                k = _truncated(full, d, -(-c // (len(MODELS) * len(BENCHMARKS))))
                mb = sum(p.stat().st_size for p in records_files(d)) / 1e6
                peak = _peak_kib(d) - base_kib
                print(f"{k:>10}{mb:>10.1f}{peak / 1024:>10.1f}{peak / k:>12.3f}")


if __name__ == "__main__":
    main()
