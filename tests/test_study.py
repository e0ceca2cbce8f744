"""The one study model (``pointfail.inputs.study``): names are identifiers, paths stay inside their roots,
types and ranges are checked, and every error names the file, the key and the rule."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from pointfail.inputs.study import (
    NAME_PATTERN,
    ContainerModel,
    Roots,
    ServerModel,
    StudyError,
    check_name,
    load_study,
    parse_study,
    safe_relative,
)

REPO = Path(__file__).resolve().parents[1]
HEAD = '[study]\nname = "s"\n'
MODEL = '[[models]]\nname = "{name}"\nfamily = "center"\nimage = "center"\n'
BENCH = '[[benchmarks]]\nname = "{name}"\nloader = "suite"\n'


def _err(text: str) -> str:
    with pytest.raises(StudyError) as ei:
        parse_study(text, Path("x/study.toml"))
    return str(ei.value)


def test_committed_studies_validate():
    d = load_study(REPO / "records/default/study.toml")
    assert d.name == "default" and [b.name for b in d.benchmarks] == ["sheets", "text", "web"]
    assert [(m.kind, m.name, m.image) for m in d.models] == [("container", "center", "center"),
                                                              ("container", "ocr", "ocr")]
    assert d.judge.oracle_tolerance_px == 8.0 and d.aggregate.bootstrap_resamples == 1000
    vlm = load_study(REPO / "records/pointfail-vlm/study.toml")
    assert vlm.study.primary_judge == "ollama"
    assert vlm.model("qwen2.5-vl-3b").revision == "66285546d2b821cf421d4f5eb2576359d3770cd3"
    load_study(REPO / "runner/smoke/study.toml")


@pytest.mark.parametrize("name", ["../..", "/some/dir", "..", ".", ".hidden", "a/b", "A", "x" * 65, "", "a b",
                                  "a\\b", "caf\u00e9", "a\x00b"])
def test_traversal_absolute_and_odd_names_are_refused(name):
    msg = _err(HEAD + MODEL.format(name=name.replace("\\", "\\\\").replace("\x00", "\\u0000")))
    assert msg.startswith("x/study.toml:\n  models[0].name: ") and "is not a name" in msg


def test_reserved_and_duplicate_names():
    assert "models[0].name: 'tables' is reserved" in _err(HEAD + MODEL.format(name="tables"))
    assert "benchmarks[0].name: 'pooled' is reserved" in _err(HEAD + BENCH.format(name="pooled"))
    msg = _err(HEAD + BENCH.format(name="b") + BENCH.format(name="b") + MODEL.format(name="m"))
    assert "benchmarks[1].name: 'b' is used twice (also benchmarks[0]); names must be unique" in msg


def test_wrong_types_unknown_keys_and_ranges_name_key_and_rule():
    msg = _err('[study]\nname = 5\n')
    assert "study.name: Input should be a valid string (got 5)" in msg
    msg = _err(HEAD + '[[benchmarks]]\nname = "b"\nloader = "suite"\nlimit = "abc"\nn = 0\n')
    assert "benchmarks[0].limit: Input should be a valid integer (got 'abc')" in msg
    assert "benchmarks[0].n: Input should be greater than or equal to 1 (got 0)" in msg
    assert "benchmarks[0].limit" in _err(HEAD + '[[benchmarks]]\nname = "b"\nloader = "suite"\nlimit = "5"\n')
    msg = _err(HEAD + 'colour = "red"\n[[models]]\nname = "m"\nfamily = "nope"\nimage = "x"\nrevision = "main"\n')
    assert "study.colour: unknown key" in msg
    assert "models[0].family: unknown family 'nope'; known families: center," in msg
    assert "models[0].revision: 'main' is not a full 40-hex commit id" in msg
    assert "benchmarks[0].loader: unknown loader 'nope'" in _err(HEAD + '[[benchmarks]]\nname = "b"\nloader = "nope"\n')
    assert "models[0]: kind must be \"container\" or \"server\" (got 'weird')" in _err(
        HEAD + '[[models]]\nkind = "weird"\nname = "m"\nfamily = "center"\n')
    assert "not valid TOML" in _err("[study\n")


def test_paths_must_be_relative_without_dotdot():
    for bad, rule in (("../../etc", "'..'"), ("/etc", "is absolute"), ("a//b", "empty"), ("a\\\\b", "backslash")):
        msg = _err(HEAD + f'[[benchmarks]]\nname = "b"\nloader = "suite"\ndata_dir = "{bad}"\n')
        assert msg.count("benchmarks[0].data_dir: ") == 1 and rule in msg, msg
    assert "models[0].weights: '/etc' is absolute" in _err(HEAD + MODEL.format(name="m") + 'weights = "/etc"\n')


def test_file_checks_type_size_and_encoding(tmp_path):
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    with pytest.raises(StudyError, match="fifo.toml: is a FIFO, not a regular file; refused before reading"):
        load_study(fifo)  # returns at once: a FIFO with no writer would hang a plain open()
    with pytest.raises(StudyError, match="is a character device"):
        load_study("/dev/zero")
    big = tmp_path / "big.toml"
    big.write_bytes(b"#" * (1 << 20) + b"\n")
    with pytest.raises(StudyError, match="more than the limit of 1048576 bytes"):
        load_study(big)
    latin = tmp_path / "latin.toml"
    latin.write_bytes(b'[study]\nname = "s"\ndescription = "caf\xe9"\n')
    with pytest.raises(StudyError, match=r"latin.toml: not UTF-8 \(byte 37: b'\\xe9'\)"):
        load_study(latin)
    with pytest.raises(StudyError, match="cannot read study file"):
        load_study(tmp_path / "missing.toml")


def test_server_models_are_a_kind():
    s = parse_study(HEAD + '[[models]]\nkind = "server"\nname = "q"\nfamily = "qwen2_5_vl"\n'
                    'base_url = "http://127.0.0.1:8000/v1"\nmodel = "Qwen/Qwen2.5-VL-3B-Instruct"\n'
                    'api_key_env = "OPENAI_API_KEY"\n' + MODEL.format(name="c"))
    assert isinstance(s.models[0], ServerModel) and isinstance(s.models[1], ContainerModel)
    assert s.models[0].base_url == "http://127.0.0.1:8000/v1" and s.models[0].api_key_env == "OPENAI_API_KEY"
    msg = _err(HEAD + '[[models]]\nkind = "server"\nname = "q"\nfamily = "qwen2_5_vl"\nbase_url = "file:///etc"\n'
               'model = "m"\napi_key_env = "sk-123"\n')
    assert "models[0].base_url: 'file:///etc' is not an http(s) URL" in msg
    assert "models[0].api_key_env: 'sk-123' is not an environment variable name" in msg



SERVED = '[[models]]\nkind = "server"\nname = "q"\nfamily = "{family}"\n'


def test_served_options_are_validated_with_the_study():
    """A served model's options are part of the study format: checked when the study loads (types,
    ranges, unknown keys, and what the family can take), with the key named."""
    s = parse_study(HEAD + SERVED.format(family="qwen2_5_vl") + 'base_url = "http://h:1/v1"\nmodel = "m"\n'
                    'options = { concurrency = 16, timeout_s = 60, resize = "server", max_pixels = 1003520 }\n')
    o = s.models[0].options
    assert (o.concurrency, o.timeout_s, o.resize, o.max_pixels) == (16, 60.0, "server", 1003520)
    base = HEAD + SERVED.format(family="qwen2_5_vl") + 'base_url = "http://h:1/v1"\nmodel = "m"\n'
    assert "models[0].options.concurrency: Input should be greater than or equal to 1 (got 0)" in _err(
        base + "options = { concurrency = 0 }\n")
    assert "models[0].options.concurrency: Input should be a valid integer (got '4')" in _err(
        base + 'options = { concurrency = "4" }\n')
    assert "models[0].options.max_pixel: unknown key" in _err(base + "options = { max_pixel = 5 }\n")
    assert "models[0].options: a pixel budget needs max_pixels" in _err(base + "options = { min_pixels = 5 }\n")
    # the preset and structured output are checked against the family at load, not at the first request
    assert "models[0]: preset pointerbench-frontier is the json_pixels convention, not 'qwen2_5_vl'" in _err(
        base + 'options = { preset = "pointerbench-frontier" }\n')
    assert "structured output needs a JSON answer family" in _err(
        HEAD + SERVED.format(family="molmo") + 'base_url = "http://h:1/v1"\nmodel = "m"\n'
        "options = { structured = true }\n")
    ok = parse_study(HEAD + SERVED.format(family="json_pixels") + 'base_url = "http://h:1/v1"\nmodel = "m"\n'
                     'options = { preset = "pointerbench-frontier" }\n')
    assert ok.models[0].options.preset == "pointerbench-frontier"


def test_served_model_needs_a_server_or_serve():
    assert "models[0]: give base_url (a running server) or serve (the runner starts one), exactly one" in _err(
        HEAD + SERVED.format(family="qwen2_5_vl"))
    assert "models[0]: model (the name the server knows the model by) is required with base_url" in _err(
        HEAD + SERVED.format(family="qwen2_5_vl") + 'base_url = "http://h:1/v1"\n')
    both = HEAD + SERVED.format(family="qwen2_5_vl") + 'base_url = "http://h:1/v1"\nmodel = "m"\n' \
        + 'serve = { engine = "vllm", image = "qwen2_5_vl" }\n'
    assert "exactly one of them" in _err(both)
    s = parse_study(HEAD + SERVED.format(family="qwen2_5_vl") + 'serve = { engine = "vllm", image = "qwen2_5_vl", '
                    'weights = "qwen/3b", args = ["--max-model-len", "8192"] }\n')
    m = s.models[0]
    assert m.base_url is None and m.model == "q"  # served under the model's own name
    assert (m.serve.engine, m.serve.image, m.serve.weights, m.serve.args) == ("vllm", "qwen2_5_vl", "qwen/3b",
                                                                              ["--max-model-len", "8192"])
    bad = _err(HEAD + SERVED.format(family="qwen2_5_vl") + 'serve = { engine = "sglang", image = "../x", '
               'weights = "/abs", args = ["a\\nb"] }\n')
    assert "models[0].serve.engine: Input should be 'vllm' or 'transformers'" in bad
    assert "models[0].serve.image: '../x' is not a name" in bad
    assert "models[0].serve.weights: '/abs' is absolute" in bad
    assert "models[0].serve.args: 'a\\nb': control characters are not allowed" in bad


def test_model_spec_validates_one_table_as_the_study_does():
    from pointfail.inputs.study import model_spec

    m = model_spec({"kind": "server", "name": "served", "family": "json_pixels", "base_url": "http://h:1/v1",
                    "model": "m", "options": {"concurrency": 2}})
    assert isinstance(m, ServerModel) and m.options.concurrency == 2
    with pytest.raises(StudyError, match=r"(?s)command line:\n  options.concurrency: .*greater than or equal to 1"):
        model_spec({"kind": "server", "name": "served", "family": "json_pixels", "base_url": "http://h:1/v1",
                    "model": "m", "options": {"concurrency": 0}}, "command line")

def test_roots_keep_every_path_inside(tmp_path):
    study_dir = tmp_path / "records" / "s"
    study_dir.mkdir(parents=True)
    (study_dir / "study.toml").write_text(HEAD + BENCH.format(name="b") + 'data_dir = "sub/b"\n'
                                          + MODEL.format(name="m") + 'weights = "w/m"\n')
    s = load_study(study_dir / "study.toml")
    roots = Roots.for_study(s, tmp_path)
    assert roots.data == (tmp_path / "data" / "s").resolve() and roots.records == study_dir.resolve()
    assert roots.data_dir(s.benchmarks[0]) == roots.data / "sub" / "b"
    assert roots.weights_dir(s.models[0]) == (tmp_path / "weights/w/m").resolve()
    assert roots.job_dir(s.models[0], s.benchmarks[0]) == roots.work / "m" / "b"
    assert roots.records_file(s.models[0], s.benchmarks[0]) == study_dir.resolve() / "m" / "b.jsonl"
    # a symlink inside the data root that points out of it is caught after resolving
    (roots.data / "sub").mkdir(parents=True)
    (roots.data / "sub" / "b").symlink_to("/etc")
    with pytest.raises(StudyError, match=r"benchmarks 'b' data_dir: .* resolves to /etc, outside its root"):
        roots.data_dir(s.benchmarks[0])
    (study_dir / "m").symlink_to(tmp_path)
    with pytest.raises(StudyError, match="outside its root"):
        roots.records_file(s.models[0], s.benchmarks[0])


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab./-_\\\x00 A9~"), max_size=12))
def test_any_accepted_relative_path_stays_inside_its_root(tmp_path_factory, text):
    """Property: whatever string passes the lexical rule, joining it to a root stays under the root."""
    root = tmp_path_factory.getbasetemp() / "root"
    try:
        rel = safe_relative(text)
    except ValueError:
        return
    p = (root / rel).resolve()
    assert p.is_relative_to(root.resolve()) and p != root.resolve()


@given(st.text(max_size=70))
def test_names_are_single_path_components(text):
    try:
        check_name(text)
    except ValueError:
        return
    import re

    assert re.fullmatch(NAME_PATTERN, text) and "/" not in text and text not in (".", "..") and not text.startswith(".")
