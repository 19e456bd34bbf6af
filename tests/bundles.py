"""Constructed run bundles for fast tests: the same layout and keys as a real `specstack sweep` bundle (a method's
summary.json, raw `vllm bench serve` JSON per repeat, acceptance JSONL), written from figures the test chooses.
Shared by tests/report and tests/compare."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from specstack.figures import bench_cell


def bench_json(
    tpot: float,
    tput: float,
    *,
    completed: int = 8,
    failed: int = 0,
    out_tokens: int = 384,
    acc_len: float | None = None,
    c: int | None = 1,
    drafts: int = 10,
    accepted: int = 20,
    ttft: float = 40.0,
    e2el: float = 100.0,
    requests: dict | None = None,
) -> dict:
    """requests: bench's per-request lists (--save-detailed; see per_request_lists) merged in as written."""
    d = {
        "date": "20261129-114817",
        "backend": "openai",
        "model_id": "spec-demo",
        "num_prompts": completed + failed,
        "request_rate": "inf",
        "max_concurrency": c,
        "duration": out_tokens / tput,
        "completed": completed,
        "failed": failed,
        "total_input_tokens": 2000,
        "total_output_tokens": out_tokens,
        "output_throughput": tput,
        "request_throughput": completed * tput / out_tokens,
        "latencies": [0.1] * completed,
        "queue_times": [0.0] * completed,
    }
    for m, base in (("ttft", ttft), ("tpot", tpot), ("itl", tpot * 2), ("e2el", e2el)):
        d.update(
            {
                f"mean_{m}_ms": base,
                f"median_{m}_ms": base,
                f"std_{m}_ms": 1.0,
                f"p50_{m}_ms": base,
                f"p95_{m}_ms": base * 1.5,
                f"p99_{m}_ms": base * 2,
            }
        )
    if acc_len is not None:
        d.update(
            spec_decode_acceptance_rate=50.0,
            spec_decode_acceptance_length=acc_len,
            spec_decode_num_drafts=drafts,
            spec_decode_draft_tokens=4 * drafts,
            spec_decode_accepted_tokens=accepted,
            spec_decode_per_position_acceptance_rates=[0.8, 0.6, 0.4, 0.2],
        )
    d.update(requests or {})
    return d


def per_request_lists(
    ttft_ms: list[float], itls_ms: list[list[float]], *, concurrency: int = 1, pauses_ms: dict[int, float] | None = None
) -> dict:
    """Bench's --save-detailed lists (seconds) for requests sent by a closed loop of `concurrency` slots: each
    request leaves as soon as a slot frees, in order; pauses_ms[k]: the client stalled that long before the k-th
    send (so did every send due during it); E2EL = TTFT + Σ gaps."""
    e2el = [t + sum(g) for t, g in zip(ttft_ms, itls_ms)]
    free = [0.0] * concurrency  # when each slot frees, ms
    starts = []
    for k, e in enumerate(e2el):
        slot = min(range(concurrency), key=lambda i: free[i])
        start = max(free[slot], starts[-1] if starts else 0.0) + (pauses_ms or {}).get(k, 0.0)
        starts.append(start)
        free[slot] = start + e
    return {
        "start_times": [1000.0 + s / 1000 for s in starts],
        "ttfts": [t / 1000 for t in ttft_ms],
        "itls": [[g / 1000 for g in x] for x in itls_ms],
        "latencies": [e / 1000 for e in e2el],
        "errors": [""] * len(e2el),
        "output_lens": [len(x) + 1 for x in itls_ms],
    }


def _cell_order(item) -> tuple:
    (task, c), _ = item
    return (task, 1, c[0], c[1]) if isinstance(c, tuple) else (task, 0, "", c)


def chat_record(
    rid: str, prompt: str, text: str | None, finish: str = "stop", spec: dict | None = None, error: str | None = None
) -> dict:
    rec = {
        "id": rid,
        "request": {
            "model": "spec-demo",
            "messages": [{"role": "user", "content": prompt}],
            "temperature": 0,
            "max_tokens": 64,
        },
        "http_status": 200,
        "seconds": 0.1,
    }
    if error:
        rec["error"] = error
        rec["response"] = {"text": "boom"}
        return rec
    rec["response"] = {
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": len((text or "").split()), "total_tokens": 10},
        "metrics": None if spec is None else {"speculative_decoding": spec},
    }
    return rec


def answers(texts: dict) -> dict:
    """A task's requests, completion tokens and finish reasons as its records give them (chat_record: one token
    per word of an answer; a failed request has no answer)."""
    reasons: dict[str, int] = {}
    for spec in texts.values():
        finish = None if len(spec) > 2 and spec[2] else spec[1]
        reasons[str(finish)] = reasons.get(str(finish), 0) + 1
    return {
        "requests": len(texts),
        "finish_reasons": reasons,
        "completion_tokens": sum(
            len((spec[0] or "").split()) for spec in texts.values() if not (len(spec) > 2 and spec[2])
        ),
    }


def request_metrics(acc: dict, k: int | None, *, first: bool) -> dict:
    """A response's metrics.speculative_decoding such that a task's records sum to its summary's sums (R, D, C,
    the histogram; the per-step arrays where `acc` has them, step_figures), as in a real bundle: the first record
    carries them, the others drafted nothing."""
    hist = acc.get("histogram") or [acc.get("num_spec_steps") or 0] + [0] * (k or 0)
    steps = {key: acc[key] for key in ("per_step_drafted", "per_step_accepted") if key in acc}
    if not first:
        return {
            "num_spec_steps": 0,
            "num_draft_tokens": 0,
            "num_accepted_draft_tokens": 0,
            "acceptance_histogram": [0] * len(hist),
            **{key: [] for key in steps},
        }
    return {
        "num_spec_steps": acc.get("num_spec_steps") or 0,
        "num_draft_tokens": acc.get("num_draft_tokens") or 0,
        "num_accepted_draft_tokens": acc.get("num_accepted_draft_tokens") or 0,
        "acceptance_histogram": hist,
        **steps,
    }


def step_figures(drafted: list[int], accepted: list[int], k: int = 4) -> dict:
    """A task's acceptance figures from `detailed` per-step arrays (what each verify step drafted and accepted),
    summed by the run's own accounting, with the arrays (write_method puts them into the records)."""
    from specstack.figures import recompute
    from specstack.measure import accounting

    hist = [0] * (k + 1)
    for a in accepted:
        hist[a] += 1
    spec = {
        "num_spec_steps": len(drafted),
        "num_draft_tokens": sum(drafted),
        "num_accepted_draft_tokens": sum(accepted),
        "acceptance_histogram": hist,
        "per_step_drafted": drafted,
        "per_step_accepted": accepted,
    }
    return {
        **recompute.acceptance_figures(accounting.from_requests([spec])),
        "per_step_drafted": drafted,
        "per_step_accepted": accepted,
    }


def write_method(
    run_dir: Path,
    name: str,
    *,
    baseline: str | None,
    cells: dict,
    texts: dict[str, dict],
    k: int | None = 4,
    kv: int | None = 100_000,
    acceptance: dict | None = None,
    comparable=True,
    preemptions: dict | None = None,
    status: str = "ok",
    folder: str | None = None,
    spec_override: dict | None = None,
    base_method: str | None = None,
    replication: dict | None = None,
    server: dict | None = None,
) -> Path:
    """cells: {(task, c): [(tpot, tput, extra kwargs), ...repeats]}; texts: {task: {id: (text, finish)}};
    server: fields merged into the summary's server facts (target, vllm_version, ...)."""
    d = run_dir / (folder or name)
    speculative = baseline is not None
    tasks = {}
    windows = []
    for task in sorted({t for t, _ in cells} | set(texts)):
        bench = []
        for (t, c), reps in sorted(cells.items(), key=_cell_order):
            if t != task:
                continue
            # c: a concurrency, or ("rate", R) / ("probe", R) for an open-loop cell at R requests/s
            load, rate = c if isinstance(c, tuple) else ("concurrency", None)
            conc = None if rate is not None else c
            for r, (tpot, tput, extra) in enumerate(reps):
                cell = f"{task}-c{c}-r{r}" if rate is None else f"{task}-{load}{rate:g}-r{r}"
                f = f"bench/{cell}.json"
                data = bench_json(tpot, tput, c=conc, **extra)
                (d / "bench").mkdir(parents=True, exist_ok=True)
                (d / f).write_text(json.dumps(data))
                # the cell as runs/method_summary.py writes it from its file (figures/recompute.py holds them equal)
                bench.append(
                    {
                        "concurrency": conc,
                        "request_rate": rate,
                        "load": load,
                        "repeat": r,
                        "status": "ok",
                        "file": f,
                        **bench_cell.cell_figures(data, None, conc),
                    }
                )
                pre = (preemptions or {}).get((task, c, r), 0.0)
                windows.append(
                    {
                        "name": f"bench/{cell}",
                        "phase": "bench",
                        "task": task,
                        "concurrency": conc,
                        "request_rate": rate,
                        "load": load,
                        "repeat": r,
                        "status": "ok",
                        "checks": [],
                        "counters": {"counters": {"vllm:num_preemptions": pre}, "split": {}},
                    }
                )
        acc = (acceptance or {}).get(task) or {}
        tasks[task] = {
            "acceptance_rate": acc.get("acceptance_rate"),
            "mean_acceptance_length": acc.get("mean_acceptance_length"),
            "histogram": acc.get("histogram"),
            "per_position": acc.get("per_position"),
            "per_position_conditional": acc.get("per_position_conditional"),
            "drafted_per_position": acc.get("drafted_per_position"),
            "no_accept_share": acc.get("no_accept_share"),
            "num_spec_steps": acc.get("num_spec_steps"),
            "num_draft_tokens": acc.get("num_draft_tokens"),
            "num_accepted_draft_tokens": acc.get("num_accepted_draft_tokens"),
            **answers(texts.get(task, {})),
            "bench": bench,
        }
        lines = []
        carried = False  # the first answered record carries the task's sums, the others none: they add up to them
        for rid, spec in texts.get(task, {}).items():
            text, finish = spec[0], spec[1]
            error = spec[2] if len(spec) > 2 else None
            metrics = None if error or not speculative or not acc else request_metrics(acc, k, first=not carried)
            carried = carried or metrics is not None
            lines.append(json.dumps(chat_record(rid, f"prompt {rid}", text, finish, metrics, error)))
        (d / "acceptance").mkdir(parents=True, exist_ok=True)
        (d / "acceptance" / f"{task}.jsonl").write_text("\n".join(lines) + "\n")
    summary = {
        "schema": "specstack.summary/1",
        "run_id": run_dir.name,
        "method": name,
        "baseline_method": baseline,
        "status": status,
        "error": None if status == "ok" else "server did not start",
        "speculative_config": ({"method": name.split("-")[0], "num_speculative_tokens": k} if speculative else None),
        "spec_override": spec_override,
        "comparable": comparable,
        "server": {
            "target": "/models/tiny",
            "root_model": "/nonexistent/tokenizer",
            "kv_cache_tokens": kv,
            "model_runner": "V1",
            "async_scheduling": False,
            **(server or {}),
        },
        "tasks": tasks,
        "windows": windows,
        "crosscheck": {"ok": True, "checks": 1, "mismatches": []},
        "server_contradictions": None,
    }
    if base_method:
        summary["base_method"] = base_method
    if replication:
        summary["replication"] = replication
    (d / "summary.json").write_text(json.dumps(summary))
    return d


def tokenizer_folder(folder: Path, words: list[str]) -> Path:
    """A real tokenizer folder (tokenizer.json + tokenizer_config.json, what AutoTokenizer loads): one token per
    whitespace-separated word of `words`, [UNK] for any other. Built in well under a second, no model needed."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate(dict.fromkeys(["[UNK]", *words]))}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]").save_pretrained(folder)
    return folder


def manifest(run_dir: Path, methods: dict, repeats: int = 3, **extra) -> None:
    """extra: top-level manifest fields (inputs, host, platform, ...)."""
    (run_dir / "manifest.json").write_text(
        json.dumps(
            {
                "schema": "specstack.manifest/1",
                "run_id": run_dir.name,
                "model_set": "tiny",
                "platform": "cpu-native",
                "workload": {
                    "tasks": ["code", "chat"],
                    "num_prompts": 8,
                    "perf_output_len": 48,
                    "acceptance_max_tokens": 64,
                    "concurrencies": [1, 4],
                    "repeats": repeats,
                },
                "methods": methods,
                **extra,
            }
        )
    )


def contradict(run_dir: Path, method: str, found: list[str]) -> None:
    """Mark a written method as measured with --trust-server against a server that contradicted it."""
    path = run_dir / method / "summary.json"
    s = json.loads(path.read_text())
    s["server_contradictions"] = {"found": found, "trusted": True, "after_measuring": False}
    path.write_text(json.dumps(s))


# --- whole runs: a baseline and ngram (tests/compare, tests/results) ---------------------------------------

TEXTS = {"code": {"r0": ("a b c d", "stop"), "r1": ("x y z", "length")}, "chat": {"q0": ("hello there", "stop")}}


def figures(hist: list[int]) -> dict:
    """Acceptance figures from a histogram of a drafter that always drafts K = len(hist) - 1 tokens."""
    k, steps = len(hist) - 1, sum(hist)
    accepted = sum(j * n for j, n in enumerate(hist))
    return {
        "histogram": hist,
        "num_spec_steps": steps,
        "num_draft_tokens": steps * k,
        "num_accepted_draft_tokens": accepted,
        "acceptance_rate": accepted / (steps * k),
        "mean_acceptance_length": 1 + accepted / steps,
        "per_position": [sum(hist[p + 1 :]) / steps for p in range(k)],
        "no_accept_share": hist[0] / steps,
    }


HIST = {2: [3, 2, 5], 4: [2, 1, 1, 0, 4]}


def make_run(
    root: Path,
    name: str,
    *,
    k: int = 4,
    hist: list[int] | None = None,
    inputs_sha: str = "a" * 64,
    target: str = "/models/tiny",
    texts: dict | None = None,
    speed: float = 1.0,
    acc_len: float = 2.5,
    repeats: int = 3,
    vllm: str | None = "0.32.0",
    machine: str = "x86_64",
) -> Path:
    """A run folder: baseline + ngram (K=k); `speed` scales ngram's throughput (TPOT by its inverse)."""
    run = root / name
    run.mkdir(parents=True)
    server = {"target": target, **({"vllm_version": vllm} if vllm else {})}
    base = {(t, c): [(10.0 + r, 100.0 - r, {}) for r in range(repeats)] for t in ("code", "chat") for c in (1, 4)}
    spec = {
        (t, c): [((5.0 + 0.1 * r) / speed, (200.0 + r) * speed, {"acc_len": acc_len}) for r in range(repeats)]
        for t in ("code", "chat")
        for c in (1, 4)
    }
    write_method(run, "baseline", baseline=None, k=None, cells=base, texts=texts or TEXTS, server=server)
    fig = figures(hist or HIST[k])
    write_method(
        run,
        "ngram",
        baseline="baseline",
        k=k,
        cells=spec,
        texts=texts or TEXTS,
        server=server,
        acceptance={"code": fig, "chat": fig},
    )
    manifest(
        run,
        {m: {"status": "ok", "dir": m, "error": None} for m in ("baseline", "ngram")},
        repeats,
        platform="cpu-native",
        host={"machine": machine, "platform": "Linux"},
        inputs={f"inputs/{t}.{kind}.jsonl": inputs_sha for t in ("code", "chat") for kind in ("perf", "acceptance")},
    )
    return run


def set_acceptance(run: Path, method: str, task: str, fig: dict, k: int = 4) -> None:
    """A method's acceptance figures of a task replaced, in its summary and its answers' records alike (as a run
    that measured them would have written them)."""
    path = run / method / "summary.json"
    s = json.loads(path.read_text())
    s["tasks"][task].update({key: v for key, v in fig.items() if not key.startswith("per_step_")})
    path.write_text(json.dumps(s))
    records = run / method / "acceptance" / f"{task}.jsonl"
    lines = [json.loads(line) for line in records.read_text().splitlines() if line.strip()]
    first = True
    for rec in lines:
        if (rec.get("response") or {}).get("metrics"):
            rec["response"]["metrics"]["speculative_decoding"] = request_metrics(fig, k, first=first)
            first = False
    records.write_text("".join(json.dumps(rec) + "\n" for rec in lines))


def perturb(src: Path, dst: Path, method: str = "ngram", factor: float = 0.8) -> Path:
    """A copy of a run whose accepted counts are scaled, in the answers' records and in the summary alike (a
    summary edited alone is flagged and recomputed from its records, figures/recompute.py): what a regression
    looks like in the acceptance phase."""
    shutil.copytree(src, dst)
    path = dst / method / "summary.json"
    s = json.loads(path.read_text())
    for task, f in s["tasks"].items():
        if f.get("num_draft_tokens"):
            records = dst / method / "acceptance" / f"{task}.jsonl"
            lines = [json.loads(line) for line in records.read_text().splitlines() if line.strip()]
            for rec in lines:
                spec = ((rec.get("response") or {}).get("metrics") or {}).get("speculative_decoding")
                if spec:
                    spec["num_accepted_draft_tokens"] = round(spec["num_accepted_draft_tokens"] * factor)
            records.write_text("".join(json.dumps(rec) + "\n" for rec in lines))
            f["num_accepted_draft_tokens"] = round(f["num_accepted_draft_tokens"] * factor)
            f["acceptance_rate"] = f["num_accepted_draft_tokens"] / f["num_draft_tokens"]
            f["mean_acceptance_length"] = 1 + f["num_accepted_draft_tokens"] / f["num_spec_steps"]
    path.write_text(json.dumps(s))
    return dst


def write_k_sweep(run_dir: Path, by_k: dict[int, dict[int, float]], repeats: int = 3) -> None:
    """A `sweep-k` run on the code task: `baseline` (K=0) and `ngram-k<K>` folders; by_k: {K: {concurrency:
    output tok/s}}, the same figure in every repeat."""
    texts = {"code": {"a": ("t", "stop")}}
    for k, tputs in by_k.items():
        write_method(
            run_dir,
            "baseline" if k == 0 else f"ngram-k{k}",
            baseline=None if k == 0 else "baseline",
            k=k or None,
            texts=texts,
            base_method=None if k == 0 else "ngram",
            spec_override={"num_speculative_tokens": k} if k else None,
            cells={("code", c): [(10.0, t, {})] * repeats for c, t in tputs.items()},
        )


SLOW_C1_TEXTS = {"chat": {"a": ("t", "stop")}}
SLOW_C1_ACCEPTANCE = {
    "acceptance_rate": 0.5,
    "mean_acceptance_length": 3.0,
    "histogram": [2, 1, 1, 0, 4],
    "per_position": [0.75, 0.625, 0.5, 0.5],
    "no_accept_share": 0.25,
    "num_spec_steps": 8,
    "num_draft_tokens": 32,
    "num_accepted_draft_tokens": 16,
}


def write_slow_c1_run(run_dir: Path) -> Path:
    """Issue 41 point 1's bundle: the chat baseline's c=1 slower per request than its own c=4 (mean E2EL 236
    against 172 ms), so ngram 'wins' 1.23× at c=1, past what its tokens per target pass allow; c=4 0.95×."""
    run_dir.mkdir()
    write_method(
        run_dir,
        "baseline",
        baseline=None,
        k=None,
        texts=SLOW_C1_TEXTS,
        cells={("chat", 1): [(10.0, 100.0, {"e2el": 236.0})], ("chat", 4): [(12.0, 550.0, {"e2el": 172.0})]},
    )
    write_method(
        run_dir,
        "ngram",
        baseline="baseline",
        texts=SLOW_C1_TEXTS,
        acceptance={"chat": SLOW_C1_ACCEPTANCE},
        cells={
            ("chat", 1): [(9.0, 123.0, {"acc_len": 2.0, "e2el": 190.0})],
            ("chat", 4): [(12.0, 520.0, {"acc_len": 2.0, "e2el": 200.0})],
        },
    )
    return run_dir
