"""What tests share: loopback ports, the real Prometheus (one launcher: selfbench/prometheus.py, also used by the
harness benchmarks), the `specstack` command line run in-process, and reading JSONL. A missing Prometheus fails the test with the install command; it is
never skipped (a skip would stand in for a component the test exists to exercise)."""

from __future__ import annotations

import fcntl
import functools
import hashlib
import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from selfbench import prometheus as _prometheus
from selfbench.prometheus import free_port, shipped_config
from specstack.config.methods import ServePlan

__all__ = [
    "REPO",
    "SCRAPE_SECONDS",
    "HttpStandIn",
    "Prometheus",
    "Result",
    "binary",
    "free_port",
    "npm_installed",
    "read_jsonl",
    "run_main",
    "serve_plan",
]

REPO = Path(__file__).resolve().parents[1]
SCRAPE_SECONDS = 1.0  # the integration tests scrape every second; the shipped config says 5 s


def binary(name: str) -> str:
    try:
        return _prometheus.binary(name)
    except _prometheus.PrometheusMissing as e:
        pytest.fail(str(e), pytrace=False)


class Prometheus(_prometheus.Prometheus):
    """The shipped prometheus/prometheus.yml with three changes only: every interval 1 s, the collector's window
    exporter on a loopback port, and the vLLM target file in a temporary folder (the collector writes it, as
    make does for the containers); or any `config` given."""

    def __init__(
        self,
        workdir: Path,
        targets_dir: Path | None = None,
        windows_port: int | None = None,
        *,
        config: dict | None = None,
        tsdb: Path | None = None,
        retention: str = "1d",
    ):
        binary("prometheus")
        self.targets_dir, self.windows_port = targets_dir, windows_port
        if config is None:
            config = shipped_config(targets_dir, windows_port, every=f"{SCRAPE_SECONDS:g}s")
            config["scrape_configs"] = [_all_target_files(job, targets_dir) for job in config["scrape_configs"]]
        super().__init__(workdir, config, tsdb=tsdb, retention=retention)

    def samples(self, expr: str, start: float, end: float) -> list[tuple[float, float]]:
        """Raw stored samples of one series between start and end (a range selector at `end`)."""
        seconds = max(1, int(end - start) + 1)
        result = self.query(f"{expr}[{seconds}s]", end)
        assert len(result) <= 1, f"{expr} matched {len(result)} series"
        return [(float(t), float(v)) for t, v in (result[0]["values"] if result else [])]


def _all_target_files(job: dict, targets_dir: Path) -> dict:
    """The vllm job reads every *.json of the folder (a test may write its own target file there)."""
    if job.get("file_sd_configs"):
        for sd in job["file_sd_configs"]:
            sd["files"] = [str(Path(targets_dir) / "*.json")]
    return job


@dataclass
class Result:
    """What a `specstack` command left: its exit code, stdout and stderr."""

    code: int
    out: str
    err: str

    @property
    def text(self) -> str:  # rich wraps long lines: compare with whitespace collapsed
        return " ".join((self.out + "\n" + self.err).split())


def run_main(capsys, argv: list) -> Result:
    """`specstack <argv>` in-process through specstack.cli.main (the script's entry point), so argparse's exits,
    printed messages and exit codes are the user's."""
    from specstack.cli.main import main  # here, not at the top: tests that only need a port stay light

    try:
        code = main([str(a) for a in argv])
    except SystemExit as e:  # argparse's own errors
        code = e.code
    out, err = capsys.readouterr()
    return Result(code, out, err)


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


class HttpStandIn:
    """A stand-in HTTP server on a free loopback port, serving `handler` (quietly: no request log on stderr) in a
    daemon thread; `url` is its base url, `close()` stops it. Stand-ins subclass it with their own handler."""

    def __init__(self, handler):
        import http.server
        import threading

        quiet = type(handler.__name__, (handler,), {"log_message": lambda self, *args: None})
        self.http = http.server.ThreadingHTTPServer(("127.0.0.1", 0), quiet)
        threading.Thread(target=self.http.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}"

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()


@functools.cache
def npm_installed(folder: Path) -> str:
    """node, with folder/node_modules installed by `npm ci` from the committed package-lock.json (again whenever
    the lockfile changes; a stamp in node_modules holds the hash installed). Called from the tests rather than a
    fixture, so that missing node/npm is a test failure naming the install, not a setup error."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        pytest.fail("node and npm are needed for the schema checks of npm packages: apt-get install nodejs npm")
    stamp = folder / "node_modules" / ".specstack-lock.sha256"
    lock_hash = hashlib.sha256((folder / "package-lock.json").read_bytes()).hexdigest()
    with open(folder / "package-lock.json", "rb") as held:  # parallel workers: one npm ci at a time per folder
        fcntl.flock(held, fcntl.LOCK_EX)
        if not stamp.is_file() or stamp.read_text().strip() != lock_hash:
            proc = subprocess.run(
                [npm, "ci", "--no-audit", "--no-fund"], cwd=folder, capture_output=True, text=True, timeout=600
            )
            assert proc.returncode == 0, f"npm ci in {folder} failed:\n{proc.stdout}\n{proc.stderr}"
            stamp.write_text(lock_hash + "\n")
    return node


def is_vllm_serve(cmdline: list[str]) -> bool:
    """A `vllm serve` process, not its launcher (server/leash.py): before the launcher execs vllm, it and the
    children it forks for the watchdog carry `... leash launch ... -- vllm serve --port N` as their command line
    for a moment, and a process sampler must not count those as servers."""
    return "serve" in cmdline and "--port" in cmdline and "specstack.server.leash" not in cmdline


def serve_plan(**fields) -> ServePlan:
    """A serve plan of only the fields a unit test cares about, over a plain-decode baseline's."""
    plain = dict(
        method="baseline",
        label="baseline",
        baseline=None,
        target="tok",
        model_set="tiny",
        platform="cpu-native",
        speculative_config=None,
        requires=[],
        flags={},
        argv=[],
        env={},
        model_runner=None,
    )
    return ServePlan(**{**plain, **fields})
