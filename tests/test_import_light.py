"""``import pointfail`` (and the scoring path) must not pull in heavy or optional packages."""

from __future__ import annotations

import json
import os
import subprocess
import sys

HEAVY = ("torch", "transformers", "docker", "ollama")


def _loaded_after(code: str) -> list[str]:
    probe = (
        "import json, sys\n"
        f"{code}\n"
        f"heavy = {HEAVY!r}\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in heavy)))\n"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_probe_detects_a_heavy_import():
    # the probe itself works: importing one of the packages is seen
    assert "docker" in _loaded_after("import docker")


def test_import_pointfail_is_light():
    assert _loaded_after("import pointfail") == []


def test_scoring_path_is_light():
    code = (
        "import pointfail\n"
        "from pointfail import scorePrediction, score_prediction\n"
        "import pointfail.geometry, pointfail.scoring, pointfail.commands.score\n"
        "r = score_prediction('molmo', '<point x=\"5\" y=\"5\">a</point>', image_size=(10, 10), box=[0, 0, 10, 10])\n"
        "assert r.outcome == 'hit'\n"
    )
    assert _loaded_after(code) == []


def test_every_public_name_resolves_lazily_and_light():
    """Each name in ``pointfail.__all__`` resolves to the object of the module it names, and
    resolving all of them still imports no heavy package."""
    code = (
        "import importlib, pointfail\n"
        "names = [n for n in pointfail.__all__ if n != '__version__']\n"
        "expected = {'load_benchmark': ('pointfail.inputs.benchmarks', 'load'),\n"
        "            'build_prompt': ('pointfail.prompts', 'build_prompt'),\n"
        "            'strip_directives': ('pointfail.prompts', 'strip_directives'),\n"
        "            'TargetRegion': ('pointfail.geometry', 'TargetRegion'),\n"
        "            'load_mask': ('pointfail.geometry', 'load_mask'),\n"
        "            'build_record': ('pointfail.scoring', 'build_record'),\n"
        "            'frame_compliance': ('pointfail.scoring', 'frame_compliance')}\n"
        "assert set(expected) <= set(names), sorted(set(expected) - set(names))\n"
        "for n in names:\n"
        "    mod, attr = pointfail._EXPORTS[n].split(':')\n"
        "    assert getattr(pointfail, n) is getattr(importlib.import_module(mod), attr), n\n"
        "for n, (mod, attr) in expected.items():\n"
        "    assert getattr(pointfail, n) is getattr(importlib.import_module(mod), attr), n\n"
        "assert pointfail.strip_directives('<image>\\nPoint to the cup.') == ('Point to the cup.', ['image_placeholder'])\n"
        "from pointfail import load_benchmark, frame_compliance\n"
        "assert load_benchmark.__name__ == 'load' and frame_compliance.__module__ == 'pointfail.scoring'\n"
        "try:\n"
        "    pointfail.no_such_name\n"
        "except AttributeError:\n"
        "    pass\n"
        "else:\n"
        "    raise AssertionError('unknown names must raise AttributeError')\n"
    )
    assert _loaded_after(code) == []


def test_lazy_names_are_not_imported_before_use():
    code = (
        "import sys, pointfail\n"
        "assert 'pointfail.scoring' not in sys.modules and 'pointfail.inputs.benchmarks' not in sys.modules\n"
        "pointfail.load_benchmark\n"
        "assert 'pointfail.inputs.benchmarks' in sys.modules\n"
    )
    assert _loaded_after(code) == []


def test_score_command_for_a_box_imports_no_numpy():
    """``pointfail score`` against a box target runs without numpy (and OpenBLAS's threads): the mask
    machinery is imported only for mask and polygon targets (issue 30); a mask target still loads it."""
    probe = (
        "import json, sys\n"
        "from pointfail.cli import main\n"
        "rc = main(['score', '--family', 'molmo', '--image-size', '1024', '768', '--box', '100', '100', '200', '200',\n"
        "           '--text', '<point x=\"14.6\" y=\"19.5\" alt=\"x\">x</point>'])\n"
        "print(json.dumps([rc, sorted(m for m in sys.modules if m.split('.')[0] == 'numpy')[:1]]))\n"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert json.loads(lines[0])["outcome"] == "hit"
    assert json.loads(lines[-1]) == [0, []]
    mask = _loaded_numpy_after("from pointfail.geometry import TargetRegion\n"
                               "TargetRegion.from_mask_array([[True, False]])\n")
    assert mask == ["numpy"]


def _loaded_numpy_after(code: str) -> list[str]:
    probe = f"import json, sys\n{code}\nprint(json.dumps(sorted(m for m in sys.modules if m == 'numpy')))\n"
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])
