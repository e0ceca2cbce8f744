"""``pointfail judge``, ``pointfail judge-one`` and ``pointfail judge-agreement``: stage 2 of the study,
sorting every miss into a failure mode."""

from __future__ import annotations

import argparse
import sys

from pointfail.commands._help import add_command
from pointfail.judge.settings import DEFAULT_OPTIONS

TYPE_CHECKING = False  # typing and pathlib are not imported at run time: ``pointfail COMMAND --help`` stays light
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any, Optional


FAILURE_MODES_TEXT = """\
The four failure modes, least to most severe: off_by_pixels (the point is just outside
the right target), wrong_instance (on another object of the right kind), wrong_category
(on an object of another kind), hallucinated (on nothing that matches, or on a target
that is not in the image). A judge that gives no single clean label in five attempts
leaves the miss unlabeled."""


def add_ollama_args(p: argparse.ArgumentParser, model_flag: str = "--model", *, model_help: str | None = None) -> None:
    """The Ollama judge's options (``pointfail judge``, ``judge-one``, ``evaluate``); the judge model's
    tag is ``model_flag`` (``--judge-model`` where ``--model`` names the evaluated model), stored in
    ``args.judge_model``, described by ``model_help`` where the default text (a study, ``--judge
    openai``) does not apply."""
    p.add_argument("--host", help="Ollama server URL (default: $OLLAMA_HOST, else http://127.0.0.1:11434)")
    p.add_argument(model_flag, dest="judge_model",
                   help=model_help or "the judge model: an Ollama tag (default: the study's [judge] ollama_model, "
                   "else gemma4:31b), or for --judge openai the served model's name (default: [judge] openai_model)")
    p.add_argument("--seed", type=int, default=DEFAULT_OPTIONS["seed"], help="generation seed; attempt k uses seed + k - 1")
    p.add_argument("--num-ctx", type=int, default=DEFAULT_OPTIONS["num_ctx"], help="context size in tokens")
    p.add_argument("--num-predict", type=int, default=DEFAULT_OPTIONS["num_predict"], help="reply length cap in tokens")
    p.add_argument("--timeout", type=float, default=300.0, help="HTTP timeout per request, seconds")
    p.add_argument("--transport-retries", type=int, default=6,
                   help="retries of one request after a transport failure (server error, timeout, dropped connection)")
    p.add_argument("--no-schema", action="store_true", help="do not send the structured-output schema")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``judge``, ``judge-one`` and ``judge-agreement`` subcommands."""
    p = add_command(
        subparsers, "judge",
        description=f"""\
Label every miss in a study's records with a failure mode. The oracle judge reads
the suite's scene graph (exact, no model needed); a model judge (--judge ollama, or
--judge openai for any OpenAI-compatible server such as vLLM) is shown the image with
the target in green and the point in red and asked for one label.

{FAILURE_MODES_TEXT}

Only misses without a final verdict from this judge are judged (a rerun continues
where the last one stopped); records are rewritten in place, atomically. Exit 0 when
every miss has a final verdict, 3 when some are judge_unavailable or pending (rerun
to fill them in).""",
        example="pointfail judge records/default --judge oracle",
    )
    p.add_argument("records_dir", metavar="STUDY", help="the study's records directory (records/<study>)")
    p.add_argument("--judge", choices=["oracle", "ollama", "openai"],
                   help="which judge (default: the study's primary_judge, else oracle); openai: any "
                   "OpenAI-compatible server (--base-url), same protocol as ollama")
    p.add_argument("--role", choices=["primary", "other"],
                   help="primary: the verdict the tables use; other: kept beside it for agreement reports "
                   "(default: primary when this judge is the study's primary_judge or there is no study.toml, "
                   "else other)")
    p.add_argument("--data-root", help="directory that relative image, mask and scene-graph paths are found under")
    p.add_argument("--tolerance-px", type=float,
                   help="oracle: a miss within this many pixels of the target is off_by_pixels "
                   "(default: the study's [judge] oracle_tolerance_px, else 8)")
    p.add_argument("--concurrency", type=int, default=4, help="judge requests in flight")
    add_ollama_args(p)
    add_openai_args(p)
    p.add_argument("--json", action="store_true", help="print the stage report as JSON")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=_judge)

    o = add_command(
        subparsers, "judge-one",
        description=f"""\
Judge one miss: draw the image with the target in green and the point in red, ask the
Ollama judge for exactly one failure-mode label (up to five attempts) and print JSON:
label (or null), status (labeled, unlabeled, judge_unavailable), every attempt's raw
reply with its verdict, and transport_failures (requests that failed and were retried).

{FAILURE_MODES_TEXT}

--point and --box are in pixels of the image, origin top-left; with --normalized both
are fractions of the image's width and height (0 to 1).

Exit 0 when the judge answered (labeled or unlabeled); 3 when it was unavailable (a
refused connection stops at once with a message); 2 for usage errors or an unreadable
image or mask. Needs the judge extra: pip install 'pointfail[judge]'.""",
        example="pointfail judge-one --image shot.png --box 100 80 180 110 --point 200 95 "
                "--instruction 'the Save button' --host http://127.0.0.1:11434",
    )
    o.add_argument("--image", required=True, help="the original image")
    tgt = o.add_mutually_exclusive_group(required=True)
    tgt.add_argument("--mask", help="target mask file (same size as the image)")
    tgt.add_argument("--box", nargs=4, type=float, metavar=("X0", "Y0", "X1", "Y1"),
                     help="target box, pixels of the image (edges inclusive), or fractions with --normalized")
    o.add_argument("--point", nargs=2, type=float, required=True, metavar=("X", "Y"),
                   help="the predicted point, pixels of the image, or fractions with --normalized")
    o.add_argument("--normalized", action="store_true",
                   help="--point and --box are fractions of the image's width and height (0 to 1)")
    o.add_argument("--instruction", required=True, help="the instruction the model was given")
    from pointfail.judge.settings import DEFAULT_MODEL

    add_ollama_args(o, model_help=f"the judge model's Ollama tag (default: {DEFAULT_MODEL})")
    o.set_defaults(func=_judge_one)

    a = add_command(
        subparsers, "judge-agreement",
        description="""\
Compare every judge besides the oracle (or the one named by --judge) with the oracle,
over the misses both labeled: confusion matrix, per-label precision and recall,
Cohen's kappa, and how often the judge abstained.""",
        example="pointfail judge-agreement records/default",
    )
    a.add_argument("records_dir", metavar="STUDY", help="the study's records directory (records/<study>)")
    a.add_argument("--judge", help="judge name as recorded, e.g. ollama:gemma4:31b (default: every judge)")
    a.add_argument("--json", action="store_true", help="print JSON instead of tables")
    a.set_defaults(func=_agreement)


def _study_config(records_dir: Path) -> dict[str, Any]:
    """``{"study": {...}, "judge": {...}}`` of the records folder's ``study.toml`` read through
    :func:`pointfail.study.load_study` (``{}`` when there is none).

    Raises:
        pointfail.study.StudyError: the file breaks the study format."""
    from pointfail.study import load_study

    p = records_dir / "study.toml"
    if not p.is_file():
        return {}
    spec = load_study(p)
    return {"study": spec.study.model_dump(exclude_unset=True), "judge": spec.judge.model_dump(exclude_unset=True)}


def make_ollama(args: argparse.Namespace, model: Optional[str], concurrency: int = 1) -> Any:
    """An ``OllamaJudge`` from the options of :func:`add_ollama_args` (not yet entered)."""
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


def make_openai(args: argparse.Namespace, base_url: str, model: str, api_key_env: Optional[str],
                concurrency: int = 1) -> Any:
    """An ``OpenAIJudge`` (any OpenAI-compatible server) from the options of :func:`add_ollama_args`
    (seed, reply cap, timeout, retries, schema), not yet entered."""
    from pointfail.judge.served import DEFAULT_OPTIONS as OPENAI_OPTIONS
    from pointfail.judge.served import OpenAIJudge

    options = dict(OPENAI_OPTIONS, seed=args.seed, max_tokens=args.num_predict)
    return OpenAIJudge(model=model, base_url=base_url, api_key_env=api_key_env, options=options,
                       concurrency=concurrency, timeout_s=args.timeout, transport_retries=args.transport_retries,
                       use_schema=not args.no_schema)


def add_openai_args(p: argparse.ArgumentParser) -> None:
    """The options only ``--judge openai`` uses."""
    p.add_argument("--base-url", help="--judge openai: the server's API root, e.g. http://127.0.0.1:8000/v1 "
                   "(default: study.toml [judge] openai_base_url)")
    p.add_argument("--api-key-env", help="--judge openai: environment variable holding the API key "
                   "(default: study.toml [judge] openai_api_key_env; none needed on loopback servers)")


def _judge(args: argparse.Namespace) -> int:
    from pointfail.judge.stage import StageBusy, judge_study
    from pointfail.records import RecordError

    from pathlib import Path

    root = Path(args.records_dir)
    if not root.is_dir():
        print(f"pointfail judge: not a directory: {root}", file=sys.stderr)
        return 2
    from pointfail.study import StudyError

    try:
        cfg = _study_config(root)
    except StudyError as e:
        print(f"pointfail judge: {e}", file=sys.stderr)
        return 2
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
        from pointfail.extras import require

        require("judge", "--judge ollama")
        problem = judge_reachable(args.host)
        if problem:
            print(f"pointfail judge: {problem}", file=sys.stderr)
            return 3
        judge = make_ollama(args, args.judge_model or jcfg.get("ollama_model"), args.concurrency)
    elif kind == "openai":
        from pointfail.extras import require

        require("judge", "--judge openai")
        base_url = args.base_url or jcfg.get("openai_base_url")
        model = args.judge_model or jcfg.get("openai_model")
        if not base_url or not model:
            print("pointfail judge: --judge openai needs --base-url and --model (or [judge] openai_base_url and "
                  "openai_model in study.toml)", file=sys.stderr)
            return 2
        problem = judge_reachable(base_url)
        if problem:
            print(f"pointfail judge: {problem}", file=sys.stderr)
            return 3
        judge = make_openai(args, base_url, model, args.api_key_env or jcfg.get("openai_api_key_env"),
                            args.concurrency)
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
        import json

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


def judge_reachable(host: Optional[str], timeout_s: float = 5.0) -> Optional[str]:
    """``None`` when something answers HTTP at the judge's host, else why not (one line). A refused
    connection fails at once here, instead of after the client's transport retries."""
    import httpx

    from pointfail.judge.client import resolve_host

    url = resolve_host(host)
    try:
        httpx.get(url, timeout=timeout_s)
    except httpx.ConnectError as e:
        return f"cannot connect to the judge at {url} ({e}); start Ollama (ollama serve) or pass --host URL"
    except httpx.HTTPError as e:
        return f"the judge at {url} did not answer ({type(e).__name__}: {e})"
    return None


def _judge_one(args: argparse.Namespace) -> int:
    from pointfail.extras import require

    require("judge", "judge-one")
    from PIL import Image

    from pointfail.judge.render import point_outside, render_miss
    from pointfail.records import Target

    try:
        with Image.open(args.image) as im:
            w, h = im.size
    except (OSError, ValueError) as e:
        print(f"pointfail judge-one: cannot read --image {args.image}: {e}", file=sys.stderr)
        return 2
    scale = (w, h) if args.normalized else (1, 1)
    point_norm = [args.point[0] * scale[0] / w, args.point[1] * scale[1] / h]
    if args.mask:
        from pathlib import Path

        target = Target(kind="mask", mask_path=str(Path(args.mask).resolve()))
    else:
        x0, y0, x1, y1 = args.box
        target = Target(kind="boxes", boxes=[[x0 * scale[0], y0 * scale[1], x1 * scale[0], y1 * scale[1]]])
    try:
        png = render_miss(args.image, target, point_norm)
    except Exception as e:  # unreadable image or mask, wrong-size mask
        print(f"pointfail judge-one: cannot draw the miss: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    problem = judge_reachable(args.host)
    if problem:
        print(f"pointfail judge-one: {problem}", file=sys.stderr)
        return 3
    judge = make_ollama(args, args.judge_model, 1)
    j = judge.judge_one_sync(png, args.instruction, point_outside_image=point_outside(point_norm))
    out = {
        "label": j.label,
        "status": j.status,
        "attempts": [a.model_dump(mode="json") for a in j.attempts],
        "transport_failures": j.transport_failures,
        "judge": j.judge,
        "judge_digest": j.judge_digest,
        "options": j.options,
        "detail": j.detail,
        "point_px": [point_norm[0] * w, point_norm[1] * h],
        "image_size": [w, h],
    }
    import json

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
        import json

        print(json.dumps(report, sort_keys=True, indent=2))
    else:
        sys.stdout.write(format_text(report))
    return 0
