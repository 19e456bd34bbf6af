"""`specstack report RUN_DIR_OR_ID`: report.md, report.html, plots and tidy tables of a finished run."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from specstack.cli.options import add_tokenizer_option
from specstack.report import console_table
from specstack.results import layout
from specstack.results.reader import resolve_run_dir


def _cmd_report(args: argparse.Namespace) -> int:
    from specstack.report.build import write_report  # pandas and matplotlib: only for this command

    run_dir = resolve_run_dir(args.run, args.results_dir)
    md = write_report(run_dir, tokenizer=args.tokenizer)
    if args.seal:
        console_table.seal_run(run_dir)
    print(
        json.dumps(
            {
                "report_md": str(md),
                "report_html": str(run_dir / layout.REPORT_HTML),
                "tables": str(run_dir / layout.REPORT_TABLES_DIR),
                "plots": str(run_dir / layout.REPORT_DIR),
            }
        )
    )
    return 0


def register(sub) -> None:
    p = sub.add_parser("report", help="write report.md/.html, plots and tidy tables for a finished run")
    p.add_argument("run", metavar="RUN_DIR_OR_ID", help="a run folder, or a run id under --results")
    add_tokenizer_option(p, "the bundle")
    p.add_argument(
        "--results",
        dest="results_dir",
        type=Path,
        default=None,
        help="results folder holding run ids (default: $SPECSTACK_RESULTS or results/)",
    )
    # make run/sweep: the host writes files of its own into the run (host provenance, server logs) after each
    # collector sealed it; the report is the run's last step, so it seals what the whole run produced.
    p.add_argument(
        "--seal",
        action="store_true",
        help="then save the console tables and write SHA256SUMS over the whole run (the run's last step)",
    )
    p.set_defaults(func=_cmd_report)
