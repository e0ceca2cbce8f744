"""Per-model frame-compliance counts (diagnostic): official hits beside the hits of other readings."""

from pointfail.compliance import READINGS, compliance_counts
from pointfail.records import ImageRef, Prompt, Response, Sample, Target
from pointfail.scoring import COMPLIANCE_READINGS, build_record

SIZE = (1024, 768)
BOX = [480, 360, 540, 400]  # the target; the centre pixel (512, 384) is inside


def _rec(raw, family="json_pixels", sid="s", task="point", target=None, error=None):
    s = Sample(sample_id=sid, benchmark="b", image=ImageRef(path="i.png", width=SIZE[0], height=SIZE[1]),
               instruction="Click it.", task=task, target=target or Target(kind="boxes", boxes=[BOX]))
    return build_record(study="x", model="m", family=family, sample=s,
                        prompt=Prompt(original="Click it.", core="Click it.", sent="Click it."),
                        response=Response(raw_text=raw, error=error))


def test_readings_follow_the_scoring_diagnostic():
    assert READINGS == tuple(name for name, *_ in COMPLIANCE_READINGS)


def test_a_0_1000_reply_to_a_pixel_prompt_counts_under_grid_1000_only():
    recs = [
        _rec('{"point": [500, 500]}', sid="a"),  # 0-1000 grid reply: pixel (500, 500) misses; grid (512, 384) hits
        _rec('{"point": [512, 384]}', sid="b"),  # pixel reply: official hit
        _rec(None, sid="c", error="worker: out of memory"),  # error: counted in n, never a hit
        _rec('{"point": [1, 1]}', sid="d", task="box"),  # box task: left out
        _rec('{"point": [1, 1]}', sid="e", target=Target(kind="absent")),  # absent referent: left out
    ]
    c = compliance_counts(recs)
    assert c["n"] == 3 and c["official"] == 1 and c["errors"] == 1 and c["not_computed"] == 0
    assert c["declared_frame"] == "pixels_original"
    # grid_1000: (500, 500) -> (512, 384) hits; (512, 384) -> (524.3, 294.9) misses
    assert c["readings"] == {"unit": 0, "percent_100": 0, "grid_1000": 1, "pixels_original": None,
                             "pixels_resized": None}


def test_token_frames_report_no_alternative_reading():
    c = compliance_counts([_rec("<loc0511><loc0511>", family="paligemma")])
    assert c["readings"] == dict.fromkeys(READINGS)


# ------------------------------------------------------------- readings stored in the record (schema 2)

import json  # noqa: E402
import shutil  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from pointfail.geometry import TargetRegion  # noqa: E402
from pointfail.records import READING_FIELDS, UPGRADE_HINT, FrameReadings, RecordError, read_records  # noqa: E402
from pointfail.scoring import frame_compliance  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def _recomputed(rec) -> dict:
    """The readings :func:`scoring.frame_compliance` gives for a record, as the table counts them."""
    size = (rec.image.width, rec.image.height)
    d = frame_compliance(rec.family, rec.response.raw_text or "", size, TargetRegion.from_target(rec.target, size),
                         rec.response.model_input_size, distances=False)
    out = dict.fromkeys(READING_FIELDS)
    for r in d["readings"]:
        if not r["declared"]:
            out[r["frame"]] = bool(r["hit"])
    return {"declared_frame": d["declared_frame"], **out, "not_computed": None}


def test_a_0_1000_reply_to_a_pixel_prompt_is_stored_as_a_grid_1000_hit():
    # json_pixels declares pixels_original on 1024x768; the box is x 480..540, y 360..400 (inclusive)
    # (500, 500): unit -> (512000, 384000) out; percent -> (5120, 3840) out; grid_1000 -> (512.0, 384.0) in
    rec = _rec('{"point": [500, 500]}')
    assert rec.frame_compliance == FrameReadings(declared_frame="pixels_original", unit=False, percent_100=False,
                                                 grid_1000=True, pixels_original=None, pixels_resized=None)
    assert rec.frame_compliance.model_dump() == _recomputed(rec)


def test_pixels_resized_is_read_only_with_a_model_input_size():
    # (256, 192) written in pixels of a 512x384 input: x 256/512*1024 = 512, y 192/384*768 = 384 -> in;
    # grid_1000: (262.1, 147.5) out; as original pixels (256, 192) out
    s = Sample(sample_id="r", benchmark="b", image=ImageRef(path="i.png", width=SIZE[0], height=SIZE[1]),
               instruction="Click it.", target=Target(kind="boxes", boxes=[BOX]))
    prompt = Prompt(original="Click it.", core="Click it.", sent="Click it.")
    with_size = build_record(study="x", model="m", family="json_pixels", sample=s, prompt=prompt,
                             response=Response(raw_text='{"point": [256, 192]}', model_input_size=[512, 384]))
    fc = with_size.frame_compliance
    assert (fc.pixels_resized, fc.grid_1000, fc.unit, fc.percent_100, fc.pixels_original) == (True, False, False,
                                                                                            False, None)
    assert fc.model_dump() == _recomputed(with_size)
    assert _rec('{"point": [256, 192]}').frame_compliance.pixels_resized is None


def test_no_point_is_false_under_every_reading_and_box_absent_error_store_nothing():
    fc = _rec("I cannot see it.").frame_compliance
    # json_pixels: unit, percent_100, grid_1000 tried (no point: False); pixels_original declared;
    # pixels_resized needs a model-input size
    assert fc is not None and [getattr(fc, r) for r in READING_FIELDS] == [False, False, False, None, None]
    assert _rec('{"point": [1, 1]}', task="box").frame_compliance is None
    assert _rec('{"point": [1, 1]}', target=Target(kind="absent")).frame_compliance is None
    assert _rec(None, error="worker: out of memory").frame_compliance is None


_REPLIES = {
    "json_pixels": lambda x, y: f'{{"point": [{x:.1f}, {y:.1f}]}}',
    "molmo": lambda x, y: f'<point x="{x:.1f}" y="{y:.1f}" alt="it">it</point>',
    "qwen2_5_vl": lambda x, y: f'[{{"point_2d": [{x:.0f}, {y:.0f}], "label": "it"}}]',
    "paligemma": lambda x, y: f"<loc{int(y) % 1024:04d}><loc{int(x) % 1024:04d}>",
}


@settings(max_examples=60, deadline=None)
@given(family=st.sampled_from(sorted(_REPLIES)), x=st.floats(0, 1100), y=st.floats(0, 1100),
       mis=st.sampled_from([None, (512, 384), (1000, 750)]))
def test_stored_readings_equal_the_recomputed_ones(family, x, y, mis):
    s = Sample(sample_id="h", benchmark="b", image=ImageRef(path="i.png", width=SIZE[0], height=SIZE[1]),
               instruction="Click it.", target=Target(kind="boxes", boxes=[BOX]))
    rec = build_record(study="x", model="m", family=family, sample=s,
                       prompt=Prompt(original="Click it.", core="Click it.", sent="Click it."),
                       response=Response(raw_text=_REPLIES[family](x, y), model_input_size=list(mis) if mis else None))
    if rec.outcome == "error":  # a resized frame without its model-input size: nothing scored, nothing stored
        assert rec.frame_compliance is None
        return
    assert rec.frame_compliance.model_dump() == _recomputed(rec)


def test_the_count_reads_the_stored_readings_not_the_reply():
    # the stored reading is what is counted: flip it and the count follows, the reply unchanged
    rec = _rec('{"point": [500, 500]}')
    assert compliance_counts([rec])["readings"]["grid_1000"] == 1
    rec.frame_compliance.grid_1000 = False
    assert compliance_counts([rec])["readings"]["grid_1000"] == 0
    rec.frame_compliance = None  # a record built by hand, without readings: counted as not computed
    c = compliance_counts([rec])
    assert (c["n"], c["not_computed"], c["readings"]["grid_1000"]) == (1, 1, None)


@pytest.fixture()
def default_copy(tmp_path: Path) -> Path:
    d = tmp_path / "default"
    shutil.copytree(REPO / "records" / "default", d, ignore=shutil.ignore_patterns("report", "view"))
    return d


def _edit(path: Path, sample: str, old: bytes, new: bytes) -> None:
    lines = path.read_bytes().splitlines(keepends=True)
    i = next(i for i, ln in enumerate(lines) if f'"sample_id":"{sample}"'.encode() in ln)
    assert old in lines[i]
    lines[i] = lines[i].replace(old, new, 1)
    path.write_bytes(b"".join(lines))


def test_verify_catches_a_tampered_reading(default_copy: Path):
    from pointfail.aggregate import verify

    # web_0038: the centre baseline's (512, 384) misses the box x 488..546, y 277..297 of 1024x768;
    # read on the 0-1000 grid it is (524.3, 294.9), inside: grid_1000 true
    _edit(default_copy / "center/web.jsonl", "web_0038", b'"grid_1000":true', b'"grid_1000":false')
    res = verify(default_copy)
    assert not res.ok
    said = [p for p in res.problems if "web_0038" in p]
    assert any("frame_compliance.grid_1000: stored false, re-derived true (does not follow from its raw reply"
               in p for p in said), said
    assert any("differs from its committed digest" in p for p in said)
    assert any("frame_compliance" in p and "differs from the regenerated table" in p for p in res.problems)


def _as_v1(path: Path) -> None:
    """The records of ``path`` as schema version 1 wrote them: no ``frame_compliance``."""
    lines = []
    for ln in path.read_bytes().splitlines():
        obj = json.loads(ln)
        del obj["frame_compliance"]
        obj["schema_version"] = 1
        lines.append(json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode() + b"\n")
    path.write_bytes(b"".join(lines))


def test_a_v1_record_is_refused_with_one_line_naming_the_upgrade(default_copy: Path):
    from pointfail.aggregate import aggregate

    p = default_copy / "center/web.jsonl"
    _as_v1(p)
    with pytest.raises(RecordError) as e:
        read_records(p)
    assert e.value.line == 1 and UPGRADE_HINT in str(e.value) and "pointfail upgrade-records" in str(e.value)
    with pytest.raises(RecordError):
        aggregate(default_copy)  # never a table from old records


def test_upgrade_gives_back_the_records_build_record_makes_and_the_same_tables(default_copy: Path, capsys):
    from pointfail.aggregate import verify
    from pointfail.cli import main

    committed = {p: p.read_bytes() for p in sorted(default_copy.glob("*/*.jsonl"))}
    for p in committed:
        _as_v1(p)
    assert main(["upgrade-records", str(default_copy)]) == 0
    assert "upgraded 800 record(s) in 6 file(s) to schema version 2" in capsys.readouterr().out
    assert {p: p.read_bytes() for p in committed} == committed  # byte for byte the v2 records
    assert main(["upgrade-records", str(default_copy)]) == 0
    assert "nothing to upgrade" in capsys.readouterr().out
    assert verify(default_copy).ok


def test_upgrade_without_the_mask_files_writes_nothing(tmp_path: Path, monkeypatch, capsys):
    from pointfail.cli import main

    study = tmp_path / "pointfail-vlm-rehearsal"
    shutil.copytree(REPO / "records/pointfail-vlm-rehearsal", study)
    monkeypatch.chdir(tmp_path)  # the records' data/... mask paths resolve to nothing here
    p = study / "molmoe-1b/where2place.jsonl"
    _as_v1(p)
    before = p.read_bytes()
    assert main(["upgrade-records", str(study)]) == 1
    err = capsys.readouterr().err
    assert "is not on this machine; bring the study's data" in err and "where2place.jsonl:1" in err
    assert p.read_bytes() == before


_WRITTEN = st.lists(st.one_of(st.integers(-2000, 2000), st.floats(-3.0, 3.0, allow_nan=False), st.just(1e7)),
                    min_size=2, max_size=4)


@given(nums=_WRITTEN, pre=st.sampled_from(["", "Point: ", "(", "[", "x="]))
def test_raw_sink_is_the_identity_parse(nums, pre):
    """``Family.parse``'s ``raw_sink`` (one parse) gives exactly the primary point the second parse under
    the identity frame gives (``scoring._raw_primary``), for every family with the default convert."""
    from pointfail.families import list_families
    from pointfail.scoring import _one_parse, _raw_primary

    text = pre + ", ".join(str(v) for v in nums) + (")" if pre == "(" else "]" if pre == "[" else "")
    for fam in list_families():
        if not _one_parse(fam):
            continue
        sink: list[list[float]] = []
        fam.parse(text, (640, 480), (448, 336), task="point", raw_sink=sink)
        assert (sink[0] if sink else None) == _raw_primary(fam, text, (640, 480))[0], (fam.name, text)
