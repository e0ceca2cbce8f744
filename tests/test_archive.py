"""The safe zip reader/unpacker (pointfail.inputs.benchmarks.archive): every rule refuses with one line, and
UTF-8 names stored without the zip's UTF-8 flag are read as UTF-8."""

from __future__ import annotations

import json
import unicodedata
import zipfile
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from pointfail.inputs.benchmarks.archive import CACHE_DIR, ArchiveError, archive_summary, read_members, unpack
from pointfail.generated.testing.standin import zip_bytes


def _zip(tmp_path: Path, members: dict[str, bytes], name: str = "a.zip", **kw) -> Path:
    p = tmp_path / name
    p.write_bytes(zip_bytes(members, **kw))
    return p


def test_flagless_utf8_name_is_read_as_utf8_and_a_flagged_one_too(tmp_path):
    nfd = unicodedata.normalize("NFD", "selected_images/affordable/café.png")
    p = _zip(tmp_path, {nfd: b"x", "selected_images/affordable/plain.png": b"yy"}, utf8_flag=False, folders=False)
    with zipfile.ZipFile(p) as zf:  # what Python's zipfile alone makes of it: cp437 mojibake
        raw = [i.filename for i in zf.infolist() if "caf" in i.filename][0]
    assert raw != nfd and raw == nfd.encode("utf-8").decode("cp437")
    members = {m.name: m for m in read_members(p)}
    nfc = unicodedata.normalize("NFC", nfd)
    assert sorted(members) == [nfc, "selected_images/affordable/plain.png"]
    assert members[nfc].encoding == "utf-8 (no flag)" and members[nfc].raw_name == raw and members[nfc].size == 1
    assert members["selected_images/affordable/plain.png"].encoding == "cp437"  # ASCII: the same either way
    flagged = _zip(tmp_path, {nfd: b"x"}, name="b.zip", folders=False)
    assert [(m.name, m.encoding) for m in read_members(flagged)] == [(nfc, "utf-8 (flag)")]


def test_a_flagless_name_that_is_not_utf8_stays_cp437(tmp_path):
    p = tmp_path / "c.zip"
    with zipfile.ZipFile(p, "w") as zf:
        info = zipfile.ZipInfo("x")
        zf.writestr(info, b"1")
    data = p.read_bytes().replace(b"x", b"\x82", )  # the name's one byte (stored twice): é in cp437, not UTF-8
    # the file body "1" and the name "x" are the only "x" bytes; CRC covers the body only
    p.write_bytes(data)
    assert [(m.name, m.encoding) for m in read_members(p)] == [("é", "cp437")]


@pytest.mark.parametrize("name, why", [
    ("../evil.png", "'..' component"),
    ("selected_images/../../evil.png", "'..' component"),
    ("/etc/evil.png", "absolute name"),
    ("C:evil.png", "absolute name"),
    ("a\\..\\evil.png", "backslash"),
    ("a//b.png", "empty component"),
    ("./a.png", "'.' component"),
])
def test_unsafe_names_are_refused_with_one_line(tmp_path, name, why):
    p = _zip(tmp_path, {name: b"x", "ok.png": b"y"}, folders=False)
    with pytest.raises(ArchiveError) as e:
        read_members(p)
    msg = str(e.value)
    assert "\n" not in msg and str(p) in msg and why in msg and "refused" in msg
    with pytest.raises(ArchiveError):
        unpack(p)
    assert not (tmp_path / CACHE_DIR / "a.zip").exists() and not (tmp_path / "evil.png").exists()


@pytest.mark.parametrize("mode, why", [(0o120777, "symbolic link"), (0o020644, "character device"),
                                       (0o060644, "block device"), (0o010644, "FIFO"), (0o140644, "socket")])
def test_links_and_devices_are_refused(tmp_path, mode, why):
    p = _zip(tmp_path, {"link.png": b"/etc/passwd"}, folders=False, modes={"link.png": mode})
    with pytest.raises(ArchiveError, match=why):
        read_members(p)


def test_sizes_past_the_caps_are_refused(tmp_path):
    p = _zip(tmp_path, {"a.bin": b"x" * 100, "b.bin": b"y" * 100}, folders=False)
    with pytest.raises(ArchiveError, match="100 bytes uncompressed, more than the cap of 99"):
        read_members(p, max_member_bytes=99)
    with pytest.raises(ArchiveError, match="more than 150 bytes uncompressed in all"):
        read_members(p, max_total_bytes=150)
    with pytest.raises(ArchiveError, match="2 members, more than the cap of 1"):
        read_members(p, max_members=1)
    assert [m.size for m in read_members(p, max_member_bytes=100, max_total_bytes=200)] == [100, 100]


def test_a_member_that_lies_about_its_size_is_refused_when_unpacked(tmp_path):
    """The declared size passes the cap; the bytes read are counted too (zipfile's CRC/size check
    refuses the lie), and nothing is left in the cache."""
    p = _zip(tmp_path, {"a.bin": b"z" * 1000}, folders=False)
    data = bytearray(p.read_bytes())
    # lower the declared uncompressed size (local header offset 22, central directory +24)
    cd = data.rfind(b"PK\x01\x02")
    for off in (22, cd + 24):
        data[off:off + 4] = (10).to_bytes(4, "little")
    p.write_bytes(bytes(data))
    assert [m.size for m in read_members(p)] == [10]
    with pytest.raises(ArchiveError, match="a.bin"):
        unpack(p)
    assert not (tmp_path / CACHE_DIR / "a.zip").exists()
    assert [q.name for q in (tmp_path / CACHE_DIR).iterdir()] == []


def test_names_that_collide_after_decoding_are_refused(tmp_path):
    nfc = unicodedata.normalize("NFC", "m/café.png")
    nfd = unicodedata.normalize("NFD", "m/café.png")
    p = _zip(tmp_path, {nfc: b"1", nfd: b"2"}, name="c.zip", folders=False, flagless=(nfd,))
    with zipfile.ZipFile(p) as zf:
        assert len({i.filename for i in zf.infolist()}) == 2  # distinct to zipfile
    with pytest.raises(ArchiveError, match="collides with member"):
        read_members(p)
    q = _zip(tmp_path, {"a": b"1", "a/b.png": b"2"}, name="d.zip", folders=False)
    with pytest.raises(ArchiveError, match="is a file in the archive, not a folder"):
        read_members(q)


def test_unpack_writes_a_cache_beside_the_archive_and_reuses_it(tmp_path):
    nfd = unicodedata.normalize("NFD", "selected_masks/counting/café_mask.png")
    p = _zip(tmp_path, {nfd: b"mask", "selected_masks/spatial/s.png": b"s"}, utf8_flag=False)
    out = unpack(p)
    assert out == tmp_path / CACHE_DIR / "a.zip"
    nfc = unicodedata.normalize("NFC", nfd)
    assert (out / nfc).read_bytes() == b"mask" and (out / "selected_masks/spatial/s.png").read_bytes() == b"s"
    marker = json.loads((tmp_path / CACHE_DIR / "a.zip.json").read_text(encoding="utf-8"))
    summary = archive_summary(p)
    assert marker["archive_sha256"] == summary["sha256"] and marker["members"] == summary["members"] == sorted(
        [nfc, "selected_masks/spatial/s.png"])
    mtime = (out / nfc).stat().st_mtime_ns
    assert unpack(p) == out and (out / nfc).stat().st_mtime_ns == mtime  # reused, not rewritten
    # a changed archive is unpacked afresh; a file deleted from the cache is restored
    p.write_bytes(zip_bytes({"selected_masks/spatial/s.png": b"new"}))
    assert (unpack(p) / "selected_masks/spatial/s.png").read_bytes() == b"new" and not (out / nfc).exists()
    (out / "selected_masks/spatial/s.png").unlink()
    assert (unpack(p) / "selected_masks/spatial/s.png").read_bytes() == b"new"


def test_a_symlinked_cache_is_refused(tmp_path):
    p = _zip(tmp_path, {"x.png": b"1"})
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / CACHE_DIR).symlink_to(tmp_path / "elsewhere")
    with pytest.raises(ArchiveError, match="symlink"):
        unpack(p)
    assert list((tmp_path / "elsewhere").iterdir()) == []


def test_not_a_zip_is_one_line(tmp_path):
    p = tmp_path / "selected_images.zip"
    p.write_bytes(b"version https://git-lfs.github.com/spec/v1\n")  # an LFS pointer, not the archive
    with pytest.raises(ArchiveError, match="not a readable zip archive") as e:
        read_members(p)
    assert "\n" not in str(e.value)


_part = st.text(st.characters(codec="utf-8", exclude_characters="/\\\x00"), min_size=1, max_size=8)


@settings(max_examples=60, deadline=None)
@given(parts=st.lists(st.one_of(_part, st.sampled_from(["..", ".", ""])), min_size=1, max_size=4),
       flag=st.booleans())
def test_every_accepted_name_stays_inside_the_cache(tmp_path_factory, parts, flag):
    """Whatever the name, either the archive is refused or every member lands inside the cache."""
    tmp = tmp_path_factory.mktemp("z")
    name = "/".join(parts)
    try:
        p = _zip(tmp, {name: b"1"}, utf8_flag=flag, folders=False)
    except (ValueError, UnicodeEncodeError):
        return
    try:
        out = unpack(p)
    except ArchiveError as e:
        assert "\n" not in str(e)
        return
    root = out.resolve()
    files = [q for q in out.rglob("*") if q.is_file()]
    assert len(files) == (0 if name.endswith("/") else 1)  # a trailing "/" is a directory entry
    assert all(q.resolve().is_relative_to(root) for q in out.rglob("*"))
    assert not any(q for q in tmp.iterdir() if q.name not in ("a.zip", CACHE_DIR))
