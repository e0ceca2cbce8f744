"""The judge prompt and the strict single-label reading rule (read_label)."""

import itertools

import pytest
from hypothesis import given, settings, strategies as st

from pointfail.judge.protocol import LABEL_SCHEMA, VERDICTS, build_prompt, read_label
from pointfail.records import FAILURE_MODES, JudgeAttempt

labels = st.sampled_from(FAILURE_MODES)


def spell(label: str, sep: str, case: str) -> str:
    words = label.split("_")
    text = sep.join(words)
    return {"lower": text.lower(), "upper": text.upper(), "title": text.title()}[case]


decorations = st.sampled_from(["{}", "**{}**", "`{}`", "*{}*", '"{}"', "{}.", "Label: {}", "{}!", "- {}", "## {}\n"])


@settings(deadline=None)  # a loaded CI machine must not turn slowness into failures
@given(labels, st.sampled_from(["_", "-", " ", "", "  ", " - "]), st.sampled_from(["lower", "upper", "title"]), decorations)
def test_one_label_any_spelling_is_accepted(label, sep, case, deco):
    reply = deco.format(spell(label, sep, case))
    assert read_label(reply) == (label, "accepted")


@settings(deadline=None)  # a loaded CI machine must not turn slowness into failures
@given(labels, labels, decorations)
def test_two_different_labels_are_rejected(a, b, deco):
    reply = deco.format(a) + " or " + deco.format(b)
    expected = (a, "accepted") if a == b else (None, "rejected_two_labels")
    assert read_label(reply) == expected


@settings(deadline=None)  # a loaded CI machine must not turn slowness into failures
@given(labels, st.sampled_from(["not ", "Not ", "NOT ", "isn't ", "It is not a ", "never ", "no "]))
def test_negated_label_is_rejected(label, neg):
    assert read_label(neg + label.replace("_", " ")) == (None, "rejected_negated")


@settings(deadline=None)  # a loaded CI machine must not turn slowness into failures
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60))
def test_never_raises_and_verdict_is_known(text):
    label, verdict = read_label(text)
    assert verdict in VERDICTS
    assert (label is not None) == (verdict == "accepted")
    if label is not None:
        assert label in FAILURE_MODES
        JudgeAttempt(attempt=1, reply=text, verdict=verdict, label=label)  # fits the record


@pytest.mark.parametrize(
    "reply, expected",
    [
        ("hallucinated", ("hallucinated", "accepted")),
        ("The model's point is wrong_instance.", ("wrong_instance", "accepted")),
        ("I would say this is a **wrong-category** error.", ("wrong_category", "accepted")),
        ("```\noff_by_pixels\n```", ("off_by_pixels", "accepted")),
        ('{"label": "wrong_category"}', ("wrong_category", "accepted")),
        ("Label: hallucinated. The point is hallucinated.", ("hallucinated", "accepted")),
        ("Not sure, but hallucinated", ("hallucinated", "accepted")),  # the comma ends the negated clause
        ("OFF BY PIXELS", ("off_by_pixels", "accepted")),
        ("ｗｒｏｎｇ＿ｉｎｓｔａｎｃｅ", ("wrong_instance", "accepted")),  # full-width, NFKC
        ("wrong_instance or wrong_category", (None, "rejected_two_labels")),
        ("It is not off_by_pixels; it is hallucinated.", (None, "rejected_two_labels")),
        ("not hallucinated", (None, "rejected_negated")),
        ("This isn’t a wrong instance", (None, "rejected_negated")),  # typographic apostrophe
        ("non-hallucinated", (None, "rejected_negated")),
        ("It doesn't look off by pixels", (None, "rejected_negated")),
        ("I can't call it wrong_category", (None, "rejected_negated")),
        ("It cannot be hallucinated", (None, "rejected_negated")),
        ("The model did not miss by much: off_by_pixels", ("off_by_pixels", "accepted")),
        ("hallucination", (None, "rejected_no_label")),  # not the label name
        ("wrong_instances", (None, "rejected_no_label")),  # glued to a letter
        ("I cannot tell.", (None, "rejected_no_label")),
        ("", (None, "rejected_empty")),
        ("  \n\t", (None, "rejected_empty")),
        (None, (None, "rejected_empty")),
    ],
)
def test_fixed_replies(reply, expected):
    assert read_label(reply) == expected


def test_prompt_restates_instruction_and_defines_every_label():
    p = build_prompt("  point to the mug on the left ")
    assert '"point to the mug on the left"' in p
    assert "green" in p and "red marker" in p
    for label in FAILURE_MODES:
        assert sum(line.startswith(f"- {label}: ") for line in p.splitlines()) == 1
    assert "exactly one label" in p
    assert "outside the image" not in p
    assert "outside the image" in build_prompt("x", point_outside_image=True)
    absent = build_prompt("point to the cat", target_absent=True)
    assert "nothing is tinted green" in absent and "area tinted green is the correct target" not in absent
    assert "red marker is where the model pointed" in absent
    # fixed: the same input gives the same text
    assert build_prompt("a") == build_prompt("a")


def test_schema_enumerates_the_labels():
    assert LABEL_SCHEMA["properties"]["label"]["enum"] == list(FAILURE_MODES)
    for a, b in itertools.combinations(FAILURE_MODES, 2):
        assert read_label(f'{{"label": "{a}", "alt": "{b}"}}')[1] == "rejected_two_labels"


# ------------------------------------------------------------------------------------ bounded reading

import re as _re  # noqa: E402

from pointfail.judge.protocol import cap_reply  # noqa: E402
from pointfail.limits import MAX_JUDGE_REPLY_CHARS  # noqa: E402

_PLAIN_NEGATION = _re.compile(
    r"(?<![a-z0-9])(?:not|no|never|none|neither|nor|without|non|cannot"
    r"|(?:is|are|was|were|do|does|did|has|have|had|could|would|should|ca|wo)n'?t)"
    r"(?:[^a-z0-9]+[a-z0-9']+){0,2}[^a-z0-9]*$"
)
_PLAIN_CLAUSE_END = _re.compile(r"[.,;:!?\n]")


def _plain_read_label(reply):
    """The reading rule as first written (quadratic in repeated labels): the reference for the linear one."""
    import unicodedata

    if reply is None or not reply.strip():
        return None, "rejected_empty"
    text = unicodedata.normalize("NFKC", reply).lower().replace("\u2019", "'")
    pats = {lab: _re.compile(r"(?<![a-z0-9])" + r"[\s_\-]*".join(map(_re.escape, lab.split("_"))) + r"(?![a-z0-9])")
            for lab in FAILURE_MODES}
    found = {lab: list(p.finditer(text)) for lab, p in pats.items()}
    found = {k: v for k, v in found.items() if v}
    if not found:
        return None, "rejected_no_label"
    if len(found) > 1:
        return None, "rejected_two_labels"
    (label, matches), = found.items()
    for m in matches:
        before = text[: m.start()]
        cut = max((c.end() for c in _PLAIN_CLAUSE_END.finditer(before)), default=0)
        if _PLAIN_NEGATION.search(before[cut:]):
            return None, "rejected_negated"
    return label, "accepted"


_WORDS = st.sampled_from(["not", "no", "isn't", "can't", "cant", "never", "none", "nor", "a", "very", "clearly",
                          "x'y", "'", "''", " ", "  ", ", ", ". ", "\n", "-", "_", "**", "hallucinated",
                          "off by pixels", "wrong instance", "wrong_category", "it", "is", "sure"])


@settings(max_examples=600, deadline=None)
@given(st.lists(_WORDS, max_size=14).map("".join))
def test_linear_reader_agrees_with_the_plain_rule(text):
    assert read_label(text) == _plain_read_label(text)


def test_reading_is_bounded_and_linear_in_the_reply():
    # a huge reply is read from its first MAX_JUDGE_REPLY_CHARS characters (time per KB: bench/parse.py)
    assert read_label("hallucinated " * 400_000) == ("hallucinated", "accepted")
    assert read_label("not " * 300_000 + "hallucinated") == (None, "rejected_no_label")
    assert read_label("not " + "'" * 1_000_000 + " hallucinated") == (None, "rejected_no_label")
    assert read_label("not " + "'" * 2000 + " hallucinated") == (None, "rejected_negated")
    assert read_label("x" * MAX_JUDGE_REPLY_CHARS + " hallucinated") == (None, "rejected_no_label")
    assert read_label("hallucinated " * 10_000) == ("hallucinated", "accepted")
    stored = cap_reply("hallucinated " * 10_000)
    assert len(stored) == MAX_JUDGE_REPLY_CHARS + len("…[cut: 130000 chars]") and stored.endswith("…[cut: 130000 chars]")
    assert cap_reply("wrong_instance") == "wrong_instance" and cap_reply(None) == ""
