"""collector/specstack/host/reproduction.py and `reproduce-plan`: what `make reproduce` takes from a compose
run's bundle (the real run: tests/compose/test_reproduce.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from specstack.host import HostError, provenance, reproduction

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
DIGEST = "sha256:" + "a" * 64
PINNED = {
    "VLLM_IMAGE": f"127.0.0.1:5000/specstack-vllm-cpu:0.32.0@{DIGEST}",
    "COLLECTOR_IMAGE": f"127.0.0.1:5000/specstack-collector:0.1.0@{DIGEST}",
    "PROMETHEUS_IMAGE": f"127.0.0.1:5000/specstack-prometheus:2.42.0@{DIGEST}",
}
CPU = {"source": "host", "model": "AMD EPYC", "cores": 2}


def compose_run(results: Path, name="cpu-run", images=None, methods=("baseline", "ngram"), k=None) -> Path:
    run = results / name
    (run / "host-provenance").mkdir(parents=True)
    images = images or {
        key: {"ref": ref, "id": "sha256:" + "1" * 64, "repo_digests": [ref.split(":0")[0]]}
        for key, ref in PINNED.items()
    }
    manifest = {
        "run_id": name,
        "platform": "cpu-container",
        "methods": {},
        "recipe": {"runtime": "url", "platform": "cpu-container", "model_set": "tiny", "prefix_caching": True},
    }
    for m in methods:
        (run / m).mkdir()
        (run / m / "summary.json").write_text(
            json.dumps(
                {
                    "method": m,
                    "status": "ok",
                    "spec_override": {"num_speculative_tokens": k} if k and m != "baseline" else None,
                }
            )
        )
        (run / "host-provenance" / f"{m}.json").write_text(json.dumps({"images": images, "cpu": CPU}))
        manifest["methods"][m] = {"status": "ok", "dir": m}
    (run / "manifest.json").write_text(json.dumps(manifest))
    return run


def test_the_plan_has_the_methods_their_k_and_every_image_by_digest(tmp_path):
    p = reproduction.plan(compose_run(tmp_path, k=3), here_cpu=CPU)
    assert p.methods == [("baseline", ""), ("ngram", "3")]
    assert (p.platform, p.model_set, p.prefix_caching, p.drift) == ("cpu", "tiny", True, [])
    assert p.images == PINNED
    lock, plan_file = reproduction.write(p, tmp_path / "out", "again")
    assert lock.read_text().splitlines()[1:] == [f"{k}={v}" for k, v in PINNED.items()]
    shell = subprocess.run(
        ["bash", "-c", f'. {plan_file}; echo "$platform|$model_set|$prefix_caching|$methods"'],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert shell == "cpu|tiny|1|baseline: ngram:3"


def test_a_local_tag_is_pinned_by_its_repo_digest_and_a_never_pushed_image_is_refused():
    assert (
        reproduction.pinned(
            "VLLM_IMAGE",
            {"ref": "reg:5000/vllm:1.0", "repo_digests": [f"other/vllm@{DIGEST}", f"reg:5000/vllm@{DIGEST}"]},
        )
        == f"reg:5000/vllm@{DIGEST}"
    )
    with pytest.raises(
        HostError,
        match="VLLM_IMAGE specstack-vllm-cpu:0.32.0 was built on the machine that ran the sweep and never pushed",
    ):
        reproduction.pinned("VLLM_IMAGE", {"ref": "specstack-vllm-cpu:0.32.0", "repo_digests": []})


def test_what_cannot_be_replayed_is_refused_naming_it(tmp_path):
    run = compose_run(tmp_path)
    s = json.loads((run / "ngram" / "summary.json").read_text())
    s["spec_override"] = {"num_speculative_tokens": 2, "prompt_lookup_max": 5}
    (run / "ngram" / "summary.json").write_text(json.dumps(s))
    with pytest.raises(HostError, match="ngram ran with speculative-config overrides prompt_lookup_max"):
        reproduction.plan(run)
    old = compose_run(tmp_path, "old")
    for m in ("baseline", "ngram"):  # a bundle recorded before the image set was
        (old / "host-provenance" / f"{m}.json").write_text(json.dumps({"cpu": CPU}))
    with pytest.raises(HostError, match="records no image set"):
        reproduction.plan(old)
    with pytest.raises(HostError, match="METHODS names eagle3, not in cpu-run"):
        reproduction.plan(run, methods=["eagle3"])
    two = compose_run(tmp_path, "two")
    (two / "host-provenance" / "ngram.json").write_text(
        json.dumps(
            {
                "images": {
                    **{k: {"ref": v} for k, v in PINNED.items()},
                    "VLLM_IMAGE": {"ref": f"r/v:2@sha256:{'b' * 64}"},
                }
            }
        )
    )
    with pytest.raises(HostError, match="the run used two VLLM_IMAGEs"):
        reproduction.plan(two)


def test_another_host_is_drift(tmp_path):
    p = reproduction.plan(compose_run(tmp_path), here_cpu={**CPU, "cores": 8})
    assert p.drift == ["CPU cores: 2 (recorded) → 8 (here)"]


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "specstack.host", "reproduce-plan", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(REPO / "collector")},
        timeout=60,
    )


def test_reproduce_plan_tells_make_a_native_run_apart_and_refuses_drift(tmp_path):
    (tmp_path / "results" / "native").mkdir(parents=True)
    assert _cli("--run", "results/native", "--run-id", "x", cwd=tmp_path).returncode == reproduction.NATIVE
    run = compose_run(tmp_path / "results")
    rec = json.loads((run / "host-provenance" / "ngram.json").read_text())
    for m in ("baseline", "ngram"):
        (run / "host-provenance" / f"{m}.json").write_text(json.dumps({**rec, "cpu": {**CPU, "model": "Other"}}))
    out = _cli("--run", "results/cpu-run", "--run-id", "again", cwd=tmp_path)
    assert out.returncode == 2 and "CPU model: Other (recorded)" in out.stderr and "ALLOW_DRIFT=1" in out.stderr
    out = _cli("--run", "cpu-run", "--run-id", "again", "--allow-drift", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "ran despite drift: CPU model: Other (recorded)" in out.stdout
    assert (tmp_path / ".specstack" / "reproduce" / "again.lock").exists()
    outside = compose_run(tmp_path / "elsewhere")
    out = _cli("--run", str(outside), "--run-id", "again2", cwd=tmp_path)
    assert out.returncode == 2 and "copy or unpack the bundle there" in out.stderr


class _Client:
    def image(self, ref):
        if ref.startswith("grafana"):
            raise RuntimeError(f"No such image: {ref}")
        return {"Id": "sha256:" + "2" * 64, "RepoDigests": [f"reg/x@{DIGEST}"]}


def test_provenance_records_each_image_of_the_lock_and_says_which_is_absent():
    out = provenance.lock_images(_Client(), {"VLLM_IMAGE": "reg/x:1", "GRAFANA_IMAGE": "grafana/grafana:12"})
    assert out["VLLM_IMAGE"] == {"ref": "reg/x:1", "id": "sha256:" + "2" * 64, "repo_digests": [f"reg/x@{DIGEST}"]}
    assert out["GRAFANA_IMAGE"]["error"] == "No such image: grafana/grafana:12"


def test_a_calibration_run_on_another_slot_is_reproduced_once_as_its_baseline(tmp_path):
    run = compose_run(tmp_path, methods=("baseline", "baseline-slot1", "ngram"))
    s = json.loads((run / "baseline-slot1" / "summary.json").read_text())
    (run / "baseline-slot1" / "summary.json").write_text(
        json.dumps({**s, "base_method": "baseline", "baseline_method": None})
    )
    s = json.loads((run / "ngram" / "summary.json").read_text())
    (run / "ngram" / "summary.json").write_text(
        json.dumps({**s, "base_method": "ngram", "baseline_method": "baseline-slot1"})
    )
    p = reproduction.plan(run, here_cpu=CPU)
    assert p.methods == [("baseline", ""), ("ngram", "")]
    assert p.skipped == [
        "baseline-slot1: the calibration run of baseline on another slot (reproduced once, as baseline)"
    ]
