"""Resolving a name enters one module (issue 29 item 4), and the keys that make it so cannot drift
from full discovery (pointfail.discovery)."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest

from pointfail.discovery import declared_in

REGISTRIES = [
    ("pointfail.families", "FAMILY", "pointfail.families:Family"),
    ("pointfail.running.judges.kinds", "KIND", "pointfail.running.judges.kinds:JudgeKind"),
    ("pointfail.inputs.benchmarks", "BENCHMARK", "pointfail.inputs.benchmarks._spec:Benchmark"),
    ("pointfail_runner.executors", "EXECUTOR", "pointfail_runner.executors:Executor"),
]


def _cls(spec: str) -> type:
    module, name = spec.split(":")
    return getattr(importlib.import_module(module), name)


def _registry(package: str):
    pkg = importlib.import_module(package)
    return next(v for v in vars(pkg).values() if type(v).__name__ == "Registry")


@pytest.mark.parametrize("package,attr,cls", REGISTRIES)
def test_keys_agree_with_full_discovery(package: str, attr: str, cls: str) -> None:
    """Every shipped module declares what its key says: the names in the index, else its own file
    name; and the look-up of every discovered name returns the object full discovery found."""
    reg = _registry(package)
    for module in reg.module_names():
        names = tuple(one.name for one in declared_in(package, module, attr, _cls(cls)))
        if reg.index is not None:
            assert module in reg.index, f"{package}.{module} is missing from the index"
            assert reg.index[module] == names, module
        else:
            assert names in ((module,), ()), f"{package}.{module} declares {names}, not its file name"
    if reg.index is not None:
        assert set(reg.index) <= set(reg.module_names()), "the index lists a module that does not exist"
    everything = reg.get()
    reg.refresh()
    try:
        for name, obj in everything.items():
            assert reg.lookup(name) is obj
        assert reg.lookup("no-such-name-anywhere") is None
    finally:
        reg.refresh()


def _modules_entered(code: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys, json\n"
                          "print(json.dumps(sorted(m for m in sys.modules if m.startswith('pointfail'))))"],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.splitlines()[-1])


def test_a_family_name_enters_its_module_only() -> None:
    mods = _modules_entered("from pointfail.families import get_family; get_family('Qwen2.5-VL')")
    fams = [m for m in mods if m.startswith("pointfail.families.") and not m.rsplit(".", 1)[1].startswith("_")]
    assert fams == ["pointfail.families.qwen2_5_vl"]


def test_a_benchmark_name_enters_its_module_only() -> None:
    mods = _modules_entered("from pointfail.inputs.benchmarks import rule_of; rule_of('screenspot-pro'); "
                            "rule_of('sheets')")
    alone = _modules_entered("import pointfail.inputs.benchmarks.screenspot_pro")  # and what it imports itself
    assert "pointfail.inputs.benchmarks.screenspot_pro" in mods
    assert [m for m in mods if m.startswith("pointfail.inputs.benchmarks.") and m not in alone] == []
    assert "pointfail.inputs.benchmarks.pointerbench" not in mods


def test_a_judge_kind_enters_its_module_only() -> None:
    mods = _modules_entered("from pointfail.running.judges.kinds import get_kind; get_kind('oracle')")
    found = [m for m in mods if m.startswith("pointfail.running.judges.kinds.")]
    assert found == ["pointfail.running.judges.kinds.oracle"]


def test_checkpoint_ids_and_unknown_names_still_resolve_by_full_discovery() -> None:
    from pointfail.families import get_family

    assert get_family("Qwen/Qwen2.5-VL-3B-Instruct").name == "qwen2_5_vl"
    with pytest.raises(KeyError, match="known families: center"):
        get_family("no-such-family")
