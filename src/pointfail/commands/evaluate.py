"""``pointfail evaluate``: from a file of a model's own replies to its failure modes (see DESCRIPTION)."""

from __future__ import annotations

import argparse
import sys

from pointfail.commands._help import add_command
from pointfail.commands.judge import FAILURE_MODES_TEXT, add_ollama_args, add_openai_args

SHOW_PROBLEMS = 10
"""Problems printed one per line; all of them are in <out>/evaluation.json."""

DESCRIPTION = f"""\
Evaluate a model in one command, from a file of its replies (--replies) or through the
server you already serve it with (--base-url and --model: any OpenAI-compatible
chat-completions server, e.g. vLLM, SGLang, Ollama, llama.cpp, transformers serve). Each
reply is parsed in the model family's own coordinate convention, scored against the
benchmark's target, every miss is sorted into a failure mode, and the tables, the
report and the failure browser are written into the output folder.

The replies file is JSONL (or one JSON list), one object per sample:
  {{"id": "pfs_0007", "text": "<point x=\\"41.5\\" y=\\"62.0\\">cell</point>"}}
"text" is the model's reply exactly as it answered (parsed with --family). Optional:
"model_input_size": [W, H], the resized image the model saw (needed by families that
answer in its pixels: qwen2_5_vl, ui_tars_1_5, gta1, opencua), and "prompt", the text
actually sent. Replies that are already coordinates use PointerBench's keys (point,
pred, coordinate, prediction: [x, y]; bbox, box: [x0, y0, x1, y1]; x and y; x0 .. y1)
and need --frame: pixels (absolute pixels of the image, PointerBench's own format) or
unit (fractions 0 to 1). The frame is never guessed from the size of the numbers.

Nothing in the file is dropped silently: lines that are not JSON, objects without an
id, repeated ids (the last one counts, as in PointerBench's scorer), ids the benchmark
does not have, and samples with no reply (recorded as errors) are counted and listed.
With --only-predicted only the ids in the file are scored, and every table says so.

Misses are labeled by the oracle judge where the benchmark has scene graphs (the
generated suites: pointfail generate), otherwise by a model judge (--judge ollama, or
--judge openai --base-url URL --judge-model NAME for any OpenAI-compatible server), or
left pending.

{FAILURE_MODES_TEXT}

A served model (--base-url URL --model NAME): the server is checked first (GET
/v1/models must list NAME; a refused connection or a silent host stops it in
seconds), every sample is asked (--concurrency requests at once, --limit N for the
first N), and the frame each reply is read in is the one the server used: for
families that answer in pixels of the resized image, the family's published pixel
budget is sent (--pixel-budget overrides) and checked against the server's own
usage.prompt_tokens; a server that resized the image differently is recorded with the
size it used when its token count settles it, else the run stops naming the server's
budget option. Responses are kept in <out>/work/; a rerun asks only what is missing,
and the samples that ended in an error again when the model entry or the server
changed, or with --retry-errors. With a served model, --judge openai takes
--judge-base-url and --judge-api-key-env.

Run it again on the same --out to continue: unchanged replies keep their verdicts,
only new or changed ones are scored and judged. Writes <out>/<model>/<benchmark>.jsonl
(records), <out>/tables/, <out>/report/ (needs the report extra:
pip install 'pointfail[report]'; or --no-report), <out>/view/index.html (the failure
browser) and <out>/evaluation.json (counts and every problem). Exit 0 when done; 2
when the input cannot be used (nothing is written); 3 when the server failed its
check or became unavailable (nothing scored; rerun), or a judge left misses without
a verdict (rerun to fill them in); 4 when samples of a served model ended in an
error (their reasons are listed; rerun with --retry-errors once fixed)."""

EXAMPLE = ("pointfail evaluate --benchmark suite --data suites/sheets --replies replies.jsonl "
           "--family molmo --out results/sheets\n"
           "  pointfail evaluate --base-url http://127.0.0.1:8000/v1 --model Qwen/Qwen2.5-VL-3B-Instruct "
           "--family qwen2_5_vl --benchmark suite --data suites/sheets --out results/qwen-sheets")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``pointfail evaluate``."""
    from pathlib import Path

    p = add_command(subparsers, "evaluate",
                    description=DESCRIPTION, example=EXAMPLE)
    p.add_argument("--benchmark", required=True,
                   help="the benchmark's loader: any declared benchmark (one file in "
                   "pointfail/inputs/benchmarks/; `pointfail data sources` lists the downloadable ones), or "
                   "suite (a generated suite)")
    p.add_argument("--data", required=True, type=Path, metavar="DIR", help="the benchmark's directory")
    p.add_argument("--replies", type=Path, metavar="FILE",
                   help="the replies file (JSONL or JSON list); without it, --base-url and --model ask a served model")
    p.add_argument("--out", required=True, type=Path, metavar="DIR",
                   help="output folder (created; rerun with the same folder to continue)")
    p.add_argument("--family", help="the model family the text replies are written in, any spelling "
                   "(qwen2.5-vl, Molmo, ...; list: pointfail families)")
    from pointfail.inputs.replies import FRAMES

    p.add_argument("--frame", choices=sorted(FRAMES),
                   help="what coordinate replies are: pixels of the image, or unit fractions (0 to 1)")
    p.add_argument("--model", help="with --base-url: the model's name as the server lists it in /v1/models; with "
                   "--replies: the model's name in the records (default: the replies file's name)")
    p.add_argument("--model-name", help="with --base-url: the model's name in the records (default: from --model)")
    p.add_argument("--limit", type=int, metavar="N", help="with --base-url: only the benchmark's first N samples")
    p.add_argument("--pixel-budget", metavar="BUDGET", default="family",
                   help="with --base-url, for families answering in pixels of the resized image: family (the "
                   "family's published smart_resize budget, default), max_pixels as an integer, or none")
    p.add_argument("--max-new-tokens", type=int, default=128, metavar="N", help="with --base-url: reply cap in tokens")
    p.add_argument("--retry-errors", action="store_true",
                   help="with --base-url: ask again the samples whose last response was an error")
    p.add_argument("--only-predicted", action="store_true",
                   help="score only the samples with a reply in the file (every table note says so)")
    p.add_argument("--judge", choices=("auto", "oracle", "ollama", "openai", "none"), default="auto",
                   help="who labels the misses; auto: the oracle where the benchmark has scene graphs, else none")
    p.add_argument("--tolerance-px", type=float,
                   help="oracle: a miss within this many pixels of the target is off_by_pixels (default: 8)")
    p.add_argument("--model-input-size", choices=("recorded", "family"), default="recorded",
                   help="resized-pixel families: use each reply's model_input_size, or the family's published "
                   "resize setting")
    p.add_argument("--no-report", action="store_true", help="do not draw the report figures")
    p.add_argument("--no-view", action="store_true", help="do not write the failure browser")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument("--concurrency", type=int, default=4,
                   help="requests in flight: the served model's (with --base-url) and the model judge's")
    add_ollama_args(p, model_flag="--judge-model")
    add_openai_args(p)
    p.add_argument("--judge-base-url", help="with --base-url and --judge openai: the judge server's API root")
    p.add_argument("--judge-api-key-env", help="with --base-url and --judge openai: variable holding the judge's key")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Evaluate and print the summary; returns the exit status described in the help."""
    from pointfail.inputs.benchmarks import BenchmarkError
    from pointfail.running.evaluate import EvaluateError, ServedIncomplete, evaluate_replies, evaluate_served
    from pointfail.running.judges.stage import StageBusy
    from pointfail.records import RecordError
    from pointfail.inputs.replies import RepliesError

    served = args.replies is None
    if served and not (args.base_url and args.model and args.family):
        print("pointfail evaluate: pass --replies FILE, or --base-url URL --model NAME --family F for a served model",
              file=sys.stderr)
        return 2
    judge_url = (args.judge_base_url or None) if served else args.base_url
    judge_key = args.judge_api_key_env if served else args.api_key_env
    client = None
    if args.judge in ("ollama", "openai"):
        from pointfail.commands.judge import judge_reachable, make_ollama, make_openai
        from pointfail.extras import require

        require("judge", f"--judge {args.judge}")
        if args.concurrency < 1:
            print("pointfail evaluate: --concurrency must be >= 1", file=sys.stderr)
            return 2
        if args.judge == "openai" and not (judge_url and args.judge_model):
            flag = "--judge-base-url" if served else "--base-url"
            print(f"pointfail evaluate: --judge openai needs {flag} and --judge-model", file=sys.stderr)
            return 2
        problem = judge_reachable(judge_url if args.judge == "openai" else args.host)
        if problem:
            print(f"pointfail evaluate: {problem}", file=sys.stderr)
            return 3
        if args.judge == "ollama":
            client = make_ollama(args, args.judge_model, args.concurrency)
        else:
            client = make_openai(args, str(judge_url), args.judge_model, judge_key, args.concurrency)
    progress = not args.no_progress and sys.stderr.isatty()
    try:
        if served:
            budget = args.pixel_budget
            if budget not in ("family", "none"):
                if not budget.isdigit():
                    print(f"pointfail evaluate: --pixel-budget must be family, none or an integer (max_pixels), "
                          f"got {budget!r}", file=sys.stderr)
                    return 2
                budget = int(budget)
            res = evaluate_served(
                benchmark=args.benchmark, data_dir=args.data, base_url=args.base_url, served_model=args.model,
                family=args.family, out_dir=args.out, model=args.model_name, limit=args.limit,
                concurrency=args.concurrency, api_key_env=args.api_key_env, pixel_budget=budget,
                max_new_tokens=args.max_new_tokens, retry_errors=args.retry_errors, judge=args.judge,
                judge_client=client, tolerance_px=args.tolerance_px, report=not args.no_report,
                view=not args.no_view, progress=progress, log=lambda m: print(m, flush=True))
        else:
            res = evaluate_replies(
                benchmark=args.benchmark, data_dir=args.data, replies=args.replies, out_dir=args.out,
                family=args.family, frame=args.frame, model=args.model, only_predicted=args.only_predicted,
                judge=args.judge, judge_client=client, tolerance_px=args.tolerance_px,
                model_input_size=args.model_input_size, report=not args.no_report, view=not args.no_view,
                progress=progress, log=lambda m: print(m, flush=True),
            )
    except ServedIncomplete as e:
        print(f"pointfail evaluate: {e}", file=sys.stderr)
        return 3
    except (EvaluateError, BenchmarkError, RepliesError) as e:
        print(f"pointfail evaluate: {e}", file=sys.stderr)
        return 2
    except (RecordError, StageBusy) as e:
        print(f"pointfail evaluate: {e}", file=sys.stderr)
        return 1
    except OSError as e:  # disk full, read-only folder: one line naming the file; writes are atomic
        from pointfail.safeio import os_error_line

        print(f"pointfail evaluate: {os_error_line(e)}", file=sys.stderr)
        return 1
    _print(res)
    if served and res.errors:
        print(f"pointfail evaluate: {res.errors} of {res.records} samples ended in an error (listed above; all in "
              f"{res.out_dir / 'evaluation.json'}); fix the cause and rerun with --retry-errors", file=sys.stderr)
        return 4
    return 3 if res.judge is not None and res.pending else 0


def _print(res) -> None:
    """The run's summary (:func:`pointfail.commands._console.study_summary`): the hit rate, the failure
    profile, the replies that could not be used as given, the judge, and where every file is."""
    from pointfail.commands._console import study_summary

    r = res.replies
    how = f"family {res.family}" if res.family else ""
    if res.frame:
        how += (", " if how else "") + f"coordinates in the {res.frame} frame"
    details = []
    skipped = {k: v for k, v in r.items() if v and k not in ("entries", "replies", "with_text",
                                                              "with_coordinates_only")}
    line = f"{res.replies_file}: {r['entries']} entries, {r['replies'] - r.get('unknown_id', 0)} used"
    if skipped:
        line += "; " + ", ".join(f"{k} {v}" for k, v in skipped.items())
    details.append(line)
    details += [f"  {p}" for p in res.problems[:SHOW_PROBLEMS]]
    more = max(0, len(res.problems) - SHOW_PROBLEMS) + res.problems_left_off
    if more:
        details.append(f"  ... {more} more (counted by kind above; the first listed in {res.out_dir / 'evaluation.json'})")
    if res.judge_report:
        from pointfail.running.evaluate import judge_line

        details.append(judge_line(res.judge_report))
    if res.judge_note:
        details.append(f"note: {res.judge_note}")
    files = [("records", res.records_path), ("tables", f"{res.tables_dir} (every table in full, with its notes)")]
    if res.report:
        files.append(("report", res.report[0]))
    if res.view:
        files.append(("browser", res.view))
    files.append(("problems", res.out_dir / "evaluation.json"))
    print()
    print(f"{res.model} on {res.benchmark} ({how}): {res.records} samples scored"
          + (f" of {res.benchmark_samples} (--only-predicted)" if res.scope == "only_predicted" else ""))
    print()
    print(study_summary(res.tables_dir, details=details, files=files))
