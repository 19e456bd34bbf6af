"""The machine a benchmark ran on and its load: every figure is printed next to the load average, since other
work on a shared host moves the figures far more than the harness does."""

from __future__ import annotations

import contextlib
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path

from specstack.server.provenance import client_vllm_version


def load_now() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def machine() -> dict:
    import psutil

    model = None
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {
        "cpu_model": model or platform.processor() or platform.machine(),
        "logical_cores": psutil.cpu_count(logical=True),
        "physical_cores": psutil.cpu_count(logical=False),
        "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "vllm": client_vllm_version(),
    }


def wait_for_low_load(max_load: float | None, max_wait: float, say: Callable[[str], None]) -> list[float]:
    """Wait (bounded) until the 1-minute load average is below max_load; returns the load when starting."""
    if max_load is None:
        return load_now()
    deadline = time.monotonic() + max_wait
    while os.getloadavg()[0] > max_load and time.monotonic() < deadline:
        say(f"load {load_now()} above {max_load}; waiting (at most {max(0, deadline - time.monotonic()):.0f} s)")
        time.sleep(min(30.0, max(1.0, deadline - time.monotonic())))
    return load_now()


def say(tool: str) -> Callable[[str], None]:
    """A progress printer for stderr: `[tool HH:MM:SS load 1m 5m 15m] text`."""

    def _say(text: str) -> None:
        print(
            f"[{tool} {time.strftime('%H:%M:%S')} load {' '.join(f'{x:.2f}' for x in os.getloadavg())}] {text}",
            file=sys.stderr,
            flush=True,
        )

    return _say
