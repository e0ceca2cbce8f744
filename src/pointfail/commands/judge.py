"""``pointfail judge``, ``pointfail judge-one`` and ``pointfail judge-agreement`` (stage 2 of the study,
see :mod:`pointfail.judge`)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Optional


def _add_ollama_args(p: argparse.ArgumentParser) -> None:
    from pointfail.judge.client import DEFAULT_OPTIONS

    p.add_argument("--host", help="Ollama server URL (default: $OLLAMA_HOST, else http://127.0.0.1:11434)")
    p.add_argument("--model", help="judge model tag (default: study.toml [judge] ollama_model, else gemma4:31b)")
    p.add_argument("--seed", type=int, default=DEFAULT_OPTIONS["seed"], help="generation seed (attempt k uses seed+k-1)")
    p.add_argument("--num-ctx", type=int, default=DEFAULT_OPTIONS["num_ctx"], help="context size in tokens")
    p.add_argument("--num-predict", type=int, default=DEFAULT_OPTIONS["num_predict"], help="output cap in tokens")
    p.add_argument("--timeout", type=float, default=300.0, help="HTTP timeout per request, seconds")
    p.add_argument("--transport-retries", type=int, default=6, help="retries of a request after a transport failure")
    p.add_argument("--no-schema", action="store_true", help="do not send the structured-output schema")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``judge``, ``judge-one`` and ``judge-agreement`` subcommands."""
    p = subparsers.add_parser(
        "judge",
        help="label every miss in a study's records with a failure mode (oracle or Ollama judge)",
        description="Run the judge stage over records/<study>: only misses, only those without a final "
        "verdict from this judge (pending or judge_unavailable are judged again), records rewritten "
        "atomically in canonical order. Exit 0 when every miss has a final verdict, 3 when some are "
        "judge_unavailable or pending (rerun to fill them in).",
    )
    p.add_argument("records_dir", help="records/<study>")
    p.add_argument("--judge", choices=["oracle", "ollama", "openai"],
                   help="default: study.toml primary_judge, else oracle; openai: any OpenAI-compatible server "
                   "(--base-url), same protocol as ollama")
    p.add_argument("--role", choices=["primary", "other"],
                   help="fill Record.judge (primary) or Record.other_judgments (other); default: primary when "
                   "this judge is the study's primary_judge (or there is no study.toml), else other")
    p.add_argument("--data-root", help="directory relative image/mask/scene-graph paths are found under")
    p.add_argument("--tolerance-px", type=float,
                   help="oracle off_by_pixels tolerance (default: study.toml [judge] oracle_tolerance_px, else 8)")
    p.add_argument("--concurrency", type=int, default=4, help="judge requests in flight")
    _add_ollama_args(p)
    p.add_argument("--base-url", help="--judge openai: the server's API root, e.g. http://127.0.0.1:8000/v1 "
                   "(default: study.toml [judge] openai_base_url)")
    p.add_argument("--api-key-env", help="--judge openai: environment variable holding the API key "
                   "(default: study.toml [judge] openai_api_key_env; none needed on loopback servers)")
    p.add_argument("--json", action="store_true", help="print the stage report as JSON")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=_judge)

    o = subparsers.add_parser(
        "judge-one",
        help="judge one miss with an Ollama judge and print JSON",
        description="Render one miss (target green, point red), ask the judge for exactly one label (up to "
        "five attempts) and print JSON with label (or null), status (labeled, unlabeled, judge_unavailable) "
        "and attempts (each raw reply with its verdict). Exit 0, or 3 when the judge was unavailable.",
    )
    o.add_argument("--image", required=True, help="the original image")
    tgt = o.add_mutually_exclusive_group(required=True)
    tgt.add_argument("--mask", help="target mask file (same size as the image)")
    tgt.add_argument("--box", nargs=4, type=float, metavar=("X0", "Y0", "X1", "Y1"),
                     help="target box in absolute pixels of the image (edges inclusive)")
    o.add_argument("--point", nargs=2, type=float, required=True, metavar=("X", "Y"),
                   help="predicted point, normalized to [0, 1], origin top-left")
    o.add_argument("--instruction", required=True, help="the instruction the model was given")
    _add_ollama_args(o)
    o.set_defaults(func=_judge_one)

    a = subparsers.add_parser(
        "judge-agreement",
        help="compare a judge's labels with the oracle's on the same misses",
        description="Confusion matrix, per-label precision and recall, Cohen's kappa and abstention rate "
        "of every non-oracle judge (or --judge NAME) against the oracle, over misses both judged.",
    )
    a.add_argument("records_dir", help="records/<study>")
    a.add_argument("--judge", help="judge name as recorded, e.g. ollama:gemma4:31b (default: all)")
    a.add_argument("--json", action="store_true", help="print JSON instead of tables")
    a.set_defaults(func=_agreement)


def _study_config(records_dir: Path) -> dict[str, Any]:
    import tomllib

    p = records_dir / "study.toml"
    if not p.is_file():
        return {}
    with open(p, "rb") as f:
        return tomllib.load(f)


def _make_ollama(args: argparse.Namespace, model: Optional[str], concurrency: int = 1) -> Any:
    from pointfail.judge.client import DEFAULT_MODEL, DEFAULT_OPTIONS, OllamaJudge

    options = dict(DEFAULT_OPTIONS)
    options.update(seed=args.seed, num_ctx=args.num_ctx, num_predict=args.num_predict)
    return OllamaJudge(
        host=args.host,
        model=model or DEFAULT_MODEL,
        options=options,
        concurrency=concurrency,
        timeout_s=args.timeout,
        transport_retries=args.transport_retries,
        use_schema=not args.no_schema,
    )


def _judge(args: argparse.Namespace) -> int:
    from pointfail.judge.stage import StageBusy, judge_study
    from pointfail.records import RecordError

    root = Path(args.records_dir)
    if not root.is_dir():
        print(f"pointfail judge: not a directory: {root}", file=sys.stderr)
        return 2
    cfg = _study_config(root)
    primary = cfg.get("study", {}).get("primary_judge")
    jcfg = cfg.get("judge", {})
    kind = args.judge or primary or "oracle"
    role = args.role or ("primary" if primary in (None, kind) else "other")
    tol = args.tolerance_px if args.tolerance_px is not None else jcfg.get("oracle_tolerance_px")
    judge: Any = "oracle"
    if kind in ("ollama", "openai") and args.concurrency < 1:
        print("pointfail judge: --concurrency must be >= 1", file=sys.stderr)
        return 2
    if kind == "ollama":
        judge = _make_ollama(args, args.model or jcfg.get("ollama_model"), args.concurrency)
    elif kind == "openai":
        from pointfail.judge.served import DEFAULT_OPTIONS as OPENAI_OPTIONS
        from pointfail.judge.served import OpenAIJudge

        base_url = args.base_url or jcfg.get("openai_base_url")
        model = args.model or jcfg.get("openai_model")
        if not base_url or not model:
            print("pointfail judge: --judge openai needs --base-url and --model (or [judge] openai_base_url and "
                  "openai_model in study.toml)", file=sys.stderr)
            return 2
        options = dict(OPENAI_OPTIONS, seed=args.seed, max_tokens=args.num_predict)
        judge = OpenAIJudge(model=model, base_url=base_url, api_key_env=args.api_key_env or jcfg.get("openai_api_key_env"),
                            options=options, concurrency=args.concurrency, timeout_s=args.timeout,
                            transport_retries=args.transport_retries, use_schema=not args.no_schema)
    try:
        report = judge_study(
            root,
            judge,
            role=role,
            data_root=args.data_root,
            tolerance_px=tol,
            progress=not args.no_progress and sys.stderr.isatty(),
        )
    except (RecordError, StageBusy) as e:
        print(f"pointfail judge: {e}", file=sys.stderr)
        return 1
    d = report.to_dict()
    if args.json:
        print(json.dumps(d, sort_keys=True, indent=2))
    else:
        print(
            f"{d['judge']} ({d['role']}): {d['files']} files, {d['misses']} misses, {d['already']} already judged, "
            f"{d['resumed']} resumed from a journal, {d['judged']} judged now"
        )
        for k, v in d["status"].items():
            print(f"  {k}: {v}")
        for k, v in d["labels"].items():
            print(f"    {k}: {v}")
        for line in d["problems"][:20]:
            print(f"  pending: {line}", file=sys.stderr)
    left = d["status"].get("judge_unavailable", 0) + d["status"].get("pending", 0)
    return 3 if left else 0


def _judge_one(args: argparse.Namespace) -> int:
    from pointfail.judge.render import point_outside, render_miss
    from pointfail.records import Target

    if args.mask:
        target = Target(kind="mask", mask_path=str(Path(args.mask).resolve()))
    else:
        target = Target(kind="boxes", boxes=[list(args.box)])
    try:
        png = render_miss(args.image, target, args.point)
    except Exception as e:  # unreadable image or mask, wrong-size mask
        print(f"pointfail judge-one: cannot render the miss: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    judge = _make_ollama(args, args.model, 1)
    j = judge.judge_one_sync(png, args.instruction, point_outside_image=point_outside(args.point))
    out = {
        "label": j.label,
        "status": j.status,
        "attempts": [a.model_dump(mode="json") for a in j.attempts],
        "transport_failures": j.transport_failures,
        "judge": j.judge,
        "judge_digest": j.judge_digest,
        "options": j.options,
        "detail": j.detail,
    }
    print(json.dumps(out, sort_keys=True, indent=2, ensure_ascii=False))
    return 3 if j.status == "judge_unavailable" else 0


def _agreement(args: argparse.Namespace) -> int:
    from pointfail.judge.agreement import agreement_report, format_text
    from pointfail.records import RecordError

    try:
        report = agreement_report(args.records_dir, args.judge)
    except RecordError as e:
        print(f"pointfail judge-agreement: {e}", file=sys.stderr)
        return 1
    if not report:
        print("pointfail judge-agreement: no judge besides the oracle in these records", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(report, sort_keys=True, indent=2))
    else:
        sys.stdout.write(format_text(report))
    return 0
