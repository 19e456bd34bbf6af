"""`specstack compare RUN_A RUN_B`: what changed from run A to run B (compare.md/.html/.json and a plot);
exit 1 when a --fail-on threshold is crossed, 2 on a user error."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from specstack.cli.options import add_tokenizer_option
from specstack.compare import gate
from specstack.errors import UserError
from specstack.report import findings
from specstack.results.files import check_writable
from specstack.results.reader import resolve_run_dir


def _cmd_compare(args: argparse.Namespace) -> int:
    # matplotlib's pyplot (its plot) only for this command: every other one starts without it
    from specstack.compare.build import compare, default_out, write
    from specstack.compare.speedups import tally

    thresholds = gate.parse(args.fail_on)  # before reading anything: a typo fails at once
    dir_a = resolve_run_dir(args.run_a, args.results_dir)
    dir_b = resolve_run_dir(args.run_b, args.results_dir)
    out = args.out or default_out(dir_a, dir_b)
    try:  # a read-only folder fails now, with the fix, not after the comparison
        check_writable(out)
    except UserError:
        raise UserError(
            f"cannot write the comparison into {out}; pass --out DIR pointing at a writable folder"
        ) from None
    cmp = compare(dir_a, dir_b, thresholds=thresholds, tokenizer=args.tokenizer)
    files = write(cmp, out)
    inside, judged = tally(cmp.speedups)
    print(
        json.dumps(
            {
                "compare_md": str(files["md"]),
                "compare_html": str(files["html"]),
                "compare_json": str(files["json"]),
                "changed": len(cmp.changed()),
                "speedups_inside": f"{inside} of {judged}",
                "gate": "failed" if cmp.failed else ("passed" if thresholds else "none"),
            }
        )
    )
    for side, run in (("A", cmp.run_a), ("B", cmp.run_b)):  # a hand-edited summary: compared as recomputed
        for f in run.findings:
            print(f"specstack: warning: {side}: {findings.line(f)}", file=sys.stderr)
    for r in cmp.gate:
        if r["failed"]:
            change = "" if r["change"] is None else f" changed {100 * r['change']:+.1f} %"
            print(f"specstack: regression: {r['threshold']}: {r['figure']}{change} ({r['basis']})")
    return 1 if cmp.failed else 0


def register(sub) -> None:
    p = sub.add_parser(
        "compare", help="compare two runs figure by figure (compare.md/.html/.json); --fail-on gates a CI job"
    )
    p.add_argument("run_a", metavar="RUN_A", help="the reference run: a run folder, or a run id under --results")
    p.add_argument("run_b", metavar="RUN_B", help="the run compared with it")
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="folder for compare.md/.html/.json (default: compare-A-vs-B beside RUN_B)",
    )
    p.add_argument(
        "--fail-on",
        default=None,
        metavar="METRIC:±X%[,...]",
        help="exit 1 when a comparable figure moved beyond X %% (e.g. acceptance_length:-2%%,"
        f"tpot_p50:+5%%); metrics: {', '.join(gate.METRICS)}",
    )
    add_tokenizer_option(p, "run A")
    p.add_argument(
        "--results",
        dest="results_dir",
        type=Path,
        default=None,
        help="results folder holding run ids (default: $SPECSTACK_RESULTS or results/)",
    )
    p.set_defaults(func=_cmd_compare)
