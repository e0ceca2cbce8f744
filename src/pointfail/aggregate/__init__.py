"""Aggregate a study's per-sample records into canonical tables, and verify committed tables.

``records/<study>/<model>/<benchmark>.jsonl`` (:func:`pointfail.records.records_files`) →
``records/<study>/tables/``:

========================== ==========================================================================
``headline.{md,csv}``      hit rate (%) per model × benchmark and pooled, with bootstrap 95% CI
``outcomes.{md,csv}``      n, hit, miss, no_prediction, error, hit rate, CI per model × benchmark/pooled
``failure_composition.*``  the four failure-mode counts and shares over labeled misses; unlabeled,
                           judge_unavailable and pending counted apart
``breakdowns.{md,csv}``    hit rate by every metadata axis of each benchmark and by target-area quartile
``pointing.{md,csv}``      grounding-metrics ``pointing_accuracy`` (point tasks)
``tolerance.{md,csv}``     hits if a point within t px counted, t = 0..50
``box_outcomes.*``         PointerBench box classes (box tasks only)
``grounding.{md,csv}``     IoU sweep 0.25/0.5/0.75/0.9 for box tasks, absent referents apart
``absent.{md,csv}``        absent referents (targets of kind ``absent``)
``official.{md,csv}``      the benchmark's official-rule score beside pointfail's hit rate
                           (``official_diagnostic.*``: where they differ; ``official_screenspot_pro.*``:
                           ScreenSpot-Pro's official report per group)
``pairwise.{md,csv}``      exact McNemar test and point agreement for every pair of models
``judge_agreement.*``      primary judge vs every other judge on the same misses (agreement, kappa, alpha)
``judge_validity.*``       per benchmark: the judge the failure composition rests on, and its agreement
                           with each person who labeled its misses (or that no human has)
``summary.json``           per model, benchmark and pooled counts and rates
``SHA256SUMS``             sha256 of every file above
========================== ==========================================================================

Files whose table would be empty (no box tasks, no absent targets, ...) are not written. Counting
rules: :mod:`pointfail.aggregate.counting`. Rates are exact fractions rounded once, half to even, to
the decimals each column states (:class:`pointfail.tables.Column`).

The package, one job per module:

* :mod:`~pointfail.aggregate.rows`: :class:`Row`, the fields of a record the tables read.
* :mod:`~pointfail.aggregate.counting`: the core streaming fold (:class:`Counts`: per-cell counts,
  bootstrap intervals, tolerance curves).
* :mod:`~pointfail.aggregate.registry`: the registry of table builders (a fold plus ``tables()``
  returning rows and column specs); the builders live in ``outcomes``, ``breakdowns``,
  ``distances``, ``boxes``, ``official``, ``pairwise`` and ``judges``.
* :mod:`~pointfail.aggregate.study`: finding studies and the one scan of a study's records.
* :mod:`~pointfail.aggregate.writing`: rendering (through :mod:`pointfail.tables`) and writing.
* :mod:`~pointfail.aggregate.verify`: byte-for-byte verification, extensible with record checks.

Bootstrap settings: ``[aggregate] bootstrap_seed`` and ``bootstrap_resamples`` in
``records/<study>/study.toml`` (defaults: :class:`pointfail.inputs.study.AggregateSpec`); both are printed in
the tables' notes and in ``summary.json``. ``[aggregate] notes`` (a list of strings) are added to every table's
notes and to ``summary.json``: what the records cover when that is not the whole benchmark
(``pointfail evaluate --only-predicted`` writes it).

Determinism: files are read in sorted path order and every fold is independent of the order of its
rows; every output row is sorted by explicit keys; bootstrap seeds derive from the study seed and the
cell's names through sha256; no output depends on locale, hash seed, time zone, directory order or
the order of lines in a records file.
"""

from __future__ import annotations

from pointfail.aggregate.breakdowns import area_quartiles
from pointfail.aggregate.counting import Cell, Counts, cell_keys
from pointfail.aggregate.registry import REGISTRY, TableBuilder, register
from pointfail.aggregate.rows import POOLED, Row, row_from_record
from pointfail.aggregate.study import (
    AggregateError,
    Study,
    find_studies,
    is_study_dir,
    load_study,
    studies_without_records,
)
from pointfail.aggregate.verify import CHECKS, VerifyResult, compare_tables, verify
from pointfail.aggregate.writing import TABLES_DIR, aggregate, build_tables, write_tables

__all__ = [
    "CHECKS",
    "POOLED",
    "REGISTRY",
    "TABLES_DIR",
    "AggregateError",
    "Cell",
    "Counts",
    "Row",
    "Study",
    "TableBuilder",
    "VerifyResult",
    "aggregate",
    "area_quartiles",
    "build_tables",
    "cell_keys",
    "compare_tables",
    "find_studies",
    "is_study_dir",
    "load_study",
    "register",
    "row_from_record",
    "studies_without_records",
    "verify",
    "write_tables",
]
