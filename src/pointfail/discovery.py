"""Extension discovery: one rule for every registry that is "a file in a folder" (model families in
:mod:`pointfail.families`, judge kinds in :mod:`pointfail.running.judges.kinds`, benchmarks in :mod:`pointfail.inputs.benchmarks`).

A registry package's modules are imported in name order, skipping names that start with ``_``; each
module that holds an instance of the registry's class under the agreed attribute (``FAMILY``, ``KIND``, ``BENCHMARK``)
adds it under its ``name``; a tuple of instances there (one module declaring several, as
PointerBench's three subsets) adds each, in order.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from typing import Callable, Generic, Iterable, Optional, TypeVar

__all__ = ["Registry", "discover"]

T = TypeVar("T")


def discover(package: str, path: Iterable[str], attr: str, cls: type[T], *, unique: bool = False) -> dict[str, T]:
    """Every ``cls`` instance found as ``module.<attr>`` (or in a tuple there) in the modules of
    ``package`` (whose ``__path__`` is ``path``), keyed by its ``name`` attribute, in module-name order.

    Raises:
        RuntimeError: with ``unique``, two modules declare the same name (without it the later module
            in name order wins).
    """
    found: dict[str, T] = {}
    for info in sorted(pkgutil.iter_modules(list(path)), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        obj = getattr(importlib.import_module(f"{package}.{info.name}"), attr, None)
        for one in (obj if isinstance(obj, tuple) else (obj,)):
            if isinstance(one, cls):
                name = getattr(one, "name")
                if unique and name in found:
                    raise RuntimeError(f"two {attr.lower()} declarations are named {name!r} in {package}")
                found[name] = one
    return found


class Registry(Generic[T]):
    """A registry package's declarations, discovered on first use (:func:`discover` over the package's
    ``__path__`` as it is then, so a test that extends ``__path__`` and calls :meth:`refresh` sees its
    throwaway module) and kept until :meth:`refresh`. ``loaded`` is called once with each new
    discovery (the benchmarks hand their rules to :mod:`pointfail.official` so)."""

    def __init__(self, package: str, attr: str, cls: type[T], *, unique: bool = False,
                 loaded: Optional[Callable[[dict[str, T]], None]] = None) -> None:
        self.package, self.attr, self.cls, self.unique, self.loaded = package, attr, cls, unique, loaded
        self._found: Optional[dict[str, T]] = None

    def get(self) -> dict[str, T]:
        """Every declaration by name (:func:`discover`; raises what it raises)."""
        if self._found is None:
            found = discover(self.package, sys.modules[self.package].__path__, self.attr, self.cls,
                             unique=self.unique)
            if self.loaded is not None:
                self.loaded(found)
            self._found = found
        return self._found

    def refresh(self) -> None:
        """Forget what was discovered: the next :meth:`get` scans the package again."""
        self._found = None
