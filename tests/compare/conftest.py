"""Constructed runs for the comparison tests: a baseline and ngram, code and chat, c=1 and c=4 with three bench
repeats; the acceptance figures derived from a histogram exactly as the accounting derives them."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.bundles import manifest, write_method

TEXTS = {"code": {"r0": ("a b c d", "stop"), "r1": ("x y z", "length")}, "chat": {"q0": ("hello there", "stop")}}


def figures(hist: list[int]) -> dict:
    """Acceptance figures from a histogram of a drafter that always drafts K = len(hist) - 1 tokens."""
    k, steps = len(hist) - 1, sum(hist)
    accepted = sum(j * n for j, n in enumerate(hist))
    return {"histogram": hist, "num_spec_steps": steps, "num_draft_tokens": steps * k,
            "num_accepted_draft_tokens": accepted, "acceptance_rate": accepted / (steps * k),
            "mean_acceptance_length": 1 + accepted / steps,
            "per_position": [sum(hist[p + 1:]) / steps for p in range(k)], "no_accept_share": hist[0] / steps}


HIST = {2: [3, 2, 5], 4: [2, 1, 1, 0, 4]}


def make_run(root: Path, name: str, *, k: int = 4, hist: list[int] | None = None, inputs_sha: str = "a" * 64,
             target: str = "/models/tiny", texts: dict | None = None, speed: float = 1.0,
             acc_len: float = 2.5, repeats: int = 3, vllm: str = "0.32.0", machine: str = "x86_64") -> Path:
    """A run folder: baseline + ngram (K=k); `speed` scales ngram's throughput (TPOT by its inverse)."""
    run = root / name
    run.mkdir(parents=True)
    server = {"target": target, "vllm_version": vllm}
    base = {(t, c): [(10.0 + r, 100.0 - r, {}) for r in range(repeats)] for t in ("code", "chat") for c in (1, 4)}
    spec = {(t, c): [((5.0 + 0.1 * r) / speed, (200.0 + r) * speed, {"acc_len": acc_len}) for r in range(repeats)]
            for t in ("code", "chat") for c in (1, 4)}
    write_method(run, "baseline", baseline=None, k=None, cells=base, texts=texts or TEXTS, server=server)
    fig = figures(hist or HIST[k])
    write_method(run, "ngram", baseline="baseline", k=k, cells=spec, texts=texts or TEXTS, server=server,
                 acceptance={"code": fig, "chat": fig})
    manifest(run, {m: {"status": "ok", "dir": m, "error": None} for m in ("baseline", "ngram")}, repeats,
             platform="cpu-native", host={"machine": machine, "platform": "Linux"},
             inputs={f"inputs/{t}.{kind}.jsonl": inputs_sha for t in ("code", "chat") for kind in ("perf", "acceptance")})
    return run


def perturb(src: Path, dst: Path, method: str = "ngram", factor: float = 0.8) -> Path:
    """A copy of a run whose accepted counts are scaled (the summary edited as by hand): what a regression looks
    like in the acceptance phase."""
    shutil.copytree(src, dst)
    path = dst / method / "summary.json"
    s = json.loads(path.read_text())
    for f in s["tasks"].values():
        if f.get("num_draft_tokens"):
            f["num_accepted_draft_tokens"] = round(f["num_accepted_draft_tokens"] * factor)
            f["acceptance_rate"] = f["num_accepted_draft_tokens"] / f["num_draft_tokens"]
            f["mean_acceptance_length"] = 1 + f["num_accepted_draft_tokens"] / f["num_spec_steps"]
    path.write_text(json.dumps(s))
    return dst


@pytest.fixture
def run_a(tmp_path) -> Path:
    return make_run(tmp_path, "run-a")
