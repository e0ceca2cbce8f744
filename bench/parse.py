"""Benchmark: parse time per KB of reply, from 1 KiB to 1 MiB, for every family (issue 12, "Bounded
parsing": every reader is linear time in the reply).

For each family, replies of 1, 4, 16, 64, 256 and 1024 KiB are built by repeating a fragment: the
family's own answer (``format_point``) and a set of adversarial fragments that open a structure some
reader looks for and never close it, or repeat what a backtracking regular expression would retry
(``x=``, ``<box>``, ``<points x1="1" ``, ``"point": [`` + spaces, ``start_box=`` + spaces, an attribute
name with no ``=``, ...). Every reply of every size is parsed side by side in the same rounds,
interleaved, as CPU time of this thread; the median round is kept.

Printed per family: the fragment whose time per KB grew most, its time per KB at 1 KiB and at 1 MiB,
and the ratio ``largest / smallest`` (time per KB at 1 MiB over time per KB at 1 KiB). A linear
parser gives a ratio near 1 or below (fixed per-reply costs make small replies dearer per KB); a
quadratic one gives about 1000. Nothing is asserted; it prints. The last line is the worst ratio
over all families.

    python bench/parse.py [--rounds 3] [--families molmo qwen2_5_vl ...] [--max-kib 1024] [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import time

from _rounds import add_quick, load_line, ratio_line

from pointfail.families import list_families

SIZES_KIB = (1, 4, 16, 64, 256, 1024)

ADVERSARIAL = (
    "x=", 'x="1" ', "x: 1, ", "x=1" + " " * 50, "<box>", "<box>[[1, 2", '<points x1="1" y1="1" ', '<point x="1" ',
    "[", "[1, ", "(", "(1, ", '"point": [' + " " * 40, '{"point_2d": [', "<loc_1>", "<loc0001>",
    "<patch_index_0001>", "start_box=" + " " * 40, "start_box='(1,", "pyautogui.click(", "<point>" + " " * 30,
    "<|box_start|>", "<|box_start|>(1,2)", "click(" + " " * 30, "Click(1, ", "<ref>", "```", "<think>",
    "</think>", "<answer>", '<points coords="1 ', "<points " + "a" * 60, "1", "1,", "-", "1e", "(1,2),",
    "[[1,2],", "[1, 2] prose [3, 4] ", "<object>", "end_box='(", "\uff11\uff12", "\u2212",
)


def replies(fam) -> dict[str, str]:
    """Fragment name -> fragment for ``fam``: its own answer, then the adversarial set."""
    mis = (1000, 1000) if fam.frame.kind == "pixels_resized" else None
    own = fam.format_point(0.25, 0.75, (1000, 1000), mis) + "\n"
    return {"own answer": own, **{repr(a): a for a in ADVERSARIAL}}


def build(fragment: str, kib: int) -> str:
    n = kib * 1024
    return (fragment * (n // len(fragment) + 1))[:n]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--families", nargs="*", default=None)
    ap.add_argument("--max-kib", type=int, default=1024)
    add_quick(ap)
    args = ap.parse_args()
    if args.quick:
        args.rounds, args.families, args.max_kib = 2, ["molmo"], 4
    print(load_line())
    sizes = [s for s in SIZES_KIB if s <= args.max_kib]
    fams = [f for f in list_families() if not args.families or f.name in args.families]
    rows = []
    worst_overall = (0.0, "", "")
    worst_rounds: tuple[list[float], list[float]] = ([], [])
    for fam in fams:
        mis = (1000, 1000) if fam.frame.kind == "pixels_resized" else None
        texts = {(name, kib): build(frag, kib) for name, frag in replies(fam).items() for kib in sizes}
        times: dict[tuple[str, int], list[float]] = {k: [] for k in texts}
        for _ in range(args.rounds):
            for key, text in texts.items():
                reps = max(1, 64 // key[1])
                t0 = time.thread_time()
                for _ in range(reps):
                    fam.parse(text, (1000, 1000), mis)
                times[key].append((time.thread_time() - t0) / reps)
        per_kb = {k: statistics.median(v) / k[1] for k, v in times.items()}
        worst = max(replies(fam), key=lambda name: per_kb[(name, sizes[-1])] / per_kb[(name, sizes[0])])
        small, large = per_kb[(worst, sizes[0])], per_kb[(worst, sizes[-1])]
        ratio = large / small
        total_large = sum(statistics.median(times[(n, sizes[-1])]) for n in replies(fam))
        rows.append((fam.name, worst, small * 1e6, large * 1e6, ratio, total_large))
        if ratio > worst_overall[0]:
            worst_overall = (ratio, fam.name, worst)
            worst_rounds = ([t / sizes[-1] for t in times[(worst, sizes[-1])]], [t / sizes[0] for t in times[(worst, sizes[0])]])
    print(f"parse time per KB, {sizes[0]} KiB -> {sizes[-1]} KiB replies, median of {args.rounds} rounds "
          f"({len(ADVERSARIAL) + 1} reply kinds per family)")
    print(f"{'family':13s} {'worst reply kind':30s} {'us/KB @1KiB':>12s} {'us/KB @max':>12s} {'ratio':>7s} "
          f"{'s, all kinds @max':>18s}")
    for name, worst, small, large, ratio, total in rows:
        print(f"{name:13s} {worst[:30]:30s} {small:12.2f} {large:12.2f} {ratio:7.2f} {total:18.2f}")
    print(f"worst ratio (largest / smallest time per KB): {worst_overall[0]:.2f} ({worst_overall[1]}, "
          f"{worst_overall[2]})")
    print(ratio_line(f"time per KB, largest / smallest reply ({worst_overall[1]}, {worst_overall[2]})", *worst_rounds))
    judge(args.rounds, quick=args.quick)
    print(load_line())


JUDGE_KINDS = ("hallucinated ", "not hallucinated, ", "no no no hallucinated ", "'", "x'y ", "off by pixels. ")


def judge(rounds: int, *, quick: bool = False) -> None:
    """The judge's label reader over replies of 256 B to 4 KiB (its cap), and 1 MiB (read from its
    first 4 KiB): time per KB, and the ratio of the 4 KiB reply's to the 256 B reply's."""
    from pointfail.judge.protocol import read_label

    sizes = (256, 1024, 4096, 1 << 20)
    texts = {(k, n): (k * (n // len(k) + 1))[:n] + " hallucinated" for k in JUDGE_KINDS for n in sizes}
    times: dict[tuple[str, int], list[float]] = {key: [] for key in texts}
    for _ in range(rounds):
        for key, text in texts.items():
            reps = 2 if quick else 50
            t0 = time.thread_time()
            for _ in range(reps):
                read_label(text)
            times[key].append((time.thread_time() - t0) / reps)
    print("\njudge read_label: us per KB at 256 B, 4 KiB (the cap) and for a 1 MiB reply (us per reply)")
    worst = 0.0
    for k in JUDGE_KINDS:
        per_kb = {n: statistics.median(times[(k, n)]) / (n / 1024) for n in sizes[:3]}
        ratio = per_kb[4096] / per_kb[256]
        worst = max(worst, ratio)
        big = statistics.median(times[(k, 1 << 20)]) * 1e6
        print(f"  {k!r:28s} {per_kb[256] * 1e6:9.2f} {per_kb[4096] * 1e6:9.2f}   ratio {ratio:5.2f}   1 MiB: {big:8.1f} us")
    print(f"judge worst ratio (4 KiB / 256 B time per KB): {worst:.2f}")


if __name__ == "__main__":
    main()
