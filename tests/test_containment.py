"""``benchmarks._common.Containment``: the containment rule of ``contained`` (a name from a benchmark's
metadata stays inside its dataset folder, every symlink resolved), answered with each folder resolved
and listed once; and the existence answers it gives from that listing.

The reference is the rule written out: ``(root / rel).resolve()`` must be inside ``root.resolve()``.
Every case is checked against it, on a tree with plain files, a folder, a link to a file inside, a
link to a file outside, a linked folder pointing outside, a link loop and a dangling link.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pointfail.inputs.benchmarks._common import Containment, contained

NAMES = [
    "a.png", "sub/b.png", "sub", "missing.png", "sub/missing.png", "nowhere/x.png",
    "in_link.png", "out_link.png", "out_dir/secret.txt", "out_dir", "loop.png", "dangling.png",
    "sub/../a.png", "./a.png", "", "/etc/passwd", "a\\b.png", "sub//b.png", "a\x00.png",
]


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("decoy")
    root = tmp_path / "root" / "data" / "test"
    (root / "sub").mkdir(parents=True)
    (root / "a.png").write_bytes(b"a")
    (root / "sub" / "b.png").write_bytes(b"b")
    (root / "in_link.png").symlink_to(root / "a.png")
    (root / "out_link.png").symlink_to(outside / "secret.txt")
    (root / "out_dir").symlink_to(outside)
    (root / "loop.png").symlink_to(root / "loop.png")
    (root / "dangling.png").symlink_to(root / "gone.png")
    return root


def _reference(root: Path, rel: str) -> Path | None:
    """The rule itself: a plain relative name whose fully resolved path is inside the resolved root."""
    if not rel or "\x00" in rel or "\\" in rel or rel.startswith("/") or any(
            part in ("", ".", "..") for part in rel.split("/")):
        return None
    try:
        q = (root / rel).resolve()
    except (OSError, RuntimeError):
        return None
    return root / rel if q.is_relative_to(root.resolve()) else None


@pytest.mark.parametrize("rel", NAMES)
def test_same_answer_as_the_rule(tree: Path, rel: str) -> None:
    c = Containment()
    want = _reference(tree, rel)
    assert c.contained(tree, rel) == want
    assert contained(tree, rel) == want
    if want is not None:
        assert c.is_file(want) == want.is_file()


def test_escapes_are_refused_and_inside_names_kept(tree: Path) -> None:
    c = Containment()
    assert c.contained(tree, "out_link.png") is None  # a link to a file outside
    assert c.contained(tree, "out_dir/secret.txt") is None  # a linked folder pointing outside
    assert c.contained(tree, "sub/../a.png") is None
    assert c.contained(tree, "in_link.png") == tree / "in_link.png"
    p = c.contained(tree, "sub/b.png")
    assert p == tree / "sub" / "b.png" and c.is_file(p)
    absent = c.contained(tree, "missing.png")
    assert absent == tree / "missing.png" and not c.is_file(absent)
    assert not c.is_file(c.contained(tree, "sub"))  # a folder is not a file


def test_each_folder_is_listed_once(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    calls: list[str] = []
    real = os.scandir

    def counting(path):  # type: ignore[no-untyped-def]
        calls.append(os.fspath(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", counting)
    c = Containment()
    for i in range(50):
        c.contained(tree, f"img_{i:03d}.png")
        c.contained(tree, f"sub/img_{i:03d}.png")
    assert sorted(calls) == sorted([os.fspath(tree.resolve()), os.fspath((tree / "sub").resolve())])


def test_integrity_finder_lists_each_folder_once_and_sees_past_a_link_loop(tree: Path) -> None:
    """verify's file lookup (``integrity.FileFinder``): found exactly where ``Path.is_file`` says, a link
    loop in the folder spoiling nothing, each file hashed once."""
    from pointfail.integrity import FileFinder
    from pointfail.records import sha256_file

    f = FileFinder([tree.parent, tree])
    for rel in ("a.png", "sub/b.png", "in_link.png", "loop.png", "dangling.png", "missing.png", "sub", "out_link.png"):
        want = next((r / rel for r in (tree.parent, tree) if (r / rel).is_file()), None)
        assert f.find(rel) == want, rel
    assert f.find(str(tree / "a.png")) == tree / "a.png"  # absolute paths as they are
    assert f.find("") is None
    assert f.sha256(tree / "a.png") == sha256_file(tree / "a.png")
    (tree / "a.png").write_bytes(b"changed")  # hashed once per finder: a scan sees one state of each file
    assert f.sha256(tree / "a.png") != sha256_file(tree / "a.png")
