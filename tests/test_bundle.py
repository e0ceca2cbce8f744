"""The archival bundle's image archive (:func:`pointfail_runner.bundle.save_images`) against a stand-in
engine that answers ``docker save`` with archives in the engine's layout: shared layers are stored
once, every image is saved by the id the bundle's index records, and a tag moved by another build
while the bundle is made is an error, never a silently different image."""

from __future__ import annotations

import gzip
import io
import json
import tarfile

import pytest

from pointfail_runner.bundle import BundleError, save_images


def _tar(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in files.items():
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            tar.addfile(ti, io.BytesIO(data))
    return buf.getvalue()


class FakeImage:
    def __init__(self, image_id: str, tags: list[str], layers: dict[str, bytes]):
        self.id, self.tags, self.layers = image_id, tags, layers
        self.saved_as: list[str] = []

    def save(self, named=False):
        assert isinstance(named, str) and named in self.tags  # the docker SDK raises otherwise
        self.saved_as.append(named)
        cfg = self.id.split(":")[1] + ".json"
        files = {cfg: b"{}", "manifest.json": json.dumps([{"Config": cfg, "RepoTags": [named],
                                                           "Layers": sorted(self.layers)}]).encode(),
                 "repositories": json.dumps({named.split(":")[0]: {named.split(":")[1]: "x"}}).encode()}
        data = _tar(files | self.layers)
        return iter([data[:100], data[100:]])


class FakeEngine:
    def __init__(self, *images: FakeImage):
        self.by_id = {i.id: i for i in images}
        self.images = self

    def get(self, ref: str) -> FakeImage:
        if ref not in self.by_id:
            raise LookupError(f"no such image: {ref}")  # docker.errors.ImageNotFound in the real SDK
        return self.by_id[ref]


def _read(path) -> dict[str, bytes]:
    with gzip.open(path) as gz, tarfile.open(fileobj=gz) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar if m.isfile()}  # type: ignore[union-attr]


def test_saves_each_image_by_id_and_stores_a_shared_layer_once(tmp_path):
    base = {"aaa/layer.tar": b"debian base layer"}
    center = FakeImage("sha256:c1", ["pointfail/center:cpu-k1", "pointfail/center:cpu"], base | {"ccc/layer.tar": b"center"})
    ocr = FakeImage("sha256:o1", ["pointfail/ocr:cpu-k2"], base | {"ooo/layer.tar": b"ocr"})
    out = tmp_path / "images.tar.gz"
    save_images(FakeEngine(center, ocr), [("pointfail/center:cpu-k1", "sha256:c1"), ("pointfail/ocr:cpu-k2", "sha256:o1")],
                out, log=lambda _: None)
    files = _read(out)
    assert center.saved_as == ["pointfail/center:cpu-k1"] and ocr.saved_as == ["pointfail/ocr:cpu-k2"]
    assert sorted(files) == ["aaa/layer.tar", "c1.json", "ccc/layer.tar", "manifest.json", "o1.json", "ooo/layer.tar",
                             "repositories"]
    assert files["aaa/layer.tar"] == b"debian base layer"
    manifest = json.loads(files["manifest.json"])
    assert [m["RepoTags"] for m in manifest] == [["pointfail/center:cpu-k1"], ["pointfail/ocr:cpu-k2"]]
    assert json.loads(files["repositories"]) == {"pointfail/center": {"cpu-k1": "x"}, "pointfail/ocr": {"cpu-k2": "x"}}


def test_a_tag_moved_or_pruned_meanwhile_is_an_error(tmp_path):
    # Another build on the same engine took the tag for a new image: the recorded id no longer has it.
    moved = FakeImage("sha256:c1", ["pointfail/center:cpu"], {"ccc/layer.tar": b"center"})
    with pytest.raises(BundleError, match=r"pointfail/center:cpu-k1 no longer names image sha256:c1.*run make bundle again"):
        save_images(FakeEngine(moved), [("pointfail/center:cpu-k1", "sha256:c1")], tmp_path / "a.tar.gz", log=lambda _: None)
    with pytest.raises(BundleError, match=r"no longer names image sha256:gone"):
        save_images(FakeEngine(moved), [("pointfail/ocr:cpu-k2", "sha256:gone")], tmp_path / "b.tar.gz", log=lambda _: None)
    assert moved.saved_as == []
