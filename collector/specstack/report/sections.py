"""The report's sections, in order: each builder turns the computed rows into blocks (headings, paragraphs,
tables, images) that both renderers draw. A new section is a function here and a line in SECTIONS."""
from __future__ import annotations

import json
from typing import TYPE_CHECKING

from specstack.figures import stats as st
from specstack.figures.equality import NEAR_TIE_NATS, NUMERICS, numerics
from specstack.measure import per_request
from specstack.report import findings, marks
from specstack.report.acceptance import answers_by_target, finish_by_target, pooled
from specstack.report.drafting_cost import drafting_cost_table
from specstack.report.format import interval, num, over_repeats, pct, times, weights_line
from specstack.report.goodput import goodput_table
from specstack.report.guards import guard_notes
from specstack.report.itl_chunks import per_chunk_cell, per_chunk_note
from specstack.report.ksweep import k_per_load_section
from specstack.report.load_view import load_section
from specstack.report.loop_guard import loop_notes
from specstack.report.loops import loop_table
from specstack.report.placement import placement
from specstack.report.plots import safe_name
from specstack.report.prefix_cache import prefix_cache_table
from specstack.report.speed import PERCENTILES
from specstack.report.start_costs import cost_table
from specstack.report.time_breakdown import breakdown_table
from specstack.report.verdicts import label as _label
from specstack.report.verdicts import legend, verdict
from specstack.results.layout import REPORT_DIR

if TYPE_CHECKING:
    from specstack.report.contents import Report


def _pcts(row: dict, m: str) -> str:
    parts = []
    for p in PERCENTILES:
        v = num(row.get(f"{m}_p{p}_ms"), 1)
        if p != 50 and row.get(f"{m}_p{p}_unstable") and v != "n/a":
            v += "†"
        parts.append(v)
    return " / ".join(parts)


def _bound(row: dict) -> str:
    """Tokens per target pass, with the share of passes that verified a draft when not all of them did."""
    if row.get("tokens_per_target_pass") is None:
        return "n/a"
    share = row.get("drafting_share")
    return num(row["tokens_per_target_pass"]) + ("" if share is None else f" ({pct(share, 0)})")


def _efficiency(row: dict) -> str:
    """Efficiency against the all-passes bound; against verify steps beside it only where the drafter skipped
    passes (share under 100 %): at 100 % the two bounds differ only by drafts counted past an answer's end, which
    the per-step figure would count as a gain."""
    text = pct(row.get("efficiency"), 0)
    other, share = row.get("efficiency_verify_steps"), row.get("drafting_share")
    if other is not None and row.get("efficiency") is not None and share is not None and share < 0.995 \
            and abs(other - row["efficiency"]) >= 0.005:
        text += f" ({pct(other, 0)} per verify step)"
    return text


def _replication(workload: dict) -> str:
    if workload.get("replicate") == "sessions":
        # bundles from before the ABBA order ran every round baselines first
        order = "ABBA: B M, then M B, …" if workload.get("session_order") == "ABBA" else "B M B M …"
        return (f"{workload.get('sessions', 'n/a')} server sessions per method, interleaved with the baseline's "
                f"({order}), one bench repeat per cell in each")
    return f"{workload.get('repeats', 'n/a')} repeat(s) per cell, back to back in one server session per method"


def _open_loop(workload: dict) -> str:
    rates = workload.get("rates")
    if not rates:
        return ""
    return "; open-loop rates " + ("auto (the Load section says how)" if rates == "auto" else
                                   ", ".join(f"{r:g}" for r in rates) + " req/s")


def header(rep: Report) -> list[tuple]:
    """Title, then what ran: model set, platform, vLLM, git commit and the workload."""
    run = rep.run
    man = run.manifest
    wl = man.get("workload") or {}
    out: list[tuple] = [("h1", f"specstack report: run {man.get('run_id') or run.run_dir.name}")]
    vllm = next((md.record.server_facts.vllm_version for md in run.methods.values()
                 if md.record.server_facts.vllm_version), None)
    out.append(("p", f"Model set {man.get('model_set', 'n/a')}, platform {man.get('platform', 'n/a')}, vLLM "
                     f"{vllm or 'n/a'}, git {man.get('git_commit', 'n/a')}. Workload: tasks "
                     f"{', '.join(wl.get('tasks') or run.tasks)}; {wl.get('num_prompts', 'n/a')} prompts per bench "
                     f"cell at fixed output length {wl.get('perf_output_len', 'n/a')}; acceptance phase up to "
                     f"{wl.get('acceptance_max_tokens', 'n/a')} tokens, no stop strings (how the answers ended is "
                     f"in each acceptance table); concurrencies "
                     f"{', '.join(str(c) for c in wl.get('concurrencies') or [])}{_open_loop(wl)}; "
                     f"{_replication(wl)}."))
    weights = weights_line(man)
    if weights:
        out.append(("p", f"**{weights[0].upper()}{weights[1:]}.**"))
    return out


def methods_table(rep: Report) -> list[tuple]:
    """One row per method: its configuration, KV loss, cross-check and Prometheus view; then the failures."""
    out: list[tuple] = []
    out.append(("h2", "Methods"))
    out.append(("table", ["method", "status", "vs", "K", "speculative config", "override", "runner", "async sched.",
                          "KV cache tokens", "KV loss vs baseline", "cross-check", "Prometheus view"],
                [[_label(r), r["status"],
                  r["baseline"] or "—", num(r["k"]), r["speculative_config"] or "—", r["spec_override"] or "—",
                  _known(r["model_runner"] or "n/a", r.get("model_runner_basis")),
                  _known(num(r["async_scheduling"]), r.get("async_scheduling_basis")), num(r["kv_cache_tokens"]),
                  pct(r["kv_cache_loss"]) if r["baseline"] else "—",
                  "n/a" if r["crosscheck_ok"] is None else (("exact: " + r["crosscheck_kinds"])
                                                            if r["crosscheck_ok"] else "MISMATCH"),
                  r["prometheus_view"] or "n/a"]
                 for r in rep.methods]))
    if any(r["crosscheck_kinds"] for r in rep.methods):
        out.append(("p", "Cross-check kinds: per-request vs counters = a sum of the per-request metrics vLLM "
                         "attaches to each response against a delta of its /metrics counters over the same window. "
                         "Both are the engine's own bookkeeping, two views of it: they catch an engine, a scrape or "
                         "a harness that loses or double-counts, not a drafter that misreports what it did. "
                         "completeness = bench's own count of answers and tokens against the server's; same "
                         "counters = bench's spec_decode_* fields, read from the same /metrics; /metrics internal "
                         "= one counter delta against another; trivial = 0 = 0; warm-up = the warm-up window."))
    if any(r.get("model_runner_basis") or r.get("async_scheduling_basis") for r in rep.methods):
        out.append(("p", "How each server fact is known (the evidence, the log line, is in each summary's "
                         "server.evidence): observed = the engine stated it in its log (\"Using V2 Model Runner\", "
                         "a fall-back to V1, async scheduling disabled); inferred = read from what the log does not "
                         "say (vLLM 0.32.0 logs nothing when it runs V1 as pinned, so V1 is inferred from an engine "
                         "that reached its KV-cache line without the V2 line); asked = vLLM's echo of the arguments "
                         "it was given (`non-default args`), not a statement of what it runs. server.argv and "
                         "server.env are what specstack passed to the server it started, not read back from it."))
    failures = [r for r in rep.methods if r["status"].startswith("failed")]
    if failures:
        out.append(("table", ["failed method", "folder", "error"],
                    [[r["method"], r["folder"] or "—", r["error"] or "n/a"] for r in failures]))
    return out


def tasks(rep: Report) -> list[tuple]:
    """Per task: speed, latency, crossover, acceptance and output equality."""
    out: list[tuple] = []
    for task in rep.run.tasks:
        out.append(("h2", f"Task: {task}"))
        for part in (guard_notes, loop_notes, speed_tables, drafting_cost_table, goodput_table, crossover_table, acceptance_table,
                     loop_table, category_table, turn_table, sampled_table, lossless_table, equality_tables,
                     speedup_plot, prefix_cache_table):
            out += part(rep, task)
    return out


def _spread(r: dict) -> str:
    """Relative MAD of the TPOT p50 over repeats, method / baseline; ⚠ past the stability gate."""
    parts = [pct(r["tpot_spread"], 0)] + ([pct(r["baseline_tpot_spread"], 0)] if r["role"] == "spec" else [])
    return " / ".join(parts) + (" ⚠" if r["stability"] == "unstable" else "")


def _known(value: str, basis: str | None) -> str:
    """A server fact with how it is known: "V1 (inferred)", "no (asked)"."""
    return value if not basis or value == "n/a" else f"{value} ({basis})"


def _stall_mark(r: dict) -> str:
    """The marks every ratio of the row carries (a stall, a slow c=1): report/marks.py decides them for all views."""
    return marks.suffix(r)


def _throughput_mark(r: dict) -> str:
    return marks.suffix(r, throughput=True)


def _beside(r: dict, m: str) -> str:
    """The mean and p95 ratios beside a median ratio: a median hides the tail."""
    return f"; mean {times(r.get(f'{m}_mean_speedup'))}, p95 {times(r.get(f'{m}_p95_speedup'))}"


def _tpot_ratio(r: dict) -> str:
    """Never a ratio of degenerate figures: a burst read on either side leaves no per-token time to divide."""
    if r["role"] != "spec":
        return "—"
    if r["tpot_degenerate"]:
        return "no ratio ‡"
    return (times(r["tpot_speedup"]) + interval(r["tpot_speedup_low"], r["tpot_speedup_high"]) + _beside(r, "tpot")
            + _stall_mark(r))


def _e2el_ratio(r: dict) -> str:
    if r["role"] != "spec":
        return "—"
    return (times(r["e2el_speedup"]) + interval(r["e2el_speedup_low"], r["e2el_speedup_high"]) + _beside(r, "e2el")
            + _stall_mark(r))


def _itl(r: dict) -> str:
    return _pcts(r, "itl") + (" ‡" if r.get("itl_degenerate") else "")


def _other_cpu(r: dict) -> str:
    """The CPU other processes took in the method's busiest bench window of the row, ⚠ beyond the busy-host
    share (the mark on the verdict also counts the baseline's side)."""
    if r.get("other_cpu_share") is None:
        return "not measured"
    mark = " ⚠" if r["other_cpu_share"] > st.MAX_OTHER_CPU_SHARE else ""
    return f"{r['other_cpu_s']:.1f} ({r['other_cpu_share']:.1%}){mark}"


def _client_cpu(r: dict) -> str:
    if r.get("bench_cpu_share") is None:
        return "not measured"
    return f"{r['bench_cpu_share']:.0%}" + (" ⚠" if r["bench_cpu_share"] > st.CLIENT_SATURATED else "")


def speed_tables(rep: Report, task: str) -> list[tuple]:
    out: list[tuple] = []
    speed = [r for r in rep.speed if r["task"] == task]
    out.append(("h3", "Speed against the baseline (perf phase, fixed output length)"))
    ci = f"95 % CI if ≥ {st.MIN_REPEATS} repeats"
    out.append(("table", ["method", "vs", "c", "N", "replication", "out tok/s", f"throughput × [{ci}]",
                          "verdict", "TPOT p50 ms", f"TPOT speedup × (p50 [{ci}]; mean, p95)", "verdict",
                          f"E2EL speedup × (p50 [{ci}]; mean, p95)", "latency spread (method / base)",
                          "other processes' CPU (CPU-s, % of core-s)", "bench client CPU (% of a core)",
                          "acc. length per verify step",
                          "tokens per target pass (drafting steps)", "efficiency", "KV loss", "preempt.",
                          "failed req.", "note"],
                [[_label(r), r["baseline"] or "—", r["concurrency"], r["repeats"], r.get("design") or "n/a",
                  num(r["output_throughput"], 1),
                  ("—" if r["role"] != "spec" else times(r["throughput_speedup"]) +
                   interval(r["throughput_speedup_low"], r["throughput_speedup_high"]) + _throughput_mark(r)),
                  r["throughput_verdict"],
                  num(r["tpot_p50_ms"]) + (" ‡" if _read_in_burst(r) else ""),
                  _tpot_ratio(r), r["tpot_verdict"], _e2el_ratio(r), _spread(r),
                  _other_cpu(r), _client_cpu(r), num(r["bench_acceptance_length"]), _bound(r), _efficiency(r),
                  "—" if r["role"] != "spec" else pct(r["kv_cache_loss"]),
                  num(r["preemptions"], 0), num(r["failed_requests"], 0), r["note"] or ""]
                 for r in speed]))
    out.append(("h3", "Latency percentiles, ms (p50 / p95 / p99; "
                      f"{over_repeats(max((r['repeats'] for r in speed), default=0))})"))
    out.append(("table", ["method", "c", "N", "requests/repeat", "TPOT", "ITL (gap between streamed chunks)",
                          "tokens per chunk", "TTFT", "E2EL"],
                [[_label(r), r["concurrency"], r["repeats"], num(r["requests_per_repeat"]),
                  _pcts(r, "tpot"), _itl(r), per_chunk_cell(r), _pcts(r, "ttft") + (" ‡" if _read_in_burst(r) else ""),
                  _pcts(r, "e2el")]
                 for r in speed]))
    if any(r["tpot_degenerate"] for r in speed):
        out.append(("p", "‡ TPOT degenerate (on a TPOT p50: in that row's own cells; on \"no ratio\": in the "
                         "method's or the baseline's): in a repeat of the cell a request's chunks were "
                         f"read in a burst straight after its first token (gaps under {per_request.BURST_GAP_MS:g} "
                         f"ms, no engine step is that short) for more than {per_request.SWALLOWED_MAX:.0%} of its "
                         "decode, so TTFT swallowed decode time and bench's TPOT = (E2EL − TTFT) ÷ (tokens − 1) "
                         "is too small (a starved client reads a whole answer at once; seen: 0.002 ms against "
                         "1 ms per token). From bench's per-request data (--save-detailed); a bundle without it "
                         "uses the aggregate rule: TPOT p50 × (tokens − 1) under a tenth of E2EL p50. No TPOT "
                         "ratio is printed for such a row, its verdict rests on E2EL at the same fixed output "
                         "length, and it has no efficiency. On a TTFT: the row's own cells read answers in a burst, "
                         "so its TTFT holds decode time too (TTFT ≈ E2EL for those requests): not a time to first "
                         "token."))
    if any(r.get("stalled") for r in speed):
        out.append(("p", "⚠ stall: in a repeat of the row (method or baseline) bench's per-request data shows a "
                         "pause in sending (a request sent later than its free slot by more than "
                         f"{per_request.SEND_PAUSE_SHARE:.0%} of the cell's median E2EL), a TTFT or E2EL outlier "
                         f"(over {per_request.OUTLIER_FACTOR:g}× the cell's median and "
                         f"{per_request.OUTLIER_FLOOR_MS:g} ms past it), or a c > 1 cell whose mean E2EL exceeds c × "
                         "the c=1 cell's (slower than one after another). The host load average cannot see a "
                         "sub-second stall; every ratio of the row rests on it. The row's note names the cell: "
                         + "; ".join(f"{_label(r)} c={r['concurrency']}: {r['stall']}"
                                     for r in speed if r.get("stalled")) + "."))
    named = [text for text in legend(" ".join(_throughput_mark(r) for r in speed))
             if text.startswith(("⚠ beyond bound", "⚠ slow c=1"))]   # the verdict legend's words, one source
    if named:
        out.append(("ul", named))
    if any(r["role"] == "spec" for r in speed):
        out.append(("p", "ITL is the gap between streamed chunks, and a speculative step streams all the tokens it "
                         "accepted in one chunk: for a speculative method ITL is per chunk, not per token, and is "
                         "not comparable with the baseline's (the tokens per chunk column measures it). Compare "
                         "methods by TPOT."))
    out += per_chunk_note(speed)
    if any(r.get("itl_degenerate") for r in speed):
        out.append(("p", "‡ on ITL: degenerate, the chunks arrived in bursts (a starved client or server) and the "
                         "gaps say nothing: the ITL p50 is under a tenth of the TPOT p50, or a repeat of the "
                         "method's own cell has a degenerate TPOT (then its TPOT is no per-token time either, and "
                         "the ITL cannot be checked against it)."))
    return out


def _read_in_burst(r: dict) -> bool:
    """The row's own cells read answers in a burst (its TPOT is degenerate on its side, not only its baseline's)."""
    return bool(r.get("tpot_degenerate_method", r["tpot_degenerate"]))


def crossover_table(rep: Report, task: str) -> list[tuple]:
    out: list[tuple] = []
    cross = [r for r in rep.crossover if r["task"] == task]
    if cross:
        out.append(("h3", "Crossover concurrency (where a method stops beating the baseline)"))
        out.append(("table", ["method", "vs", "latency (TPOT; E2EL where TPOT is degenerate)", "throughput"],
                    [[_label(r), r["baseline"], r["tpot_text"], r["throughput_text"]] for r in cross]))
    return out


def _distinct(requests, distinct) -> str:
    return num(requests) + ("" if distinct is None else f" ({distinct} distinct)")


def _finish_label(rows: list[dict]) -> str:
    """The phase named by how its answers actually ended, not by what it allowed; per target model when the task
    ran on more than one (their answers are not the same answers)."""
    items = [(r.get("target") or "n/a", json.loads(r["finish_reasons"] or "{}")) for r in rows]
    by_target, answers = finish_by_target(items), answers_by_target(items)
    if len(by_target) > 1:
        return "; ".join(f"target {t}: {_ended(c, answers.get(t, []))}" for t, c in by_target.items())
    return next((_ended(c, answers.get(t, [])) for t, c in by_target.items()), "no answers")


def _ended(counts: dict[str, int], per_method: list[int]) -> str:
    total = sum(counts.values())
    if not total:
        return "no answers"
    how = f" ({pooled(per_method)})" if len(per_method) > 1 else ""
    if counts.get("stop") == total:
        return "every answer ended at EOS" + how
    if counts.get("length") == total:
        return "every answer hit max_tokens, none stopped on its own" + how
    return ("answers ended by " + ", ".join(f"{reason} {n} of {total}" for reason, n in sorted(counts.items()))
            + how)


def _rates(text: str | None, missing: str) -> str:
    if text is None:
        return missing
    return ", ".join("—" if x is None else f"{x:.2f}" for x in json.loads(text))


def _acceptance_cells(mark, r: dict, positions: bool = True) -> list[str]:
    """rate, length, no-accept share, histogram, both per-position rates (positions=True), steps, drafts,
    accepted; each marked where summary.json disagreed on it (_marker)."""
    per_position = [mark("per_position", _rates(r["per_position"], "n/a")),
                    mark("per_position_conditional", _rates(
                        r["per_position_conditional"],
                        "n/a" if r["per_position"] is None else "n/a (summary-level metrics: no per-step arrays)"))
                    ] if positions else []
    return [mark("acceptance_rate", pct(r["acceptance_rate"])),
            mark("mean_acceptance_length", num(r["mean_acceptance_length"])),
            mark("no_accept_share", pct(r["no_accept_share"])), mark("histogram", r["histogram"] or "n/a"),
            *per_position,
            mark("num_spec_steps", num(r["num_spec_steps"])), mark("num_draft_tokens", num(r["num_draft_tokens"])),
            mark("num_accepted_draft_tokens", num(r["num_accepted_draft_tokens"]))]


def _marker(rep: Report, r: dict, phase: str):
    """mark(figure, text): the cell as it is, or flagged where the method's summary.json disagreed on that figure
    of that phase (report/findings.py; "missing" where it cannot be recomputed)."""
    md = rep.run.methods.get(r["method"])

    def mark(figure: str, text: str) -> str:
        return findings.cell(text, md.finding(r["task"], figure, phase) if md else None)
    return mark


def acceptance_table(rep: Report, task: str) -> list[tuple]:
    out: list[tuple] = []
    acc = [r for r in rep.acceptance if r["task"] == task]
    out.append(("h3", f"Acceptance (acceptance phase, greedy; {_finish_label(acc)})"))
    out.append(("table", ["method", "K", "acceptance rate", "mean acc. length", "no-accept steps",
                          "histogram (steps accepting j=0..K)",
                          "per position, share of all drafting steps (≥ p+1 accepted / steps)",
                          "per position, conditional (≥ p+1 accepted / steps drafting ≥ p+1)",
                          "steps", "drafts", "accepted", "requests (distinct answers)", "failed req.",
                          "finish reasons"],
                [[_label(r), num(r["k"]), *_acceptance_cells(_marker(rep, r, "greedy"), r),
                  _distinct(r["requests"], r.get("distinct_outputs")), num(r["failed_requests"]),
                  r["finish_reasons"]] for r in acc]))
    out.append(("p", "Distinct answers: how many different greedy answers the task's requests produced, the "
                     "effective sample behind each acceptance figure (requests that repeat one answer repeat its "
                     "drafting steps too)."))
    past = [r for r in acc if r.get("accepted_past_end")]
    if past:
        out.append(("p", "Drafts accepted past the end: vLLM counts every draft of the last step as accepted even "
                         "where the answer ended inside it (max_tokens, EOS), though those tokens were never "
                         "emitted; the figures above include them, as vLLM's counters do. At least "
                         + ", ".join(f"{r['method']} {r['accepted_past_end']}" for r in past)
                         + " (per request: 1 + steps + accepted − completion tokens, where positive)."))
    return out


def category_table(rep: Report, task: str) -> list[tuple]:
    """Greedy acceptance per dataset category: the acceptance window split by request (exact)."""
    rows = [r for r in rep.categories if r["task"] == task and r["phase"] == "greedy"]
    if not rows:
        return []
    return [("h3", "Acceptance by category (acceptance phase, greedy)"),
            ("table", ["method", "K", "category", "requests", "acceptance rate", "mean acc. length",
                       "no-accept steps", "histogram (steps accepting j=0..K)",
                       "per position, share of all drafting steps", "per position, conditional",
                       "steps", "drafts", "accepted"],
             [[_label(r), num(r["k"]), r["category"], num(r["requests"]),
               *_acceptance_cells(_marker(rep, r, f"greedy · {r['category']}"), r)] for r in rows]),
            ("p", "One acceptance window, split by request: each request's own metrics go to its category, so the "
                  "categories' steps, drafts, accepted tokens and per-position counts sum to the task's, which "
                  "equal the window's counter deltas (the checks named \"Σ_category …\" in the summary). Ratios "
                  "are taken after summing within a category; n/a = no drafts, not 0 %. Sampled phases are split "
                  "the same way in tables/acceptance_by_category.csv.")]


def turn_table(rep: Report, task: str) -> list[tuple]:
    """Greedy acceptance per turn (--turns 2): turn 2 carries the baseline's turn-1 answer, for every method."""
    rows = [r for r in rep.turns if r["task"] == task]
    if not rows:
        return []
    left_out = max(r["left_out"] or 0 for r in rows if r["turn"] == 2)
    return [("h3", "Acceptance per turn (acceptance phase, greedy)"),
            ("table", ["method", "K", "turn", "requests", "acceptance rate", "mean acc. length", "no-accept steps",
                       "histogram (steps accepting j=0..K)", "steps", "drafts", "accepted", "window"],
             [[_label(r), num(r["k"]), r["turn"], num(r["requests"]),
               *_window_cells(_marker(rep, r, "turn2" if r["turn"] == 2 else "greedy"), r), r["status"]]
              for r in rows]),
            ("p", f"Turn 2 is the chat [turn 1, the baseline's greedy answer, turn 2], byte-identical for every method "
                  f"(inputs/{task}.turn2.<baseline>.jsonl, sha256 in the manifest); {left_out} row(s) without a second "
                  "turn are left out of it. Its own window, checked against the counters like turn 1; per category "
                  "in tables/acceptance_by_category.csv (phase turn2).")]


def sampled_table(rep: Report, task: str) -> list[tuple]:
    """Acceptance when sampling (--temperatures): the same prompts, request i seeded 42+i for every method."""
    rows = [r for r in rep.sampled if r["task"] == task and r["k"] is not None]   # methods that draft
    if not rows:
        return []
    return [("h3", "Acceptance when sampling (same prompts; request i seeded 42+i for every method)"),
            ("table", ["method", "K", "temperature", "acceptance rate", "greedy", "mean acc. length", "greedy",
                       "no-accept steps", "histogram (steps accepting j=0..K)", "steps", "drafts", "accepted",
                       "window"],
             [[_label(r), num(r["k"]), f"{r['temperature']:g}", *_sampled_cells(rep, r), r["status"]]
              for r in rows])]


def _window_cells(mark, r: dict) -> list[str]:
    """rate, length, no-accept share, histogram, steps, drafts, accepted (a turn's or a sampled phase's)."""
    return _acceptance_cells(mark, r, positions=False)


def _sampled_cells(rep: Report, r: dict) -> list[str]:
    """The sampled phase's figures, each beside the greedy one where the table has it."""
    mark, greedy = _marker(rep, r, f"t{r['temperature']:g}"), _marker(rep, r, "greedy")
    rate, length, *rest = _window_cells(mark, r)
    return [rate, greedy("acceptance_rate", pct(r["greedy_acceptance_rate"])), length,
            greedy("mean_acceptance_length", num(r["greedy_mean_acceptance_length"])), *rest]


def lossless_table(rep: Report, task: str) -> list[tuple]:
    """Whether each method's sampled outputs keep the baseline's distribution (report/lossless.py)."""
    rows = [r for r in rep.lossless if r["task"] == task]
    if not rows:
        return []
    return [("h3", "Lossless when sampling? (first tokens of each prompt's samples against the baseline's)"),
            ("table", ["method", "vs", "temperature", "samples per prompt", "tests (prompt × position)",
                       "smallest Holm p", "TV it could detect (median)", "engine sampler (probe)", "verdict"],
             [[_label(r), r["baseline"], f"{r['temperature']:g}", num(r["samples_per_prompt"]), num(r["tests"]),
               "n/a" if r["min_p_holm"] is None else f"{r['min_p_holm']:.3g}",
               "n/a" if r["detectable_tv"] is None else f"{r['detectable_tv']:.2f}", r.get("engine_sampler", "n/a"),
               r["verdict"]] for r in rows]),
            ("p", f"Per prompt and each of the first {rows[0]['positions']} positions: a permutation test of the "
                  "total variation distance between the method's and the baseline's token distributions, "
                  "Holm-adjusted over all tests. \"No evidence\" is not proof: differences below the detectable "
                  "TV pass unseen; more samples per prompt lower it. \"engine sampler (probe)\": what `specstack "
                  "probe-sampler` said of the installed vLLM's rejection sampler where the method ran (biased: "
                  "a flagged difference is the engine's, not the method's; docs/sampler-cpu-bug.md).")]


def equality_tables(rep: Report, task: str) -> list[tuple]:
    out: list[tuple] = []
    eqs = [r for r in rep.equality_summary if r["task"] == task]
    if eqs:
        out.append(("h3", "Output equality against the baseline (acceptance phase only)"))
        out.append(("table", ["method", "vs", "compared", "distinct answers (method / baseline)", "equal",
                              "equal rate", "finish_reason differs", "first divergence (min / median)",
                              "near ties at the divergence", "unit", "note"],
                    [[_label(r), r["baseline"], r["compared"],
                      f"{num(r.get('distinct_outputs'), 0)} / {num(r.get('baseline_distinct_outputs'), 0)}",
                      r["equal"], pct(r["equal_rate"]),
                      r["finish_reason_differs"],
                      f"{num(r.get('first_divergence_min'), 0)} / {num(r.get('first_divergence_median'), 1)}",
                      _near_ties(r), r["unit"] or "n/a", r["note"] or ""]
                     for r in eqs]))
        tok = sorted({r["tokenizer"] for r in eqs if r["tokenizer"]})
        if tok:   # which tokenizer the indices count in (--tokenizer, or the target the bundle recorded)
            out.append(("p", "Tokenizer: " + "; ".join(tok)))
        diffs = [r for r in rep.equality if r["task"] == task and r["equal"] is not True]
        if diffs:
            out.append(("p", "Requests whose output differs from the baseline's (all others are identical):"))
            out.append(("table", ["method", "request id", "first diverging index", "unit",
                                  "finish_reason (method / baseline)", "completion tokens (method / baseline)",
                                  "baseline's log-prob gap there (nats): consistent with", "note"],
                        [[r["method"], r["id"],
                          num(r["first_token_divergence" if r["unit"] == "token" else "first_char_divergence"], 0),
                          r["unit"], f"{r['finish_reason']} / {r['baseline_finish_reason']}",
                          f"{num(r['completion_tokens'], 0)} / {num(r['baseline_completion_tokens'], 0)}",
                          _gap(r), r["note"] or ""] for r in diffs]))
            out.append(("p", tie_note(eqs)))
    return out


def tie_note(eqs: list[dict]) -> str:
    """What the log-prob gap column means, at the resolution of the dtype(s) the task's baselines served in."""
    text = ("The baseline's log-prob gap: at the first token where the answers differ, the baseline's log-probability "
            "of its own token minus that of the method's (both from the baseline's top-2, recorded with its greedy "
            "answers). ")
    found = {numerics(r.get("dtype")) for r in eqs}
    if found == {NUMERICS["bfloat16"]}:
        return text + ("An exact tie (gap 0: the same bf16 logit) or a near tie (gap <= "
                       f"{NEAR_TIE_NATS} nats, two bf16 steps of a logit between 16 and 32) flips when the target "
                       "computes the same position in a batch of another shape, as a speculative verify step does "
                       "(bf16 numerics, docs/greedy-divergence.md); a larger gap is not bf16 rounding but a change "
                       "the method made.")
    bounds = "; ".join(f"{name} {bound:g} nats" for name, bound, _ in sorted(found))
    return text + ("An exact tie (gap 0: the same logit) or a near tie (a gap within the served dtype's bound: "
                   f"{bounds}) flips when the target computes the same position in a batch of another shape, as a "
                   "speculative verify step does (numerics, docs/greedy-divergence.md); a larger gap is not "
                   "rounding but a change the method made.")


def _near_ties(r: dict) -> str:
    """How many of the divergences were near ties at the baseline ("n/a": no divergence, or no log-probs)."""
    diverged = r["compared"] - r["equal"]
    return "n/a" if not diverged or r.get("near_ties") is None else f"{r['near_ties']} of {diverged}"


def _gap(r: dict) -> str:
    kind = r.get("divergence_kind")
    if kind is None:
        return "n/a"
    gap = r.get("divergence_gap_nats")
    # a gap under a thousandth of a nat (a float32 server's ties) in significant digits, not as "0.000"
    text = kind if gap is None else f"{gap:.2g} ({kind})" if 0 < abs(gap) < 5e-4 else f"{gap:.3f} ({kind})"
    return text + (f": {r['divergence_cause']}" if r.get("divergence_cause") else "")


def images(rep: Report, *prefixes: str) -> list[tuple]:
    """The report's plots whose names start with one of `prefixes` (under report/), in the order drawn."""
    starts = tuple(f"{REPORT_DIR}/{p}" for p in prefixes)
    return [("img", name, caption) for name, caption in rep.plot_captions.items() if name.startswith(starts)]


def speedup_plot(rep: Report, task: str) -> list[tuple]:
    return images(rep, f"speedup_vs_concurrency_{safe_name(task)}.")


def k_sweep(rep: Report) -> list[tuple]:
    """The K sweep table and plots, when the run holds K variants."""
    out: list[tuple] = []
    if rep.ksweep:
        out.append(("h2", "K sweep"))
        out.append(("table", ["method family", "task", "c", "K", "folder", "TPOT p50 ms", "baseline TPOT ms",
                              "TPOT speedup", "acc. length (bench)", "acc. length (acceptance phase)",
                              "gain stops at K", "note"],
                    [[r["family"], r["task"], r["concurrency"], r["k"], r["method"], num(r["tpot_p50_ms"]),
                      num(r["baseline_tpot_p50_ms"]), times(r["tpot_speedup"]), num(r["bench_acceptance_length"]),
                      num(r["acceptance_phase_mean_length"]), num(r["gain_stops_at_k"]), r["gain_note"]]
                     for r in rep.ksweep]))
        out += images(rep, "k_sweep_")
    return out + k_per_load_section(rep)


def acceptance_plots(rep: Report) -> list[tuple]:
    return [("h2", "Acceptance plots"), *images(rep, "acceptance_by_position_", "histogram_")]


def how_to_read(rep: Report) -> list[tuple]:
    """Every definition behind the figures above."""
    out: list[tuple] = []
    repeats = max((r["repeats"] for r in rep.speed), default=0)
    out.append(("h2", "How to read this"))
    out.append(("ul", [
        "TPOT speedup = the baseline's p50 TPOT ÷ the method's p50 TPOT"
        + (" (each the median over repeats)" if repeats > 1 else "") + ", for the same task and concurrency; "
        "> 1.0× means the method is faster per output token. Throughput speedup = method output tok/s ÷ "
        "baseline output tok/s" + (" (medians over repeats)." if repeats > 1 else
                                   ". Every cell of this run has one repeat."),
        f"95 % interval: percentile bootstrap ({st.BOOTSTRAP_RESAMPLES} resamples, seed {st.SEED}) of the ratio of "
        "medians. Repeats in one server session (the default) are resampled independently on each side; they share "
        "their session, so session-to-session variance is left out and the interval is too narrow "
        "(pseudo-replication). With --replicate sessions every repeat is a server session of its own, run "
        "interleaved with its baseline's (ABBA: B M, then M B, …), and session pairs are resampled together. A "
        f"cell whose interval includes 1.0× is \"no clear difference\". Under {st.MIN_REPEATS} repeats (or "
        "sessions) on a side there is no interval (with 2, a true 1.0× fell inside a 95 % bootstrap interval only "
        f"~70 % of the time) and the verdict is \"point only\" (this run: up to {repeats}).",
        f"Stability: latency spread = median absolute deviation ÷ median of the repeats' TPOT p50 (E2EL p50 where "
        f"TPOT is degenerate), per side; over "
        f"{st.MAX_RELATIVE_MAD:.0%} on either side marks the cell's verdict \"unstable repeats\", a single repeat "
        "marks it \"single measurement\". Other processes' CPU = the CPU time (user + system) of every process "
        "outside the server's, the bench client's and the collector's process trees, read per process at a bench "
        "window's open and close (measure/cpu_share.py), in the method's busiest window of the row, with its share "
        "of that window's core-seconds (cores × seconds); over "
        f"{st.MAX_OTHER_CPU_SHARE:.0%} on either side marks the verdict \"busy host\". Not counted: processes "
        "that exited inside the window and processes this host's process table does not show (another "
        "container's); \"not measured\" where the server has no local process (an attached server's CPU cannot "
        "be told from others') or the bundle predates the measure. Bench client CPU = the client's own CPU time "
        "(it reports it as it exits) ÷ the window's seconds; over "
        f"{st.CLIENT_SATURATED:.0%} of a core marks the verdict \"client-bound\". The 1-minute load average is "
        "kept in speed.parquet only: the measured system alone keeps it near 1 per core on a CPU server.",
        f"† = unstable percentile: fewer than {st.MIN_TAIL} samples lie beyond it in a repeat, i.e. n·(1−p) < "
        f"{st.MIN_TAIL}; p95 needs ≥ {st.min_samples(95)} samples and p99 ≥ {st.min_samples(99)}. TPOT, TTFT "
        "and E2EL have one sample per request; the ITL sample count is estimated as (output tokens − requests) ÷ "
        "bench acceptance length.",
        "Tokens per target pass = decode tokens ÷ the target's decode forward passes in the bench cell, every "
        "pass counted, also those on which the drafter proposed nothing (ngram and suffix skip steps); passes = "
        "decode tokens − accepted drafts, never fewer than the verify steps (vLLM counts drafts accepted past "
        "max_tokens that were never emitted). In brackets: the share of passes that verified a draft. Efficiency "
        "= TPOT speedup ÷ tokens per target pass: the bound assumes a verify pass costs one plain decode step and "
        "drafting costs nothing, so it is the TPOT speedup a free drafter would give. Where the drafter skipped "
        "steps, the efficiency against the mean acceptance length (tokens per verify step, which leaves the "
        "skipped steps out and overstates the bound) is shown beside it.",
        "Crossover: the first tested concurrency at which the method no longer beats the baseline after a win at a "
        "lower concurrency. \"Beats\" means the 95 % interval lies above 1.0× when every cell of the row has one; "
        "otherwise every cell of the row is judged by its point estimate (> 1.0×) and the row says so.",
        "Acceptance rate = accepted ÷ drafted tokens; mean acceptance length = 1 + accepted ÷ verify steps; "
        "no-accept steps = histogram[0] ÷ steps. All from the acceptance phase's per-request metrics summed over "
        "requests. n/a = no drafts, never 0 %.",
        "Per position, two rates. Share of all drafting steps (vLLM's convention, its counters and bench's "
        "per-position rates): steps that accepted at least p+1 drafts ÷ every step that verified a draft. For a "
        "drafter that proposes fewer than K tokens on most steps (ngram, suffix) a low value at p mostly means "
        "\"never drafted that far\". Conditional: the same numerator ÷ the steps that drafted at least p+1 tokens, "
        "i.e. how often a draft that reached position p was accepted up to it (— where no step drafted that far). "
        "It comes from the per-step arrays of --per-request-spec-decode-metrics detailed, which are checked against "
        "the counters like every other figure (their steps = Δ num_drafts, their drafts = Δ draft tokens, their "
        "acceptances per position = Δ accepted_per_pos).",
        "KV loss = 1 − method KV-cache tokens ÷ baseline KV-cache tokens (from the server's start-up log); draft "
        "models and heads share the pool with the target.",
        "Preemptions = Δ vllm:num_preemptions over the bench windows of the cell (all repeats). Failed req. = "
        "bench's failed count (all repeats).",
        "Output equality compares the acceptance phase's greedy outputs (no stop strings: EOS or max_tokens), "
        "never the fixed-length "
        "perf outputs. The first diverging index is in target-tokenizer tokens (both texts re-tokenized) unless "
        "the unit column says character (the tokenizer could not be loaded: for a bundle from another machine "
        "pass --tokenizer PATH_OR_HUB_ID); the line below each equality table names the tokenizer used.",
    ] + (["⚠ not comparable: the method ran with synthetic rejection sampling, which does not preserve the output "
          "distribution; its speed is a stress figure, not a result."]
         if any(not md.comparable for md in rep.run.methods.values()) else [])))
    return out


# The report, top to bottom.
SECTIONS = (header, verdict, methods_table, cost_table, placement, tasks, load_section, k_sweep, acceptance_plots, breakdown_table,
            how_to_read)


def blocks(rep: Report) -> list[tuple]:
    return [block for section in SECTIONS for block in section(rep)]
