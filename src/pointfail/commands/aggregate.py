"""``pointfail aggregate``, ``pointfail verify`` and ``pointfail report``: tables and figures from
committed records (see :mod:`pointfail.aggregate` and :mod:`pointfail.report`)."""

from __future__ import annotations

import argparse
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``aggregate``, ``verify`` and ``report`` subcommands."""
    p = subparsers.add_parser(
        "aggregate",
        help="compute tables from a study's records into records/<study>/tables/",
        description="Compute every table from records/<study>/<model>/<benchmark>.jsonl into "
        "records/<study>/tables/ (Markdown, CSV, summary.json, SHA256SUMS).",
    )
    p.add_argument("study", nargs="+", help="study directory (records/<study>) or a records root")
    p.add_argument("--out", help="output directory (default <study>/tables; only with one study)")
    p.set_defaults(func=_aggregate)

    v = subparsers.add_parser(
        "verify",
        help="regenerate tables and compare byte for byte with the committed ones",
        description="Regenerate every table in a temporary directory and compare byte for byte with "
        "the committed tables and SHA256SUMS. Exit 0 and print the headline table on a match; exit 1 "
        "with a unified diff per differing table otherwise, or when a record fails the schema.",
    )
    v.add_argument("study", nargs="+", help="study directory (records/<study>) or a records root")
    v.set_defaults(func=_verify)

    r = subparsers.add_parser(
        "report",
        help="failure-profile figures (HTML + PNG), gallery, tolerance curves",
        description="Write records/<study>/report/: failure_profile.html (self-contained, interactive), "
        "failure_profile.png, tolerance.png and gallery.png.",
    )
    r.add_argument("study", help="study directory (records/<study>)")
    r.add_argument("--out", help="output directory (default <study>/report)")
    r.set_defaults(func=_report)


def _studies(paths: list[str]) -> list:
    from pointfail.aggregate import find_studies, studies_without_records

    out = []
    for p in paths:
        for s in studies_without_records(p):
            print(f"SKIP {s}: study.toml but no records yet")
        out.extend(find_studies(p))
    return out


def _aggregate(args: argparse.Namespace) -> int:
    from pointfail.aggregate import AggregateError, aggregate
    from pointfail.records import RecordError

    try:
        studies = _studies(args.study)
        if args.out and len(studies) != 1:
            print("error: --out needs exactly one study", file=sys.stderr)
            return 2
        for s in studies:
            files = aggregate(s, args.out)
            out = args.out or str(s / "tables")
            print(f"{s}: wrote {len(files)} files to {out}")
    except (RecordError, AggregateError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


def _verify(args: argparse.Namespace) -> int:
    from pointfail.aggregate import AggregateError, verify
    from pointfail.records import RecordError

    rc = 0
    try:
        studies = _studies(args.study)
    except AggregateError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    for s in studies:
        try:
            res = verify(s)
        except RecordError as e:
            print(f"FAIL {s}: record fails the schema: {e}")
            rc = 1
            continue
        except AggregateError as e:
            print(f"FAIL {s}: {e}")
            rc = 1
            continue
        if res.ok:
            print(f"OK {s}: every table matches its committed bytes and SHA256SUMS\n")
            print(res.headline)
        else:
            rc = 1
            print(f"FAIL {s}: {len(res.problems)} problem(s)")
            for line in res.problems:
                print(f"  {line}")
            for name in sorted(res.diffs):
                print()
                sys.stdout.write(res.diffs[name])
    return rc


def _report(args: argparse.Namespace) -> int:
    from pointfail.aggregate import AggregateError
    from pointfail.records import RecordError
    from pointfail.report import make_report

    try:
        written = make_report(args.study, args.out)
    except (RecordError, AggregateError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    for p in written:
        print(p)
    return 0
