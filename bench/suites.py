"""Time to generate the synthetic suites (issue 3 target: 200 sheets and 200 text samples in under two
minutes each on the development machine).

Usage: ``python bench/suites.py [--n 200] [--seed 1] [--rounds 1] [--quick]``. Generates each suite into a temporary
directory, side by side in one run, and prints wall time, samples per second, the share of the time
spent encoding PNGs (measured by re-encoding the written images), the output size, and each time as
a ratio of the 120-second budget. Nothing is asserted: timings belong here, not in tests.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from _rounds import add_quick, load_line, ratio_line
from PIL import Image

from pointfail.generated.suites import sheets, text
from pointfail.generated.suites.writer import png_bytes

BUDGET_S = 120.0


def _png_time(suite_dir: Path) -> float:
    t = 0.0
    for p in sorted((suite_dir / "data/test").glob("*.png")):
        im = Image.open(p).convert("RGB")
        t0 = time.perf_counter()
        png_bytes(im)
        t += time.perf_counter() - t0
    return t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=1, help="interleaved rounds (each generates both suites)")
    add_quick(ap)
    args = ap.parse_args()
    if args.quick:
        args.n, args.rounds = 3, 2
    print(load_line())
    walls: dict[str, list[float]] = {"sheets": [], "text": []}
    rows = []
    with tempfile.TemporaryDirectory() as td:
        for k in range(args.rounds):
            for name, mod in (("sheets", sheets), ("text", text)):
                out = Path(td) / f"{name}{k}"
                t0 = time.perf_counter()
                mod.generate(out, n=args.n, seed=args.seed)
                walls[name].append(time.perf_counter() - t0)
                if k == 0:
                    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
                    sg = sum(p.stat().st_size for p in (out / "data/test/scene_graphs").glob("*.json"))
                    rows.append((name, out, _png_time(out), size, sg))
    print(f"suite generation, n={args.n}, seed={args.seed}, median of {args.rounds} interleaved rounds")
    print(f"{'suite':<8}{'wall s':>9}{'samples/s':>11}{'png share':>11}{'MiB':>8}{'scene MiB':>11}{'/ budget':>10}")
    for name, _out, png, size, sg in rows:
        wall = statistics.median(walls[name])
        print(f"{name:<8}{wall:>9.1f}{args.n / wall:>11.1f}{png / wall:>11.2f}{size / 2**20:>8.1f}"
              f"{sg / 2**20:>11.1f}{wall / BUDGET_S:>10.2f}")
    print(ratio_line("text / sheets wall time", walls["text"], walls["sheets"]))
    print(load_line())


if __name__ == "__main__":
    main()
