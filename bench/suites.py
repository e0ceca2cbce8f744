"""Time to generate the synthetic suites (issue 3 target: 200 sheets and 200 text samples in under two
minutes each on the development machine).

Usage: ``python bench/suites.py [--n 200] [--seed 1]``. Generates each suite into a temporary
directory, side by side in one run, and prints wall time, samples per second, the share of the time
spent encoding PNGs (measured by re-encoding the written images), the output size, and each time as
a ratio of the 120-second budget. Nothing is asserted: timings belong here, not in tests.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from PIL import Image

from pointfail.suites import sheets, text
from pointfail.suites.writer import png_bytes

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
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as td:
        for name, mod in (("sheets", sheets), ("text", text)):
            out = Path(td) / name
            t0 = time.perf_counter()
            mod.generate(out, n=args.n, seed=args.seed)
            wall = time.perf_counter() - t0
            size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
            sg = sum(p.stat().st_size for p in (out / "data/test/scene_graphs").glob("*.json"))
            rows.append((name, wall, _png_time(out), size, sg))
    print(f"suite generation, n={args.n}, seed={args.seed}")
    print(f"{'suite':<8}{'wall s':>9}{'samples/s':>11}{'png share':>11}{'MiB':>8}{'scene MiB':>11}{'/ budget':>10}")
    for name, wall, png, size, sg in rows:
        print(f"{name:<8}{wall:>9.1f}{args.n / wall:>11.1f}{png / wall:>11.2f}{size / 2**20:>8.1f}"
              f"{sg / 2**20:>11.1f}{wall / BUDGET_S:>10.2f}")
    (a, wa, *_), (b, wb, *_) = rows
    print(f"ratio {b}/{a} wall time: {wb / wa:.2f}")


if __name__ == "__main__":
    main()
