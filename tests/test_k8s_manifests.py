"""The Kubernetes executor's manifests, validated offline against the Kubernetes API schema
(``kubernetes-validate``: the API's OpenAPI definitions as JSON Schema, strict, shipped in the
package) for the default study and the source study (issue 18)."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import kubernetes_validate
import pytest

from pointfail_runner import plan as pmod
from pointfail_runner import shards as smod
from pointfail_runner.executors import k8s

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "benchmarks"))
import builders  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
K8S_VERSIONS = ("1.33.0", "1.37.0")
"""Kubernetes releases the manifests are checked against: a supported older minor and the newest
schema the pinned kubernetes-validate ships (``backoffLimitPerIndex`` and ``podFailurePolicy``'s
``FailIndex`` need 1.29 or later)."""

DIGEST = "sha256:" + "0123456789abcdef" * 4


def _validate(doc: dict) -> None:
    for v in K8S_VERSIONS:
        kubernetes_validate.validate(doc, v, strict=True)


def _plan(tmp_path: Path, study: str, data: dict) -> pmod.Plan:
    """A real plan of ``records/<study>/study.toml`` over fixture data in each benchmark's layout
    (the study's own data is not on this machine)."""
    root = tmp_path / "data"
    for name, make in data.items():
        make(root / name)
    return pmod.build_plan(REPO / "records" / study / "study.toml", repo=REPO, data_root=root, shards=3, gpus=1,
                           log=lambda s: None)


def _runs(plan: pmod.Plan, tmp_path: Path, weights: bool) -> dict:
    return {m.name: smod.ModelRun(image=m.image, variant="cuda" if m.gpus else "cpu", tag=f"pointfail/{m.image}:x",
                                  id=DIGEST, reference=f"registry.invalid/lab/pointfail/{m.image}@{DIGEST}",
                                  weights=str(tmp_path / "weights" / m.name) if weights else None,
                                  weights_manifest=weights)
            for m in plan.models}


def _suites(n_by_name: dict) -> dict:
    return {name: (lambda root, n=n, name=name: builders.suite(root, n=n, name=name)) for name, n in n_by_name.items()}


def test_default_study_manifests_validate(tmp_path):
    plan = _plan(tmp_path, "default", _suites({"sheets": 150, "text": 150, "web": 100}))
    settings = k8s.K8sSettings(registry="registry.invalid/lab", parallelism=2)
    run = smod.RunDir(tmp_path / "run")
    run.root.mkdir()
    files = k8s.write_manifests(plan, run, _runs(plan, tmp_path, weights=False), settings, [m.name for m in plan.models])
    docs = [json.loads(f.read_text()) for f in files]
    assert [f.name for f in files] == ["k8s-networkpolicy.json", "job.json", "job.json"]
    assert [d["kind"] for d in docs] == ["NetworkPolicy", "Job", "Job"]
    for d in docs:
        _validate(d)
    job = docs[1]
    assert job["metadata"]["name"] == "pointfail-default-center"
    spec = job["spec"]
    assert (spec["completionMode"], spec["completions"], spec["parallelism"]) == ("Indexed", 3, 2)
    pod = spec["template"]["spec"]
    c = pod["containers"][0]
    assert c["image"] == f"registry.invalid/lab/pointfail/center@{DIGEST}"
    assert c["args"][:4] == ["--family", "center", "--weights", "/weights"]
    assert c["args"].count("--requests") == 3 and "/requests/web.jsonl" in c["args"] and "/job/web.jsonl" in c["args"]
    sc = c["securityContext"]
    assert sc["readOnlyRootFilesystem"] and sc["runAsNonRoot"] and sc["runAsUser"] == 10001
    assert sc["capabilities"] == {"drop": ["ALL"]} and sc["allowPrivilegeEscalation"] is False
    assert pod["automountServiceAccountToken"] is False and "nvidia.com/gpu" not in c["resources"]["limits"]
    mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
    assert mounts["/requests"]["subPathExpr"] == "center/shards/$(POINTFAIL_SHARD)/requests"
    assert mounts["/requests"]["readOnly"] and not mounts["/job"].get("readOnly")
    env = {e["name"]: e for e in c["env"]}
    assert env["POINTFAIL_SHARD"]["valueFrom"]["fieldRef"]["fieldPath"] == \
        "metadata.annotations['batch.kubernetes.io/job-completion-index']"
    np = docs[0]["spec"]
    assert np["policyTypes"] == ["Ingress", "Egress"] and np["egress"] == [] and np["ingress"] == []
    assert np["podSelector"]["matchLabels"].items() <= spec["template"]["metadata"]["labels"].items()


def test_source_study_manifests_validate_with_gpus_and_weights(tmp_path):
    plan = _plan(tmp_path, "pointfail-vlm", {"point-bench": builders.point_bench,
                                             "where2place": lambda r: builders.where2place(r, n=4),
                                             "refspatial": builders.refspatial})
    assert [m.name for m in plan.models] == ["molmo-7b-d", "molmoe-1b", "qwen2.5-vl-3b", "internvl3-2b"]
    settings = k8s.K8sSettings(registry="registry.invalid/lab", weights_claim="weights", weights_subpath="hf",
                               run_claim="pointfail-runs", run_subpath="studies/pointfail-vlm/run",
                               runtime_class="gvisor", node_selector={"gpu": "a100"})
    runs = _runs(plan, tmp_path, weights=True)
    for m in plan.models:
        job = k8s.job_manifest(plan, m, runs[m.name], settings)
        _validate(job)
        c = job["spec"]["template"]["spec"]["containers"][0]
        assert c["resources"]["limits"]["nvidia.com/gpu"] == "1" and "--device" in c["args"]
        assert c["args"][c["args"].index("--device") + 1] == "cuda"
        assert c["args"][-2:] == ["--weights-manifest", "/requests/weights.manifest.json"]
        w = [x for x in c["volumeMounts"] if x["mountPath"] == "/weights"][0]
        assert w == {"name": "weights", "mountPath": "/weights", "readOnly": True, "subPath": f"hf/{m.name}"}
        req = [x for x in c["volumeMounts"] if x["mountPath"] == "/requests"][0]
        assert req["subPathExpr"] == f"studies/pointfail-vlm/run/{m.name}/shards/$(POINTFAIL_SHARD)/requests"
    # a model name with '.' becomes a valid Job name (DNS label), distinct from its neighbours
    assert k8s.job_manifest(plan, plan.model("qwen2.5-vl-3b"), runs["qwen2.5-vl-3b"], settings)["metadata"][
        "name"].startswith("pointfail-pointfail-vlm-qwen2-5-vl-3b-")
    _validate(k8s.network_policy(plan, settings))
    with pytest.raises(pmod.PlanError, match="weights_claim"):
        k8s.job_manifest(plan, plan.models[0], runs[plan.models[0].name], k8s.K8sSettings(registry="r"))


def test_the_schema_check_is_real(tmp_path):
    """The validator rejects what the API server would: a wrong type, an unknown field (strict)."""
    plan = _plan(tmp_path, "default", _suites({"sheets": 3, "text": 3, "web": 3}))
    job = k8s.job_manifest(plan, plan.models[0], _runs(plan, tmp_path, False)[plan.models[0].name],
                           k8s.K8sSettings(registry="r"))
    _validate(job)
    bad = copy.deepcopy(job)
    bad["spec"]["completions"] = "3"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, K8S_VERSIONS[-1], strict=True)
    bad = copy.deepcopy(job)
    bad["spec"]["template"]["spec"]["containers"][0]["securityContext"]["readOnlyRootFS"] = True
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, K8S_VERSIONS[-1], strict=True)


def test_dns_label():
    assert k8s.dns_label("pointfail", "default", "center") == "pointfail-default-center"
    a, b = k8s.dns_label("x", "a.b"), k8s.dns_label("x", "a_b")
    assert a != b and a.startswith("x-a-b-") and len(a) == len("x-a-b-") + 8
    long = k8s.dns_label("pointfail", "s" * 64, "m" * 64)
    assert len(long) == 63 and long[-9] == "-"
