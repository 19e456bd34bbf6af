"""Acceptance from the acceptance phase (greedy, n=1): per method x task, per draft position and per
histogram bucket. Plain decode says n/a, never 0 %. Per position two rates: vLLM's (share of all drafting steps)
and the conditional one (accepted at p / drafted at least p+1; needs the `detailed` per-request metrics)."""

from __future__ import annotations

import json
from typing import Any

from specstack.report.rows import (
    AcceptanceRow,
    CategoryRow,
    HistogramRow,
    PositionRow,
    SampledRow,
    TurnRow,
    WindowFigures,
)
from specstack.results import layout
from specstack.results.reader import MethodData, RunData
from specstack.results.records import request_fields
from specstack.results.summary import Acceptance, PhaseFigures, Summary


def acceptance_records(md: MethodData, task: str) -> list[dict[str, Any]]:
    path = md.path / layout.acceptance_records(task)
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        if line.strip():
            raw = json.loads(line)
            rec = request_fields(raw)
            rec["messages"] = (raw.get("request") or {}).get("messages")
            # the prompt as served (vLLM returns it with return_token_ids; None in older bundles)
            rec["prompt_token_ids"] = (raw.get("response") or {}).get("prompt_token_ids")
            out.append(rec)
    return out


def target_name(summary: Summary) -> str:
    """The target model a method ran, short: the last part of its path or hub id ("n/a" when not recorded)."""
    target = summary.server_facts.target
    return str(target).rstrip("/").rsplit("/", 1)[-1] if target else "n/a"


def finish_by_target(items: list[tuple[str, dict[str, int] | None]]) -> dict[str, dict[str, int]]:
    """(target, finish_reasons) of each method -> per target the reasons summed: answers of two targets (mtp's
    model and the default target) are different answers and are never pooled into one count."""
    out: dict[str, dict[str, int]] = {}
    for target, reasons in items:
        counts = out.setdefault(target, {})
        for reason, n in (reasons or {}).items():
            counts[reason] = counts.get(reason, 0) + n
    return out


def answers_by_target(items: list[tuple[str, dict[str, int] | None]]) -> dict[str, list[int]]:
    """(target, finish_reasons) of each method -> per target each method's answer count (what a pooled count is
    made of: "50 of 80" is five methods' 16 answers, not 80 prompts)."""
    out: dict[str, list[int]] = {}
    for target, reasons in items:
        if n := sum((reasons or {}).values()):  # a method that answered nothing of the task adds nothing
            out.setdefault(target, []).append(n)
    return out


def pooled(per_method: list[int]) -> str:
    """ "2 methods × 8 answers, pooled" (nothing for one method): the heading's counts sum every method's answers."""
    if len(per_method) < 2:
        return ""
    if len(set(per_method)) == 1:
        return f"{len(per_method)} methods × {per_method[0]} answers, pooled"
    return f"{len(per_method)} methods' answers ({', '.join(map(str, per_method))}), pooled"


def distinct_outputs(records: list[dict[str, Any]]) -> int | None:
    """Distinct greedy answers among the task's answered requests: the effective sample size behind an acceptance
    figure or an equality verdict (seen: 3 distinct answers among 16 code requests, 2 for mtp; a bigram machine
    repeats itself). None without answers."""
    texts = {r["text"] for r in records if not r["error"] and r["text"] is not None}
    return len(texts) or None


def accepted_past_end(records: list[dict[str, Any]]) -> int:
    """Drafts vLLM counted as accepted beyond the answer's end, at least: a request emits its prefill token, one
    token per verify step and its accepted drafts, so 1 + steps + accepted above its completion tokens were
    counted but cut (steps without a draft add tokens and can hide some, hence "at least")."""
    past = 0
    for r in records:
        spec, tokens = r["spec"], (r["usage"] or {}).get("completion_tokens")
        if spec and tokens is not None:
            past += max(0, 1 + int(spec["num_spec_steps"]) + int(spec["num_accepted_draft_tokens"]) - int(tokens))
    return past


def acceptance_rows(run: RunData) -> tuple[list[AcceptanceRow], list[PositionRow], list[HistogramRow]]:
    """(per method x task, per draft position, per histogram bucket). Acceptance phase only."""
    rows: list[AcceptanceRow] = []
    positions: list[PositionRow] = []
    hist_rows: list[HistogramRow] = []
    for md in run.methods.values():
        for task in run.tasks:
            f = md.task_figures.get(task)
            if f is None:
                continue
            drafts = f.num_draft_tokens
            no_drafts = not drafts  # None (plain decode) or 0: the ratios are n/a, never 0 %
            hist = f.histogram if not no_drafts else None
            per_pos = f.per_position if not no_drafts else None
            conditional = f.per_position_conditional if not no_drafts else None
            drafted = f.drafted_per_position or []
            records = acceptance_records(md, task)
            rows.append(
                {
                    "method": md.name,
                    "label": md.display_name,
                    "baseline": md.baseline,
                    "task": task,
                    "target": target_name(md.record),
                    "k": md.k,
                    "comparable": md.comparable,
                    "server_contradicted": bool(md.server_contradictions),
                    "acceptance_rate": None if no_drafts else f.acceptance_rate,
                    "mean_acceptance_length": None if no_drafts else f.mean_acceptance_length,
                    "no_accept_share": None if no_drafts else f.no_accept_share,
                    "num_spec_steps": f.num_spec_steps,
                    "num_draft_tokens": drafts,
                    "num_accepted_draft_tokens": f.num_accepted_draft_tokens,
                    "histogram": None if hist is None else json.dumps(hist),
                    "per_position": None if per_pos is None else json.dumps([round(x, 6) for x in per_pos]),
                    "per_position_conditional": None
                    if conditional is None
                    else json.dumps([None if x is None else round(x, 6) for x in conditional]),
                    "requests": f.requests,
                    "distinct_outputs": distinct_outputs(records),
                    "completion_tokens": f.completion_tokens,
                    "failed_requests": sum(1 for r in records if r["error"]),
                    "accepted_past_end": None if no_drafts else accepted_past_end(records),
                    "finish_reasons": json.dumps(f.finish_reasons or {}, sort_keys=True),
                }
            )
            for p, rate in enumerate(per_pos or []):
                positions.append(
                    {
                        "method": md.name,
                        "task": task,
                        "position": p,
                        "rate": rate,
                        "conditional_rate": conditional[p] if conditional and p < len(conditional) else None,
                        "drafted_steps": (drafted[p] if p < len(drafted) else 0) if conditional else None,
                    }
                )
            total = sum(hist or [])
            for j, n in enumerate(hist or []):
                hist_rows.append(
                    {"method": md.name, "task": task, "accepted": j, "steps": n, "share": n / total if total else None}
                )
    return rows, positions, hist_rows


def sampled_rows(run: RunData) -> list[SampledRow]:
    """Per method × task × temperature (--temperatures): acceptance of the sampled phase, beside the greedy
    phase's on the same prompts. Methods without drafts have no ratios (n/a, never 0 %)."""
    rows: list[SampledRow] = []
    for md in run.methods.values():
        for task in run.tasks:
            f = md.figures(task)
            for s in f.sampled_phases:
                drafts = s.num_draft_tokens
                rows.append(
                    {
                        "method": md.name,
                        "label": md.display_name,
                        "task": task,
                        "temperature": s.temperature,
                        "status": s.status,
                        "k": md.k,
                        "acceptance_rate": s.acceptance_rate if drafts else None,
                        "mean_acceptance_length": s.mean_acceptance_length if drafts else None,
                        "greedy_acceptance_rate": f.acceptance_rate if f.drafted else None,
                        "greedy_mean_acceptance_length": f.mean_acceptance_length if f.drafted else None,
                        "no_accept_share": s.no_accept_share if drafts else None,
                        "num_spec_steps": s.num_spec_steps,
                        "num_draft_tokens": drafts,
                        "num_accepted_draft_tokens": s.num_accepted_draft_tokens,
                        "histogram": json.dumps(s.histogram) if drafts and s.histogram else None,
                    }
                )
    return rows


def _window_figures(f: Acceptance) -> WindowFigures:
    """A window's acceptance as the tidy tables keep it; ratios only where something was drafted (n/a, not 0 %)."""
    drafts = f.num_draft_tokens
    return {
        "acceptance_rate": f.acceptance_rate if drafts else None,
        "mean_acceptance_length": f.mean_acceptance_length if drafts else None,
        "no_accept_share": f.no_accept_share if drafts else None,
        "num_spec_steps": f.num_spec_steps,
        "num_draft_tokens": drafts,
        "num_accepted_draft_tokens": f.num_accepted_draft_tokens,
        "histogram": json.dumps(f.histogram) if drafts and f.histogram else None,
    }


def _category_row(
    md: MethodData, task: str, phase: str, temperature: float | None, category: str, c: Acceptance
) -> CategoryRow:
    drafts = c.num_draft_tokens
    per_pos, conditional = c.per_position, c.per_position_conditional
    return {
        "method": md.name,
        "label": md.display_name,
        "task": task,
        "phase": phase,
        "temperature": temperature,
        "category": category,
        "k": md.k,
        "requests": c.requests,
        **_window_figures(c),
        "per_position": json.dumps([round(x, 6) for x in per_pos]) if drafts and per_pos else None,
        "per_position_conditional": json.dumps([None if x is None else round(x, 6) for x in conditional])
        if drafts and conditional
        else None,
    }


def category_rows(run: RunData) -> list[CategoryRow]:
    """Per method × task × phase (greedy, each --temperatures) × category: the acceptance window split by
    request (measure/categories.py). Tasks whose rows have no category have none."""
    rows: list[CategoryRow] = []
    for md in run.methods.values():
        for task in run.tasks:
            f = md.figures(task)
            for category, c in f.category_figures.items():
                rows.append(_category_row(md, task, "greedy", 0.0, category, c))
            for s in f.sampled_phases:
                for category, c in s.category_figures.items():
                    rows.append(_category_row(md, task, f"t{s.temperature:g}", s.temperature, category, c))
            for category, c in (f.turn2 or PhaseFigures()).category_figures.items():
                rows.append(_category_row(md, task, "turn2", 0.0, category, c))
    return rows


def _turn_row(md: MethodData, task: str, turn: int, f: Acceptance) -> TurnRow:
    """Turn 1 is the task's greedy window (no status, nothing left out, no input of its own); turn 2 a phase."""
    phase = f if isinstance(f, PhaseFigures) else PhaseFigures(status="ok", left_out=0)
    return {
        "method": md.name,
        "label": md.display_name,
        "task": task,
        "turn": turn,
        "k": md.k,
        "status": phase.status if "status" not in phase.absent else "ok",
        "requests": f.requests,
        "left_out": phase.left_out if "left_out" not in phase.absent else 0,
        **_window_figures(f),
        "completion_tokens": f.completion_tokens,
        "answers_from": phase.answers_from,
        "input_sha256": phase.sha256,
    }


def turn_rows(run: RunData) -> list[TurnRow]:
    """Per method × task with a turn 2 (--turns 2): turn 1 (the task's greedy window) beside turn 2 (the
    baseline's turn-1 answer in the chat, runs/turns.py)."""
    rows: list[TurnRow] = []
    for md in run.methods.values():
        for task in run.tasks:
            f = md.figures(task)
            second = f.turn2
            if second is not None:
                rows += [_turn_row(md, task, 1, f), _turn_row(md, task, 2, second)]
    return rows
