"""``pointfail aggregate``, ``pointfail verify``, ``pointfail upgrade-records`` and ``pointfail report``:
tables and figures from a study's records."""

from __future__ import annotations

import argparse
import sys

from pointfail.commands._help import add_command


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``aggregate``, ``verify``, ``upgrade-records`` and ``report`` subcommands."""
    p = add_command(
        subparsers, "aggregate",
        description="""\
Compute every table from a study's per-sample records
(records/<study>/<model>/<benchmark>.jsonl) into records/<study>/tables/: hit rates
with confidence intervals, outcomes, failure composition, breakdowns, tolerance
curves, box outcomes, official-rule scores, paired comparisons, as Markdown and CSV,
plus summary.json and SHA256SUMS. The tables depend on the records alone and
regenerate byte for byte. Exit 0 when written; 1 when records cannot be read; 2 for
bad arguments; 4 when written but samples ended in an infrastructure error (the
headline says INCOMPLETE with the count; ask them again, then aggregate again), as
pointfail evaluate.""",
        example="pointfail aggregate records/default",
    )
    p.add_argument("study", nargs="+", help="study directory (records/<study>) or a folder of studies (records/)")
    p.add_argument("--out", help="output directory, only with one study (default: <study>/tables)")
    p.set_defaults(func=_aggregate)

    v = add_command(
        subparsers, "verify",
        description="""\
Regenerate every table of a study in a temporary directory and compare it byte for
byte with the committed tables and their SHA256SUMS; re-derive every record's parse,
outcome, geometry, official score and frame-compliance readings from its raw reply
and target (records whose mask files are absent: the parse only, said as NOT CHECKED
with their count; every table is still compared), and check every record against its
committed digest (tables/records.sha256, listed in SHA256SUMS). Exit 0 and print the
headline table when everything matches; exit 1 with a unified diff for each
differing table, a line naming file, line and sample for each record that does not
follow from its raw reply or was changed, or when a record does not match the
records schema.""",
        example="pointfail verify records/default",
    )
    v.add_argument("study", nargs="+", help="study directory (records/<study>) or a folder of studies (records/)")
    v.add_argument("--tables-only", action="store_true",
                   help="compare the tables and SHA256SUMS only, without re-deriving the records or checking their "
                        "digests (for hand-made records that no parser wrote, such as test fixtures)")
    v.set_defaults(func=_verify)

    u = add_command(
        subparsers, "upgrade-records",
        description="""\
Rewrite a study's schema-version-1 records (made before each record stored its
frame-compliance readings) as version 2: each record's readings are computed from
its raw reply and target, every other field is kept, version-2 records are left as
they are. Mask targets need the study's mask files (paths as the records give them,
from the working directory or the checkout). Nothing is written unless every record
can be upgraded. Then run pointfail aggregate (the records' digests change). Exit 0
when done (or nothing to upgrade); 1 when a record cannot be read or a mask file is
missing.""",
        example="pointfail upgrade-records records/my-study",
    )
    u.add_argument("study", nargs="+", help="study directory (records/<study>) or a folder of studies (records/)")
    u.set_defaults(func=_upgrade)

    r = add_command(
        subparsers, "report",
        description="""\
Draw a study's figures from its records into <study>/report/: failure_profile.html
(one stacked bar per model and benchmark: hits, the four failure modes, misses not
labeled yet, no prediction; self-contained, works offline), failure_profile.png,
tolerance.png (hit rate if a point within t pixels counted) and gallery.png (one hit
and one miss of each failure mode, drawn on the image).

Needs the report extra: pip install 'pointfail[report]'.""",
        example="pointfail report records/default --out /tmp/default-report",
    )
    r.add_argument("study", help="study directory (records/<study>)")
    r.add_argument("--out", help="output directory (default: <study>/report)")
    r.set_defaults(func=_report)


def _studies(paths: list[str]) -> list:
    from pointfail.aggregate import find_studies, studies_without_records

    out = []
    for p in paths:
        for s in studies_without_records(p):
            print(f"SKIP {s}: study.toml but no records yet")
        out.extend(find_studies(p))
    return out


def _table_files(out, files) -> list[tuple[str, str]]:
    """One line per table written: ``(label, out/<name>.{md,csv})``, the tables in the order written."""
    stems: dict[str, list[str]] = {}
    for name in files:
        stem, dot, ext = name.rpartition(".")
        stems.setdefault(stem if dot else name, []).append(ext if dot else "")
    lines = []
    for stem, exts in stems.items():
        suffix = "" if exts == [""] else "." + (exts[0] if len(exts) == 1 else "{" + ",".join(exts) + "}")
        lines.append(("table" if any(e in ("md", "csv") for e in exts) else "file", f"{out / stem}{suffix}"))
    return lines


def _aggregate(args: argparse.Namespace) -> int:
    from pathlib import Path

    from pointfail.aggregate import AggregateError, aggregate
    from pointfail.commands._console import study_summary
    from pointfail.records import RecordError

    incomplete = 0
    try:
        studies = _studies(args.study)
        if args.out and len(studies) != 1:
            print("error: --out needs exactly one study", file=sys.stderr)
            return 2
        for s in studies:
            files = aggregate(s, args.out)
            out = Path(args.out) if args.out else s / "tables"
            print(f"{s}: wrote {len(files)} files to {out}\n")
            print(study_summary(out, files=_table_files(out, files)) + "\n")
            errors = _errors(files["outcomes.csv"])
            if errors:
                incomplete += 1
                print(f"INCOMPLETE {s}: {errors} sample(s) ended in an infrastructure error (counted as non-hits; "
                      "rerun them for final numbers)", file=sys.stderr)
    except (RecordError, AggregateError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 4 if incomplete else 0


def _errors(outcomes_csv: bytes) -> int:
    """Samples that ended in an infrastructure error, from the ``error`` column of the
    ``outcomes.csv`` just written (its per-benchmark rows; the pooled rows repeat them)."""
    import csv
    import io

    from pointfail.aggregate.rows import POOLED

    rows = csv.DictReader(io.StringIO(outcomes_csv.decode("utf-8")))
    return sum(int(r["error"]) for r in rows if r["benchmark"] != POOLED)


def _verify(args: argparse.Namespace) -> int:
    from pointfail.aggregate import AggregateError, verify
    from pointfail.commands._console import study_summary, wrap
    from pointfail.records import RecordError

    rc = 0
    try:
        studies = _studies(args.study)
    except AggregateError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    for s in studies:
        try:
            res = verify(s, checks=() if args.tables_only else None)
        except RecordError as e:
            print(f"FAIL {s}: record fails the schema: {e}")
            rc = 1
            continue
        except AggregateError as e:
            print(f"FAIL {s}: {e}")
            rc = 1
            continue
        if res.incomplete:
            print(wrap(f"INCOMPLETE {s}: {res.errors} sample(s) ended in an infrastructure error (counted as "
                       "non-hits; rerun them for final numbers)"))
        for line in res.not_checked:
            print(wrap(f"NOT CHECKED {s}: {line}"))
        if res.ok:
            print(f"OK {s}: every table matches its committed bytes and SHA256SUMS\n")
            print(study_summary(s / "tables") + "\n")  # the committed tables: byte for byte the regenerated ones
        else:
            rc = 1
            print(f"FAIL {s}: {len(res.problems)} problem(s)")
            for line in res.problems:
                print(f"  {line}")
            for name in sorted(res.diffs):
                print()
                sys.stdout.write(res.diffs[name])
    return rc


def _upgrade(args: argparse.Namespace) -> int:
    from pointfail.aggregate import AggregateError
    from pointfail.integrity import UpgradeError, upgrade_study
    from pointfail.records import RecordError

    try:
        for s in _studies(args.study):
            done = upgrade_study(s)
            n = sum(done.values())
            print(f"{s}: upgraded {n} record(s) in {len(done)} file(s) to schema version 2" if done else
                  f"{s}: nothing to upgrade (every record is schema version 2)")
    except (RecordError, AggregateError, UpgradeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


def _report(args: argparse.Namespace) -> int:
    from pointfail.aggregate import AggregateError
    from pointfail.extras import require
    from pointfail.records import RecordError

    require("report", "the report")
    from pointfail.outputs.report import make_report

    try:
        written = make_report(args.study, args.out)
    except (RecordError, AggregateError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    for p in written:
        print(p)
    return 0
