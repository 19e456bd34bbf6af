"""A real Prometheus (Debian's `prometheus` binary) on a loopback port, for the harness benchmarks and the tests
(tests/support.py): the one launcher. Configured from the shipped prometheus/prometheus.yml, rewritten to this
machine (targets on loopback, the vLLM target file in a given folder), or from any config given."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import requests
import yaml

from specstack.server.runtime import free_port  # noqa: F401 - the harness, load and tests import it from here

REPO = Path(__file__).resolve().parents[2]
SHIPPED_CONFIG = REPO / "prometheus" / "prometheus.yml"


class PrometheusMissing(RuntimeError):
    pass


def binary(name: str = "prometheus") -> str:
    path = shutil.which(name) or (f"/usr/bin/{name}" if Path(f"/usr/bin/{name}").exists() else None)
    if path is None:
        raise PrometheusMissing(
            f"`{name}` not found: install Debian's prometheus package (apt-get install prometheus; .ci/run does)"
        )
    return path


def shipped_config(targets_dir: Path, windows_port: int, every: str | None = None) -> dict:
    """prometheus/prometheus.yml with the vLLM target file in `targets_dir` and the window exporter on a loopback
    port; `every` ("1s") also sets every interval, else the shipped ones stay."""
    config = yaml.safe_load(SHIPPED_CONFIG.read_text())
    for job in config.get("scrape_configs") or []:
        for sd in job.get("file_sd_configs") or []:
            sd["files"] = [str(Path(targets_dir) / Path(f).name) for f in sd.get("files", [])]
            if every:
                sd["refresh_interval"] = every
        for static in job.get("static_configs") or []:
            static["targets"] = [f"127.0.0.1:{windows_port}" for _ in static.get("targets", [])]
        if every:
            job["scrape_interval"] = every
    if every:
        config["global"].update(scrape_interval=every, evaluation_interval=every, scrape_timeout=every)
    return config


class Prometheus:
    """Started on construction, on a free port, with its data in `tsdb` (default workdir/data)."""

    def __init__(self, workdir: Path, config: dict, *, tsdb: Path | None = None, retention: str = "1d"):
        self.workdir, self.tsdb, self.retention = Path(workdir), Path(tsdb or Path(workdir) / "data"), retention
        self.binary = binary()
        self.config_file = self.workdir / "prometheus.yml"
        self.config_file.write_text(yaml.safe_dump(config))
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.start()

    def start(self) -> None:
        """Start (or restart, on the same port and data folder) and wait until ready."""
        self.log = open(self.workdir / "prometheus.log", "ab")  # noqa: SIM115 (the child process writes it past this block)
        self.proc = subprocess.Popen(
            [
                self.binary,
                f"--config.file={self.config_file}",
                f"--storage.tsdb.path={self.tsdb}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                f"--storage.tsdb.retention.time={self.retention}",
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                if requests.get(f"{self.url}/-/ready", timeout=2).ok:
                    return
            except requests.RequestException:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"prometheus did not start; see {self.workdir / 'prometheus.log'}")
            time.sleep(0.2)

    def cpu(self) -> float:
        """CPU seconds (user + system) the Prometheus process has used."""
        import psutil

        t = psutil.Process(self.proc.pid).cpu_times()
        return t.user + t.system

    def query(self, expr: str, at: float) -> list[dict]:
        r = requests.get(f"{self.url}/api/v1/query", params={"query": expr, "time": str(at)}, timeout=30)
        r.raise_for_status()
        return r.json()["data"]["result"]

    def targets(self, job: str) -> list[dict]:
        r = requests.get(f"{self.url}/api/v1/targets", params={"state": "active"}, timeout=5)
        r.raise_for_status()
        return [t for t in r.json()["data"]["activeTargets"] if t.get("labels", {}).get("job") == job]

    def kill(self) -> None:
        """A crash: SIGKILL, no clean shutdown."""
        self.proc.kill()
        self.proc.wait(30)
        self.log.close()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.log.close()
