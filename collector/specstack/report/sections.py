"""The report's sections, in order: each builder turns the computed rows into blocks (headings, paragraphs,
tables, images) that both renderers draw. A new section is a function here and a line in SECTIONS; the blocks of a
task come from one module per kind of figure (speed_sections, acceptance_sections, output_sections)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from specstack.figures import stats as st
from specstack.report.acceptance_sections import acceptance_table, category_table, sampled_table, turn_table
from specstack.report.drafting_cost import drafting_cost_table
from specstack.report.format import num, pct, times, weights_line
from specstack.report.goodput import goodput_table
from specstack.report.guards import guard_notes
from specstack.report.ksweep import k_per_load_section
from specstack.report.load_view import load_section
from specstack.report.loop_guard import loop_notes
from specstack.report.loops import loop_table
from specstack.report.output_sections import equality_tables, lossless_table
from specstack.report.placement import placement
from specstack.report.plots import safe_name
from specstack.report.prefix_cache import prefix_cache_table
from specstack.report.render import Block
from specstack.report.speed_sections import crossover_table, speed_tables
from specstack.report.start_costs import cost_table
from specstack.report.time_breakdown import breakdown_table
from specstack.report.verdicts import label as _label
from specstack.report.verdicts import verdict
from specstack.results.layout import REPORT_DIR

if TYPE_CHECKING:
    from specstack.report.contents import Report


def _replication(workload: dict[str, Any]) -> str:
    if workload.get("replicate") == "sessions":
        # bundles from before the ABBA order ran every round baselines first
        order = "ABBA: B M, then M B, …" if workload.get("session_order") == "ABBA" else "B M B M …"
        return (
            f"{workload.get('sessions', 'n/a')} server sessions per method, interleaved with the baseline's "
            f"({order}), one bench repeat per cell in each"
        )
    return f"{workload.get('repeats', 'n/a')} repeat(s) per cell, back to back in one server session per method"


def _open_loop(workload: dict[str, Any]) -> str:
    rates = workload.get("rates")
    if not rates:
        return ""
    return "; open-loop rates " + (
        "auto (the Load section says how)" if rates == "auto" else ", ".join(f"{r:g}" for r in rates) + " req/s"
    )


def header(rep: Report) -> list[Block]:
    """Title, then what ran: model set, platform, vLLM, git commit and the workload."""
    run = rep.run
    man = run.manifest
    wl = man.get("workload") or {}
    out: list[Block] = [("h1", f"specstack report: run {man.get('run_id') or run.run_dir.name}")]
    vllm = next(
        (md.record.server_facts.vllm_version for md in run.methods.values() if md.record.server_facts.vllm_version),
        None,
    )
    out.append(
        (
            "p",
            f"Model set {man.get('model_set', 'n/a')}, platform {man.get('platform', 'n/a')}, vLLM "
            f"{vllm or 'n/a'}, git {man.get('git_commit', 'n/a')}. Workload: tasks "
            f"{', '.join(wl.get('tasks') or run.tasks)}; {wl.get('num_prompts', 'n/a')} prompts per bench "
            f"cell at fixed output length {wl.get('perf_output_len', 'n/a')}; acceptance phase up to "
            f"{wl.get('acceptance_max_tokens', 'n/a')} tokens, no stop strings (how the answers ended is "
            f"in each acceptance table); concurrencies "
            f"{', '.join(str(c) for c in wl.get('concurrencies') or [])}{_open_loop(wl)}; "
            f"{_replication(wl)}.",
        )
    )
    weights = weights_line(man)
    if weights:
        out.append(("p", f"**{weights[0].upper()}{weights[1:]}.**"))
    return out


def methods_table(rep: Report) -> list[Block]:
    """One row per method: its configuration, KV loss, cross-check and Prometheus view; then the failures."""
    out: list[Block] = []
    out.append(("h2", "Methods"))
    out.append(
        (
            "table",
            [
                "method",
                "status",
                "vs",
                "K",
                "speculative config",
                "override",
                "runner",
                "async sched.",
                "KV cache tokens",
                "KV loss vs baseline",
                "cross-check",
                "Prometheus view",
            ],
            [
                [
                    _label(r),
                    r["status"],
                    r["baseline"] or "—",
                    num(r["k"]),
                    r["speculative_config"] or "—",
                    r["spec_override"] or "—",
                    _known(r["model_runner"] or "n/a", r.get("model_runner_basis")),
                    _known(num(r["async_scheduling"]), r.get("async_scheduling_basis")),
                    num(r["kv_cache_tokens"]),
                    pct(r["kv_cache_loss"]) if r["baseline"] else "—",
                    "n/a"
                    if r["crosscheck_ok"] is None
                    else (("exact: " + r["crosscheck_kinds"]) if r["crosscheck_ok"] else "MISMATCH"),
                    r["prometheus_view"] or "n/a",
                ]
                for r in rep.methods
            ],
        )
    )
    if any(r["crosscheck_kinds"] for r in rep.methods):
        out.append(
            (
                "p",
                "Cross-check kinds: per-request vs counters = a sum of the per-request metrics vLLM "
                "attaches to each response against a delta of its /metrics counters over the same window. "
                "Both are the engine's own bookkeeping, two views of it: they catch an engine, a scrape or "
                "a harness that loses or double-counts, not a drafter that misreports what it did. "
                "completeness = bench's own count of answers and tokens against the server's; same "
                "counters = bench's spec_decode_* fields, read from the same /metrics; /metrics internal "
                "= one counter delta against another; trivial = 0 = 0; warm-up = the warm-up window.",
            )
        )
    if any(r.get("model_runner_basis") or r.get("async_scheduling_basis") for r in rep.methods):
        out.append(
            (
                "p",
                "How each server fact is known (the evidence, the log line, is in each summary's "
                'server.evidence): observed = the engine stated it in its log ("Using V2 Model Runner", '
                "a fall-back to V1, async scheduling disabled); inferred = read from what the log does not "
                "say (vLLM 0.32.0 logs nothing when it runs V1 as pinned, so V1 is inferred from an engine "
                "that reached its KV-cache line without the V2 line); asked = vLLM's echo of the arguments "
                "it was given (`non-default args`), not a statement of what it runs. server.argv and "
                "server.env are what specstack passed to the server it started, not read back from it.",
            )
        )
    failures = [r for r in rep.methods if r["status"].startswith("failed")]
    if failures:
        out.append(
            (
                "table",
                ["failed method", "folder", "error"],
                [[r["method"], r["folder"] or "—", r["error"] or "n/a"] for r in failures],
            )
        )
    return out


def tasks(rep: Report) -> list[Block]:
    """Per task: speed, latency, crossover, acceptance and output equality."""
    out: list[Block] = []
    for task in rep.run.tasks:
        out.append(("h2", f"Task: {task}"))
        for part in (
            guard_notes,
            loop_notes,
            speed_tables,
            drafting_cost_table,
            goodput_table,
            crossover_table,
            acceptance_table,
            loop_table,
            category_table,
            turn_table,
            sampled_table,
            lossless_table,
            equality_tables,
            speedup_plot,
            prefix_cache_table,
        ):
            out += part(rep, task)
    return out


def _known(value: str, basis: str | None) -> str:
    """A server fact with how it is known: "V1 (inferred)", "no (asked)"."""
    return value if not basis or value == "n/a" else f"{value} ({basis})"


def images(rep: Report, *prefixes: str) -> list[Block]:
    """The report's plots whose names start with one of `prefixes` (under report/), in the order drawn."""
    starts = tuple(f"{REPORT_DIR}/{p}" for p in prefixes)
    return [("img", name, caption) for name, caption in rep.plot_captions.items() if name.startswith(starts)]


def speedup_plot(rep: Report, task: str) -> list[Block]:
    return images(rep, f"speedup_vs_concurrency_{safe_name(task)}.")


def k_sweep(rep: Report) -> list[Block]:
    """The K sweep table and plots, when the run holds K variants."""
    out: list[Block] = []
    if rep.ksweep:
        out.append(("h2", "K sweep"))
        out.append(
            (
                "table",
                [
                    "method family",
                    "task",
                    "c",
                    "K",
                    "folder",
                    "TPOT p50 ms",
                    "baseline TPOT ms",
                    "TPOT speedup",
                    "acc. length (bench)",
                    "acc. length (acceptance phase)",
                    "gain stops at K",
                    "note",
                ],
                [
                    [
                        r["family"],
                        r["task"],
                        r["concurrency"],
                        r["k"],
                        r["method"],
                        num(r["tpot_p50_ms"]),
                        num(r["baseline_tpot_p50_ms"]),
                        times(r["tpot_speedup"]),
                        num(r["bench_acceptance_length"]),
                        num(r["acceptance_phase_mean_length"]),
                        num(r["gain_stops_at_k"]),
                        r["gain_note"],
                    ]
                    for r in rep.ksweep
                ],
            )
        )
        out += images(rep, "k_sweep_")
    return out + k_per_load_section(rep)


def acceptance_plots(rep: Report) -> list[Block]:
    return [("h2", "Acceptance plots"), *images(rep, "acceptance_by_position_", "histogram_")]


def how_to_read(rep: Report) -> list[Block]:
    """Every definition behind the figures above."""
    out: list[Block] = []
    repeats = max((r["repeats"] for r in rep.speed), default=0)
    out.append(("h2", "How to read this"))
    out.append(
        (
            "ul",
            [
                "TPOT speedup = the baseline's p50 TPOT ÷ the method's p50 TPOT"
                + (" (each the median over repeats)" if repeats > 1 else "")
                + ", for the same task and concurrency; "
                "> 1.0× means the method is faster per output token. Throughput speedup = method output tok/s ÷ "
                "baseline output tok/s"
                + (" (medians over repeats)." if repeats > 1 else ". Every cell of this run has one repeat."),
                f"95 % interval: percentile bootstrap ({st.BOOTSTRAP_RESAMPLES} resamples, seed {st.SEED}) of the ratio of "
                "medians. Repeats in one server session (the default) are resampled independently on each side; they share "
                "their session, so session-to-session variance is left out and the interval is too narrow "
                "(pseudo-replication). With --replicate sessions every repeat is a server session of its own, run "
                "interleaved with its baseline's (ABBA: B M, then M B, …), and session pairs are resampled together. A "
                f'cell whose interval includes 1.0× is "no clear difference". Under {st.MIN_REPEATS} repeats (or '
                "sessions) on a side there is no interval (with 2, a true 1.0× fell inside a 95 % bootstrap interval only "
                f'~70 % of the time) and the verdict is "point only" (this run: up to {repeats}).',
                f"Stability: latency spread = median absolute deviation ÷ median of the repeats' TPOT p50 (E2EL p50 where "
                f"TPOT is degenerate), per side; over "
                f'{st.MAX_RELATIVE_MAD:.0%} on either side marks the cell\'s verdict "unstable repeats", a single repeat '
                'marks it "single measurement". Other processes\' CPU = the CPU time (user + system) of every process '
                "outside the server's, the bench client's and the collector's process trees, read per process at a bench "
                "window's open and close (measure/cpu_share.py), in the method's busiest window of the row, with its share "
                "of that window's core-seconds (cores × seconds); over "
                f'{st.MAX_OTHER_CPU_SHARE:.0%} on either side marks the verdict "busy host". Not counted: processes '
                "that exited inside the window and processes this host's process table does not show (another "
                "container's); \"not measured\" where the server has no local process (an attached server's CPU cannot "
                "be told from others') or the bundle predates the measure. Bench client CPU = the client's own CPU time "
                "(it reports it as it exits) ÷ the window's seconds; over "
                f'{st.CLIENT_SATURATED:.0%} of a core marks the verdict "client-bound". The 1-minute load average is '
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
                'lower concurrency. "Beats" means the 95 % interval lies above 1.0× when every cell of the row has one; '
                "otherwise every cell of the row is judged by its point estimate (> 1.0×) and the row says so.",
                "Acceptance rate = accepted ÷ drafted tokens; mean acceptance length = 1 + accepted ÷ verify steps; "
                "no-accept steps = histogram[0] ÷ steps. All from the acceptance phase's per-request metrics summed over "
                "requests. n/a = no drafts, never 0 %.",
                "Per position, two rates. Share of all drafting steps (vLLM's convention, its counters and bench's "
                "per-position rates): steps that accepted at least p+1 drafts ÷ every step that verified a draft. For a "
                "drafter that proposes fewer than K tokens on most steps (ngram, suffix) a low value at p mostly means "
                '"never drafted that far". Conditional: the same numerator ÷ the steps that drafted at least p+1 tokens, '
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
            ]
            + (
                [
                    "⚠ not comparable: the method ran with synthetic rejection sampling, which does not preserve the output "
                    "distribution; its speed is a stress figure, not a result."
                ]
                if any(not md.comparable for md in rep.run.methods.values())
                else []
            ),
        )
    )
    return out


# The report, top to bottom.
SECTIONS = (
    header,
    verdict,
    methods_table,
    cost_table,
    placement,
    tasks,
    load_section,
    k_sweep,
    acceptance_plots,
    breakdown_table,
    how_to_read,
)


def blocks(rep: Report) -> list[Block]:
    return [block for section in SECTIONS for block in section(rep)]
