"""`make sweep GPUS=0,1` (GPU form): each server its own GPU, cores and port; bad slots refused first."""

from __future__ import annotations

import json
import os

import pytest

from .render import interpolate, lock_env
from .stand_in import docker_calls, pulls_or_builds, run_make, step_of

pytestmark = pytest.mark.compose


def test_make_sweep_in_parallel_renders_each_servers_own_gpu_and_port(fake_stack, raw):
    """make sweep GPUS=0,1 CPUSETS=0,1: two servers at once, each with device_ids of its own GPU and the cores of
    that GPU (compose.yaml rendered with the environment of each `up`) and its own host port; the third method
    waits for a free GPU; one run id, one manifest with mode parallel and each method's GPU (index, UUID, name),
    one report at the end."""
    fake_stack["env"]["FAKE_COLLECTOR_SECONDS"] = "1"
    run_make(
        fake_stack,
        "sweep",
        "RUN_ID=p1",
        "GPU_FREE_POLL=0.05",
        "GPUS=0,1",
        f"CPUSETS=0,{os.cpu_count() - 1}",
        "SWEEP_METHODS=baseline ngram suffix",
        "SWEEP_MTP_METHODS=",
    )
    cores = {"0": "0", "1": str(os.cpu_count() - 1)}
    rows = [json.loads(x) for x in (fake_stack["state"] / "slot-env.jsonl").read_text().splitlines()]
    live, gpu_of, most = {}, {}, 0
    for args, env, _ in rows:
        step = step_of(args) or ""
        verb, _, svc = step.partition(":")
        if verb == "up" and svc.startswith("vllm-"):
            doc = interpolate(raw["services"][svc], {**lock_env(), **{k: v for k, v in env.items() if v}})
            (device,) = doc["deploy"]["resources"]["reservations"]["devices"]
            gpu_of[svc] = device["device_ids"]
            assert doc["cpuset"] == cores[device["device_ids"][0]], (svc, doc["cpuset"])
            (port,) = doc["ports"]
            assert device["device_ids"] not in [g for g, _ in live.values()], (svc, live)
            assert port not in [p for _, p in live.values()], (svc, live)
            live[svc] = (device["device_ids"], port)
            most = max(most, len(live))
        elif verb == "stop" and svc.startswith("vllm-"):
            live.pop(svc)
    assert most == 2 and sorted(gpu_of) == ["vllm-baseline", "vllm-ngram", "vllm-suffix"], gpu_of
    assert {tuple(ids) for ids in gpu_of.values()} == {("0",), ("1",)}
    run_dir = fake_stack["dir"] / "results" / "p1"
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["mode"] == "parallel"
    assert manifest["slots"] == [{"gpu": "0", "cpuset": cores["0"]}, {"gpu": "1", "cpuset": cores["1"]}]
    uuids = {"0": "GPU-abc", "1": "GPU-def"}
    for svc, (gpu,) in gpu_of.items():
        slot = manifest["methods"][svc[5:]]["slot"]
        assert slot == {
            "asked": gpu,
            "gpu_index": gpu,
            "gpu_uuid": uuids[gpu],
            "gpu_name": "NVIDIA H100 80GB HBM3",
            "cpuset": None,
        }  # the stand-in docker's inspect has no HostConfig
        assert json.loads((run_dir / "host-provenance" / f"{svc[5:]}.json").read_text())["slot"] == slot
    # Each collector ran while its own server's target was in a file of its own; both servers' at one moment.
    seen = [json.loads(x) for x in (fake_stack["state"] / "targets-during-collector.jsonl").read_text().splitlines()]
    assert max(len(t) for t in seen) == 2 and all(t["labels"]["run_id"] == "p1" for ts in seen for t in ts)
    # After each method its own GPU's memory was polled (the next method of that slot waits for it).
    polled = [c[c.index("-i") + 1] for c in docker_calls(fake_stack) if c[0] == "nvidia-smi" and "-i" in c]
    assert sorted(set(polled)) == ["0", "1"]
    steps = [s for s in map(step_of, docker_calls(fake_stack)) if s]
    assert steps.count("collector:report") == 1 and steps[-1] == "collector:report"
    # No collector takes the `collector` alias: Prometheus's one static target would reach either at random.
    collectors = [c for c in docker_calls(fake_stack) if step_of(c) == "collector:run"]
    assert len(collectors) == 3 and not any("--use-aliases" in c for c in collectors)


@pytest.mark.parametrize(
    "args, message",
    [
        (("GPUS=0,0",), "a slot appears twice"),
        (("GPUS=0,first",), "is not a GPU index (0) or UUID"),
        (("CPUSETS=0,1",), "CPUSETS on the GPU platform pins the servers of a parallel sweep: give the GPUs too"),
        (("GPUS=0,1", "CPUSETS=0"), "give one CPU set per GPU (2), or none"),
        (("GPUS=0,1", "PLATFORM=cpu"), "GPUS is for PLATFORM=gpu"),
        (("CALIBRATE=1",), "CALIBRATE=1 runs the baseline on every slot of a parallel sweep: give the slots too"),
        (
            ("GPUS=0,1", "CALIBRATE=1", "SWEEP_METHODS=ngram"),
            "the sweep's methods lack baseline: add it to SWEEP_METHODS",
        ),
    ],
)
def test_bad_slots_are_refused_before_anything_starts(fake_stack, args, message):
    out = run_make(fake_stack, "sweep", "RUN_ID=p2", *args, check=False)
    assert out.returncode == 2 and message in out.stderr, out.stderr
    assert pulls_or_builds(fake_stack) == []


def test_a_calibrated_sweep_runs_the_baseline_on_every_gpu_and_compares_each_method_on_its_own(fake_stack, raw):
    """make sweep GPUS=0,1 CALIBRATE=1: the baseline's server comes up once on each GPU (never twice at once: one
    compose service), the run on GPU 1 is the result baseline-slot1 (its collector's --bundle-name, its host
    provenance, its Prometheus label), and every other method's collector compares it with the baseline of the GPU
    it ran on (--baseline-result)."""
    fake_stack["env"]["FAKE_COLLECTOR_SECONDS"] = "1"
    run_make(
        fake_stack,
        "sweep",
        "RUN_ID=c1",
        "GPU_FREE_POLL=0.05",
        "GPUS=0,1",
        "CALIBRATE=1",
        "SWEEP_METHODS=baseline ngram suffix",
        "SWEEP_MTP_METHODS=",
    )
    rows = [json.loads(x) for x in (fake_stack["state"] / "slot-env.jsonl").read_text().splitlines()]
    baseline_gpus, live, collectors = [], set(), {}
    for args, env, _ in rows:
        step = step_of(args) or ""
        if step == "up:vllm-baseline":
            doc = interpolate(raw["services"]["vllm-baseline"], {**lock_env(), **{k: v for k, v in env.items() if v}})
            (device,) = doc["deploy"]["resources"]["reservations"]["devices"]
            assert "vllm-baseline" not in live, "two baseline servers at once"
            live.add("vllm-baseline")
            baseline_gpus.append(device["device_ids"])
        elif step == "stop:vllm-baseline":
            live.discard("vllm-baseline")
        elif step == "collector:run":
            words = args[args.index("collector") + 1 :]
            opt = {
                k: words[words.index(k) + 1] for k in ("--method", "--bundle-name", "--baseline-result") if k in words
            }
            name = opt.get("--bundle-name", opt["--method"])
            collectors[name] = (env["SPECSTACK_GPU"], opt)
    assert sorted(baseline_gpus) == [["0"], ["1"]], baseline_gpus
    assert collectors["baseline"] == ("0", {"--method": "baseline"})
    assert collectors["baseline-slot1"] == ("1", {"--method": "baseline", "--bundle-name": "baseline-slot1"})
    for method in ("ngram", "suffix"):
        gpu, opt = collectors[method]
        assert opt == {"--method": method, "--baseline-result": "baseline" if gpu == "0" else "baseline-slot1"}, opt
    run_dir = fake_stack["dir"] / "results" / "c1"
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["mode"] == "parallel" and manifest["calibration"] is True
    provenance = json.loads((run_dir / "host-provenance" / "baseline-slot1.json").read_text())
    assert provenance["slot"]["gpu_index"] == "1" and provenance["slot"]["gpu_uuid"] == "GPU-def"
    assert json.loads((run_dir / "host-provenance" / "baseline.json").read_text())["slot"]["gpu_index"] == "0"
    # Prometheus told the two baseline runs apart by their result names while each ran.
    seen = [json.loads(x) for x in (fake_stack["state"] / "targets-during-collector.jsonl").read_text().splitlines()]
    assert {"baseline", "baseline-slot1"} <= {t["labels"]["method"] for ts in seen for t in ts}
    steps = [s for s in map(step_of, [a for a, _, _ in rows]) if s]
    assert steps.count("collector:report") == 1 and steps[-1] == "collector:report"
