"""Hostile input, as an attacker or an unlucky user would give it (issue 12): every case gets a clear
error or an explained per-sample outcome, nothing outside the declared roots changes (a decoy tree
hashed before and after), and no sample is lost or duplicated.

The cases that need a real model container (symlinks planted by a container between runs, what a
container can read) are in ``tests/test_hostile_containers.py``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from hostile import make_decoy, tree_digest
from pointfail.families import list_families
from pointfail.running.jobs import JobBusy, JobLock, read_responses
from pointfail.limits import MAX_ITEMS, MAX_REPLY_CHARS, MAX_RESPONSE_RAW_TEXT_CHARS
from pointfail.records import Prompt, Response, Sample, Target, ImageRef, read_records, write_records
from pointfail.scoring import build_record
from pointfail.inputs.study import Roots, StudyError, load_study

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture()
def world(tmp_path: Path):
    """A checkout-like layout (records/<study>/, data/, weights/, work/) and a decoy beside it."""
    decoy = make_decoy(tmp_path)
    for d in ("records/s", "data/s/b", "weights", "work"):
        (tmp_path / d).mkdir(parents=True)
    return tmp_path, decoy, tree_digest(decoy)


def _runner(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pointfail_runner", "--repo", str(REPO), *args],
                          capture_output=True, text=True, cwd=cwd, timeout=300)


STUDIES = {
    "traversal model name": ('[[models]]\nname = "../../decoy"\nfamily = "center"\nimage = "center"\n',
                             "models[0].name: '../../decoy' is not a name"),
    "absolute benchmark name": ('[[benchmarks]]\nname = "/tmp/decoy"\nloader = "suite"\n',
                                "benchmarks[0].name: '/tmp/decoy' is not a name"),
    "traversal data_dir": ('[[benchmarks]]\nname = "b"\nloader = "suite"\ndata_dir = "../../decoy"\n',
                           "benchmarks[0].data_dir: '../../decoy' has an empty, '.' or '..' component"),
    "absolute weights": ('[[models]]\nname = "m"\nfamily = "qwen2_5_vl"\nimage = "qwen2_5_vl"\nweights = "/etc"\n',
                         "models[0].weights: '/etc' is absolute"),
    "duplicate names": ('[[models]]\nname = "m"\nfamily = "center"\nimage = "center"\n'
                        '[[models]]\nname = "m"\nfamily = "ocr"\nimage = "ocr"\n',
                        "models[1].name: 'm' is used twice"),
    "reserved model name": ('[[models]]\nname = "tables"\nfamily = "center"\nimage = "center"\n',
                            "models[0].name: 'tables' is reserved"),
    "reserved benchmark name": ('[[benchmarks]]\nname = "pooled"\nloader = "suite"\n', "'pooled' is reserved"),
    "wrong types": ('[[benchmarks]]\nname = "b"\nloader = "suite"\nlimit = "abc"\n[[models]]\nname = 5\n'
                    'family = "center"\nimage = "center"\n',
                    "benchmarks[0].limit: Input should be a valid integer (got 'abc')"),
    "unknown family": ('[[models]]\nname = "m"\nfamily = "gpt-9"\nimage = "center"\n',
                       "models[0].family: unknown family 'gpt-9'"),
}


@pytest.mark.parametrize("case", sorted(STUDIES))
def test_hostile_study_files_are_clear_errors_and_touch_nothing(world, case):
    root, decoy, before = world
    body, says = STUDIES[case]
    st = root / "records/s/study.toml"
    st.write_text('[study]\nname = "s"\n' + body)
    with pytest.raises(StudyError, match=None) as ei:
        load_study(st)
    assert says in str(ei.value)
    p = _runner("run", "--study", str(st), "--work", str(root / "work"), cwd=root)
    assert p.returncode == 1 and says in p.stderr and "Traceback" not in p.stderr
    assert tree_digest(decoy) == before and sorted(os.listdir(root / "work")) == []


def test_non_utf8_fifo_and_device_study_files(world):
    root, decoy, before = world
    st = root / "records/s/study.toml"
    st.write_bytes(b'[study]\nname = "s\xff"\n')
    p = _runner("run", "--study", str(st), cwd=root)
    assert p.returncode == 1 and "not UTF-8" in p.stderr and "Traceback" not in p.stderr
    st.unlink()
    os.mkfifo(st)
    p = _runner("run", "--study", str(st), cwd=root)  # returns at once: a FIFO is refused before it is read
    assert p.returncode == 1 and "is a FIFO, not a regular file" in p.stderr
    p = _runner("run", "--study", "/dev/zero", cwd=root)
    assert p.returncode == 1 and "is a character device" in p.stderr
    assert tree_digest(decoy) == before


def test_symlinks_inside_roots_cannot_lead_out(world):
    root, decoy, before = world
    st = root / "records/s/study.toml"
    st.write_text('[study]\nname = "s"\n[[benchmarks]]\nname = "b"\nloader = "suite"\ndata_dir = "link"\n'
                  '[[models]]\nname = "m"\nfamily = "qwen2_5_vl"\nimage = "qwen2_5_vl"\n')
    s = load_study(st)
    roots = Roots.for_study(s, root)
    (roots.data / "link").symlink_to(decoy)
    (roots.weights / "m").symlink_to(decoy / "etc")
    with pytest.raises(StudyError, match="outside its root"):
        roots.data_dir(s.benchmarks[0])
    with pytest.raises(StudyError, match="outside its root"):
        roots.weights_dir(s.models[0])
    (roots.records / "m").symlink_to(decoy)  # records/<study>/<model> planted as a link
    with pytest.raises(StudyError, match="outside its root"):
        roots.records_file(s.models[0], s.benchmarks[0])
    p = _runner("run", "--study", str(st), "--data-root", str(roots.data), "--weights-root", str(roots.weights), cwd=root)
    assert p.returncode == 1 and "outside its root" in p.stderr
    assert tree_digest(decoy) == before


def test_job_folder_planted_between_runs_is_never_followed(world):
    """What a container could leave in its writable folder: the runner refuses to read a responses
    file that is a symlink, changes nothing through links, and never chowns or chmods inside it."""
    from pointfail_runner import container as cmod

    root, decoy, before = world
    job = root / "work" / "m" / "b"
    paths = cmod.prepare_job_dir(job)
    (paths.out / "responses.jsonl").symlink_to(decoy / "etc" / "passwd")
    (paths.out / "escape").symlink_to(decoy)
    os.mkfifo(paths.out / "fifo")
    img = root / "data/s/b/0.png"
    Image.new("RGB", (8, 8)).save(img)
    reqs = [{"sample_id": "a", "image": str(img), "prompt": "p", "task": "point", "max_new_tokens": 8}]
    with pytest.raises(cmod.ContainerFailed, match="responses.jsonl is a symlink; the runner never follows"):
        cmod.run_job(None, "unused", family="center", job_dir=job, requests=reqs, data_root=root / "data/s/b",
                     progress=False, log=lambda s: None)
    cmod.prepare_job_dir(job)  # a rerun prepares the folder again: still nothing followed
    assert tree_digest(decoy) == before
    # out/ itself replaced by a link: refused
    (paths.out / "responses.jsonl").unlink()
    os.rename(paths.out, root / "work" / "old-out")
    paths.out.symlink_to(decoy)
    with pytest.raises(cmod.ContainerFailed, match="is not a plain folder"):
        cmod.prepare_job_dir(job)
    assert tree_digest(decoy) == before


def test_one_runner_per_job_and_images_outside_the_data_folder(world):
    from pointfail_runner import container as cmod

    root, decoy, before = world
    job = root / "work" / "m" / "b"
    data = root / "data/s/b"
    Image.new("RGB", (8, 8)).save(data / "ok.png")
    (data / "evil.png").symlink_to(decoy / "secret.key")
    reqs = [{"sample_id": "ok", "image": str(data / "ok.png"), "prompt": "p", "task": "point", "max_new_tokens": 8},
            {"sample_id": "evil", "image": str(data / "evil.png"), "prompt": "p", "task": "point", "max_new_tokens": 8}]
    paths = cmod.prepare_job_dir(job)
    with JobLock(paths.lock):
        with pytest.raises(JobBusy, match="one job has one worker"):
            cmod.run_job(None, "unused", family="center", job_dir=job, requests=reqs, data_root=data,
                         progress=False, log=lambda s: None)
    staged, errors = cmod.stage_images(reqs, paths, data)
    assert [r["sample_id"] for r in staged] == ["ok"] and "outside the data folder" in errors["evil"]
    assert all((decoy / "secret.key").read_bytes() != p.read_bytes() for p in paths.images.iterdir())
    assert tree_digest(decoy) == before


def test_huge_and_quadratic_replies_are_bounded_and_flagged():
    attacks = {"x=": "x=", "box": "<box>", "points": None, "brackets": "[", "spaces": '"point": [' + " " * 1000}
    for fam in list_families():
        mis = (1000, 1000) if fam.frame.kind == "pixels_resized" else None
        for name, frag in attacks.items():
            if frag is None:  # one <points> tag with 200000 indexed attributes
                text = "<points " + " ".join(f'x{i}="1" y{i}="2"' for i in range(1, 200_001)) + ' alt="a">a</points>'
            else:
                text = frag * (MAX_REPLY_CHARS // len(frag) + 2)
            res = fam.parse(text, (1000, 1000), mis)
            assert len(res.points) <= MAX_ITEMS and len(res.ignored) <= 50, (fam.name, name)
            if len(text) > MAX_REPLY_CHARS:
                assert "reply_capped" in res.flags, (fam.name, name)
    molmo = next(f for f in list_families() if f.name == "molmo")
    many = molmo.parse("<points " + " ".join(f'x{i}="1" y{i}="2"' for i in range(1, 5001)) + ">a</points>", (100, 100))
    assert len(many.points) == MAX_ITEMS and "items_capped" in many.flags


def _sample(tmp: Path, mask: str) -> Sample:
    img = tmp / "img.png"
    Image.new("RGB", (64, 48)).save(img)
    return Sample(sample_id="s1", benchmark="b", image=ImageRef(path=str(img), width=64, height=48), instruction="x",
                  target=Target(kind="mask", mask_path=mask))


def _record(tmp: Path, raw: str, mask: str, family: str = "molmo"):
    return build_record(study="s", model="m", family=family, sample=_sample(tmp, mask),
                        prompt=Prompt(original="x", core="x", sent="x"), response=Response(raw_text=raw))


def test_dev_zero_and_fifo_masks_are_explained_outcomes(tmp_path):
    fifo = tmp_path / "mask.png"
    os.mkfifo(fifo)
    for mask, says in (("/dev/zero", "is a character device"), (str(fifo), "is a FIFO"),
                       (str(tmp_path), "is a directory")):
        t0 = time.monotonic()
        r = _record(tmp_path, '<point x="10" y="10">a</point>', mask)
        assert time.monotonic() - t0 < 30  # returned: neither read forever nor blocked on the FIFO
        assert r.outcome == "error" and r.error.startswith("scoring: cannot read mask") and says in r.error
        r.to_json()  # and the record can be written


def test_overflowing_coordinates_are_an_outcome_not_an_exception(tmp_path):
    mask = tmp_path / "m.png"
    a = np.zeros((48, 64), dtype=np.uint8)
    a[10:20, 10:20] = 255
    Image.fromarray(a).save(mask)
    r = _record(tmp_path, '<point x="1e200" y="5">a</point>', str(mask))
    assert r.outcome == "no_prediction" and r.parse.reason == "coordinate_overflow"
    r = _record(tmp_path, '<point x="1e308" y="1e308">a</point> <point x="50" y="50">b</point>', str(mask))
    assert r.outcome == "miss" and r.parse.points == [[0.5, 0.5]] and "coordinate_overflow" in r.parse.ignored[0]
    r = _record(tmp_path, '<point x="100000" y="5">a</point>', str(mask))  # far but finite: a miss, measured
    assert r.outcome == "miss" and np.isfinite(r.geometry.distance_px)
    write_records(tmp_path / "out.jsonl", [r])


def test_hostile_responses_lines_lose_no_sample_and_duplicate_none(tmp_path):
    wanted = [f"s{i}" for i in range(8)]
    lines = [
        b'{"sample_id":"s0","raw_text":"<point x=\\"1\\" y=\\"2\\">a</point>"}',
        b'{"sample_id":"s0","raw_text":"a second answer"}',  # duplicate: the first wins
        b'{"sample_id":"s1","raw_text":"\\udfff"}',  # lone surrogate
        b'["s2"]',  # a list
        b'{"sample_id":"s3","raw_text":null,"seconds":"fast"}',  # wrong type
        b'{"sample_id":"s4","raw_text":"' + b"x" * (MAX_REPLY_CHARS + 1) + b'"}',  # over the cap
        b"\xc3\x28",  # not UTF-8
        b'{"sample_id":"s6","model_input_size":[10]}',
        b'{"sample_id":"intruder","raw_text":"hi"}',
    ]
    p = tmp_path / "responses.jsonl"
    p.write_bytes(b"\n".join(lines) + b"\n")
    log = read_responses(p, wanted)
    per_sample = {sid: log.response_for(sid) for sid in wanted}
    assert per_sample["s0"].raw_text == '<point x="1" y="2">a</point>'
    for sid in ("s1", "s3", "s4", "s6"):
        assert per_sample[sid].error.startswith("invalid response line "), sid
    assert per_sample["s2"] is None and per_sample["s5"] is None and per_sample["s7"] is None
    assert log.duplicates == 1 and len(log.problems) == 3  # the list, the bad bytes, the intruder
    # as the runner turns them into records: each sample once, with an outcome that says why
    recs = [build_record(study="s", model="m", family="molmo",
                         sample=Sample(sample_id=sid, benchmark="b", image=ImageRef(path="x.png", width=10, height=10),
                                       instruction="x", target=Target(kind="boxes", boxes=[[0, 0, 5, 5]])),
                         prompt=Prompt(original="x", core="x", sent="x"),
                         response=(r.as_record_response() if r is not None else Response(error="no response line")))
            for sid, r in per_sample.items()]
    assert Counter(r.sample_id for r in recs) == Counter(wanted)
    assert [r.outcome for r in recs] == ["hit"] + ["error"] * 7
    assert all(r.error.startswith("worker: ") for r in recs[1:])


_WRITER = """
import sys
from pointfail.records import read_records, write_records
src, dst = sys.argv[1], sys.argv[2]
recs = read_records(src)
small, big = recs[: len(recs) // 3], recs
print("ready", flush=True)
while True:
    write_records(dst, big)
    write_records(dst, small)
"""


def test_kill_9_mid_write_leaves_the_old_records_or_the_new(tmp_path):
    src = REPO / "records/default/ocr/sheets.jsonl"
    n = len(read_records(src))
    dst = tmp_path / "m" / "b.jsonl"
    for i in range(12):
        p = subprocess.Popen([sys.executable, "-c", _WRITER, str(src), str(dst)], stdout=subprocess.PIPE, text=True)
        assert p.stdout.readline().strip() == "ready"
        time.sleep(0.05 + 0.037 * i)
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        if dst.exists():
            got = read_records(dst)  # never a torn file: it parses whole
            assert len(got) in (n // 3, n), len(got)
    from pointfail.records import records_files

    assert records_files(tmp_path) == [dst]  # a leftover temporary file is hidden, never read as records


def test_container_logs_are_capped_and_made_printable(tmp_path):
    """A container that floods its log with terminal escape sequences: the terminal gets printable
    lines cut to a bounded length, the log file stops at its cap and says how much was dropped."""
    from pointfail_runner.container import LogSink

    shown: list[str] = []
    sink = LogSink(tmp_path / "container.log", shown.append, cap=1 << 20)
    evil = b"\x1b]0;pwned\x07\x1b[2J\r\x9b31m" + b"\xe2\x80\xae" + b"A" * 5000 + b"\n"
    for _ in range(4000):  # about 20 MB
        sink.feed(evil)
    sink.close()
    data = (tmp_path / "container.log").read_bytes()
    assert (1 << 20) <= len(data) < (1 << 20) + 200
    assert data.rstrip().endswith(b"more bytes of log were not kept]")
    assert all("\x1b" not in s and "\x07" not in s and "\r" not in s and "\u202e" not in s for s in shown)
    assert shown[0].startswith("\\x1b]0;pwned\\x07\\x1b[2J\\x0d") and "…[+" in shown[0]
    assert max(len(s) for s in shown) < 2100 and len(shown) < 300  # bounded by the cap, not by the flood
    assert sink.dropped > 10_000_000


def test_a_huge_reply_in_a_replies_file_is_one_explained_error(tmp_path, capsys):
    """``pointfail evaluate`` holds a reply to the runner's cap: a 1.5 Mi-character reply is an error
    record for its sample that says why, the other samples are scored, none is lost or doubled."""
    from pointfail.cli import main

    suite = tmp_path / "sheets"
    assert main(["generate", "sheets", "--n", "4", "--seed", "3", "--out", str(suite)]) == 0
    ids = [json.loads(x)["id"] for x in (suite / "data/test/metadata.jsonl").read_text().splitlines()]
    replies = tmp_path / "m.jsonl"
    huge = "x=" * (3 * MAX_RESPONSE_RAW_TEXT_CHARS // 4)
    replies.write_text("\n".join(json.dumps({"id": i, "text": huge if k == 0 else '<point x="1" y="1">a</point>'})
                                 for k, i in enumerate(ids)) + "\n")
    out = tmp_path / "out"
    assert main(["evaluate", "--benchmark", "suite", "--data", str(suite), "--replies", str(replies),
                 "--family", "molmo", "--out", str(out), "--judge", "none"]) == 0, capsys.readouterr().out
    recs = read_records(out / "m" / "sheets.jsonl")
    assert sorted(r.sample_id for r in recs) == sorted(ids)
    by_id = {r.sample_id: r for r in recs}
    assert by_id[ids[0]].outcome == "error" and by_id[ids[0]].response.raw_text is None
    assert f"a reply of {len(huge)} characters, over the cap of {MAX_RESPONSE_RAW_TEXT_CHARS}" in by_id[ids[0]].error
    assert all(by_id[i].outcome in ("hit", "miss", "no_prediction") for i in ids[1:])
