"""How many samples per prompt the lossless test needs to see a given TV, from a run's own baseline samples.

The TV the test can detect (its permutation critical value at α/m, report/lossless.py) depends on how spread
the model's next-token distributions are, so it is measured, not assumed: each prompt's and position's baseline
tokens are resampled n to a side and the same test is run on the two resamples (the null holds by construction).
    usage: python tests/gpu/sample_size.py RUN_DIR [--baseline mtp-baseline] [--per-side 256 512 ...]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from specstack.report.lossless import ALPHA, POSITIONS, permutation_test, samples_by_prompt
from specstack.results.records import read_records


def critical_tv(run_dir: Path, per_side: int, baseline: str = "baseline", seed: int = 1) -> float:
    """Median critical TV over the baseline's prompts × positions at `per_side` samples a side."""
    records = [r for f in sorted((run_dir / baseline / "sampled").glob("*.jsonl")) for r in read_records(f)]
    by_prompt = samples_by_prompt(records, POSITIONS)
    rng = np.random.default_rng(seed)
    m = len(by_prompt) * POSITIONS
    crits = []
    for prompt in sorted(by_prompt):
        for pos in range(POSITIONS):
            tokens = np.array([s[pos] for s in by_prompt[prompt] if len(s) > pos])
            a, b = (list(rng.choice(tokens, per_side)) for _ in range(2))
            crits.append(permutation_test(a, b, alpha=ALPHA / m, rng=rng)["critical_tv"])
    return float(np.median(crits))


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run_dir", type=Path)
    p.add_argument("--per-side", type=int, nargs="+", default=[256, 384, 512, 640, 768], help="samples a side")
    p.add_argument("--baseline", default="baseline", help="the baseline's folder in the run (default baseline)")
    args = p.parse_args()
    for n in args.per_side:
        print(
            f"{n} a side ({2 * n} samples per prompt): detectable TV {critical_tv(args.run_dir, n, args.baseline):.3f}"
        )
