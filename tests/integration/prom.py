"""A real Prometheus (Debian's binary) for the integration tests: the shipped prometheus/prometheus.yml with
three changes only: every interval 1 s, the collector's window exporter on a loopback port, and the vLLM
target file in a temporary folder (the collector writes it, as make does for the containers)."""
from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest
import requests
import yaml

REPO = Path(__file__).resolve().parents[2]
SCRAPE_SECONDS = 1.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Prometheus:
    def __init__(self, workdir: Path, targets_dir: Path, windows_port: int):
        binary = shutil.which("prometheus")
        if binary is None:
            pytest.fail("the `prometheus` binary is missing: apt-get install prometheus (.ci/run does)")
        self.targets_dir, self.windows_port = targets_dir, windows_port
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = yaml.safe_load((REPO / "prometheus" / "prometheus.yml").read_text())
        every = f"{SCRAPE_SECONDS:g}s"
        config["global"].update(scrape_interval=every, evaluation_interval=every, scrape_timeout=every)
        jobs = {job["job_name"]: job for job in config["scrape_configs"]}
        for job in jobs.values():
            job["scrape_interval"] = every
        jobs["vllm"]["file_sd_configs"] = [{"files": [str(targets_dir / "*.json")], "refresh_interval": every}]
        jobs["specstack"]["static_configs"] = [{"targets": [f"127.0.0.1:{windows_port}"]}]
        (workdir / "prometheus.yml").write_text(yaml.safe_dump(config))
        self.binary, self.workdir = binary, workdir
        self.start()

    def start(self) -> None:
        """Start (or restart, on the same port and data folder) and wait until ready."""
        self.log = open(self.workdir / "prometheus.log", "ab")
        self.proc = subprocess.Popen(
            [self.binary, f"--config.file={self.workdir / 'prometheus.yml'}",
             f"--storage.tsdb.path={self.workdir / 'data'}", f"--web.listen-address=127.0.0.1:{self.port}",
             "--storage.tsdb.retention.time=1d"],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while True:
            try:
                if requests.get(f"{self.url}/-/ready", timeout=2).ok:
                    break
            except requests.RequestException:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"prometheus did not start; see {self.workdir / 'prometheus.log'}")
            time.sleep(0.2)

    def kill(self) -> None:
        """A crash: SIGKILL, no clean shutdown."""
        self.proc.kill()
        self.proc.wait(30)
        self.log.close()

    def query(self, expr: str, at: float) -> list[dict]:
        r = requests.get(f"{self.url}/api/v1/query", params={"query": expr, "time": at}, timeout=10)
        r.raise_for_status()
        return r.json()["data"]["result"]

    def samples(self, expr: str, start: float, end: float) -> list[tuple[float, float]]:
        """Raw stored samples of one series between start and end (a range selector at `end`)."""
        seconds = max(1, int(end - start) + 1)
        result = self.query(f"{expr}[{seconds}s]", end)
        assert len(result) <= 1, f"{expr} matched {len(result)} series"
        return [(float(t), float(v)) for t, v in (result[0]["values"] if result else [])]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(30)
        self.log.close()
