"""flake.nix parses with Nix's own parser (Debian's nix-bin provides nix-instantiate)."""

import shutil
import subprocess
from pathlib import Path

import pytest

FLAKE = Path(__file__).resolve().parents[1] / "flake.nix"


@pytest.mark.skipif(shutil.which("nix-instantiate") is None, reason="nix-instantiate not installed (apt-get install nix-bin)")
def test_flake_parses():
    out = subprocess.run(["nix-instantiate", "--parse", str(FLAKE)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    # the parsed expression names both outputs the artifact promises
    assert "scorer-image" in out.stdout and "devShells" in out.stdout


def test_flake_pins_nixpkgs_by_commit_with_a_lock_and_builds_scorer_without_torch():
    import json
    import re

    text = FLAKE.read_text()
    m = re.search(r'inputs\.nixpkgs\.url = "github:NixOS/nixpkgs/([0-9a-f]{40})";', text)
    assert m, "nixpkgs must be pinned by a 40-hex commit, not a branch"
    lock = json.loads((FLAKE.parent / "flake.lock").read_text())
    assert lock["version"] == 7 and lock["root"] == "root"
    assert lock["nodes"]["root"]["inputs"] == {"nixpkgs": "nixpkgs"}
    node = lock["nodes"]["nixpkgs"]
    assert node["original"] == {"owner": "NixOS", "repo": "nixpkgs", "rev": m.group(1), "type": "github"}
    assert node["locked"]["rev"] == m.group(1) and node["locked"]["type"] == "github"
    assert re.fullmatch(r"sha256-[A-Za-z0-9+/]{43}=", node["locked"]["narHash"])
    assert "dockerTools.buildLayeredImage" in text
    code = [line.split("#")[0] for line in text.splitlines()]
    assert not any("torch" in line for line in code)
