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

__all__ = ["BUILDER_MODULES", "ERROR_NOTE", "REGISTRY", "TableBuilder", "builders", "register"]

BUILDER_MODULES: tuple[str, ...] = (
    "pointfail.aggregate.outcomes",
    "pointfail.aggregate.breakdowns",
    "pointfail.aggregate.distances",
    "pointfail.aggregate.boxes",
    "pointfail.aggregate.official",
    "pointfail.aggregate.pairwise",
    "pointfail.aggregate.judges",
)
"""Modules whose builders are registered when they are imported (in this order)."""

ERROR_NOTE = (
    "n = hit + miss + no_prediction (every scored sample); infrastructure errors (outcome `error`) "
    "are counted apart in `error` and excluded from n and from every rate."
)
"""The note every table with an ``n`` carries."""


class TableBuilder:
    """Base class of table builders (see the module docstring)."""

    name: ClassVar[str] = ""

    def add(self, row: Row, sample: int) -> None:
        """Fold one row; ``sample`` is the row's dense index among its benchmark's samples
        (``study.counts.samples[row.benchmark]``, shared by every model), for folds that match
        samples across models. The base class does nothing: a builder that reads only
        ``study.counts`` does not override it, and then is not called per row at all."""

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


def needs_rows(builder: TableBuilder) -> bool:
    """Whether a builder overrides :meth:`TableBuilder.add` (and so must see every row)."""
    return type(builder).add is not TableBuilder.add
