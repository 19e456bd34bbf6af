"""Constructed run bundles for fast tests: the same layout and keys as a real `specstack sweep` bundle (a method's
summary.json, raw `vllm bench serve` JSON per repeat, acceptance JSONL), written from figures the test chooses.
Shared by tests/report and tests/compare."""
from __future__ import annotations

import json
from pathlib import Path


def bench_json(tpot: float, tput: float, *, completed: int = 8, failed: int = 0, out_tokens: int = 384,
               acc_len: float | None = None, c: int = 1, drafts: int = 10, accepted: int = 20) -> dict:
    d = {"date": "20261129-114817", "backend": "openai", "model_id": "spec-demo", "num_prompts": completed + failed,
         "request_rate": "inf", "max_concurrency": c, "duration": out_tokens / tput, "completed": completed,
         "failed": failed, "total_input_tokens": 2000, "total_output_tokens": out_tokens,
         "output_throughput": tput, "latencies": [0.1] * completed, "queue_times": [0.0] * completed}
    for m, base in (("ttft", 40.0), ("tpot", tpot), ("itl", tpot * 2), ("e2el", 100.0)):
        d.update({f"mean_{m}_ms": base, f"median_{m}_ms": base, f"std_{m}_ms": 1.0, f"p50_{m}_ms": base,
                  f"p95_{m}_ms": base * 1.5, f"p99_{m}_ms": base * 2})
    if acc_len is not None:
        d.update(spec_decode_acceptance_rate=50.0, spec_decode_acceptance_length=acc_len,
                 spec_decode_num_drafts=drafts, spec_decode_draft_tokens=4 * drafts,
                 spec_decode_accepted_tokens=accepted,
                 spec_decode_per_position_acceptance_rates=[0.8, 0.6, 0.4, 0.2])
    return d


def chat_record(rid: str, prompt: str, text: str | None, finish: str = "stop", spec: dict | None = None,
                error: str | None = None) -> dict:
    rec = {"id": rid, "request": {"model": "spec-demo", "messages": [{"role": "user", "content": prompt}],
                                  "temperature": 0, "max_tokens": 64}, "http_status": 200, "seconds": 0.1}
    if error:
        rec["error"] = error
        rec["response"] = {"text": "boom"}
        return rec
    rec["response"] = {"choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                    "finish_reason": finish}],
                       "usage": {"prompt_tokens": 10, "completion_tokens": len((text or "").split()),
                                 "total_tokens": 10},
                       "metrics": None if spec is None else {"speculative_decoding": spec}}
    return rec


def write_method(run_dir: Path, name: str, *, baseline: str | None, cells: dict, texts: dict[str, dict],
                 k: int | None = 4, kv: int | None = 100_000, acceptance: dict | None = None, comparable=True,
                 preemptions: dict | None = None, status: str = "ok", folder: str | None = None,
                 spec_override: dict | None = None, base_method: str | None = None,
                 replication: dict | None = None, server: dict | None = None) -> Path:
    """cells: {(task, c): [(tpot, tput, extra kwargs), ...repeats]}; texts: {task: {id: (text, finish)}};
    server: fields merged into the summary's server facts (target, vllm_version, ...)."""
    d = run_dir / (folder or name)
    speculative = baseline is not None
    tasks = {}
    windows = []
    for task in sorted({t for t, _ in cells} | set(texts)):
        bench = []
        for (t, c), reps in sorted(cells.items()):
            if t != task:
                continue
            for r, (tpot, tput, extra) in enumerate(reps):
                f = f"bench/{task}-c{c}-r{r}.json"
                data = bench_json(tpot, tput, c=c, **extra)
                (d / "bench").mkdir(parents=True, exist_ok=True)
                (d / f).write_text(json.dumps(data))
                bench.append({"concurrency": c, "repeat": r, "status": "ok", "file": f,
                              "output_throughput": data["output_throughput"], "completed": data["completed"]})
                pre = (preemptions or {}).get((task, c, r), 0.0)
                windows.append({"name": f"bench/{task}-c{c}-r{r}", "phase": "bench", "task": task, "concurrency": c,
                                "repeat": r, "status": "ok", "checks": [],
                                "counters": {"counters": {"vllm:num_preemptions": pre}, "split": {}}})
        acc = (acceptance or {}).get(task) or {}
        tasks[task] = {"acceptance_rate": acc.get("acceptance_rate"),
                       "mean_acceptance_length": acc.get("mean_acceptance_length"),
                       "histogram": acc.get("histogram"), "per_position": acc.get("per_position"),
                       "per_position_conditional": acc.get("per_position_conditional"),
                       "drafted_per_position": acc.get("drafted_per_position"),
                       "no_accept_share": acc.get("no_accept_share"), "num_spec_steps": acc.get("num_spec_steps"),
                       "num_draft_tokens": acc.get("num_draft_tokens"),
                       "num_accepted_draft_tokens": acc.get("num_accepted_draft_tokens"),
                       "requests": len(texts.get(task, {})), "completion_tokens": 0, "finish_reasons": {},
                       "bench": bench}
        lines = []
        for rid, spec in texts.get(task, {}).items():
            text, finish = spec[0], spec[1]
            error = spec[2] if len(spec) > 2 else None
            metrics = {"num_spec_steps": 1, "num_draft_tokens": k, "num_accepted_draft_tokens": 0,
                       "acceptance_histogram": [1] + [0] * k} if speculative else None
            lines.append(json.dumps(chat_record(rid, f"prompt {rid}", text, finish, metrics, error)))
        (d / "acceptance").mkdir(parents=True, exist_ok=True)
        (d / "acceptance" / f"{task}.jsonl").write_text("\n".join(lines) + "\n")
    summary = {"schema": "specstack.summary/1", "run_id": run_dir.name, "method": name, "baseline_method": baseline,
               "status": status, "error": None if status == "ok" else "server did not start",
               "speculative_config": ({"method": name.split("-")[0], "num_speculative_tokens": k}
                                      if speculative else None),
               "spec_override": spec_override, "comparable": comparable,
               "server": {"target": "/models/tiny", "root_model": "/nonexistent/tokenizer", "kv_cache_tokens": kv,
                          "model_runner": "V1", "async_scheduling": False, **(server or {})},
               "tasks": tasks, "windows": windows, "crosscheck": {"ok": True, "checks": 1, "mismatches": []}}
    if base_method:
        summary["base_method"] = base_method
    if replication:
        summary["replication"] = replication
    (d / "summary.json").write_text(json.dumps(summary))
    return d


def manifest(run_dir: Path, methods: dict, repeats: int = 3, **extra) -> None:
    """extra: top-level manifest fields (inputs, host, platform, ...)."""
    (run_dir / "manifest.json").write_text(json.dumps({
        "schema": "specstack.manifest/1", "run_id": run_dir.name, "model_set": "tiny", "platform": "cpu-native",
        "workload": {"tasks": ["code", "chat"], "num_prompts": 8, "perf_output_len": 48, "acceptance_max_tokens": 64,
                     "concurrencies": [1, 4], "repeats": repeats},
        "methods": methods, **extra}))


