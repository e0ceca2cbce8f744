"""Records: canonical JSON bytes, schema validation with file and line, sorted writing, resume-safe reading."""

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pointfail.records import (
    SCHEMA_VERSION,
    ImageRef,
    Prompt,
    Record,
    RecordError,
    Response,
    Target,
    append_jsonl,
    canonical_json,
    iter_jsonl,
    read_records,
    record_json_schema,
    write_records,
)


def make_record(sample_id="s1", outcome="hit", **kw):
    base = dict(
        study="t",
        model="m",
        family="molmo",
        benchmark="b",
        sample_id=sample_id,
        image=ImageRef(path="img.png", width=100, height=50, sha256="ab"),
        target=Target(kind="boxes", boxes=[[1, 2, 3, 4]]),
        prompt=Prompt(original="Point to the mug.", core="the mug", sent="Point to the mug."),
        response=Response(raw_text='<point x="50" y="50">mug</point>'),
        outcome=outcome,
    )
    base.update(kw)
    return Record(**base)


def test_canonical_json_sorts_keys_keeps_unicode_and_ends_in_newline():
    assert canonical_json({"b": 1, "a": "ü"}) == '{"a":"ü","b":1}\n'


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_canonical_json_rejects_non_finite(bad):
    with pytest.raises(ValueError):
        canonical_json({"x": [1.0, {"y": bad}]})


@given(st.dictionaries(st.text(), st.one_of(st.integers(), st.text(), st.booleans(), st.none(),
                                              st.floats(allow_nan=False, allow_infinity=False))))
def test_canonical_json_round_trips_and_is_order_independent(d):
    line = canonical_json(d)
    assert line.endswith("\n") and "\n" not in line[:-1]
    assert json.loads(line) == d
    assert canonical_json(dict(reversed(list(d.items())))) == line


def test_record_round_trip_is_byte_identical(tmp_path):
    r = make_record()
    assert r.schema_version == SCHEMA_VERSION
    p = tmp_path / "r.jsonl"
    write_records(p, [r])
    back = read_records(p)
    assert back == [r]
    assert back[0].to_json() == p.read_text(encoding="utf-8")


def test_write_records_sorts_by_sample_id(tmp_path):
    p = tmp_path / "r.jsonl"
    write_records(p, [make_record("b"), make_record("a"), make_record("c")])
    assert [json.loads(l)["sample_id"] for l in p.read_text().splitlines()] == ["a", "b", "c"]


def test_reader_names_file_and_line_for_bad_json(tmp_path):
    p = tmp_path / "r.jsonl"
    p.write_text(make_record("a").to_json() + "{not json\n" + make_record("b").to_json())
    with pytest.raises(RecordError) as e:
        read_records(p)
    assert e.value.line == 2 and e.value.path == str(p)
    assert f"{p}:2:" in str(e.value)


def test_reader_names_line_for_schema_mismatch(tmp_path):
    good = json.loads(make_record("a").to_json())
    wrong_version = dict(good, schema_version=3)
    unknown_field = dict(good, surprise=1)
    bad_outcome = dict(good, outcome="maybe")
    for i, bad in enumerate([wrong_version, unknown_field, bad_outcome]):
        p = tmp_path / f"r{i}.jsonl"
        p.write_text(make_record("a").to_json() + canonical_json(bad))
        with pytest.raises(RecordError) as e:
            read_records(p)
        assert e.value.line == 2


def test_failure_mode_only_for_labeled_misses():
    from pointfail.records import Judgment

    j = Judgment(judge="oracle", status="labeled", label="wrong_instance")
    assert make_record(outcome="miss", judge=j).failure_mode == "wrong_instance"
    assert make_record(outcome="hit", judge=j).failure_mode is None
    unl = Judgment(judge="oracle", status="unlabeled")
    assert make_record(outcome="miss", judge=unl).failure_mode is None


def test_append_jsonl_and_iter_skip_a_cut_final_line(tmp_path):
    p = tmp_path / "resp.jsonl"
    append_jsonl(p, {"sample_id": "a"})
    append_jsonl(p, {"sample_id": "b"})
    with open(p, "a") as f:
        f.write('{"sample_id": "c"')  # a write cut short by a kill
    assert [obj["sample_id"] for _, obj in iter_jsonl(p)] == ["a", "b"]


def test_iter_jsonl_raises_on_a_bad_middle_line(tmp_path):
    p = tmp_path / "resp.jsonl"
    p.write_text('{"a":1}\n{oops\n{"a":2}\n')
    with pytest.raises(RecordError) as e:
        list(iter_jsonl(p))
    assert e.value.line == 2


def test_json_schema_names_required_fields():
    s = record_json_schema()
    assert {"study", "model", "sample_id", "outcome", "prompt", "response"} <= set(s["required"])
    assert s["properties"]["outcome"]["enum"] == ["hit", "miss", "no_prediction", "error"]


def test_committed_schema_matches_the_model():
    from pathlib import Path

    import pointfail

    committed = Path(pointfail.__file__).parent / "schema" / "record.schema.json"
    assert json.loads(committed.read_text()) == record_json_schema(), (
        "regenerate src/pointfail/schema/record.schema.json from pointfail.records.record_json_schema()"
    )


def test_one_discovery_rule_two_levels_no_tables_reports_or_hidden(tmp_path):
    from pointfail.records import records_files

    st = tmp_path / "st"
    for rel in ("m/b.jsonl", "m/a.jsonl", "n/b.jsonl", "tables/x.jsonl", "report/x.jsonl", ".hidden/x.jsonl",
                "m/.b.jsonl.tmp.jsonl", "m/deeper/c.jsonl", "top.jsonl"):
        p = st / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("")
    assert [str(p.relative_to(st)) for p in records_files(st)] == ["m/a.jsonl", "m/b.jsonl", "n/b.jsonl"]
    assert records_files(tmp_path / "missing") == []


def test_iter_records_streams_with_line_numbers(tmp_path):
    from pointfail.records import enumerate_records, iter_records

    p = tmp_path / "r.jsonl"
    recs = [make_record(sample_id=s) for s in ("a", "b")]
    p.write_text(recs[0].to_json() + "\n  \n" + recs[1].to_json(), encoding="utf-8")
    assert [(i, r.sample_id) for i, r in enumerate_records(p)] == [(1, "a"), (4, "b")]  # line 2 empty, line 3 blanks
    assert [r.sample_id for r in iter_records(p)] == ["a", "b"]
