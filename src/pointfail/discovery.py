"""Extension discovery: one rule for every registry that is "a file in a folder" (model families in
:mod:`pointfail.families`, judge kinds in :mod:`pointfail.running.judges.kinds`, benchmarks in
:mod:`pointfail.inputs.benchmarks`, the runner's executors).

A registry package's modules are imported in name order, skipping names that start with ``_``; each
module that holds an instance of the registry's class under the agreed attribute (``FAMILY``, ``KIND``,
``BENCHMARK``) adds it under its ``name``; a tuple of instances there (one module declaring several, as
PointerBench's three subsets) adds each, in order.

Resolving one name imports one module (issue 29 item 4), by one of two keys:

* the **file name** (the default): the declaration called ``name`` lives in ``<name>.py``; the shipped
  modules keep to it (``tests/test_discovery.py`` checks each against full discovery). A name no file is
  called after is looked up by full discovery (an extension whose file is named otherwise is still
  found: nothing to edit).
* a **static index** (``index=``, module name -> the names it declares) where one module declares names
  unlike its file's (benchmarks: ``pointerbench.py`` declares ``pointerbench-sheets``, ``suite``, ...).
  A module that the index does not list (an extension written to a new file) is imported on every
  look-up, so it is found with no list edited; ``tests/test_discovery.py`` checks that the index says
  exactly what full discovery finds, so it cannot drift.

Listing every declaration (:meth:`Registry.get`) still imports every module.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from collections.abc import Iterable, Mapping
from typing import Callable, Generic, Optional, TypeVar

__all__ = ["Registry", "discover", "declared_in"]

T = TypeVar("T")


def declared_in(package: str, module: str, attr: str, cls: type[T]) -> list[T]:
    """The ``cls`` instances module ``package.module`` declares under ``attr`` (one, or each of a
    tuple), in order; imports that module (and only it, beside what it imports itself)."""
    obj = getattr(importlib.import_module(f"{package}.{module}"), attr, None)
    return [one for one in (obj if isinstance(obj, tuple) else (obj,)) if isinstance(one, cls)]


def _modules(path: Iterable[str]) -> list[str]:
    """The module names of a package folder list (no import: a directory listing), sorted, without
    those starting with ``_``."""
    return sorted({m.name for m in pkgutil.iter_modules(list(path)) if not m.name.startswith("_")})


def discover(package: str, path: Iterable[str], attr: str, cls: type[T], *, unique: bool = False) -> dict[str, T]:
    """Every ``cls`` instance found as ``module.<attr>`` (or in a tuple there) in the modules of
    ``package`` (whose ``__path__`` is ``path``), keyed by its ``name`` attribute, in module-name order.

    Raises:
        RuntimeError: with ``unique``, two modules declare the same name (without it the later module
            in name order wins).
    """
    found: dict[str, T] = {}
    for module in _modules(path):
        for one in declared_in(package, module, attr, cls):
            name = getattr(one, "name")
            if unique and name in found:
                raise RuntimeError(f"two {attr.lower()} declarations are named {name!r} in {package}")
            found[name] = one
    return found


class Registry(Generic[T]):
    """A registry package's declarations: all of them discovered on first :meth:`get` (:func:`discover`
    over the package's ``__path__`` as it is then, so a test that extends ``__path__`` and calls
    :meth:`refresh` sees its throwaway module) and kept until :meth:`refresh`; one of them by name with
    :meth:`lookup`, which imports only the module that declares it (module docstring: the file name or
    ``index`` is the key). ``loaded`` is called once before the first :meth:`get` or :meth:`lookup`
    answers (again after :meth:`refresh`; the benchmarks hand their rules to :mod:`pointfail.official`
    so)."""

    def __init__(self, package: str, attr: str, cls: type[T], *, unique: bool = False,
                 loaded: Optional[Callable[[], None]] = None,
                 index: Optional[Mapping[str, tuple[str, ...]]] = None) -> None:
        self.package, self.attr, self.cls, self.unique, self.loaded = package, attr, cls, unique, loaded
        self.index = index
        self._found: Optional[dict[str, T]] = None
        self._one: dict[str, Optional[T]] = {}
        self._listed: Optional[list[str]] = None
        self._hooked = False

    def _hook(self) -> None:
        if not self._hooked:
            self._hooked = True
            if self.loaded is not None:
                self.loaded()

    def _path(self) -> list[str]:
        return list(sys.modules[self.package].__path__)

    def get(self) -> dict[str, T]:
        """Every declaration by name (:func:`discover`; raises what it raises)."""
        if self._found is None:
            self._found = discover(self.package, self._path(), self.attr, self.cls, unique=self.unique)
        self._hook()
        return self._found

    def module_names(self) -> list[str]:
        """The package's module names (a directory listing of its ``__path__`` on first use, kept until
        :meth:`refresh`; nothing imported), sorted, without those starting with ``_``."""
        if self._listed is None:
            self._listed = _modules(self._path())
        return self._listed

    def _candidates(self, name: str) -> list[str]:
        """The modules that may declare ``name``: by the index (and every module it does not list),
        else the module of that file name."""
        modules = self.module_names()
        if self.index is None:
            return [name] if name in modules else []
        return [m for m in modules if m not in self.index or name in self.index[m]]

    def lookup(self, name: str) -> Optional[T]:
        """The declaration called ``name``, or ``None`` when no module declares it; imports only the
        module(s) that may declare it (:meth:`_candidates`), and falls back to full discovery (:meth:`get`)
        for a name no file is called after when there is no index.

        Raises:
            RuntimeError: with ``unique``, two modules declare ``name``.
        """
        if self._found is not None:
            self._hook()
            return self._found.get(name)
        if name not in self._one:
            hits = [one for m in self._candidates(name)
                    for one in declared_in(self.package, m, self.attr, self.cls) if getattr(one, "name") == name]
            if self.unique and len(hits) > 1:
                raise RuntimeError(f"two {self.attr.lower()} declarations are named {name!r} in {self.package}")
            if not hits and self.index is None:
                return self.get().get(name)
            self._one[name] = hits[-1] if hits else None  # the later module wins, as in discover
        self._hook()
        return self._one[name]

    def refresh(self) -> None:
        """Forget what was discovered: the next :meth:`get` or :meth:`lookup` scans the package again."""
        self._found = None
        self._one = {}
        self._listed = None
        self._hooked = False
