"""`specstack probe-sampler`: does the installed vLLM's rejection sampler keep the target distribution?

It drives vLLM's own code the way `RejectionSampler.forward` (vllm/v1/sample/rejection_sampler.py, the V1
model runner's sampler) does after the bonus token is sampled: `apply_sampling_constraints` (temperature,
top-k, top-p at every draft position), then `rejection_sample` (greedy and random kernels, recovered tokens),
on constructed target logits and drafts whose exact answer the probe knows, on the platform's own device with
the platform's own kernel overrides (the CPU build's C++ stand-ins for the Triton kernels, registered as the
worker does). No model, no server: seconds.

For every shape the methods use (drafts with and without draft probabilities, K 1..16, ragged draft counts,
temperature ≠ 1, top-k / top-p, seeded and unseeded requests, greedy and mixed batches) it checks:
- the token at each draft position, over the trials that reach it, against the exact target distribution
  (chi-square goodness of fit; a token outside the top-k / top-p support fails outright);
- the acceptance rate at each position against its exact value (Σ min(p, q) with draft probabilities,
  Σ r·p for a draft token drawn from r without them; two-sided z-test);
- exactly: accepted prefixes equal the drafts, the bonus token follows a fully accepted row, greedy rows
  give the target's argmax, a seeded batch run twice gives the same tokens;
- the cause, when it is the one vLLM 0.32.0 CPU has: `expand_batch_to_tokens` must return each request's
  temperature / top-k / top-p at its draft positions.
All p-values share one Bonferroni family at ALPHA; each test states its power at that level against
TV_ALTERNATIVE (distribution) or ACCEPTANCE_ALTERNATIVE (rate). Exit status 0 = the sampler agrees, 1 = it
does not (the verdict names the first failures and the cause if found).
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from specstack.probes.stats import chi2_goodness_of_fit, rate_z_test

ALPHA = 1e-3  # family-wise false-alarm rate of one probe run (Bonferroni over every test)
TV_ALTERNATIVE = 0.1  # each distribution test's power is stated against any alternative this far in TV
ACCEPTANCE_ALTERNATIVE = 0.05  # ... and each rate test's against a true rate this far (absolute)
MIN_POWER = 0.9  # a test with less power (too few trials reach its position) is listed, not run
VOCAB = 12
TARGET_REACH = 4000  # trials per shape: enough that the deepest position expects this many
MAX_TRIALS = 40000
SCHEMA = "specstack.sampler-probe/1"
_SEED = 20261201


@dataclass(frozen=True)
class Shape:
    name: str
    k: int
    temperature: float  # 0: greedy
    draft_probs: bool = False  # the drafter's probabilities passed (draft_sample_method="probabilistic")
    top_k: int | None = None
    top_p: float | None = None
    seeded: bool = False
    ragged: bool = False  # 0..k drafts per request (suffix, V1 ngram)
    mixed: bool = False  # every other request greedy, in the same batch
    used_by: str = ""


SHAPES = (
    Shape("greedy-k4", 4, 0.0, used_by="every method at temperature 0"),
    Shape("greedy-k16-ragged", 16, 0.0, ragged=True, used_by="suffix at temperature 0"),
    Shape("t1.0-k1", 1, 1.0, used_by="mtp (K=1)"),
    Shape("t0.7-k3", 3, 0.7, used_by="eagle3 (K=3)"),
    Shape("t1.3-k4", 4, 1.3, used_by="ngram, draft_model (K=4)"),
    Shape("t0.8-k16-ragged", 16, 0.8, ragged=True, used_by="suffix (K=16, fewer drafts when the tree is short)"),
    Shape("t1.0-k2-topk5", 2, 1.0, top_k=5, used_by="any method with top_k"),
    Shape("t0.9-k4-topk6-topp0.9", 4, 0.9, top_k=6, top_p=0.9, used_by="any method with top_k and top_p"),
    Shape("t1.0-k8-topp0.95", 8, 1.0, top_p=0.95, used_by="any method with top_p"),
    Shape("t0.8-k4-seeded", 4, 0.8, seeded=True, used_by="seeded requests (the lossless test's sampled phases)"),
    Shape("t0.7-k4-mixed", 4, 0.7, mixed=True, used_by="greedy and sampled requests in one batch"),
    Shape("t0.7-k4-draftprobs", 4, 0.7, draft_probs=True, used_by="draft_sample_method=probabilistic"),
    Shape(
        "t1.0-k16-draftprobs-seeded",
        16,
        1.0,
        draft_probs=True,
        seeded=True,
        used_by="draft_sample_method=probabilistic, seeded",
    ),
    Shape(
        "t1.2-k3-draftprobs-topp0.9",
        3,
        1.2,
        draft_probs=True,
        top_p=0.9,
        used_by="draft_sample_method=probabilistic with top_p",
    ),
)


# ---- the exact answer -----------------------------------------------------------------------------------


def processed_distribution(weights: np.ndarray, top_k: int | None, top_p: float | None) -> np.ndarray:
    """vLLM's order (apply_top_k_top_p_pytorch): top-k, then top-p on the renormalised top-k distribution,
    keeping a token iff the ascending cumulative sum up to it exceeds 1 − top_p (the largest is always kept)."""
    p = weights / weights.sum()
    if top_k is not None and top_k < len(p):
        p = np.where(p >= np.sort(p)[-top_k], p, 0.0)
        p = p / p.sum()
    if top_p is not None:
        order = np.argsort(p)
        cums = np.cumsum(p[order])
        drop = cums <= 1.0 - top_p
        drop[-1] = False
        p = p.copy()
        p[order[drop]] = 0.0
        p = p / p.sum()
    return p


def _top_p_margin(weights: np.ndarray, top_k: int | None, top_p: float | None) -> float:
    """How far the top-p cut is from a tie (float32 rounding must not move a token across it)."""
    if top_p is None:
        return 1.0
    p = processed_distribution(weights, top_k, None)
    cums = np.cumsum(np.sort(p[p > 0]))
    return float(np.min(np.abs(cums - (1.0 - top_p))))


@dataclass
class Position:
    weights: np.ndarray  # softmax(logits / T) before top-k / top-p
    target: np.ndarray  # the exact distribution at this position after top-k / top-p
    draft: np.ndarray  # the drafter's distribution (q with draft probs, r without)
    acceptance: float  # the exact acceptance rate


def _position(rng: np.random.Generator, shape: Shape, peak: float) -> Position:
    for _ in range(1000):
        # no token rarer than a few per mille: the chi-square's cells stay well populated
        rest = (0.5 / (VOCAB - 1) + 0.5 * rng.dirichlet(np.full(VOCAB - 1, 2.0))) * (1.0 - peak)
        weights = np.insert(rest, 0, peak)
        weights = rng.permutation(weights)
        if _top_p_margin(weights, shape.top_k, shape.top_p) > 0.01 and np.min(np.diff(np.sort(weights))) > 1e-4:
            break
    target = processed_distribution(weights, shape.top_k, shape.top_p)
    top = int(np.argmax(weights))
    # a drafter that mostly proposes the target's mode, and sometimes something else (possibly cut off)
    draft = 0.1 * rng.dirichlet(np.full(VOCAB, 1.0))
    draft[top] += 0.9
    acceptance = float(np.minimum(target, draft).sum()) if shape.draft_probs else float((draft * target).sum())
    return Position(weights, target, draft, acceptance)


@dataclass
class Batch:
    num_draft: np.ndarray  # [N] drafts per request
    greedy: np.ndarray  # [N] bool
    logits: np.ndarray  # [Σ num_draft, V] float32 target logits at the draft positions
    draft_ids: np.ndarray  # [Σ num_draft] int32
    draft_probs: np.ndarray | None
    bonus: np.ndarray  # [N] int32
    positions: list[Position]


def build_batch(shape: Shape, index: int) -> Batch:
    rng = np.random.default_rng(_SEED + index)
    peak = 0.9 if shape.k > 4 else 0.7  # long drafts need high acceptance for the deep positions to be reached
    if shape.top_p is not None:  # ... but top-p must keep several tokens
        peak = min(peak, shape.top_p - 0.2)
    positions = [_position(rng, shape, peak) for _ in range(shape.k)]
    reach = float(np.prod([p.acceptance for p in positions[:-1]])) if shape.k > 1 else 1.0
    if shape.ragged:  # half the requests draft all k, the others fewer (0..k-1)
        reach /= 2
    if shape.mixed:
        reach /= 2
    n = int(min(MAX_TRIALS, max(TARGET_REACH, math.ceil(TARGET_REACH / max(reach, 1e-9)))))
    num_draft = np.full(n, shape.k)
    if shape.ragged:
        num_draft[1::2] = rng.integers(0, shape.k, len(num_draft[1::2]))
    greedy = np.zeros(n, bool) if shape.temperature > 0 else np.ones(n, bool)
    if shape.mixed:
        greedy[::2] = True
    # one flat row per draft token: its request and its position in the request's drafts
    starts = np.concatenate([[0], np.cumsum(num_draft)[:-1]])
    request = np.repeat(np.arange(n), num_draft)
    position = np.arange(int(num_draft.sum())) - np.repeat(starts, num_draft)
    weights = np.stack([p.weights for p in positions])
    drafts = np.stack([p.draft for p in positions])
    t = shape.temperature if shape.temperature > 0 else 1.0
    logits = (t * np.log(weights))[position].astype(np.float32)
    sampled_ids = _inverse_cdf(drafts[position], rng.random(len(position)))
    # a greedy drafter proposes the target's argmax most of the time
    greedy_ids = np.where(
        rng.random(len(position)) < 0.8, np.argmax(weights, 1)[position], rng.integers(0, VOCAB, len(position))
    )
    ids = np.where(greedy[request], greedy_ids, sampled_ids).astype(np.int32)
    draft_probs = drafts[position].astype(np.float32) if shape.draft_probs else None
    bonus = rng.integers(0, VOCAB, n).astype(np.int32)
    return Batch(num_draft.astype(np.int64), greedy, logits, ids, draft_probs, bonus, positions)


def _inverse_cdf(probs: np.ndarray, uniform: np.ndarray) -> np.ndarray:
    """One draw per row of `probs` [M, V] from uniforms [M]."""
    cdf = np.cumsum(probs, 1)
    return np.minimum((cdf < uniform[:, None] * cdf[:, -1:]).sum(1), probs.shape[1] - 1)


# ---- the engine -----------------------------------------------------------------------------------------

_registered = False


def register_engine_kernels() -> None:
    """The platform's kernel overrides, registered once per process as vLLM's worker does before any kernel
    runs (v1/worker/worker_base.py); once only, so that a replacement made afterwards stays in place."""
    global _registered
    if not _registered:
        from vllm.platforms import current_platform

        current_platform.register_triton_kernel_overrides()
        _registered = True


def poison_allocator(numel: int, dtype, device) -> None:
    """Free a buffer of NaN (or -1) of this size, so that a buffer left unwritten afterwards most likely holds
    that instead of a just-freed copy of the right answer (the allocator hands recent blocks out again)."""
    import torch

    fill = float("nan") if dtype.is_floating_point else -1
    del_me = torch.full((numel,), fill, dtype=dtype, device=device)
    del del_me


class Engine:
    """The installed vLLM's sampler on its platform's device, set up as its worker sets it up."""

    def __init__(self):
        import torch
        import vllm
        from vllm.platforms import current_platform

        register_engine_kernels()
        from vllm.triton_utils import HAS_TRITON
        from vllm.v1.sample import rejection_sampler
        from vllm.v1.sample.logits_processor import LogitsProcessors
        from vllm.v1.sample.metadata import SamplingMetadata

        self.torch, self.rs = torch, rejection_sampler
        self._metadata_cls, self._logitsprocs = SamplingMetadata, LogitsProcessors
        self.device = torch.device(current_platform.device_type)
        name = current_platform.device_type
        if name == "cuda":
            name = f"cuda ({torch.cuda.get_device_name(0)})"
        self.platform = {
            "vllm": vllm.__version__,
            "device_type": current_platform.device_type,
            "device": name,
            "triton_kernels": bool(HAS_TRITON),
            "torch": torch.__version__,
            "sampler": "vllm.v1.sample.rejection_sampler (V1 model runner)",
        }

    def _tensor(self, array, dtype):
        """A copy: the engine updates its inputs in place (apply_sampling_constraints divides the logits)."""
        return self.torch.tensor(np.ascontiguousarray(array), dtype=dtype, device=self.device)

    def metadata(self, shape: Shape, batch: Batch, seed_base: int):
        torch, n = self.torch, len(batch.num_draft)
        all_greedy = bool(batch.greedy.all())
        temperature = (
            None if all_greedy else self._tensor(np.where(batch.greedy, 0.0, shape.temperature), torch.float32)
        )
        top_k = None if shape.top_k is None else self._tensor(np.full(n, shape.top_k), torch.int32)
        top_p = None if shape.top_p is None else self._tensor(np.full(n, shape.top_p), torch.float32)
        generators = {}
        if shape.seeded:
            for i in range(n):
                generators[i] = torch.Generator(device=self.device)
                generators[i].manual_seed(seed_base + i)
        empty = torch.zeros(n, device=self.device)
        return self._metadata_cls(
            temperature=temperature,
            all_greedy=all_greedy,
            all_random=not bool(batch.greedy.any()),
            top_p=top_p,
            top_k=top_k,
            generators=generators,
            max_num_logprobs=None,
            no_penalties=True,
            prompt_token_ids=None,
            frequency_penalties=empty,
            presence_penalties=empty,
            repetition_penalties=empty,
            output_token_ids=[],
            allowed_token_ids_mask=None,
            bad_words_token_ids={},
            logitsprocs=self._logitsprocs(),
        )

    def sample(self, shape: Shape, batch: Batch, seed_base: int = _SEED) -> np.ndarray:
        """[N, K+1] output token ids, -1 where nothing was emitted: RejectionSampler.forward's two calls."""
        torch = self.torch
        metadata = self.metadata(shape, batch, seed_base)
        cu = self._tensor(np.cumsum(batch.num_draft), torch.int32)
        logits = self._tensor(batch.logits, torch.float32)
        target = self.rs.apply_sampling_constraints(logits, cu, metadata)
        draft_probs = None if batch.draft_probs is None else self._tensor(batch.draft_probs, torch.float32)
        out = self.rs.rejection_sample(
            self._tensor(batch.draft_ids, torch.int32),
            [int(x) for x in batch.num_draft],
            int(shape.k),
            cu,
            draft_probs,
            target,
            self._tensor(batch.bonus.reshape(-1, 1), torch.int32),
            metadata,
        )
        return out.cpu().numpy()

    def expand_check(self, shape: Shape, batch: Batch) -> list[dict[str, Any]]:
        """The cause on vLLM 0.32.0 CPU: the per-token copies of the request's sampling parameters."""
        torch = self.torch
        if batch.greedy.all():
            return []  # all greedy: apply_sampling_constraints returns the logits untouched, no expansion
        metadata = self.metadata(shape, batch, _SEED)
        cu = self._tensor(np.cumsum(batch.num_draft), torch.int32)
        tokens = int(batch.num_draft.sum())
        checks = [("temperature", metadata.temperature, {"replace_from": 0, "replace_to": 1})]
        if metadata.top_k is not None:
            checks.append(("top_k", metadata.top_k, {}))
        if metadata.top_p is not None:
            checks.append(("top_p", metadata.top_p, {}))
        out = []
        for name, values, replace in checks:
            poison_allocator(tokens, values.dtype, self.device)
            got = self.rs.expand_batch_to_tokens(values, cu, tokens, **replace).cpu().numpy()
            with np.errstate(invalid="ignore"):  # garbage memory holds NaNs
                got = got.astype(np.float64)
            want = np.repeat(values.cpu().numpy().astype(np.float64), batch.num_draft)
            if replace:
                want = np.where(want == replace["replace_from"], replace["replace_to"], want)
            bad = ~np.isclose(got, want, rtol=1e-6, atol=0)
            out.append(
                {
                    "parameter": name,
                    "tokens": tokens,
                    "mismatched": int(bad.sum()),
                    "expected": sorted({float(v) for v in want})[:4],
                    "got_examples": [_json_number(v) for v in got[bad][:3]],
                }
            )
        return out


def _json_number(v) -> float | str:
    """Strict JSON has no inf or NaN (garbage memory holds both): those as text."""
    v = float(v)
    return v if math.isfinite(v) else str(v)


# ---- the verdict ----------------------------------------------------------------------------------------


def _accepted(out: np.ndarray) -> np.ndarray:
    """Accepted drafts per row: tokens emitted − 1 (the last is the recovered or the bonus token)."""
    return (out >= 0).sum(1) - 1


def exact_checks(shape: Shape, batch: Batch, out: np.ndarray) -> list[str]:
    """What must hold row by row, whatever the randomness."""
    problems = []
    accepted = _accepted(out)
    emitted = out >= 0
    if (accepted < 0).any() or (accepted > batch.num_draft).any():
        problems.append("a row emitted no token or more than its drafts + 1")
        return problems
    if not (emitted == (np.arange(out.shape[1])[None, :] <= accepted[:, None])).all():
        problems.append("a row's emitted tokens are not a prefix")
    k = out.shape[1] - 1
    cols = np.arange(k)[None, :]
    drafts = np.full((len(out), k), -2, np.int64)
    starts = np.concatenate([[0], np.cumsum(batch.num_draft)[:-1]])
    in_draft = cols < batch.num_draft[:, None]
    drafts[in_draft] = batch.draft_ids[(starts[:, None] + cols)[in_draft]]
    rows = np.arange(len(out))
    prefix_bad = int(((cols < accepted[:, None]) & (out[:, :k] != drafts)).any(1).sum())
    full = accepted == batch.num_draft
    bonus_bad = int((out[rows[full], accepted[full]] != batch.bonus[full]).sum())
    argmax = np.array([int(np.argmax(p.weights)) for p in batch.positions])
    mismatch = in_draft & (drafts != argmax[None, :])
    want = np.where(mismatch.any(1), mismatch.argmax(1), batch.num_draft)
    last = out[rows, accepted]
    wrong_token = (accepted < batch.num_draft) & (last != argmax[np.minimum(accepted, k - 1)])
    greedy_bad = int((batch.greedy & ((accepted != want) | wrong_token)).sum())
    for count, what in (
        (prefix_bad, "accepted tokens that are not the drafts"),
        (bonus_bad, "fully accepted rows without their bonus token"),
        (greedy_bad, "greedy rows that do not follow the target's argmax"),
    ):
        if count:
            problems.append(f"{count} of {len(out)} rows: {what}")
    return problems


def statistical_tests(shape: Shape, batch: Batch, out: np.ndarray) -> list[dict[str, Any]]:
    """Per draft position, over the sampled (non-greedy) rows that reach it: the token's distribution and
    the acceptance rate. Levels are filled in by run_probe once the family size is known."""
    accepted, tests = _accepted(out), []
    sampled = ~batch.greedy
    for j in range(shape.k if sampled.any() else 0):
        reach = sampled & (batch.num_draft > j) & (accepted >= j)
        n = int(reach.sum())
        pos = batch.positions[j]
        counts = np.bincount(out[reach, j], minlength=VOCAB).tolist() if n else [0] * VOCAB
        tests.append(
            {
                "kind": "distribution",
                "position": j,
                "n": n,
                "counts": counts,
                "expected": [round(float(x), 6) for x in pos.target],
            }
        )
        tests.append(
            {
                "kind": "acceptance",
                "position": j,
                "n": n,
                "accepted": int((accepted[reach] > j).sum()),
                "expected_rate": pos.acceptance,
            }
        )
    return tests


def _evaluate(test: dict[str, Any], level: float) -> dict[str, Any]:
    if test["kind"] == "distribution":
        r = chi2_goodness_of_fit(test["counts"], test["expected"], alpha=level, tv=TV_ALTERNATIVE)
        return {
            **test,
            "p": r["p"],
            "power": r["power"],
            "statistic": _json_number(r["statistic"]),
            "impossible_tokens": r["impossible"],
        }
    r = rate_z_test(test["accepted"], test["n"], test["expected_rate"], alpha=level, delta=ACCEPTANCE_ALTERNATIVE)
    return {**test, "observed_rate": r["observed"], "p": r["p"], "power": r["power"]}


def _describe(test: dict[str, Any]) -> str:
    if test["kind"] == "distribution":
        observed = np.asarray(test["counts"]) / max(1, test["n"])
        tv = 0.5 * float(np.abs(observed - np.asarray(test["expected"])).sum())
        extra = f", {test['impossible_tokens']} tokens outside the support" if test["impossible_tokens"] else ""
        return f"position {test['position']}: token distribution off (TV {tv:.3f}, p {test['p']:.2g}{extra})"
    return (
        f"position {test['position']}: acceptance {test['observed_rate']:.3f}, exact "
        f"{test['expected_rate']:.3f} (p {test['p']:.2g})"
    )


def _error(e: Exception) -> str:
    return f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:200]}"


def run_probe(shapes: tuple[Shape, ...] = SHAPES, engine: Engine | None = None) -> dict[str, Any]:
    started = time.monotonic()
    engine = engine or Engine()
    # the unseeded shapes draw from torch's global generator: fixed, so a platform gets the same verdict every
    # run (the false-alarm rate ALPHA is then a property of the design, not a coin tossed per run)
    engine.torch.manual_seed(_SEED)
    results: list[dict[str, Any]] = []  # one JSON entry per shape
    for index, shape in enumerate(shapes):
        batch = build_batch(shape, index)
        entry: dict[str, Any] = {
            "shape": asdict(shape),
            "trials": len(batch.num_draft),
            "problems": [],
            "tests": [],
            "expand": [],
        }
        # the engine failing on a shape is a finding, not a crash of the probe
        try:
            entry["expand"] = engine.expand_check(shape, batch)
        except Exception as err:  # not `e`: the loops below name a shape's entry so
            entry["problems"].append(f"expand_batch_to_tokens raised {_error(err)}")
        try:
            out = engine.sample(shape, batch)
            entry["problems"] += exact_checks(shape, batch, out)
            if shape.seeded and not np.array_equal(out, engine.sample(shape, batch)):
                entry["problems"].append("the same seeds gave different tokens")
            entry["tests"] = statistical_tests(shape, batch, out)
        except Exception as err:
            entry["problems"].append(f"the engine raised {_error(err)}")
        results.append(entry)
    # the level is set by every test that could run; a test then runs only where it has the power stated
    candidates = [t for e in results for t in e["tests"] if t["n"] > 0]
    level = ALPHA / max(1, len(candidates))
    for e in results:
        evaluated = [_evaluate(t, level) for t in e["tests"]]
        e["tests"] = [
            t
            if t["power"] >= MIN_POWER
            else {
                **t,
                "p": None,
                "skipped": f"power {t['power']:.2f} < "
                f"{MIN_POWER} with {t['n']} trials reaching position {t['position']}",
            }
            for t in evaluated
        ]
        failed = [t for t in e["tests"] if t["p"] is not None and t["p"] < level]
        bad_expand = [x for x in e["expand"] if x["mismatched"]]
        e["failures"] = e["problems"] + [_describe(t) for t in failed]
        e["cause"] = [
            f"expand_batch_to_tokens({x['parameter']}) returned {x['mismatched']} of {x['tokens']} "
            f"per-token values that differ from the request's (expected {x['expected']}, got e.g. "
            f"{x['got_examples']})"
            for x in bad_expand
        ]
        e["verdict"] = "fail" if e["failures"] or e["cause"] else "pass"
    failing = [e for e in results if e["verdict"] == "fail"]
    run = [t for e in results for t in e["tests"] if t["p"] is not None]
    powers = [t["power"] for t in run]
    causes = sorted({c.split(" returned")[0] for e in results for c in e["cause"]})
    report = {
        "schema": SCHEMA,
        "platform": engine.platform,
        "statistics": {
            "family_alpha": ALPHA,
            "correction": "Bonferroni",
            "tests": len(run),
            "untested": sum(1 for e in results for t in e["tests"] if t["p"] is None),
            "level": level,
            "distribution_test": "chi-square goodness of fit against the exact target distribution",
            "acceptance_test": "two-sided z-test against the exact acceptance rate",
            "power_against_tv": TV_ALTERNATIVE,
            "power_against_acceptance_shift": ACCEPTANCE_ALTERNATIVE,
            "min_power": min(powers) if powers else None,
            "power_floor": MIN_POWER,
        },
        "shapes": results,
        "verdict": "fail" if failing else "pass",
        "failing_shapes": [e["shape"]["name"] for e in failing],
        "cause": (
            (
                "the expanded per-token sampling parameters differ from the request's: "
                + ", ".join(causes)
                + " (vllm/v1/sample/rejection_sampler.py expand_batch_to_tokens; on CPU "
                "vllm/utils/cpu_triton_utils.py _expand_kernel_impl fills an int64 copy of its output)"
            )
            if causes
            else ("unexplained: see the failing shapes" if failing else None)
        ),
        "seconds": round(time.monotonic() - started, 2),
    }
    return report


def summary(report: dict[str, Any]) -> str:
    """A few lines for a person: the verdict, what failed and why, the statistics it rests on."""
    p, s = report["platform"], report["statistics"]
    lines = [
        f"sampler probe: {report['verdict'].upper()} on vLLM {p['vllm']} {p['device']} "
        f"({'Triton kernels' if p['triton_kernels'] else 'no Triton: platform kernel overrides'}), "
        f"{len(report['shapes'])} shapes, {report['seconds']} s"
    ]
    for e in report["shapes"]:
        mark = "ok  " if e["verdict"] == "pass" else "FAIL"
        causes = [
            c.split(" returned")[0].replace("expand_batch_to_tokens(", "expanded ").rstrip(")") + " ≠ the request's"
            for c in e["cause"]
        ]
        first = causes[:1] + e["failures"][:1]
        lines.append(
            f"  {mark} {e['shape']['name']:28} {e['trials']:6} trials" + ("" if not first else "  " + "; ".join(first))
        )
    if report["cause"]:
        lines.append(f"cause: {report['cause']}")
    power = "n/a" if s["min_power"] is None else f"{s['min_power']:.3f}"
    lines.append(
        f"statistics: {s['tests']} tests ({s['untested']} deep positions too rarely reached, not run), "
        f"Bonferroni at family α={s['family_alpha']:g} (each at {s['level']:.2g}); chi-square of each "
        f"position's tokens against the exact distribution, z-test of its acceptance rate; power ≥ {power} "
        f"against any TV ≥ {s['power_against_tv']:g} / an acceptance shift ≥ "
        f"{s['power_against_acceptance_shift']:g}"
    )
    return "\n".join(lines)
