"""What the attach tests share: `specstack run` through the real command line (in-process, so messages and exit
codes are the user's) against a tiny server the test started itself, and reading what it left."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from specstack.cli.main import main

TINY = ("--model-set", "tiny", "--platform", "cpu-native")
# few prompts, short outputs, no bench: the facts under test are the server's, not its speed
SMALL = ("--tasks", "code", "--num-prompts", "2", "--acceptance-max-tokens", "12", "--perf-output-len", "8",
         "--warmup-requests", "1", "--skip-bench", "--ready-timeout", "120")


@dataclass
class Result:
    code: int
    out: str
    err: str

    @property
    def text(self) -> str:  # rich wraps long lines: compare with whitespace collapsed
        return " ".join((self.out + "\n" + self.err).split())


def run_cli(capsys, models_dir: Path, results: Path, run_id: str, method: str, *extra) -> Result:
    argv = ["run", "--method", method, "--results", results, "--run-id", run_id, *TINY, "--models-dir", models_dir,
            *SMALL, *extra]
    try:
        code = main([str(a) for a in argv])
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    return Result(code, out, err)


def only_bundle(results: Path, run_id: str, method: str) -> tuple[Path, dict]:
    """The one bundle the run left (published or failed) and its summary."""
    found = [p for p in (results / run_id).iterdir() if p.name == method or p.name.startswith(f"{method}.failed-")]
    assert len(found) == 1, found
    return found[0], json.loads((found[0] / "summary.json").read_text())
