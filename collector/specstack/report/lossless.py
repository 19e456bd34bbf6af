"""Does speculative decoding keep the target's output distribution when sampling? A two-sample test per
method against its baseline, on the sampled phases (--temperatures, --samples-per-prompt).

Both sides sent the same prompts, each S times, at the same temperature, with the same seeds; the test takes the
baseline's even-numbered samples and the method's odd-numbered ones, so the two are independent (S/2 a side).
For every prompt and each of the first
POSITIONS generated positions, the token at that position is a categorical sample on each side; if the method
is lossless the two distributions are the same (the marginal at a position is, whatever came before it).
Test: a permutation test of the total variation distance between the two empirical distributions (PERMUTATIONS
label shuffles, fixed seed): exact under the null whatever the number of categories or how small the counts,
which rules out a chi-square test on a vocabulary-sized table of a few dozen samples. The p-values of all
prompts × positions are Holm-adjusted (valid under any dependence between positions). Verdict: "no evidence
of a difference at α" or the prompt and position that differ. What the sample size can see is reported with it:
the smallest TV distance each test would have flagged (its permutation critical value at α/m, the Holm bound of
the first step), median over the tests.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from specstack.report.rows import LosslessRow
from specstack.results import layout
from specstack.results.reader import MethodData, RunData
from specstack.results.records import read_records

POSITIONS = 4
PERMUTATIONS = 999
ALPHA = 0.05
MIN_SAMPLES = 32  # per prompt and side (after the split): below it the test is not run (it could flag nothing)
_SEED = 20261201


def tv_distance(a: np.ndarray, b: np.ndarray, k: int) -> float:
    return 0.5 * float(np.abs(np.bincount(a, minlength=k) / len(a) - np.bincount(b, minlength=k) / len(b)).sum())


def permutation_test(
    a: list[int], b: list[int], *, alpha: float, rng: np.random.Generator, permutations: int = PERMUTATIONS
) -> dict[str, Any]:
    """TV distance of the two samples, its permutation p-value, and the critical TV at `alpha`."""
    _, cats = np.unique(np.asarray(a + b), return_inverse=True)
    k, n = int(cats.max()) + 1, len(a)
    observed = tv_distance(cats[:n], cats[n:], k)
    shuffled = rng.permuted(np.tile(cats, (permutations, 1)), axis=1)
    offsets = (np.arange(permutations) * k)[:, None]  # one bincount for all permutations: O(B × n) memory
    total = np.bincount(cats, minlength=k)
    ca = np.bincount((shuffled[:, :n] + offsets).ravel(), minlength=permutations * k).reshape(permutations, k)
    null = 0.5 * np.abs(ca / n - (total - ca) / (len(cats) - n)).sum(1)
    return {
        "tv": observed,
        "p": (1 + int((null >= observed - 1e-12).sum())) / (permutations + 1),
        "critical_tv": float(np.quantile(null, 1 - alpha)),
        "categories": k,
    }


def holm(pvalues: list[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values (monotone, capped at 1)."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted, running = [0.0] * m, 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted


def samples_by_prompt(
    records: list[dict[str, Any]], positions: int, keep: Callable[[int], bool] | None = None
) -> dict[str, list[list[int]]]:
    """prompt id -> the first token ids of each answered sample (ids `<prompt>/s<k>`); with `keep`, only the
    samples whose k it keeps. Every method draws the same seeds, so sample k of the baseline and of the
    method are dependent (their first tokens are even identical): comparing the baseline's even samples with
    the method's odd ones keeps the two sides independent, as the permutation test assumes (a dependence of
    either sign between paired samples would make it too lenient or too strict)."""
    out: dict[str, list[list[int]]] = {}
    for r in records:
        if r["error"] or r["token_ids"] is None:
            continue
        prompt, _, k = r["id"].rpartition("/s")
        if keep is not None and not keep(int(k)):
            continue
        out.setdefault(prompt, []).append(list(r["token_ids"][:positions]))
    return out


def independent_samples(
    records_a: list[dict[str, Any]], records_b: list[dict[str, Any]], positions: int = POSITIONS
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Side A's even-numbered samples and side B's odd-numbered ones: disjoint seeds, independent samples."""
    return (
        samples_by_prompt(records_a, positions, lambda k: k % 2 == 0),
        samples_by_prompt(records_b, positions, lambda k: k % 2 == 1),
    )


def compare_samples(
    a: dict[str, list[list[int]]],
    b: dict[str, list[list[int]]],
    *,
    positions: int = POSITIONS,
    alpha: float = ALPHA,
    permutations: int = PERMUTATIONS,
) -> dict[str, Any]:
    """One test per prompt × position that both sides sampled often enough; Holm over all of them."""
    rng = np.random.default_rng(_SEED)
    tests = []
    for prompt in sorted(a.keys() & b.keys()):
        sa, sb = a[prompt], b[prompt]
        if min(len(sa), len(sb)) < MIN_SAMPLES:
            continue
        for pos in range(positions):
            ta = [s[pos] for s in sa if len(s) > pos]
            tb = [s[pos] for s in sb if len(s) > pos]
            if min(len(ta), len(tb)) < MIN_SAMPLES:
                continue
            m_guess = len(a.keys() & b.keys()) * positions
            tests.append(
                {
                    "prompt": prompt,
                    "position": pos,
                    "n_a": len(ta),
                    "n_b": len(tb),
                    **permutation_test(ta, tb, alpha=alpha / m_guess, rng=rng, permutations=permutations),
                }
            )
    for t, adj in zip(tests, holm([t["p"] for t in tests])):
        t["p_holm"] = adj
    flagged = [t for t in tests if t["p_holm"] < alpha]
    if not tests:
        verdict = f"not tested (needs ≥ {MIN_SAMPLES} samples per prompt on both sides: --samples-per-prompt)"
    elif flagged:
        worst = min(flagged, key=lambda t: t["p_holm"])
        verdict = (
            f"differs: prompt {worst['prompt']} position {worst['position']} (TV {worst['tv']:.2f}, "
            f"Holm p {worst['p_holm']:.3g}; {len(flagged)} of {len(tests)} tests below α={alpha:g})"
        )
    else:
        verdict = f"no evidence of a difference at α={alpha:g} ({len(tests)} tests)"
    return {
        "tests": tests,
        "flagged": len(flagged),
        "verdict": verdict,
        "min_p_holm": min((t["p_holm"] for t in tests), default=None),
        "detectable_tv": float(np.median([t["critical_tv"] for t in tests])) if tests else None,
    }


ENGINE_BIASED = "engine sampler biased on this platform (probe)"


def engine_sampler(md: MethodData) -> str:
    """What the engine sampler probe said where this method ran (runs/sampler_probe.py): 'biased', 'exact',
    'not run' (an attached server, or a run from before the probe) or 'error'."""
    verdict = md.record.sampler_probe.verdict if md.record.sampler_probe else None
    return {"fail": "biased", "pass": "exact"}.get(verdict or "", verdict or "not run")


def labelled_verdict(verdict: str, flagged: int, engine: str) -> str:
    """A flagged difference on a platform whose engine sampler failed the probe is the engine's, not the
    method's: the verdict says so next to the method (docs/sampler-cpu-bug.md)."""
    if flagged and engine == "biased":
        return f"{verdict}; {ENGINE_BIASED}"
    if flagged and engine == "exact":
        return f"{verdict}; the engine sampler passed the probe on this platform"
    return verdict


def sampled_records(md: MethodData, task: str, temperature: float) -> list[dict[str, Any]]:
    return read_records(md.path / layout.sampled_records(task, temperature))


def lossless_rows(run: RunData) -> list[LosslessRow]:
    """Per spec method × task × temperature both it and its baseline sampled: the test's verdict."""
    rows: list[LosslessRow] = []
    for md in run.methods.values():
        base = run.methods.get(md.baseline or "")
        if base is None:
            continue
        for task in run.tasks:
            mine = md.figures(task).sampled or {}
            theirs = base.figures(task).sampled or {}
            for key in sorted(mine.keys() & theirs.keys(), key=float):
                t = mine[key].temperature
                assert t is not None, "a sampled phase records its temperature"
                a, b = independent_samples(sampled_records(base, task, t), sampled_records(md, task, t))
                out = compare_samples(a, b)
                per_prompt = [len(v) for side in (a, b) for v in side.values()]  # answered samples a side
                engine = engine_sampler(md)
                rows.append(
                    {
                        "method": md.name,
                        "label": md.display_name,
                        "baseline": md.baseline,
                        "task": task,
                        "temperature": t,
                        "tests": len(out["tests"]),
                        "flagged": out["flagged"],
                        "min_p_holm": out["min_p_holm"],
                        "detectable_tv": out["detectable_tv"],
                        "samples_per_prompt": min(per_prompt) if per_prompt else None,
                        "positions": POSITIONS,
                        "alpha": ALPHA,
                        "engine_sampler": engine,
                        "verdict": labelled_verdict(out["verdict"], out["flagged"], engine),
                    }
                )
    return rows
