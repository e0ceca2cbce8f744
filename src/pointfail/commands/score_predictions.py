"""``pointfail score-predictions``: score a PointerBench predictions file with the official rules
(see DESCRIPTION)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from pointfail.commands._help import add_command

CHOICES = ("pointerbench-sheets", "pointerbench-text", "pointerbench-pro", "suite")
SHOW_PROBLEMS = 10
"""Problems printed one per line; all of them are in the summary JSON."""

DESCRIPTION = """\
Score a predictions file with PointerBench's official rules: a point row is correct
when the first point is inside the target box (edges inclusive); a box row when the
box covers at least 90% of the target and at least 70% of it is target.

The predictions file is JSONL (or one JSON list) of objects with an "id" and
coordinates under PointerBench's keys: point, pred, coordinate or prediction ([x, y]),
bbox or box ([x0, y0, x1, y1]), flat x and y, or x0, y0, x1, y1. --frame says what the
numbers are; it is never guessed from their size:
  pixels  absolute pixels of the original image (PointerBench's own format)
  unit    fractions of the image's width and height (0 to 1)

Every object is accounted for: ids not in the benchmark, repeated ids (the last one
counts, as in PointerBench's scorer), objects holding only a raw reply text (score
those with pointfail evaluate --family F), lines that are not JSON: all are counted
and listed. A row with no prediction counts as wrong; with --only-predicted only the
ids in the file are scored, and the output says so.

DIR is the subset directory (it holds data/test/metadata.jsonl) or its parent. Writes
one JSON line per scored row to --out (id, answer_type, hit, missing; box rows also
box_class, iou, coverage, precision; box_class no_prediction when the id has no
prediction, malformed when its prediction holds no usable box) and a summary JSON
broken down by every metadata axis of the rows. Exit 0 when scored; 2 when the
benchmark or the file cannot be read."""

EXAMPLE = ("pointfail score-predictions --benchmark pointerbench-text --data ../shared/data/pointerbench "
           "--predictions preds.jsonl --frame pixels --out rows.jsonl")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``score-predictions`` subcommand."""
    from pathlib import Path

    from pointfail.inputs.replies import FRAMES

    p = add_command(subparsers, "score-predictions",
                    description=DESCRIPTION, example=EXAMPLE)
    p.add_argument("--benchmark", required=True, choices=CHOICES, help="which benchmark the ids belong to")
    p.add_argument("--data", required=True, type=Path, metavar="DIR", help="subset directory or its parent")
    p.add_argument("--predictions", required=True, type=Path, metavar="FILE",
                   help="JSONL or JSON list of {id, point | bbox | ...}")
    p.add_argument("--frame", required=True, choices=sorted(FRAMES),
                   help="what the coordinates are: pixels of the original image, or unit fractions")
    p.add_argument("--only-predicted", action="store_true",
                   help="score only the ids in the predictions file (the output says so)")
    p.add_argument("--out", required=True, type=Path, metavar="FILE", help="per-row results (JSONL)")
    p.add_argument("--summary", type=Path, default=None, metavar="FILE",
                   help="summary JSON (default: <out>.summary.json)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Load, score, write; returns the exit code."""
    import json

    from pointfail.inputs.benchmarks import AXES, BenchmarkError, load
    from pointfail.official import score_pointerbench_predictions
    from pointfail.records import canonical_json
    from pointfail.inputs.replies import FRAMES, RepliesError, ReplyProblem, read_replies

    try:
        samples = load(args.benchmark, args.data)
        replies = read_replies(args.predictions)
    except (BenchmarkError, RepliesError) as e:
        print(f"pointfail score-predictions: {e}", file=sys.stderr)
        return 2
    known = {s.sample_id for s in samples}
    problems = list(replies.problems) + replies.unknown(known)
    text_only = [ReplyProblem(r.where, "raw_text", "a raw reply text and no coordinates: wrong by the official "
                              "rule; parse it with pointfail evaluate --family F", r.sample_id)
                 for r in replies.replies.values() if not r.coordinates and r.sample_id in known]
    problems += text_only
    n_benchmark = len(samples)
    if args.only_predicted:
        samples = [s for s in samples if s.sample_id in replies.replies]
    preds = {sid: r.obj for sid, r in replies.replies.items()}
    rows, summary = score_pointerbench_predictions(samples, preds, AXES[args.benchmark], frame=args.frame)
    summary["benchmark"] = samples[0].benchmark if samples else args.benchmark
    summary["benchmark_samples"] = n_benchmark
    summary["scope"] = "only_predicted" if args.only_predicted else "all"
    counts = replies.counts()
    counts["unknown_id"] = sum(1 for p in problems if p.kind == "unknown_id")
    counts["raw_text"] = len(text_only)
    summary["predictions"] = dict(sorted(counts.items()))
    summary["problems"] = [p.to_dict() for p in sorted(problems, key=ReplyProblem.place)]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", encoding="utf-8", newline="\n") as f:
        for r in rows:
            f.write(canonical_json(r))
    summary_path = args.summary or args.out.with_name(args.out.name + ".summary.json")
    summary_path.write_text(json.dumps(summary, indent=2, sort_keys=True, ensure_ascii=False) + "\n",
                            encoding="utf-8")
    scope = (f"over the {summary['n']} samples with a prediction (--only-predicted; the benchmark has "
             f"{n_benchmark})" if args.only_predicted else f"over all {summary['n']} samples")
    print(f"{summary['benchmark']}: {summary['hits']}/{summary['n']} hits, accuracy {summary['accuracy'] * 100:.2f}% "
          f"{scope}; {summary['missing_predictions']} without a usable prediction, counted wrong")
    print(f"coordinates read as {FRAMES[args.frame]} (--frame {args.frame})")
    if args.frame == "pixels" and _all_fractions(preds.values()):
        print("note: every coordinate in the file is between 0 and 1; if they are fractions of the image, "
              "score them with --frame unit")
    used = sum(1 for sid in replies.replies if sid in known)
    notable = {k: v for k, v in sorted(counts.items())
               if v and k not in ("entries", "replies", "with_text", "with_coordinates_only")}
    line = f"{args.predictions}: {replies.entries} entries, {used} with a benchmark id"
    if notable:
        line += "; not scored as given: " + ", ".join(f"{k} {v}" for k, v in notable.items())
    print(line)
    _print_details(sorted(problems, key=ReplyProblem.place), summary, summary_path)
    print(f"\nrows -> {args.out}\nsummary -> {summary_path}")
    return 0


def _print_details(problems: list[Any], summary: dict[str, Any], summary_path: Path) -> None:
    """The first problems (in file order), the box classes and every per-axis breakdown."""
    from tabulate import tabulate

    for p in problems[:SHOW_PROBLEMS]:
        print(f"  {p}")
    if len(problems) > SHOW_PROBLEMS:
        print(f"  ... {len(problems) - SHOW_PROBLEMS} more in {summary_path}")
    if summary["box_classes"]:
        print("box rows: " + ", ".join(f"{k} {v}" for k, v in summary["box_classes"].items()))
    for key in sorted(k for k in summary if k.startswith("by_")):
        table = [(k, v["n"], v["hits"], f"{v['acc'] * 100:.2f}") for k, v in summary[key].items()]
        if len(table) > 30:
            print(f"\n{key}: {len(table)} values (see {summary_path})")
            continue
        print(f"\n{key}:")
        print(tabulate(table, headers=["value", "n", "hits", "acc %"], disable_numparse=True))


def _all_fractions(objs) -> bool:
    """Whether the file has coordinates and every one lies in [0, 1] (a diagnostic for the pixels frame)."""
    from pointfail.official import prediction_box, prediction_point

    values: list[float] = []
    for o in objs:
        pt, box = prediction_point(o), prediction_box({k: v for k, v in o.items() if k not in ("text", "raw", "answer")})
        values.extend(pt or ())
        values.extend(box or ())
    return bool(values) and all(0.0 <= v <= 1.0 for v in values)
