"""Benchmark: ``pointfail score-predictions`` on the real PointerBench rows (1,500 over the three
subsets, ``shared/data/pointerbench``), against the floor of what any scorer of those rows does,
side by side in interleaved rounds (CPU time of this process; ratios per round, min / median / max).

Steps, each over every subset, with the same predictions file per subset (generated with a fixed seed:
about half inside the target box, the rest anywhere on the 1024x768 screen; box rows answer with the
target box, shifted for about half):

* ``floor``         : ``json.loads`` of every metadata and predictions line and the official rule
                      written as plain arithmetic (point inside the box, edges inclusive; box coverage
                      >= 0.9 and precision >= 0.7): the least a scorer of these rows can do. PointerBench's
                      own ``eval.py`` is not on this machine; this stands in for it (it reads the same
                      files and applies the same rule, with no checks).
* ``load``          : ``pointfail.inputs.benchmarks.load`` of the subset (validation, containment of every
                      file name, image existence, targets and their hashes)
* ``score-predictions`` : the whole command (``pointfail.cli.main``): load, read the predictions,
                      score, write the rows and the summary
* ``contained (per row)`` / ``Containment (per folder)``: the containment check alone for every
                      row's file name, by :func:`pointfail.inputs.benchmarks._common.contained` (every name
                      resolved, component by component) and by one
                      :class:`~pointfail.inputs.benchmarks._common.Containment` (each folder resolved and
                      listed once), the two side by side.

Usage: ``python bench/score_predictions.py [--data DIR] [--repeat 5] [--quick]``. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import io
import json
import random
import statistics
import sys
import tempfile
from contextlib import redirect_stdout
from pathlib import Path

from _rounds import add_quick, load_line, ratio_line, rounds

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "data" / "pointerbench"
SUBSETS = ("pointerbench-sheets", "pointerbench-text", "pointerbench-pro")


def _predictions(meta: Path, out: Path, rng: random.Random, limit: int | None) -> int:
    rows = [json.loads(line) for line in meta.read_text(encoding="utf-8").splitlines() if line.strip()][:limit]
    with open(out, "w", encoding="utf-8") as f:
        for row in rows:
            x0, y0, x1, y1 = row["bbox"]
            if row["answer_type"] == "bbox":
                d = rng.choice([0, 0, 8, 40])
                f.write(json.dumps({"id": row["id"], "bbox": [x0 + d, y0, x1 + d, y1]}) + "\n")
            elif rng.random() < 0.5:
                f.write(json.dumps({"id": row["id"], "point": [(x0 + x1) / 2, (y0 + y1) / 2]}) + "\n")
            else:
                f.write(json.dumps({"id": row["id"], "point": [rng.uniform(0, 1024), rng.uniform(0, 768)]}) + "\n")
    return len(rows)


def _floor(meta: Path, preds: Path) -> int:
    """The official rule over the rows, with nothing checked: the floor."""
    pred = {}
    with open(preds, encoding="utf-8") as f:
        for line in f:
            o = json.loads(line)
            pred[o["id"]] = o
    hits = 0
    with open(meta, encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            p = pred.get(row["id"])
            if p is None:
                continue
            x0, y0, x1, y1 = row["bbox"]
            if row["answer_type"] == "point":
                x, y = p["point"]
                hits += x0 <= x <= x1 and y0 <= y <= y1
            else:
                a0, b0, a1, b1 = p["bbox"]
                iw, ih = max(0.0, min(a1, x1) - max(a0, x0)), max(0.0, min(b1, y1) - max(b0, y0))
                inter, area, parea = iw * ih, (x1 - x0) * (y1 - y0), (a1 - a0) * (b1 - b0)
                hits += area > 0 and parea > 0 and inter / area >= 0.9 and inter / parea >= 0.7
    return hits


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the folder holding the three subsets")
    ap.add_argument("--repeat", type=int, default=5)
    add_quick(ap)
    args = ap.parse_args()
    limit = None
    if args.quick:
        args.repeat, limit = 2, 20
    from pointfail.inputs.benchmarks import load
    from pointfail.inputs.benchmarks._common import Containment, contained
    from pointfail.cli import main as cli_main

    print(load_line())
    with tempfile.TemporaryDirectory(prefix="pointfail-bench-sp-") as tmp:
        root = Path(tmp)
        rng = random.Random(0)
        cases = []
        n = 0
        for name in SUBSETS:
            src = args.data / name
            sub = root / name
            (sub / "data" / "test").mkdir(parents=True)
            lines = (src / "data" / "test" / "metadata.jsonl").read_text(encoding="utf-8").splitlines()[:limit]
            meta = sub / "data" / "test" / "metadata.jsonl"
            meta.write_text("".join(x + "\n" for x in lines), encoding="utf-8")
            preds = root / f"{name}.preds.jsonl"
            n += _predictions(meta, preds, rng, limit)
            names = [json.loads(x)["file_name"] for x in lines if x.strip()]
            cases.append((name, sub, meta, preds, names))

        def floor() -> None:
            for _, _, meta, preds, _ in cases:
                _floor(meta, preds)

        def load_all() -> None:
            for name, sub, *_ in cases:
                load(name, sub)

        def command() -> None:
            for name, sub, _, preds, _ in cases:
                with redirect_stdout(io.StringIO()):
                    rc = cli_main(["score-predictions", "--benchmark", name, "--data", str(sub), "--predictions",
                                   str(preds), "--frame", "pixels", "--out", str(root / f"{name}.rows.jsonl")])
                if rc != 0:
                    raise SystemExit(f"score-predictions exited {rc} on {name}")

        def per_row() -> None:
            for _, sub, _, _, names in cases:
                test = sub / "data" / "test"
                for fn in names:
                    contained(test, fn)

        def per_folder() -> None:
            for _, sub, _, _, names in cases:
                test = sub / "data" / "test"
                c = Containment()
                for fn in names:
                    c.contained(test, fn)

        steps = {"floor": floor, "load": load_all, "score-predictions": command,
                 "contained (per row)": per_row, "Containment (per folder)": per_folder}
        command()  # warm-up: imports
        cpu, wall = rounds(steps, args.repeat)
    print(f"{n} PointerBench rows ({', '.join(SUBSETS)}), {args.repeat} interleaved rounds; CPU s (median)")
    for k in steps:
        print(f"  {k:<28}{statistics.median(cpu[k]):>8.3f}{statistics.median(wall[k]):>8.3f} wall")
    print(ratio_line("score-predictions / floor", cpu["score-predictions"], cpu["floor"], goal=1.5))
    print(ratio_line("load / floor", cpu["load"], cpu["floor"]))
    print(ratio_line("containment per row / per folder", cpu["contained (per row)"], cpu["Containment (per folder)"]))
    print(load_line())


if __name__ == "__main__":
    sys.exit(main())
