"""``records.sha256`` as the scan keeps it (``integrity.RecordDigests``, packed: a sample index and a
32-byte digest per record) and as it is written: one line per record, sorted by file then sample id
as UTF-8 bytes, whatever the order records were added in; and each digest is the sha256 of the stored
line, which for a line ``write_records`` wrote is ``record_digest`` of the record."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

from pointfail.integrity import RecordDigests, line_digest, parse_digests, record_digest
from pointfail.records import ImageRef, Prompt, Record, Response, Target, enumerate_record_lines, write_records


def _reference(entries: list[tuple[str, str, bytes]]) -> bytes:
    """The file written out from plain tuples: the format of the integrity module's docstring."""
    lines = sorted((f.encode(), sid.encode(), d.hex()) for f, sid, d in entries)
    return "".join(f"{d}  {f.decode()}  {json.dumps(sid.decode(), ensure_ascii=False)}\n" for f, sid, d in lines).encode()


def test_packed_digests_write_the_same_file_in_any_order() -> None:
    ids = ["a", "ab", "a b", "b", "é", "z\u00e9", "ÿ", "\u4e2d", "a\"q", "10", "9"]
    entries = [(f"{m}/{b}.jsonl", sid, hashlib.sha256(f"{m}{b}{sid}".encode()).digest())
               for m in ("m1", "m0") for b in ("x", "w") for sid in ids]
    want = _reference(entries)
    for seed in range(3):
        random.Random(seed).shuffle(entries)
        d = RecordDigests()
        for f, sid, digest in entries:
            model, bench = f.split("/")
            d.add(Path("study") / model / bench, sid, digest)
        assert len(d) == len(entries) == 44
        assert d.file_bytes() == want
    parsed = parse_digests(want)
    assert parsed[("m0/w.jsonl", "é")] == hashlib.sha256("m0wé".encode()).hexdigest()


def test_line_digest_is_the_record_digest_of_a_written_line(tmp_path: Path) -> None:
    rec = Record(study="s", model="m", family="molmo", benchmark="b", sample_id="é-1",
                 image=ImageRef(path="i.png", width=4, height=3), target=Target(kind="boxes", boxes=[[0, 0, 1, 1]]),
                 prompt=Prompt(original="p", core="p", sent="p"), response=Response(raw_text="x"), outcome="no_prediction")
    p = tmp_path / "m" / "b.jsonl"
    write_records(p, [rec])
    [(line, again, raw)] = list(enumerate_record_lines(p))
    assert line == 1 and raw == p.read_bytes() and raw.endswith(b"\n")
    assert line_digest(raw).hex() == record_digest(again) == hashlib.sha256(rec.to_json().encode()).hexdigest()
    p.write_bytes(raw.rstrip(b"\n"))  # a final line without its newline is hashed as if it had one
    assert list(enumerate_record_lines(p))[0][2] == raw
