"""Benchmark: replies parsed and scored per second, against box targets and against masks, and the
ratio of scoring time to mask-decoding time alone (issue 2; target <= 1.2: decoding is the floor).

Everything is measured side by side in one run, interleaved over several rounds, as CPU time of
the measuring thread, and the median round is reported, so a busy machine slows every column alike. Nothing here is asserted; it prints.

    python bench/score.py [--masks 120] [--rounds 5] [--seed 0] [--quick]

Columns:
  decode only        load_mask on each mask file, cache cleared first (cold decode: read, sha256,
                     PNG decode, binarize)
  score vs masks     score_prediction(family, reply, image_size, mask_path) for one reply per mask,
                     cache cleared first (parse + decode + lookup + distance for misses); timed
                     item by item alternately with "decode only" on the same mask
  score vs masks,    the same replies again with the masks already decoded (a benchmark's repeated
  warm cache         masks: every model scored against the same masks)
  score vs boxes     score_prediction against a pixel box target (no file I/O)
  parse only         Family.parse of each reply (no target): the text side of the per-reply
                     overhead, warm
  EDT per mask       scipy.ndimage.distance_transform_edt over each whole mask: the alternative
                     way to get distances that geometry.py does not use (shown for the record)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

from _rounds import add_quick, load_line, ratio_line

from pointfail import geometry
from pointfail.scoring import score_prediction

SIZES = [(640, 480), (1024, 768), (800, 600)]


def make_masks(root: Path, n: int, rng: np.random.Generator) -> list[tuple[Path, tuple[int, int], np.ndarray]]:
    """n distinct masks (ellipses of random size and place), written as 8-bit 0/255 PNGs."""
    out = []
    for i in range(n):
        w, h = SIZES[i % len(SIZES)]
        yy, xx = np.mgrid[:h, :w]
        cx, cy = rng.uniform(0.2 * w, 0.8 * w), rng.uniform(0.2 * h, 0.8 * h)
        rx, ry = rng.uniform(0.03 * w, 0.2 * w), rng.uniform(0.03 * h, 0.2 * h)
        m = ((xx - cx) / rx) ** 2 + ((yy - cy) / ry) ** 2 <= 1.0
        p = root / f"mask_{i:04d}.png"
        Image.fromarray((m * 255).astype(np.uint8), mode="L").save(p)
        out.append((p, (w, h), m))
    return out


def make_replies(masks, rng: np.random.Generator) -> list[str]:
    """One Molmo-style reply per mask: about half inside the mask (hits), half anywhere (mostly
    misses, which need a distance), some with two points, a few with no point."""
    replies = []
    for i, (_, (w, h), m) in enumerate(masks):
        if i % 10 == 9:
            replies.append("I cannot find it in this image.")
            continue
        if i % 2 == 0:
            ys, xs = np.nonzero(m)
            k = rng.integers(len(xs))
            x, y = (xs[k] + 0.5) / w * 100, (ys[k] + 0.5) / h * 100
        else:
            x, y = rng.uniform(0, 100), rng.uniform(0, 100)
        if i % 3 == 0:
            replies.append(f'<points x1="{x:.1f}" y1="{y:.1f}" x2="50.0" y2="50.0" alt="it">it</points>')
        else:
            replies.append(f'<point x="{x:.1f}" y="{y:.1f}" alt="it">it</point>')
    return replies


def timed(fn) -> float:
    """CPU seconds of this thread spent in ``fn()`` (``time.thread_time``): the work is
    single-threaded, and on a shared machine CPU time is not inflated by other processes the way
    wall time is."""
    t0 = time.thread_time()
    fn()
    return time.thread_time() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--masks", type=int, default=120, help="number of distinct masks / replies per round")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    add_quick(ap)
    args = ap.parse_args(argv)
    if args.quick:
        args.masks, args.rounds = 6, 2
    print(load_line())

    rng = np.random.default_rng(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        masks = make_masks(Path(tmp), args.masks, rng)
        replies = make_replies(masks, rng)
        boxes = []
        for _, _size, m in masks:
            ys, xs = np.nonzero(m)
            boxes.append([float(xs.min()), float(ys.min()), float(xs.max() + 1), float(ys.max() + 1)])
        n = len(masks)

        outcomes: dict[str, int] = {}

        def decode_one(i):
            p, size, _ = masks[i]
            geometry.load_mask(p, expected_size=size)

        def score_one(i):
            p, size, _ = masks[i]
            r = score_prediction("molmo", replies[i], image_size=size, mask_path=p)
            outcomes[r.outcome] = outcomes.get(r.outcome, 0) + 1

        def paired_cold() -> tuple[float, float]:
            """Decode-only and score-vs-mask, item by item, cache cleared before each timing and
            the order alternated, so both columns see the same machine load."""
            td = ts = 0.0
            for i in range(n):
                for which in ((0, 1) if i % 2 == 0 else (1, 0)):
                    geometry.mask_cache_clear()
                    if which == 0:
                        td += timed(lambda: decode_one(i))
                    else:
                        ts += timed(lambda: score_one(i))
            return td, ts

        def score_masks_warm():
            for (p, size, _), text in zip(masks, replies):
                score_prediction("molmo", text, image_size=size, mask_path=p)

        def score_boxes():
            for (_, size, _), text, b in zip(masks, replies, boxes):
                score_prediction("molmo", text, image_size=size, box=b)

        from pointfail.families import get_family

        molmo = get_family("molmo")

        def parse_only():
            for (_, size, _), text in zip(masks, replies):
                molmo.parse(text, size)

        def edt():
            from scipy import ndimage

            for _, _, m in masks:
                ndimage.distance_transform_edt(~m)

        paired_cold()  # warm-up: imports, family registry, allocator
        outcomes.clear()
        geometry.mask_cache_clear()
        score_masks_warm()  # fill the cache for the warm column
        columns = {"decode": [], "masks": [], "masks_warm": [], "boxes": [], "parse": [], "edt": []}
        for _ in range(args.rounds):
            td, ts = paired_cold()
            columns["decode"].append(td)
            columns["masks"].append(ts)
            score_masks_warm()  # refill (paired_cold cleared the cache)
            columns["masks_warm"].append(timed(score_masks_warm))
            columns["boxes"].append(timed(score_boxes))
            columns["parse"].append(timed(parse_only))
            columns["edt"].append(timed(edt))
        # ratio per round (same round: same machine load), then the median
        ratios = [m / d for m, d in zip(columns["masks"], columns["decode"])]
        med = {k: statistics.median(v) for k, v in columns.items()}

    print(f"pointfail bench/score.py: {n} distinct masks {sorted(set(s for _, s, _ in masks))}, "
          f"{n} molmo replies, {args.rounds} rounds (median round shown)")
    print("outcomes per round: " + ", ".join(f"{k} {v // args.rounds}" for k, v in sorted(outcomes.items())))
    rows = [
        ("decode only (cold)", med["decode"]),
        ("score vs masks (cold)", med["masks"]),
        ("score vs masks (warm cache)", med["masks_warm"]),
        ("score vs boxes", med["boxes"]),
        ("parse only", med["parse"]),
        ("scipy EDT per mask (unused)", med["edt"]),
    ]
    print(f"{'':32s} {'ms/item':>9s} {'items/s':>10s}")
    for name, t in rows:
        print(f"{name:32s} {t / n * 1e3:9.3f} {n / t:10.1f}")
    print(f"ratio score-vs-masks / decode-only: {statistics.median(ratios):.3f} "
          f"(per round: {', '.join(f'{r:.3f}' for r in ratios)})")
    print(ratio_line("score vs masks (cold) / decode only", columns["masks"], columns["decode"], goal=1.1))
    print(ratio_line("EDT / decode only (why distances use boundary pixels)", columns["edt"], columns["decode"]))
    print(load_line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
