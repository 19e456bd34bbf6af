"""Matplotlib figures of the comparison report, returned as PNG bytes (the caller writes and embeds them)."""

from __future__ import annotations

import io
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, TypeAlias

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from specstack.figures import stats as st  # noqa: E402
from specstack.report import marks  # noqa: E402
from specstack.results.layout import REPORT_DIR  # noqa: E402

if TYPE_CHECKING:
    from specstack.report.contents import Report

DPI = 100

# A point of a speedup series (speedup_series): (load, speedup, low, high[, basis[, rests_on]]), the load a
# concurrency or an offered rate, low/high the 95 % interval (None without one), basis "TPOT"/"E2EL" on a latency
# point (None on throughput), rests_on report/marks.py's words for the cell; a point may stop after high or basis.
SeriesPoint: TypeAlias = (
    tuple[float, float | None, float | None, float | None]
    | tuple[float, float | None, float | None, float | None, str | None]
    | tuple[float, float | None, float | None, float | None, str | None, tuple[str, ...]]
)
Series: TypeAlias = dict[str, dict[str, list[SeriesPoint]]]  # series[method][metric], metric "tpot"/"throughput"
BLUE, ORANGE, GREY = "#3274d9", "#e8743b", "#888888"


# A line every figure drawn inside `stamped(...)` carries at its foot, so a PNG read on its own still says what its
# figures are (the eager smoke mode: reader.EAGER_NOTE)
_STAMP: ContextVar[str | None] = ContextVar("figure_stamp", default=None)


@contextmanager
def stamped(text: str | None, captions: dict[str, str]) -> Iterator[None]:
    """Every figure drawn inside carries `text` at its foot; on leaving, every caption in `captions` ends with it."""
    token = _STAMP.set(text)
    try:
        yield
    finally:
        _STAMP.reset(token)
    if text:
        captions.update({n: f"{c} ({text})" for n, c in captions.items()})


def png_bytes(fig: Figure) -> bytes:
    buf = io.BytesIO()
    try:
        fig.tight_layout()
        stamp = _STAMP.get()
        if stamp:
            fig.subplots_adjust(bottom=max(fig.subplotpars.bottom, 0.2))
            fig.text(0.01, 0.01, f"⚠ {stamp}", fontsize=8, color=ORANGE, wrap=True)
        fig.savefig(buf, format="png", dpi=DPI)
    finally:
        plt.close(fig)
    return buf.getvalue()


def no_data(ax: Axes, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", fontsize=16, color=GREY, transform=ax.transAxes)
    ax.set_xticks([])
    ax.set_yticks([])


def acceptance_by_position(
    method: str,
    per_task: Mapping[str, Sequence[float] | None],
    conditional: Mapping[str, Sequence[float | None] | None] | None = None,
) -> bytes:
    """Grouped bars per draft position: steps that accepted at least p+1 drafts as a share of all drafting steps
    (vLLM's convention); beside it, when the per-step arrays exist, as a share of the steps that drafted at least
    p+1 tokens (the conditional rate)."""
    panels: list[tuple[str, str, Mapping[str, Sequence[float | None] | None]]] = [
        ("share of all drafting steps", "≥ p+1 accepted / drafting steps", per_task)
    ]
    if conditional and any(conditional.values()):
        panels.append(("conditional on drafting that far", "≥ p+1 accepted / steps drafting ≥ p+1", conditional))
    fig, axes = plt.subplots(1, len(panels), figsize=(6.4 * len(panels), 3.8), squeeze=False)
    for ax, (title, ylabel, series) in zip(axes[0], panels):
        ax.set_title(f"Acceptance by draft position, {title}: {method}", fontsize=9)
        _position_bars(ax, series, ylabel)
    return png_bytes(fig)


NOT_DRAFTED = "not drafted (no step drafted that far)"
NOT_DRAFTED_Y = 0.04  # where the marker sits: clear of the axis, below any label


def _position_bars(ax: Axes, per_task: Mapping[str, Sequence[float | None] | None], ylabel: str) -> None:
    series = {t: v for t, v in per_task.items() if v}
    tasks = list(series)
    if not tasks:
        no_data(ax, "n/a (no drafts)")
        return
    k = max(len(v) for v in series.values())
    width = 0.8 / len(tasks)
    palette = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    marked = False
    for i, task in enumerate(tasks):
        values, color = series[task], palette[i % len(palette)]
        xs = [p + (i - (len(tasks) - 1) / 2) * width for p in range(len(values))]
        # None: no step drafted that far. No bar (a 0 bar would read as "drafted, never accepted"), a grey
        # cross in the task's slot instead, named once in the legend
        drawn = [(x, v) for x, v in zip(xs, values) if v is not None]
        bars = ax.bar([x for x, _ in drawn], [v for _, v in drawn], width=width, label=task, color=color)
        if k <= 8:
            ax.bar_label(bars, labels=[f"{v:.2f}" for _, v in drawn], fontsize=7)
        gaps = [x for x, v in zip(xs, values) if v is None]
        if gaps:
            ax.plot(
                gaps, [NOT_DRAFTED_Y] * len(gaps), "x", color=GREY, markersize=6, label=None if marked else NOT_DRAFTED
            )
            marked = True
            for x in gaps if k <= 8 else []:  # room for words beside few positions only
                ax.text(
                    x,
                    NOT_DRAFTED_Y + 0.04,
                    "not drafted",
                    rotation=90,
                    ha="center",
                    va="bottom",
                    fontsize=7,
                    color=GREY,
                )
    ax.set_xticks(range(k), [str(p) for p in range(k)])
    ax.set_xlabel("draft position (0 = first draft token)")
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, 1.1)
    ax.legend(fontsize=8)


def histogram(method: str, task: str, hist: list[int] | None) -> bytes:
    """Share of verify steps that accepted exactly j drafts (pooled over the task's requests)."""
    fig, ax = plt.subplots(figsize=(5.2, 3.4))
    ax.set_title(f"Accepted drafts per verify step: {method}, {task}", fontsize=10)
    total = sum(hist) if hist else 0
    if not hist or not total:
        no_data(ax, "n/a (no drafts)")
        return png_bytes(fig)
    shares = [h / total for h in hist]
    bars = ax.bar(range(len(hist)), shares, color=BLUE)
    if len(hist) <= 10:
        ax.bar_label(bars, labels=[str(h) for h in hist], fontsize=7)
    ax.set_xticks(range(len(hist)), [str(j) for j in range(len(hist))])
    ax.set_xlabel("accepted drafts in the step (j)")
    ax.set_ylabel(f"share of {total} steps")
    ax.set_ylim(0, min(1.1, max(shares) * 1.2 + 0.05))
    return png_bytes(fig)


def speedup_series(rows: Sequence[Mapping[str, Any]], task: str, x: str) -> Series:
    # rows of speed or load_speed (SpeedRow), read by the load column `x` names
    """The speedup_vs_concurrency series of one task's speed rows, `x` their load ("concurrency", "request_rate")."""
    series: Series = {}
    for r in rows:
        if r["task"] != task or r["role"] != "spec":
            continue
        label = r["method"] + ("" if r["comparable"] else " (not comparable)")
        s = series.setdefault(label, {"tpot": [], "throughput": []})
        # the latency the verdict rests on: TPOT, or E2EL where TPOT is degenerate (a burst-read TPOT says ~0);
        # last, what the cell rests on as the speed table marks it (a free-drafting bound is throughput's only)
        rests = tuple(marks.rests_on(r))
        s["tpot"].append(
            (
                r[x],
                r["latency_speedup"],
                r["latency_speedup_low"],
                r["latency_speedup_high"],
                r["latency_basis"],
                tuple(m for m in rests if m != "beyond bound"),
            )
        )
        s["throughput"].append(
            (r[x], r["throughput_speedup"], r["throughput_speedup_low"], r["throughput_speedup_high"], None, rests)
        )
    return series


RING = "orange ring = the ratio rests on what the words beside it name (the speed table's note says more)"
RING_LEGEND = "⚠ rests on: the words beside it"  # the panel's legend entry, short: the caption says the rest


def _rests_on(p: SeriesPoint) -> tuple[str, ...]:
    """The marks of a series point (speedup_series), none on a point built without them."""
    return p[5] if len(p) > 5 and p[5] else ()


def _ring(ax: Axes, drawn: list[tuple[SeriesPoint, float]], labelled: bool) -> bool:
    """An orange ring and its words ("⚠ stall, slow c=1") on each marked point (drawn: each with its speedup), the
    ring named once per panel: a stalled cell is never drawn as if it were clean. Returns whether the panel's legend
    names the ring now."""
    for p, y in drawn:
        words = _rests_on(p)
        if not words:
            continue
        ax.plot(
            [p[0]],
            [y],
            "o",
            markersize=14,
            markerfacecolor="none",
            markeredgecolor=ORANGE,
            markeredgewidth=1.5,
            label=None if labelled else RING_LEGEND,
        )
        labelled = True
        ax.annotate(
            "⚠ " + ", ".join(words),
            xy=(p[0], y),
            xytext=(7, 7),
            textcoords="offset points",
            fontsize=7,
            color=ORANGE,
        )
    return labelled


def speedup_caption(what: str, series: Series) -> str:
    """The figure's legend, naming only the marks it has: no "95 % interval bars" in a run without intervals, no
    E2EL square where every latency point is TPOT."""
    points = [p for s in series.values() for pts in s.values() for p in pts if p[1] is not None]
    said = []
    if any(p[2] is not None for p in points):
        said.append("bars = 95 % bootstrap interval")
    if any(p[2] is None for p in points):
        said.append(f"hollow marker = no interval (fewer than {st.MIN_REPEATS} repeats), the point estimate only")
    if any(len(p) > 4 and p[4] == "E2EL" for p in points):
        said.append("square = latency on E2EL where TPOT is degenerate")
    words = sorted({w for p in points for w in _rests_on(p)})
    if words:
        said.append(f"{RING}: {', '.join(words)}")
    return "; ".join([f"Speedup against the baseline vs {what}", *said, "dashed line = 1.0×"])


def speedup_vs_concurrency(task: str, series: Series, xlabel: str = "concurrency (max in-flight requests)") -> bytes:
    """Two panels (TPOT speedup, throughput speedup); one line per method; the 1.0x line; bootstrap intervals.

    `series[method][metric]` = [(concurrency, point, low, high[, basis[, rests_on]]), ...] with metric in {"tpot",
    "throughput"}; basis "E2EL" marks a latency point that stands in for a degenerate TPOT (square marker);
    rests_on, report/marks.py's words for the cell ("stall", "slow c=1", "beyond bound"), rings it in orange.
    """
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharex=True)
    titles = {
        "tpot": "latency speedup (baseline / method TPOT; □ E2EL where TPOT is degenerate)",
        "throughput": "Throughput speedup (method / baseline tok/s)",
    }
    concurrencies = sorted({p[0] for s in series.values() for pts in s.values() for p in pts})
    for ax, metric in zip(axes, ("tpot", "throughput")):
        ax.set_title(f"{task}: {titles[metric]}", fontsize=9)
        ax.axhline(1.0, color="black", linewidth=1, linestyle="--", label="1.0× (baseline)")
        plotted: list[float] = []
        ringed = False
        palette = plt.rcParams["axes.prop_cycle"].by_key()["color"]
        for i, (method, by_metric) in enumerate(series.items()):
            color = palette[i % len(palette)]  # one colour per method in both panels
            drawn = [(p, y) for p in by_metric.get(metric, []) if (y := p[1]) is not None and y > 0]
            if not drawn:
                continue
            plotted += [y for _, y in drawn]
            ax.plot([p[0] for p, _ in drawn], [y for _, y in drawn], linewidth=1, color=color, label=method)
            for p, y in drawn:
                if len(p) > 4 and p[4] == "E2EL":
                    ax.plot([p[0]], [y], "s", markersize=9, color=color, markerfacecolor="none")
            with_iv = [
                (p[0], y, low, high) for p, y in drawn if (low := p[2]) is not None and (high := p[3]) is not None
            ]
            # a cell without an interval gets a hollow marker, never a zero-length "interval" bar
            if with_iv:
                ax.errorbar(
                    [x for x, _, _, _ in with_iv],
                    [y for _, y, _, _ in with_iv],
                    yerr=[[y - low for _, y, low, _ in with_iv], [high - y for _, y, _, high in with_iv]],
                    fmt="o",
                    color=color,
                    capsize=3,
                )
            without = [(p[0], y) for p, y in drawn if p[2] is None or p[3] is None]
            if without:
                ax.plot([x for x, _ in without], [y for _, y in without], "o", color=color, markerfacecolor="white")
            ringed = _ring(ax, drawn, ringed)
        if not plotted:
            ax.text(
                0.5,
                0.5,
                "n/a (no baseline to compare with)",
                ha="center",
                va="center",
                fontsize=11,
                color=GREY,
                transform=ax.transAxes,
            )
        else:
            # Ratios on a log axis: 0.5x and 2x are equally far from 1.0x. The axis covers the points and 1.0x;
            # an interval running off the plot is wider than the plot, which is the message.
            ax.set_yscale("log")
            low, high = min(plotted + [1.0]), max(plotted + [1.0])
            ax.set_ylim(low / 1.5, high * 1.5)
            ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}×"))
            ax.yaxis.set_minor_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}×"))
            ax.tick_params(axis="y", which="minor", labelsize=7)
        if concurrencies:
            if len(concurrencies) > 1:
                ax.set_xscale("log", base=2)
            ax.set_xticks(concurrencies, [f"{c:g}" for c in concurrencies])
            ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        ax.set_xlabel(xlabel)
        ax.set_ylabel("speedup × (log scale)")
        ax.legend(fontsize=7)
    return png_bytes(fig)


KSweepPoint: TypeAlias = tuple[int, float | None, float | None]  # (K, TPOT p50 ms, mean acceptance length)


def k_sweep(
    family: str,
    task: str,
    rows: dict[int, list[KSweepPoint]],
    baseline_tpot: dict[int, float | None],
    stop_k: dict[int, int | None],
) -> bytes:
    """TPOT (left axis) and mean acceptance length (right axis) against K, one line pair per concurrency.

    `rows[c]` = [(K, tpot_ms, mean_acceptance_length), ...]; `stop_k[c]`: where the gain stops (vertical line).
    """
    fig, ax = plt.subplots(figsize=(7.2, 4.6))
    ax2 = ax.twinx()
    ax.set_title(f"K sweep: {family}, {task}", fontsize=10)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    ks_all = sorted({r[0] for pts in rows.values() for r in pts})
    for i, (c, pts) in enumerate(sorted(rows.items())):
        color = colors[i % len(colors)]
        pts = sorted(pts)
        ks = [p[0] for p in pts]
        # a missing figure (None) is a gap in the line: matplotlib takes None, its stubs take only numbers
        tpots, lengths = [p[1] for p in pts], [p[2] for p in pts]
        ax.plot(ks, tpots, marker="o", color=color, label=f"TPOT ms, c={c}")  # type: ignore[arg-type]
        ax2.plot(
            ks,
            lengths,  # type: ignore[arg-type]
            marker="s",
            linestyle=":",
            color=color,
            label=f"mean acceptance length, c={c}",
        )
        if (tpot := baseline_tpot.get(c)) is not None:
            ax.axhline(tpot, color=color, linewidth=1, linestyle="--", label=f"baseline TPOT, c={c}")
        if (stop := stop_k.get(c)) is not None:
            ax.axvline(stop, color=color, linewidth=1, alpha=0.6)
            last = stop == max(ks_all)
            text = (
                f"best at the largest K={stop}: no plateau yet (c={c})" if last else f"gain stops at K={stop} (c={c})"
            )
            ax.annotate(
                text,
                xy=(stop, 0.04 + 0.08 * i),
                xycoords=("data", "axes fraction"),
                fontsize=7,
                ha="right" if last else "left",
                va="bottom",
                color=color,
                xytext=(-4 if last else 4, 0),
                textcoords="offset points",
                bbox={"boxstyle": "round,pad=0.2", "facecolor": "white", "alpha": 0.85, "edgecolor": "none"},
            )
    ax.set_xticks(ks_all, [str(k) for k in ks_all])
    ax.set_xlabel("num_speculative_tokens (K)")
    ax.set_ylabel("TPOT p50 (ms), lower is better")
    ax2.set_ylabel("mean acceptance length (tokens/step)")
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, frameon=False)
    return png_bytes(fig)


# --- the report's set of plots ---------------------------------------------------------------------


def safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


def make_all(rep: Report) -> None:
    run = rep.run
    spec = [md for md in run.methods.values() if md.speculative]
    for md in spec:
        per_task = {
            t: md.figures(t).per_position if md.figures(t).drafted else None for t in run.tasks if t in md.task_figures
        }
        conditional = {t: md.figures(t).per_position_conditional if per_task.get(t) else None for t in per_task}
        name = f"{REPORT_DIR}/acceptance_by_position_{safe_name(md.name)}.png"
        rep.plots[name] = acceptance_by_position(md.name, per_task, conditional)
        never = any(v is None for c in conditional.values() if c for v in c)  # where the plot draws its ×
        rep.plot_captions[name] = (
            f"Acceptance by draft position, {md.name} (acceptance phase, all tasks): steps "
            "accepting at least p+1 drafts as a share of all drafting steps (vLLM's "
            "convention)"
            + (
                "; right: as a share of the steps that drafted at least p+1 "
                "tokens" + (", × = no step drafted that far (no rate, not 0)" if never else "")
                if any(conditional.values())
                else ""
            )
        )
        for t in run.tasks:
            f = md.task_figures.get(t)
            if f is None:
                continue
            name = f"{REPORT_DIR}/histogram_{safe_name(md.name)}_{safe_name(t)}.png"
            rep.plots[name] = histogram(md.name, t, f.histogram if f.drafted else None)
            rep.plot_captions[name] = f"Accepted drafts per verify step, {md.name}, {t} (pooled over requests)"
    for t in run.tasks:
        series = speedup_series(rep.speed, t, "concurrency")
        if series:
            name = f"{REPORT_DIR}/speedup_vs_concurrency_{safe_name(t)}.png"
            rep.plots[name] = speedup_vs_concurrency(t, series)
            rep.plot_captions[name] = speedup_caption(f"concurrency, {t}", series)
    for fam in sorted({r["family"] for r in rep.ksweep}):
        for t in run.tasks:
            rows = [r for r in rep.ksweep if r["family"] == fam and r["task"] == t]
            if not rows:
                continue
            by_c: dict[int, list[KSweepPoint]] = {}
            for r in rows:
                by_c.setdefault(r["concurrency"], []).append((r["k"], r["tpot_p50_ms"], r["bench_acceptance_length"]))
            base = {c: next((r["baseline_tpot_p50_ms"] for r in rows if r["concurrency"] == c), None) for c in by_c}
            stop = {c: next((r["gain_stops_at_k"] for r in rows if r["concurrency"] == c), None) for c in by_c}
            name = f"{REPORT_DIR}/k_sweep_{safe_name(fam)}_{safe_name(t)}.png"
            rep.plots[name] = k_sweep(fam, t, by_c, base, stop)
            rep.plot_captions[name] = (
                f"K sweep of {fam}, {t}: TPOT p50 and mean acceptance length (bench) vs K; "
                f"vertical line = where the gain stops (smallest K within "
                f"{st.GAIN_TOLERANCE:.0%} of the best TPOT)"
            )
