"""`specstack k8s generate [--check]` (the Helm chart's generated files) and `specstack k8s gather RUN` (a run's
Jobs into one bundle)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from specstack.k8s import chart
from specstack.k8s.gather import gather


def _cmd_generate(args: argparse.Namespace) -> int:
    if args.check:
        problems = chart.check(args.chart)
        for line in problems:
            print(f"k8s generate --check: {line}; run `specstack k8s generate`", file=sys.stderr)
        if not problems:
            print(f"k8s generate --check: OK ({args.chart})")
        return 1 if problems else 0
    for path in chart.write(args.chart):
        print(f"{'wrote' if path.exists() else 'removed'} {path}")
    return 0


def _cmd_gather(args: argparse.Namespace) -> int:
    results = args.results_dir or Path(os.environ.get("SPECSTACK_RESULTS", "results"))
    got = gather(args.run_id, results, namespace=args.namespace, release=args.release)
    for method, why in sorted(got.missing.items()):
        print(f"{method}: not gathered: {why}", file=sys.stderr)
    print(
        json.dumps(
            {
                "run_dir": str(got.run_dir),
                "copied": got.copied,
                "already_there": got.kept,
                "missing": sorted(got.missing),
            }
        )
    )
    return 1 if got.missing else 0


def register(sub) -> None:
    k = sub.add_parser("k8s", help="Kubernetes: the Helm chart's generated files; a run's Jobs into one bundle")
    ksub = k.add_subparsers(dest="k8s_command", required=True, metavar="K8S_COMMAND")
    g = ksub.add_parser(
        "generate",
        help="write deploy/helm/specstack's generated files from services/methods.toml "
        "and grafana/dashboards (--check: compare, write nothing)",
    )
    g.add_argument("--check", action="store_true", help="exit 1 naming every generated file that is stale")
    g.add_argument("--chart", type=Path, default=chart.CHART_DIR, help=argparse.SUPPRESS)
    g.set_defaults(func=_cmd_generate)
    ga = ksub.add_parser(
        "gather",
        help="copy every Job's results and pod logs of a run into results/<run-id>/ "
        "(kubectl: $KUBECTL or on PATH); exit 1 if a method could not be copied",
    )
    ga.add_argument("run_id", metavar="RUN", help="the run id the chart was installed with (--set runId)")
    ga.add_argument("--namespace", "-n", default=None, help="the namespace of the release (default: kubectl's)")
    ga.add_argument("--release", default=None, help="only the pods of this Helm release")
    ga.add_argument(
        "--results",
        dest="results_dir",
        type=Path,
        default=None,
        help="results folder (default: $SPECSTACK_RESULTS or results/)",
    )
    ga.set_defaults(func=_cmd_gather)
