"""The registry of table builders.

A table builder is a class with a ``name``, an optional :meth:`TableBuilder.add` (a fold over rows,
for tables that need more than the per-cell counts) and :meth:`TableBuilder.tables`, which returns
:class:`pointfail.tables.Table` objects (rows of exact values and column specs) or
:class:`pointfail.tables.JsonDocument` objects; rendering to Markdown, CSV and JSON bytes happens in
:mod:`pointfail.tables`, never in a builder.

To add a table, write a builder class in one of the modules of :data:`BUILDER_MODULES` (or a new
module listed there) and decorate it with :func:`register`::

    @register
    class Coverage(TableBuilder):
        name = "coverage"

        def add(self, row: Row, sample: int) -> None: ...      # optional

        def tables(self, study: Study) -> list[Output]:
            return [Table("coverage", f"Coverage: {study.name}", notes, columns, rows)]

Each study gets fresh builder instances (:func:`builders`), so a builder may keep state in ``self``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, ClassVar, TypeVar

from pointfail.aggregate.rows import Row
from pointfail.tables import Output

if TYPE_CHECKING:
    from pointfail.aggregate.study import Study
    from pointfail.records import Record

__all__ = ["ANSWER_FORM_NOTE", "BUILDER_MODULES", "ERROR_NOTE", "REGISTRY", "TableBuilder", "builders",
           "incomplete_note", "register"]

BUILDER_MODULES: tuple[str, ...] = (
    "pointfail.aggregate.outcomes",
    "pointfail.aggregate.compliance",
    "pointfail.aggregate.breakdowns",
    "pointfail.aggregate.distances",
    "pointfail.aggregate.boxes",
    "pointfail.aggregate.official",
    "pointfail.aggregate.pairwise",
    "pointfail.aggregate.judges",
)
"""Modules whose builders are registered when they are imported (in this order)."""

ERROR_NOTE = (
    "n = every sample whose referent is present: hit + miss + no_prediction + error. Infrastructure errors "
    "(outcome `error`: the sample never reached the model or could not be scored) count as non-hits, as the "
    "source study divides by all samples, and are shown in their own `error` column; a study with errors is "
    "incomplete. Samples whose referent is absent are counted apart (absent.md), in no hit rate."
)
"""The note every table with an ``n`` carries."""

ANSWER_FORM_NOTE = (
    "Answer-form rule, the same in every table: a point answer to a box task is an answered, wrong box "
    "(a miss; box class `malformed`, IoU 0; never a decline, never given a failure mode: counted in "
    "`malformed_box`); a box answer to a point task is scored by its centre."
)
"""The one rule for an answer in the other task's form, written in the notes of every table it affects."""


def incomplete_note(errors: int) -> str:
    """The note a table of a study with infrastructure errors carries (``errors`` > 0)."""
    return (f"INCOMPLETE STUDY: {errors} sample(s) ended in an infrastructure error (outcome `error`); they count "
            "as non-hits, and the numbers are final only once they are rerun.")


class TableBuilder:
    """Base class of table builders (see the module docstring). ``absent_rows``: the builder also
    sees the rows of absent referents (every other builder, and the per-cell counts, see only rows
    whose referent is present)."""

    name: ClassVar[str] = ""
    absent_rows: ClassVar[bool] = False

    def add(self, row: Row, sample: int) -> None:
        """Fold one row; ``sample`` is the row's dense index among its benchmark's samples
        (``study.counts.samples[row.benchmark]``, shared by every model), for folds that match
        samples across models. The base class does nothing: a builder that reads only
        ``study.counts`` does not override it, and then is not called per row at all."""

    def observe(self, record: "Record") -> None:
        """Fold one full record, for the few tables that need more than a :class:`Row` (the
        frame-compliance diagnostic re-reads the raw reply). The base class does nothing, and a
        builder that does not override it is never called per record."""

    def tables(self, study: "Study") -> list[Output]:
        """The tables of a study whose rows were all added; an empty list writes no file.

        Raises:
            NotImplementedError: in the base class.
        """
        raise NotImplementedError


REGISTRY: dict[str, type[TableBuilder]] = {}
"""Registered builder classes by name, in registration order."""

B = TypeVar("B", bound=type[TableBuilder])


def register(cls: B) -> B:
    """Class decorator: add a builder class to :data:`REGISTRY`.

    Raises:
        ValueError: a builder without a name, or a second builder with the same name.
    """
    if not cls.name:
        raise ValueError(f"{cls.__name__}: a table builder needs a name")
    if REGISTRY.get(cls.name, cls) is not cls:
        raise ValueError(f"two table builders named {cls.name!r}")
    REGISTRY[cls.name] = cls
    return cls


def builders() -> list[TableBuilder]:
    """Fresh instances of every registered builder (importing :data:`BUILDER_MODULES` first)."""
    for mod in BUILDER_MODULES:
        importlib.import_module(mod)
    return [cls() for cls in REGISTRY.values()]


def needs_records(builder: TableBuilder) -> bool:
    """Whether a builder overrides :meth:`TableBuilder.observe` (and so must see every record)."""
    return type(builder).observe is not TableBuilder.observe


def needs_rows(builder: TableBuilder) -> bool:
    """Whether a builder overrides :meth:`TableBuilder.add` (and so must see every row)."""
    return type(builder).add is not TableBuilder.add
