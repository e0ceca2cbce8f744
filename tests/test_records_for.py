"""The runner's record building (records_for) scores the same loaded samples once per model: no model
may change the samples the next one is scored on."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

from pointfail.inputs.benchmarks import load as load_benchmark
from pointfail.running.jobs import JobResponse, ResponseLog
from pointfail_runner.study import load_study, records_for, requests_for

REPO = Path(__file__).resolve().parents[1]
POINT_BENCH = REPO / "tests" / "fixtures" / "standin_hub" / "datasets" / "point-bench"


def test_every_model_scores_the_same_masks(tmp_path):
    """Two models answering the same point inside every mask both score hits: records_for makes mask
    paths checkout-relative on copies, so the second model's masks are not looked up under the data
    folder twice (data/<study>/point-bench/data/<study>/point-bench/masks/...)."""
    data = tmp_path / "data" / "rehearsal" / "point-bench"
    shutil.copytree(POINT_BENCH, data)
    samples = load_benchmark("point-bench", data)
    assert samples and all(s.target.kind == "mask" for s in samples)
    before = [s.target.mask_path for s in samples]
    study = load_study(REPO / "records" / "pointfail-vlm-rehearsal" / "study.toml")
    from pointfail.families import get_family
    from pointfail.geometry import TargetRegion

    outcomes = {}
    for name in ("molmo-7b-d", "molmoe-1b"):
        model = study.model(name)
        fam = get_family(model.family)
        prompts, _ = requests_for(fam, model, samples)
        answers = {}
        for s in samples:
            mask = TargetRegion.from_target(s.target, (s.image.width, s.image.height), data).mask
            ys, xs = np.nonzero(mask)
            x, y = int(xs[0]), int(ys[0])  # a pixel of the mask
            answers[s.sample_id] = JobResponse(
                sample_id=s.sample_id,
                raw_text=f'<point x="{100 * (x + 0.5) / s.image.width:.1f}" y="{100 * (y + 0.5) / s.image.height:.1f}" alt="t">t</point>')
        recs = records_for(study.name, model, samples, prompts, ResponseLog(responses=answers), None, data, tmp_path)
        outcomes[name] = [(r.outcome, r.error) for r in recs]
        assert all(r.target.mask_path.startswith("data/rehearsal/point-bench/") for r in recs)
    assert outcomes["molmo-7b-d"] == outcomes["molmoe-1b"] == [("hit", None)] * len(samples)
    assert [s.target.mask_path for s in samples] == before
