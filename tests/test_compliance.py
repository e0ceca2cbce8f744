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
