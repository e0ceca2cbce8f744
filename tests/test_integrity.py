"""``pointfail verify`` re-derives every record and checks it against its committed digest
(``pointfail.integrity``): one changed byte anywhere that matters fails, naming the sample; the same
records in another order, hash seed, locale or time zone pass."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pointfail.integrity import DIGESTS_NAME, parse_digests, record_digest
from pointfail.records import read_records

REPO = Path(__file__).resolve().parents[1]
DEFAULT = REPO / "records" / "default"


def _verify(study: Path, env: dict | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "pointfail", "verify", str(study)], capture_output=True, text=True,
                          env=e, cwd=cwd or study.parent, timeout=600)


@pytest.fixture()
def study(tmp_path: Path) -> Path:
    """A copy of the committed default study (records, tables, study.toml) away from its data, so
    nothing is re-derived from image files: only from the records themselves."""
    d = tmp_path / "default"
    shutil.copytree(DEFAULT, d, ignore=shutil.ignore_patterns("report", "view"))
    return d


def test_committed_study_verifies_and_its_digests_cover_every_record():
    assert _verify(DEFAULT, cwd=REPO).returncode == 0
    sums = (DEFAULT / "tables" / "SHA256SUMS").read_text()
    assert f"  {DIGESTS_NAME}\n" in sums  # SHA256SUMS covers the records through their digests
    digests = parse_digests((DEFAULT / "tables" / DIGESTS_NAME).read_bytes())
    recs = read_records(DEFAULT / "ocr" / "web.jsonl")
    assert len(digests) == 800 and digests[("ocr/web.jsonl", recs[0].sample_id)] == record_digest(recs[0])


def _edit_one_byte(study: Path, rel: str, sample: str, old: bytes, new: bytes) -> None:
    """Replace the first ``old`` by ``new`` (same length) in the line of ``sample`` of ``rel``."""
    assert len(old) == len(new)
    p = study / rel
    lines = p.read_bytes().splitlines(keepends=True)
    for i, ln in enumerate(lines):
        if f'"sample_id":"{sample}"'.encode() in ln:
            assert old in ln, (sample, old)
            lines[i] = ln.replace(old, new, 1)
            break
    else:
        raise AssertionError(f"{sample} not in {rel}")
    p.write_bytes(b"".join(lines))


@pytest.mark.parametrize("what, rel, sample, old, new, says", [
    # raw_text: the centre baseline said 512, the record now says 513 -> the parse no longer follows
    ("raw_text", "center/sheets.jsonl", "pfs_0003", b'"raw_text":"{\\"point\\": [512', b'"raw_text":"{\\"point\\": [513',
     "parse.points[0][0]: stored 0.5, re-derived 0.5009765625"),
    # geometry: one digit of the distance
    ("geometry", "center/text.jsonl", "pft_0010", b'"distance_px":', b'"distance_px":',  # placeholder, see below
     "geometry.distance_px"),
    # image hash: one hex digit (no image on disk here: only the digest can tell)
    ("image hash", "ocr/web.jsonl", "web_0004", b'"sha256":"', b'"sha256":"', "differs from its committed digest"),
    # outcome: a hit written as a miss (one record, valid schema)
    ("outcome", "ocr/sheets.jsonl", "pfs_0001", b'"outcome":"hit"', b'"outcome":"mis"', "sample 'pfs_0001'"),
])
def test_one_changed_byte_fails_naming_the_sample(study, what, rel, sample, old, new, says):
    p = study / rel
    line = next(ln for ln in p.read_bytes().splitlines() if f'"sample_id":"{sample}"'.encode() in ln)
    if what == "geometry":
        i = line.index(b'"distance_px":') + len(b'"distance_px":')
        digit = line[i:i + 1]
        old, new = b'"distance_px":' + digit, b'"distance_px":' + (b"9" if digit != b"9" else b"8")
    if what == "image hash":
        i = line.index(b'"image":')
        j = line.index(b'"sha256":"', i) + len(b'"sha256":"')
        old = line[i:j + 1]
        new = old[:-1] + (b"0" if old[-1:] != b"0" else b"1")
    _edit_one_byte(study, rel, sample, old, new)
    r = _verify(study)
    assert r.returncode == 1, r.stdout
    assert sample in r.stdout and says in r.stdout, r.stdout[-3000:]


def test_a_valid_but_false_outcome_is_caught_by_rederivation(study):
    # "hit" -> "miss" keeps the schema valid; the raw text still hits
    _edit_one_byte(study, "ocr/sheets.jsonl", "pfs_0001", b'"outcome":"hit"', b'"outcome":"mis"')  # sanity
    p = study / "ocr/sheets.jsonl"
    p.write_bytes(p.read_bytes().replace(b'"outcome":"mis"', b'"outcome":"miss"', 1))
    r = _verify(study)
    assert r.returncode == 1
    assert "sample 'pfs_0001': outcome: stored \"miss\", re-derived \"hit\" (does not follow from its raw reply" in r.stdout


def test_a_record_filed_under_another_model_is_named(study):
    src, dst = study / "ocr/text.jsonl", study / "center/text.jsonl"
    moved = src.read_bytes().splitlines(keepends=True)[0]
    src.write_bytes(b"".join(src.read_bytes().splitlines(keepends=True)[1:]))
    sid = json.loads(moved)["sample_id"]
    # the centre baseline's own record of that sample is replaced by the OCR one
    dst.write_bytes(b"".join(ln for ln in dst.read_bytes().splitlines(keepends=True)
                             if json.loads(ln)["sample_id"] != sid) + moved)
    r = _verify(study)
    assert r.returncode == 1
    assert f"sample {sid!r}: model/benchmark ocr/text is not its file center/text.jsonl" in r.stdout
    assert f"ocr/text.jsonl sample {sid!r}: in the committed {DIGESTS_NAME} but no record has it" in r.stdout


@pytest.mark.parametrize("env", [
    {"PYTHONHASHSEED": "0", "LC_ALL": "C", "TZ": "UTC"},
    {"PYTHONHASHSEED": "4242", "LC_ALL": "C.UTF-8", "TZ": "Pacific/Kiritimati"},
    {"PYTHONHASHSEED": "random", "LC_ALL": "tr_TR.UTF-8", "LANG": "de_DE.UTF-8", "TZ": "America/St_Johns"},
])
def test_shuffled_lines_hash_seeds_locales_and_time_zones_still_verify(study, env):
    rng = random.Random(env["PYTHONHASHSEED"])
    for p in sorted(study.glob("*/*.jsonl")):
        lines = p.read_bytes().splitlines(keepends=True)
        rng.shuffle(lines)
        p.write_bytes(b"".join(lines))
    r = _verify(study, env)
    assert r.returncode == 0, r.stdout[-3000:]
    assert r.stdout.startswith(f"OK {study}: every table matches")


def test_rederive_names_a_boxes_hash_and_an_image_hash_that_do_not_match(tmp_path):
    """``rederive`` checks the stored hashes it can before scoring: a boxes target's ``target.sha256``
    against its boxes, and ``image.sha256`` against the image file found under the roots."""
    from pointfail.integrity import rederive
    from pointfail.records import boxes_sha256

    rec = next(r for p in sorted(DEFAULT.glob("*/*.jsonl")) for r in read_records(p)
               if r.target.kind == "boxes" and r.target.sha256 is not None and r.image.sha256 is not None)
    as_written = [[int(v) if float(v).is_integer() else v for v in b] for b in rec.target.boxes]
    assert rec.target.sha256 in (boxes_sha256(as_written), boxes_sha256(rec.target.boxes))
    problems, _ = rederive(rec, [tmp_path])  # the image is not under tmp_path: its hash is not checked
    assert not any("sha256" in p for p in problems)

    bad_target = rec.model_copy(update={"target": rec.target.model_copy(update={"sha256": "0" * 64})})
    problems, _ = rederive(bad_target, [tmp_path])
    assert problems[0] == (f"target.sha256: stored {'0' * 16}..., the boxes hash to "
                           f"{boxes_sha256(as_written)[:16]}...")

    image = tmp_path / rec.image.path
    image.parent.mkdir(parents=True, exist_ok=True)
    image.write_bytes(b"not the image")
    problems, _ = rederive(rec, [tmp_path])
    assert problems[0].startswith(f"image.sha256: stored {rec.image.sha256[:16]}..., the file ")
    assert problems[0].endswith(" hashes otherwise")
