"""``pointfail score-predictions``: score a PointerBench predictions file with the official rules.

Usage::

    pointfail score-predictions --benchmark pointerbench-text --data DIR \\
        --predictions preds.jsonl --out rows.jsonl [--summary summary.json]

``DIR`` is the subset directory (holding ``data/test/metadata.jsonl``) or its parent. The
predictions file is PointerBench's own format: JSONL or one JSON list of objects with ``id`` and
``point`` ``[x, y]`` or ``bbox`` ``[x0, y0, x1, y1]`` in absolute pixels of the 1024x768 frame (the
other keys the official scorers accept are read too; see
:func:`pointfail.benchmarks.official.prediction_point` / ``prediction_box``).

Writes one canonical JSON line per metadata row to ``--out`` (``id``, ``answer_type``, ``hit``,
``missing``, and ``box_class``/``iou``/``coverage``/``precision`` for box rows), the summary JSON
(default ``<out>.summary.json``) broken down by every metadata axis the rows carry (answer_type,
data_type, category, ui_style, language, surface, difficulty, element_type, app_category, platform,
app), and prints the headline and the breakdowns. Exit 0 on success, 2 on unreadable data or
predictions.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

CHOICES = ("pointerbench-sheets", "pointerbench-text", "pointerbench-pro", "suite")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``score-predictions`` subcommand."""
    p = subparsers.add_parser(
        "score-predictions",
        help="score a PointerBench predictions file (official rules, per-row + breakdowns)",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--benchmark", required=True, choices=CHOICES)
    p.add_argument("--data", required=True, type=Path, help="subset directory or its parent")
    p.add_argument("--predictions", required=True, type=Path, help="JSONL or JSON list of {id, point|bbox}")
    p.add_argument("--out", required=True, type=Path, help="per-row results (JSONL)")
    p.add_argument("--summary", type=Path, default=None, help="summary JSON (default: <out>.summary.json)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Load, score, write; returns the exit code."""
    import json

    from tabulate import tabulate

    from pointfail.benchmarks import AXES, BenchmarkError, load
    from pointfail.benchmarks.official import (PredictionsError, read_predictions,
                                               score_pointerbench_predictions)
    from pointfail.records import canonical_json

    try:
        samples = load(args.benchmark, args.data)
        preds, counts = read_predictions(args.predictions)
    except (BenchmarkError, PredictionsError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    rows, summary = score_pointerbench_predictions(samples, preds, AXES[args.benchmark])
    known = {s.sample_id for s in samples}
    summary["benchmark"] = samples[0].benchmark if samples else args.benchmark
    summary["predictions"] = {**counts, "unknown_ids": sum(1 for k in preds if k not in known)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", encoding="utf-8", newline="\n") as f:
        for r in rows:
            f.write(canonical_json(r))
    summary_path = args.summary or args.out.with_name(args.out.name + ".summary.json")
    summary_path.write_text(json.dumps(summary, indent=2, sort_keys=True, ensure_ascii=False) + "\n",
                            encoding="utf-8")
    print(f"{summary['benchmark']}: {summary['hits']}/{summary['n']} hits, accuracy {summary['accuracy'] * 100:.2f}%"
          f" ({summary['missing_predictions']} without a usable prediction, counted wrong)")
    if summary["box_classes"]:
        print("box rows: " + ", ".join(f"{k} {v}" for k, v in summary["box_classes"].items()))
    for key in sorted(k for k in summary if k.startswith("by_")):
        table = [(k, v["n"], v["hits"], f"{v['acc'] * 100:.2f}") for k, v in summary[key].items()]
        if len(table) > 30:
            print(f"\n{key}: {len(table)} values (see {summary_path})")
            continue
        print(f"\n{key}:")
        print(tabulate(table, headers=["value", "n", "hits", "acc %"], disable_numparse=True))
    print(f"\nrows -> {args.out}\nsummary -> {summary_path}")
    return 0
