"""The examples in the public API's docstrings run (score_prediction's frame and box rules, the
geometry, the aggregate's folds and column formats): a docstring example that stopped being true
fails here."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "pointfail.scoring",
    "pointfail.metrics",
    "pointfail.tables",
    "pointfail.geometry.shapes",
    "pointfail.geometry.boxrule",
    "pointfail.geometry.masks",
    "pointfail.aggregate.rows",
    "pointfail.aggregate.counting",
    "pointfail.aggregate.breakdowns",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{name} has no docstring example"
    assert result.failed == 0
