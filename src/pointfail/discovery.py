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
from typing import Iterable, TypeVar

__all__ = ["discover"]

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
