"""Records you can verify: every record re-derived from its raw reply and target, and a digest of
every record covered by ``SHA256SUMS`` (issue 12, "Integrity you can verify"; ``shared/DESIGN.md``,
"``verify`` re-derives every record from its raw reply").

Two things, both run by ``pointfail verify`` in its one scan of the records
(:data:`pointfail.aggregate.verify.CHECKS` names :class:`IntegrityCheck`):

**Re-derivation.** For each record, the parse, outcome, error, geometry, official score and
frame-compliance readings (``Record.frame_compliance``) are
computed again from what the record says was asked and answered — ``response.raw_text`` (or
``response.error``), the family, the image size, the model-input size, the task and the target —
with the same function that made them (:func:`pointfail.scoring.build_record`), and compared with
what the record stores. A record whose stored fields do not follow from its raw text fails, naming
the file, the line and the sample, and the first field that differs. Besides:

* the record's ``model`` and ``benchmark`` must be its folder and file name (a record filed under
  another model would be counted as that model);
* a ``boxes`` target's ``sha256`` must be the hash of its boxes; when the image or mask file is on
  disk (relative paths are looked up from the current directory, then the checkout), its sha256 must
  be the one recorded;
* a ``mask`` target whose file is not on disk cannot be scored again: its parse is still checked,
  its outcome and geometry are counted as not re-derived (the count is reported, never a failure).

**Upgrade.** :func:`upgrade_study` rewrites a study's schema-version-1 records (made before the
frame-compliance readings were stored) as version 2, each record's readings computed from its raw
reply and target by :func:`pointfail.scoring.frame_readings`, every other byte of the record kept
(``pointfail upgrade-records``; the reader refuses version-1 records with one line naming it, so old
records never silently give a different table).

**Digests.** ``tables/records.sha256`` lists, for every record, the sha256 of its line as stored in
its records file (:func:`line_digest`: the bytes up to and including the ``\n``), by file and sample
id, sorted, so it does not depend on the order of lines in a records file. ``write_records`` writes
every line as the record's canonical JSON (``Record.to_json``), so for such a file the digest is
:func:`record_digest` of the record; hashing the stored bytes costs no second serialization and
catches any changed byte, whitespace included. ``aggregate`` writes it with the tables and ``SHA256SUMS`` lists it, so ``SHA256SUMS``
covers the records too. ``verify`` compares every record with its committed digest and names each
sample whose record changed (one changed byte in ``image.sha256``, which cannot be re-derived without
the image, is caught here), and each sample added or removed.

File format of ``records.sha256``, one line per record::

    <sha256 hex>  <model>/<benchmark>.jsonl  <sample id as a JSON string>
"""

from __future__ import annotations

import hashlib
import json
import os
from array import array
from pathlib import Path
from collections.abc import Sequence
from typing import Any, Optional, Union, cast

from pointfail.records import Record

__all__ = ["DIGESTS_NAME", "FileFinder", "IntegrityCheck", "RecordDigests", "UpgradeError", "line_digest",
           "parse_digests", "record_digest", "rederive", "upgrade_study"]

DIGESTS_NAME = "records.sha256"
"""The file of per-record digests in a study's ``tables/``."""


def record_digest(record: Record) -> str:
    """sha256 (hex) of the record's canonical JSON line (``Record.to_json``)."""
    return hashlib.sha256(record.to_json().encode("utf-8")).hexdigest()


def line_digest(raw: bytes) -> bytes:
    """sha256 (32 bytes) of one stored records line, ``raw`` including its ``\n``
    (:func:`pointfail.records.enumerate_record_lines`). For a line written by ``write_records`` it is
    :func:`record_digest` of the record, in binary."""
    return hashlib.sha256(raw).digest()


def _key(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


class RecordDigests:
    """The per-record digests of one records scan, packed: each distinct sample id is kept once (an
    index into a table of names), and per records file an array of those indices beside a
    ``bytearray`` of 32-byte binary digests, about 36 bytes per record. :meth:`add` notes one
    record (``aggregate.load_study`` calls it with the digest it computed once per line);
    :meth:`file_bytes` is the ``records.sha256`` file."""

    def __init__(self) -> None:
        self._index: dict[str, int] = {}
        self._names: list[str] = []
        self._files: dict[str, tuple[array, bytearray]] = {}

    def add(self, path: Path, sample_id: str, digest: bytes) -> None:
        """Note one record's binary digest (:func:`line_digest`) by its file and sample id."""
        k = self._index.get(sample_id)
        if k is None:
            k = self._index[sample_id] = len(self._names)
            self._names.append(sample_id)
        f = _key(path)
        cell = self._files.get(f)
        if cell is None:
            cell = self._files[f] = (array("I"), bytearray())
        cell[0].append(k)
        cell[1].extend(digest)

    def __len__(self) -> int:
        return sum(len(ids) for ids, _ in self._files.values())

    def file_bytes(self) -> bytes:
        """The ``records.sha256`` bytes: one line per record, sorted by file then sample id (UTF-8
        bytes; equal ids, which a scan refuses, by digest), independent of line order, hash seed and
        locale.

        Written in place into one buffer of the file's exact size (a ``bytearray``, which compares and
        hashes as ``bytes``): per record nothing is made but the line, so the peak is the file itself
        plus eight bytes a record for the sort order (``bench/aggregate.py`` measures it)."""
        import binascii

        import numpy as np

        names = self._names
        encoded = [n.encode("utf-8") for n in names]
        rank = np.empty(len(names), dtype=np.int64)
        rank[sorted(range(len(names)), key=encoded.__getitem__)] = np.arange(len(names))
        sid_json = [json.dumps(n, ensure_ascii=False).encode("utf-8") for n in names]
        sid_len = np.fromiter((len(x) for x in sid_json), dtype=np.int64, count=len(sid_json))
        plan = []
        total = 0
        for f in sorted(self._files, key=lambda x: x.encode("utf-8")):
            ids, digests = self._files[f]
            idx = np.frombuffer(ids, dtype=np.dtype(f"u{ids.itemsize}")).astype(np.int64)
            order = np.argsort(rank[idx], kind="stable")
            if len(np.unique(idx)) != len(idx):  # the same id twice in one file: tie-break by digest
                order = np.array(sorted(range(len(ids)), key=lambda j: (rank[ids[j]], digests[32 * j:32 * j + 32])),
                                 dtype=np.int64)
            middle = f"  {f}  ".encode("utf-8")
            total += len(ids) * (65 + len(middle)) + int(sid_len[idx].sum())
            plan.append((ids, digests, order, middle))
        out = bytearray(total)
        pos = 0
        for ids, digests, order, middle in plan:
            hexed = binascii.hexlify(digests)
            m = len(middle)
            for j in order.tolist():
                out[pos:pos + 64] = hexed[64 * j:64 * j + 64]
                out[pos + 64:pos + 64 + m] = middle
                pos += 64 + m
                sid = sid_json[ids[j]]
                out[pos:pos + len(sid)] = sid
                pos += len(sid)
                out[pos] = 10  # "\n"
                pos += 1
        # a bytearray is what every reader of the tables does with bytes (hash, write, compare,
        # decode); typed as bytes so the tables stay one dict[str, bytes] without a copy of the file
        return cast(bytes, out)


def parse_digests(data: bytes) -> dict[tuple[str, str], str]:
    """``{(file, sample_id): sha256}`` of a ``records.sha256`` file.

    Raises:
        ValueError: a line not in the format of the module docstring (its number named).
    """
    out: dict[tuple[str, str], str] = {}
    for i, line in enumerate(data.decode("utf-8").split("\n"), start=1):
        if not line:
            continue
        digest, sep, rest = line.partition("  ")
        f, sep2, sid = rest.partition("  ")
        try:
            sid_value = json.loads(sid)
        except ValueError:
            sid_value = None
        if not sep or not sep2 or len(digest) != 64 or not isinstance(sid_value, str):
            raise ValueError(f"{DIGESTS_NAME} line {i} is not '<sha256>  <file>  <\"sample id\">': {line[:120]!r}")
        out[(f, sid_value)] = digest
    return out


# ------------------------------------------------------------------------------- re-derivation


class FileFinder:
    """Image and mask files looked up for re-derivation, each folder listed once.

    A relative path is tried under each root in order (:attr:`roots`), an absolute one as it is; a
    path is found when its folder's listing (``os.scandir``, entries that are files after following
    links, as ``Path.is_file`` decides) has its name. Each folder is listed once per finder and each
    found file hashed once (:meth:`sha256`), so a study whose images are absent costs one listing per
    folder, not one ``stat`` per record and root, and an image shared by several records (several
    prompts, several models) is hashed once."""

    def __init__(self, roots: Sequence[Path]) -> None:
        self.roots = list(roots)
        self._listings: dict[str, frozenset[str]] = {}
        self._hashes: dict[Path, str] = {}
        self._found: dict[str, Optional[Path]] = {}

    def _names(self, folder: Path) -> frozenset[str]:
        key = os.fspath(folder)
        names = self._listings.get(key)
        if names is None:
            found: set[str] = set()
            try:
                with os.scandir(folder) as it:
                    for e in it:
                        try:
                            if e.is_file():
                                found.add(e.name)
                        except OSError:  # a link loop: not a file
                            continue
            except OSError:  # no such folder, or not readable: nothing is found in it
                pass
            names = frozenset(found)
            self._listings[key] = names
        return names

    def find(self, path: Optional[str]) -> Optional[Path]:
        """The file ``path`` names (see the class docstring), else ``None``; each path looked up once
        per finder."""
        if not path:
            return None
        try:
            return self._found[path]
        except KeyError:
            pass
        p = Path(path)
        found = None
        for c in ([p] if p.is_absolute() else [r / p for r in self.roots]):
            if c.name and c.name in self._names(c.parent):
                found = c
                break
        self._found[path] = found
        return found

    def sha256(self, path: Path) -> str:
        """Hex sha256 of a found file's bytes, hashed once per finder. Raises ``OSError`` if unreadable."""
        h = self._hashes.get(path)
        if h is None:
            from pointfail.records import sha256_file

            h = self._hashes[path] = sha256_file(path)
        return h


def _short(v: Any) -> str:
    s = json.dumps(v, sort_keys=True, ensure_ascii=False, default=str)
    return s if len(s) <= 160 else s[:157] + "..."


def _first_difference(a: Any, b: Any, where: str) -> Optional[str]:
    """The path of the first value that differs between two JSON values, with both values."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            d = _first_difference(a.get(k), b.get(k), f"{where}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            d = _first_difference(x, y, f"{where}[{i}]")
            if d:
                return d
        return None
    if a != b:
        return f"{where}: stored {_short(a)}, re-derived {_short(b)}"
    return None


def rederive(record: Record, roots: Union[Sequence[Path], FileFinder]) -> tuple[list[str], bool]:
    """Re-derive one record (rules in the module docstring).

    Args:
        record: the stored record.
        roots: folders that relative image and mask paths are looked up in, in order, or a
            :class:`FileFinder` over them (a scan of many records passes one, so each folder is
            listed and each file hashed once).

    Returns:
        ``(problems, scored)``: one line per field that does not follow from the raw text and target
        (empty when the record is consistent), and whether outcome and geometry could be re-derived
        (``False`` for a mask target whose file is not on disk).
    """
    from pointfail.records import Sample
    from pointfail.scoring import build_record

    finder = roots if isinstance(roots, FileFinder) else FileFinder(roots)
    problems = _stored_hash_problems(record, finder)
    target, scored = _found_target(record, finder)
    if scored and target is not record.target and record.target.sha256 is not None \
            and finder.sha256(Path(str(target.mask_path))) != record.target.sha256:
        problems.append(f"target.sha256: stored {record.target.sha256[:16]}..., the mask {target.mask_path} hashes "
                        "otherwise")
    sample = Sample(sample_id=record.sample_id, benchmark=record.benchmark, image=record.image,
                    instruction=record.prompt.original, task=record.task, target=target, metadata=record.metadata)
    try:
        derived = build_record(study=record.study, model=record.model, family=record.family, sample=sample,
                               prompt=record.prompt, response=record.response, provenance=record.provenance)
    except KeyError as e:
        return [*problems, f"family: {e}"], False
    fields: tuple[str, ...] = (("parse", "outcome", "error", "geometry", "official", "frame_compliance") if scored
                               else ("parse",))
    if not scored and record.response.error:
        fields = ("parse", "outcome", "error")
    for f in fields:
        a, b = getattr(record, f), getattr(derived, f)
        if a == b:  # the same values (pydantic compares field by field): nothing to dump
            continue
        d = _first_difference(_json_of(a), _json_of(b), f)
        if d:
            problems.append(d)
            break
    return problems, scored


def _stored_hash_problems(record: Record, finder: FileFinder) -> list[str]:
    """The problem lines of a record's stored hashes that can be checked before scoring: a boxes
    target's ``target.sha256`` against its boxes (as the benchmark wrote them, whole numbers as
    integers, or as stored), and ``image.sha256`` against the image file when it is found on disk
    (:meth:`FileFinder.find`; a missing image is not a problem here). Empty when both agree."""
    from pointfail.records import boxes_sha256

    problems: list[str] = []
    target = record.target
    if target.kind == "boxes" and target.boxes is not None and target.sha256 is not None:
        # the loaders hash the boxes as the benchmark wrote them: whole numbers as integers
        as_written = [[int(v) if float(v).is_integer() else v for v in b] for b in target.boxes]
        if target.sha256 != boxes_sha256(as_written) and target.sha256 != boxes_sha256(target.boxes):
            problems.append(f"target.sha256: stored {target.sha256[:16]}..., the boxes hash to "
                            f"{boxes_sha256(as_written)[:16]}...")
    if record.image.sha256 is not None:
        image = finder.find(record.image.path)
        if image is not None and finder.sha256(image) != record.image.sha256:
            problems.append(f"image.sha256: stored {record.image.sha256[:16]}..., the file {image} hashes otherwise")
    return problems


def _found_target(record: Record, finder: FileFinder) -> tuple[Any, bool]:
    """``(target, found)``: the record's target with a mask path replaced by the file found on disk
    (:meth:`FileFinder.find`), and whether it can be scored (``False`` for a mask not on disk)."""
    target = record.target
    if target.kind != "mask":
        return target, True
    mask = finder.find(target.mask_path)
    if mask is None:
        return target, False
    return target.model_copy(update={"mask_path": str(mask)}), True


def _json_of(v: Any) -> Any:
    """A field's JSON value (as ``model_dump(mode="json")`` gives it), for naming a difference."""
    from pydantic import BaseModel

    return v.model_dump(mode="json") if isinstance(v, BaseModel) else v


class IntegrityCheck:
    """``pointfail verify``'s check over every record (see the module docstring): an observer of the
    one records scan with :meth:`observe_line` (the record, its stored line and that line's digest,
    computed once by the scan), :meth:`observe` (the same from the record alone) and :meth:`problems`."""

    def __init__(self, study_dir: Union[str, Path]):
        self.study_dir = Path(study_dir)
        repo = self.study_dir.resolve().parent.parent
        self.roots = [Path.cwd(), repo]
        self.finder = FileFinder(self.roots)
        self.problem_lines: list[str] = []
        self.unscored = 0
        self.committed: Optional[dict[tuple[str, str], str]] = None
        digests = self.study_dir / "tables" / DIGESTS_NAME
        if digests.is_file():
            try:
                self.committed = parse_digests(digests.read_bytes())
            except ValueError as e:
                self.problem_lines.append(f"{digests}: {e}")
        else:
            self.problem_lines.append(f"{digests}: missing; run `pointfail aggregate {self.study_dir}` so "
                                      "SHA256SUMS covers the records")

    def observe(self, record: Record, path: Path, line: int) -> None:
        """Check one record given alone: its digest is that of its canonical line (:func:`record_digest`)."""
        self.observe_line(record, path, line, record.to_json().encode("utf-8"),
                          bytes.fromhex(record_digest(record)))

    def observe_line(self, record: Record, path: Path, line: int, raw: bytes, digest: bytes) -> None:
        """Check one record (re-derivation, folder, digest); ``raw`` is its stored line, ``digest``
        :func:`line_digest` of it."""
        where = f"{path}:{line} sample {record.sample_id!r}"
        if record.model != path.parent.name or record.benchmark != path.stem:
            self.problem_lines.append(f"{where}: model/benchmark {record.model}/{record.benchmark} is not its file "
                                      f"{path.parent.name}/{path.name}")
        problems, scored = rederive(record, self.finder)
        if not scored:
            self.unscored += 1
        for p in problems:
            self.problem_lines.append(f"{where}: {p} (does not follow from its raw reply and target)")
        if self.committed is not None:
            want = self.committed.pop((_key(path), record.sample_id), None)  # what is left was removed
            if want is None:
                self.problem_lines.append(f"{where}: not in the committed {DIGESTS_NAME} (a record added)")
            elif want != digest.hex():
                self.problem_lines.append(f"{where}: differs from its committed digest in {DIGESTS_NAME} "
                                          "(the record was changed)")

    def problems(self) -> list[str]:
        """Every problem found, in scan order, then samples of the committed digests that no record has."""
        out = list(self.problem_lines)
        if self.committed is not None:
            for f, sid in sorted(self.committed):
                out.append(f"{self.study_dir / f} sample {sid!r}: in the committed {DIGESTS_NAME} but no record has it "
                           "(a record removed)")
        return out


# ------------------------------------------------------------------------------------ upgrade


class UpgradeError(ValueError):
    """A study whose version-1 records cannot be upgraded here (a mask file the readings need is not
    on this machine, a line that is no record of either version); nothing was written."""


def _upgraded_line(obj: dict, path: Path, line: int, finder: FileFinder) -> bytes:
    """One version-1 record (its parsed JSON) as the canonical line of its version-2 record."""
    from pydantic import ValidationError

    from pointfail.families import get_family
    from pointfail.geometry import GeometryError, TargetRegion
    from pointfail.records import SCHEMA_VERSION, FrameReadings, RecordError, schema_reason
    from pointfail.scoring import frame_readings

    try:
        rec = Record.model_validate({**obj, "schema_version": SCHEMA_VERSION})
    except ValidationError as e:
        raise RecordError(path, line, schema_reason(e, b"")) from None
    if rec.task == "point" and rec.target.kind != "absent" and rec.outcome != "error":
        target, found = _found_target(rec, finder)
        if not found:
            raise UpgradeError(f"{path}:{line} sample {rec.sample_id!r}: its mask {rec.target.mask_path} is not on this "
                               "machine; bring the study's data (paths as the records give them, from the working "
                               "directory or the checkout) and upgrade again")
        size = (rec.image.width, rec.image.height)
        try:
            region = TargetRegion.from_target(target, size)
        except (GeometryError, OSError) as e:  # as the aggregate counted it before: not computed
            rec.frame_compliance = FrameReadings(declared_frame=get_family(rec.family).frame.name, not_computed=str(e))
        else:
            rec.frame_compliance = frame_readings(rec.family, rec.response.raw_text or "", size, region,
                                                  rec.response.model_input_size)
    return rec.to_json().encode("utf-8")


def upgrade_study(study_dir: Union[str, Path]) -> dict[Path, int]:
    """Rewrite a study's schema-version-1 records as version 2 (see the module docstring): each
    record's frame-compliance readings computed from its raw reply and target, every other field kept,
    the lines in their order; version-2 lines are kept byte for byte. Every file is upgraded in memory
    first and written only when all are (atomically, :func:`pointfail.safeio.atomic_write_bytes`).
    Mask paths are looked up from the working directory, then the checkout, as ``verify`` does.

    Returns:
        ``{records file: records upgraded}`` for each file that held version-1 records.

    Raises:
        UpgradeError: a mask the readings need is not on disk (nothing written).
        RecordError: a line that is not valid JSON or not a record of either version.
    """
    from pointfail.records import RecordError, records_files
    from pointfail.safeio import atomic_write_bytes

    d = Path(study_dir)
    finder = FileFinder([Path.cwd(), d.resolve().parent.parent])
    out: dict[Path, tuple[bytes, int]] = {}
    for path in records_files(d):
        lines, n = [], 0
        for i, raw in enumerate(path.read_bytes().splitlines(), start=1):
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw)
            except ValueError as e:
                raise RecordError(path, i, f"not valid JSON: {e}") from None
            version = obj.get("schema_version") if isinstance(obj, dict) else None
            if version == 1:
                lines.append(_upgraded_line(obj, path, i, finder))
                n += 1
            elif version == 2:
                lines.append(raw + b"\n")
            else:
                raise RecordError(path, i, "not a record of schema version 1 or 2")
        if n:
            out[path] = (b"".join(lines), n)
    for path, (data, _) in out.items():
        atomic_write_bytes(path, data)
    return {p: n for p, (_, n) in out.items()}
