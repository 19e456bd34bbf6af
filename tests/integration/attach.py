"""What the attach tests share: `specstack run` through the real command line (in-process, so messages and exit
codes are the user's) against a tiny server the test started itself, and reading what it left."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support import Result, run_main

TINY = ("--model-set", "tiny", "--platform", "cpu-native")
# few prompts, short outputs, no bench: the facts under test are the server's, not its speed
SMALL = (
    "--tasks",
    "code",
    "--num-prompts",
    "2",
    "--acceptance-max-tokens",
    "12",
    "--perf-output-len",
    "8",
    "--warmup-requests",
    "1",
    "--skip-bench",
    "--ready-timeout",
    "120",
)


def run_cli(capsys, models_dir: Path, results: Path, run_id: str, method: str, *extra) -> Result:
    argv = [
        "run",
        "--method",
        method,
        "--results",
        results,
        "--run-id",
        run_id,
        *TINY,
        "--models-dir",
        models_dir,
        *SMALL,
        *extra,
    ]
    return run_main(capsys, argv)


def only_bundle(results: Path, run_id: str, method: str) -> tuple[Path, dict]:
    """The one bundle the run left (published or failed) and its summary."""
    found = [p for p in (results / run_id).iterdir() if p.name == method or p.name.startswith(f"{method}.failed-")]
    assert len(found) == 1, found
    return found[0], json.loads((found[0] / "summary.json").read_text())
