"""``pointfail judge``, ``pointfail judge-one`` and ``pointfail judge-agreement``: stage 2 of the study,
sorting every miss into a failure mode."""

from __future__ import annotations

import argparse
import sys

from pointfail.commands._help import add_command
from pointfail.running.judges.settings import DEFAULT_OPTIONS

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
    p.add_argument("--timeout", type=float, default=300.0, help="total deadline of one HTTP request, seconds (connect, headers and the whole body)")
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
every miss has a final verdict; 2 when the input cannot be used; 3 when some are
judge_unavailable or pending (rerun to fill them in), the judge's server does not
answer, or, with --judge human, some lines of --labels were refused (each is listed:
no such miss, an unknown label, an annotator's second line about one miss); 4 when
samples ended in an infrastructure error (no reply to judge: the study is INCOMPLETE
until they are asked again), before 3, as pointfail evaluate.""",
        example="pointfail judge records/default --judge oracle",
    )
    p.add_argument("records_dir", metavar="STUDY", help="the study's records directory (records/<study>)")
    from pointfail.running.judges.kinds import list_kinds

    kinds = list_kinds()
    p.add_argument("--judge", choices=[k.name for k in kinds],
                   help="which judge (default: the study's primary_judge, else oracle): "
                   + "; ".join(f"{k.name}: {k.summary}" for k in kinds))
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
    p.add_argument("--temperature", type=float,
                   help="model judges: sampling temperature (default 0, greedy decoding, the study's protocol)")
    p.add_argument("--repeats", type=int, default=1, metavar="K",
                   help="model judges: judge each miss K times (the first in its role, the others as further "
                   "judges <name>@repeat<r> with their own seeds), every attempt stored, and report how often the "
                   "label changes per mode (default 1)")
    for k in kinds:
        k.add_arguments(p)
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
    from pointfail.running.judges.settings import DEFAULT_MODEL

    add_ollama_args(o, model_help=f"the judge model's Ollama tag (default: {DEFAULT_MODEL})")
    o.set_defaults(func=_judge_one)

    a = add_command(
        subparsers, "judge-agreement",
        description="""\
How far two judges agree on the failure modes of the same misses: the confusion
matrix, per-mode precision and recall (the first judge as reference), percent
agreement, Cohen's kappa and Krippendorff's alpha (nominal), each with a 95% bootstrap
interval over images (the study's [aggregate] bootstrap_seed and bootstrap_resamples),
over the misses both labeled. A coefficient that does not exist (every label the same,
nothing to compare) says "undefined" and why. Judges are named as stored: oracle,
ollama:<model> (or just ollama when there is one), openai:<model>, human:<annotator>.
Without --between, every pair of the study's judges, and alpha over all judges and
over the human annotators together. Exit 1 when the study has fewer than two judges.""",
        example="pointfail judge-agreement records/default --between oracle human:alice",
    )
    a.add_argument("records_dir", metavar="STUDY", help="the study's records directory (records/<study>)")
    a.add_argument("--between", nargs=2, metavar=("A", "B"),
                   help="the two judges to compare (names as stored; default: every pair)")
    a.add_argument("--json", action="store_true", help="print JSON instead of tables")
    a.set_defaults(func=_agreement)


def _study_config(records_dir: Path) -> dict[str, Any]:
    """``{"study": {...}, "judge": {...}}`` of the records folder's ``study.toml`` read through
    :func:`pointfail.inputs.study.load_study` (``{}`` when there is none).

    Raises:
        pointfail.inputs.study.StudyError: the file breaks the study format."""
    from pointfail.inputs.study import load_study

    p = records_dir / "study.toml"
    if not p.is_file():
        return {}
    spec = load_study(p)
    return {"study": spec.study.model_dump(exclude_unset=True), "judge": spec.judge.model_dump(exclude_unset=True)}


def settings_from_args(args: argparse.Namespace, jcfg: "Optional[dict[str, Any]]" = None,
                       kind: str = "ollama") -> "dict[str, Any]":
    """The judge settings (:mod:`pointfail.running.judges.kinds`): the study's ``[judge]`` table ``jcfg`` with
    the options of :func:`add_ollama_args` / :func:`add_openai_args` (and a kind's own) laid over it
    where given; ``--model`` is the ``<kind>_model``."""
    out: dict[str, Any] = dict(jcfg or {})
    over = {"host": getattr(args, "host", None), "seed": getattr(args, "seed", None),
            "num_ctx": getattr(args, "num_ctx", None), "num_predict": getattr(args, "num_predict", None),
            "timeout": getattr(args, "timeout", None), "transport_retries": getattr(args, "transport_retries", None),
            "no_schema": getattr(args, "no_schema", False), "concurrency": getattr(args, "concurrency", None),
            f"{kind}_model": getattr(args, "judge_model", None),
            "openai_base_url": getattr(args, "base_url", None), "openai_api_key_env": getattr(args, "api_key_env", None),
            "oracle_tolerance_px": getattr(args, "tolerance_px", None), "labels": getattr(args, "labels", None),
            "temperature": getattr(args, "temperature", None)}
    out.update({k: v for k, v in over.items() if v is not None})
    return out


def make_ollama(args: argparse.Namespace, model: "Optional[str]", concurrency: int = 1) -> "Any":
    """An ``OllamaJudge`` from the options of :func:`add_ollama_args` (not yet entered), through the
    judge registry."""
    from pointfail.running.judges.kinds import make_judges

    settings = settings_from_args(args)
    settings.update(ollama_model=model, concurrency=concurrency)
    return make_judges("ollama", settings)[0]


def make_openai(args: argparse.Namespace, base_url: str, model: str, api_key_env: "Optional[str]",
                concurrency: int = 1) -> "Any":
    """An ``OpenAIJudge`` (any OpenAI-compatible server) from the options of :func:`add_ollama_args`
    (seed, reply cap, timeout, retries, schema), not yet entered, through the judge registry."""
    from pointfail.running.judges.kinds import make_judges

    settings = settings_from_args(args, kind="openai")
    settings.update(openai_base_url=base_url, openai_model=model, openai_api_key_env=api_key_env,
                    concurrency=concurrency)
    return make_judges("openai", settings)[0]


def add_openai_args(p: argparse.ArgumentParser) -> None:
    """The options only ``--judge openai`` uses."""
    p.add_argument("--base-url", help="--judge openai: the server's API root, e.g. http://127.0.0.1:8000/v1 "
                   "(default: study.toml [judge] openai_base_url)")
    p.add_argument("--api-key-env", help="--judge openai: environment variable holding the API key "
                   "(default: study.toml [judge] openai_api_key_env; none needed on loopback servers)")


def _study_misses(root: "Path") -> "set[tuple[str, str, str]]":
    from pointfail.records import iter_records, records_files

    return {(r.model, r.benchmark, r.sample_id) for p in records_files(root) for r in iter_records(p)
            if r.outcome == "miss"}


class _JudgeExit(Exception):
    """An early end of ``pointfail judge``: exit ``code``, with ``pointfail judge: <message>`` on stderr."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def _check_judge_options(args: argparse.Namespace, kind: "Any", name: str) -> None:
    """Raise :class:`_JudgeExit` (2) for ``--concurrency`` below 1, or ``--repeats`` below 1 or above 1
    for a judge that is not a model."""
    if args.concurrency < 1:
        raise _JudgeExit(2, "--concurrency must be >= 1")
    if args.repeats < 1 or (args.repeats > 1 and not kind.model_judge):
        raise _JudgeExit(2, f"--repeats must be >= 1, and above 1 only for a model judge ({name} is not)"
                         if args.repeats > 1 else "--repeats must be >= 1")


def _make_study_judges(args: argparse.Namespace, root: "Path", cfg: "dict[str, Any]", kind: "Any", name: str,
                       role: str) -> "tuple[list[Any], dict[str, Any]]":
    """The judges of kind ``name`` and their settings (the command line over study.toml's [judge]).

    Raises :class:`_JudgeExit`: 3 when the judge's server does not answer; 2 when the judge cannot be
    set up, or when several judges would all be the primary judge.
    """
    from pointfail.running.judges.kinds import JudgeSetupError
    from pointfail.records import RecordError

    if kind.extra:
        from pointfail.extras import require

        require(kind.extra, f"--judge {name}")
    settings = settings_from_args(args, cfg.get("judge", {}), kind=name)
    url = kind.server_url(settings)
    if url is not None:
        problem = judge_reachable(url)
        if problem:
            raise _JudgeExit(3, problem)
    try:
        if name == "human":
            settings["misses"] = _study_misses(root)
        judges = kind.make(settings)
    except (JudgeSetupError, RecordError) as e:
        raise _JudgeExit(2, str(e)) from e
    if role == "primary" and len(judges) > 1:
        raise _JudgeExit(2, f"{len(judges)} judges ({', '.join(j.name for j in judges)}) cannot all be the primary "
                         "judge: use --role other, or one annotator's labels")
    return judges, settings


def _judge_once(args: argparse.Namespace, root: "Path", judge: "Any", role: str) -> "dict[str, Any]":
    """One judge over the study's misses (:func:`~pointfail.running.judges.stage.judge_study`), as its
    report's dict; raises :class:`_JudgeExit` (1) on a records error, a busy stage or an OS error (disk
    full: one line naming the file; the records file is written atomically)."""
    from pointfail.running.judges.stage import StageBusy, judge_study
    from pointfail.records import RecordError
    from pointfail.safeio import os_error_line

    try:
        report = judge_study(root, judge, role=role, data_root=args.data_root,
                             progress=not args.no_progress and sys.stderr.isatty())
    except (RecordError, StageBusy) as e:
        raise _JudgeExit(1, str(e)) from e
    except OSError as e:
        raise _JudgeExit(1, os_error_line(e)) from e
    return report.to_dict()


def _repeat_reports(args: argparse.Namespace, root: "Path", kind: "Any", settings: "dict[str, Any]",
                    judges: "list[Any]") -> "tuple[list[dict[str, Any]], dict[str, Any]]":
    """Runs 2..``--repeats`` of the model judge (role ``other``; run ``r`` seeded ``seed + (r - 1) *
    MAX_LABEL_ATTEMPTS``), their reports and the self-consistency of the first judge over all runs."""
    from pointfail.judge.agreement import collect_units
    from pointfail.judge.protocol import MAX_LABEL_ATTEMPTS
    from pointfail.judge.repeats import Repeat, self_consistency

    seed = int(settings.get("seed") or 0)
    reports = []
    for r in range(2, args.repeats + 1):
        (inner,) = kind.make({**settings, "seed": seed + (r - 1) * MAX_LABEL_ATTEMPTS})
        reports.append(_judge_once(args, root, Repeat(inner, r), "other"))
    return reports, self_consistency(collect_units(root), judges[0].name)


def _print_report(d: "dict[str, Any]") -> None:
    """One judge's report: counts on stdout, the first 20 pending lines on stderr."""
    print(
        f"{d['judge']} ({d['role']}): {d['files']} files, {d['misses']} misses, {d['already']} already judged, "
        f"{d['resumed']} resumed from a journal, {d['judged']} judged now"
        + (f", {d['skipped']} without a verdict from this judge" if d["skipped"] else "")
    )
    for k, v in d["status"].items():
        print(f"  {k}: {v}")
    for k, v in d["labels"].items():
        print(f"    {k}: {v}")
    for line in d["problems"][:20]:
        print(f"  pending: {line}", file=sys.stderr)


def _print_reports(args: argparse.Namespace, reports: "list[dict[str, Any]]", problems: "list[str]",
                   consistency: "Optional[dict[str, Any]]") -> None:
    """The reports as JSON (``--json``) or text, with the self-consistency and the refused label lines."""
    if args.json:
        import json

        out: Any = reports[0] if len(reports) == 1 and not problems else {"reports": reports, "refused": problems}
        if consistency is not None:
            out["self_consistency"] = consistency
        print(json.dumps(out, sort_keys=True, indent=2))
        return
    for d in reports:
        _print_report(d)
    if consistency is not None:
        print(format_consistency(consistency))
    if problems:
        print(f"{len(problems)} problem{'' if len(problems) == 1 else 's'} in {args.labels}; those lines are "
              "not stored:", file=sys.stderr)
        for line in problems[:50]:
            print(f"  {line}", file=sys.stderr)
        if len(problems) > 50:
            print(f"  ... and {len(problems) - 50} more (--json lists them all)", file=sys.stderr)


def _judge_exit_code(root: "Path", reports: "list[dict[str, Any]]", problems: "list[str]") -> int:
    """4 when samples ended in an infrastructure error (an incomplete study comes first, whatever the
    judge left, as in ``pointfail evaluate``); 3 when misses are left unjudged or label lines were
    refused; else 0."""
    left = sum(d["status"].get("judge_unavailable", 0) + d["status"].get("pending", 0) for d in reports)
    errors = reports[0]["errors"] if reports else 0
    if errors:
        print(f"INCOMPLETE {root}: {errors} sample(s) ended in an infrastructure error and have no reply to judge; "
              "ask them again (pointfail-runner run --retry-errors, pointfail evaluate --retry-errors)",
              file=sys.stderr)
        return 4
    return 3 if left or problems else 0


def _judge(args: argparse.Namespace) -> int:
    from pathlib import Path

    from pointfail.running.judges.kinds import get_kind
    from pointfail.inputs.study import StudyError

    root = Path(args.records_dir)
    try:
        if not root.is_dir():
            raise _JudgeExit(2, f"not a directory: {root}")
        try:
            cfg = _study_config(root)
        except StudyError as e:
            raise _JudgeExit(2, str(e)) from e
        primary = cfg.get("study", {}).get("primary_judge")
        name = args.judge or primary or "oracle"
        kind = get_kind(name)
        role = args.role or ("primary" if primary in (None, name) and kind.runs_in_study else "other")
        _check_judge_options(args, kind, name)
        judges, settings = _make_study_judges(args, root, cfg, kind, name, role)
        problems = sorted({p for j in judges for p in getattr(j, "problems", [])})
        reports = [_judge_once(args, root, judge, role) for judge in judges]
        consistency = None
        if args.repeats > 1:
            more, consistency = _repeat_reports(args, root, kind, settings, judges)
            reports += more
    except _JudgeExit as e:
        print(f"pointfail judge: {e}", file=sys.stderr)
        return e.code
    _print_reports(args, reports, problems, consistency)
    return _judge_exit_code(root, reports, problems)


def format_consistency(c: "dict[str, Any]") -> str:
    """The self-consistency summary of :func:`pointfail.judge.repeats.self_consistency`, one line per mode."""
    def rate(x: "Optional[float]") -> str:
        return "undefined (no miss)" if x is None else f"{100 * x:.1f}%"

    lines = [f"self-consistency of {c['judge']} over {1 + len(c['repeats'])} runs: the label changed on "
             f"{c['changed']} of {c['misses']} misses ({rate(c['change_rate'])})"]
    for m, v in c["per_mode"].items():
        lines.append(f"  {m} (first run): changed on {v['changed']} of {v['misses']} ({rate(v['change_rate'])})")
    return "\n".join(lines)


def judge_reachable(host: Optional[str], timeout_s: float = 5.0) -> Optional[str]:
    """``None`` when something answers HTTP at the judge's host, else why not (one line). A refused
    connection fails at once here, instead of after the client's transport retries. Only the status
    line and headers are read, within a total deadline of ``timeout_s`` seconds, through the bounded
    transport (:func:`pointfail.running.served.bounded.http_client`), so a server that drips or sends an
    endless body cannot hold the check; a redirect is refused (never followed)."""
    import asyncio

    import httpx

    from pointfail.running.judges.client import resolve_host
    from pointfail.running.served.bounded import Redirected, ReplyTooLarge, http_client
    from pointfail.running.served.transport import describe

    url = resolve_host(host)

    async def probe() -> None:
        async with http_client(deadline_s=timeout_s, max_body_bytes=1 << 16, concurrency=1) as client:
            async with client.stream("GET", url):
                return None  # the headers came: something answers HTTP; the body is not read

    try:
        asyncio.run(probe())
    except httpx.ConnectError as e:
        import os

        from pointfail.running.served.transport import exception_chain

        # the system's own words ("[Errno 111] Connection refused") where the chain has them
        why: object = next((f"[Errno {c.errno}] {os.strerror(c.errno)}" for c in exception_chain(e)
                            if isinstance(c, OSError) and c.errno), e)
        return f"cannot connect to the judge at {url} ({why}); start Ollama (ollama serve) or pass --host URL"
    except Redirected as e:
        return f"the judge at {url} redirects ({e})"
    except ReplyTooLarge:
        return None  # it answered; the size of that answer is the requests' concern
    except httpx.HTTPError as e:
        return f"the judge at {url} did not answer ({describe(e)})"
    return None


def _judge_one(args: argparse.Namespace) -> int:
    from pointfail.extras import require

    require("judge", "judge-one")
    from PIL import Image

    from pointfail.running.judges.render import point_outside, render_miss
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
    from pathlib import Path

    from pointfail.judge.agreement import AgreementError, agreement_report, format_text, report_json
    from pointfail.records import RecordError
    from pointfail.inputs.study import AggregateSpec, StudyError, load_study

    root = Path(args.records_dir)
    if not root.is_dir():
        print(f"pointfail judge-agreement: not a directory: {root}", file=sys.stderr)
        return 2
    try:
        cfg = load_study(root / "study.toml").aggregate if (root / "study.toml").is_file() else AggregateSpec()
        report = agreement_report(root, tuple(args.between) if args.between else None,
                                  seed=cfg.bootstrap_seed, resamples=cfg.bootstrap_resamples)
    except (RecordError, StudyError) as e:
        print(f"pointfail judge-agreement: {e}", file=sys.stderr)
        return 1
    except AgreementError as e:
        print(f"pointfail judge-agreement: {e}", file=sys.stderr)
        return 2
    if not report["pairs"]:
        from pointfail.judge.repeats import base_name

        firsts = [n for n in report["judges"] if base_name(n) is None]
        rest = len(report["judges"]) - len(firsts)
        print(f"pointfail judge-agreement: agreement needs two judges; these records have {len(firsts)} "
              f"({', '.join(firsts) or 'none'})" + (f" and {rest} repeats of them" if rest else ""), file=sys.stderr)
        if report.get("self_consistency"):
            sys.stdout.write(format_text(report))
        return 1
    if args.json:
        import json

        out = report_json(report)
        print(json.dumps(out["pairs"][0] if args.between else out, sort_keys=True, indent=2))
    else:
        sys.stdout.write(format_text(report))
    return 0
