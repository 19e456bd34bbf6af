"""A native sweep that meets two faults, on real vLLM 0.32.0 (CPU, tiny models):

1. the first method's server is SIGKILLed in the middle of a bench window (during bench's 2nd timed
   request): the bench window fails saying vLLM died, the warm-up and acceptance results before it stay
   intact, and no process of that server is left;
2. the port is then taken by another process before the next method starts (a server that was not
   released in time): the sweep waits a bounded time, then stops with a message naming the holder,
   without starting a second server.

One vLLM server start in this file.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import re
import signal
import subprocess
import time
import types
from collections.abc import Callable
from pathlib import Path

import pytest
from vllm.benchmarks.lib import endpoint_request_func

from specstack.errors import UserError
from specstack.measure import bench as bench_module
from specstack.pipeline.sweep import sweep
from specstack.runs import native_server as run_module
from specstack.server import runtime
from specstack.server.runtime import port_free
from tests.support import free_port

from .faults import (
    assert_failed_bundle,
    assert_warmup_intact,
    group_gone,
    hold_port,
    manifest,
    options,
    windows_by_name,
)

pytestmark = pytest.mark.integration

OUTPUT_LEN = 64
CUT_LEN = 3000  # the 2nd request's length: ~4 s on this CPU, so a kill 0.5 s in lands inside it even under load


def kill_in_second_request(server, mark: Path) -> Callable[[], None]:
    """SIGKILL the server's process group while bench's 2nd timed request is being generated.

    The hook sits in bench's own request path (its completions request function, which the forked bench
    child inherits): it makes the 2nd request CUT_LEN tokens long and kills the server 0.5 s after sending
    it, so the kill lands inside that request even on a loaded machine. Watching /metrics from outside did
    not: a busy CPU server answers it in bursts, and the kill once fell after bench's last request. The
    bench child writes the kill time to `mark`. Returns the undo."""
    funcs = endpoint_request_func.ASYNC_REQUEST_FUNCS
    original = funcs["openai"]
    calls = {"n": 0}

    async def request(request_func_input, session, pbar=None):
        calls["n"] += 1
        if calls["n"] != 2:
            return await original(request_func_input=request_func_input, session=session, pbar=pbar)
        long_input = dataclasses.replace(request_func_input, output_len=CUT_LEN)
        answer = asyncio.ensure_future(original(request_func_input=long_input, session=session, pbar=pbar))
        await asyncio.sleep(0.5)
        mark.write_text(repr(time.time()))
        os.killpg(server.process.pid, signal.SIGKILL)
        return await answer

    funcs["openai"] = request
    return lambda: funcs.__setitem__("openai", original)


@pytest.fixture(scope="module")
def faulty_sweep(models_dir, tmp_path_factory):
    mp = pytest.MonkeyPatch()
    seen: dict = {}
    original_start, original_stop, original_bench = (
        run_module.start_native,
        run_module.stop_native,
        bench_module.run_bench,
    )

    def spawn(argv, *args, **kwargs):  # every `vllm serve` the runtime launches
        proc = subprocess.Popen(argv, *args, **kwargs)
        seen.setdefault("spawned", []).append((argv, proc))
        return proc

    def start(plan, *args, **kwargs):
        server = original_start(plan, *args, **kwargs)
        seen["server"] = server
        return server

    def bench(argv, result_path, log_path, *rest):  # rest: the goodput targets (--slo), passed through
        undo = kill_in_second_request(seen["server"], mark)
        try:
            return original_bench(argv, result_path, log_path, *rest)
        finally:
            undo()
            if mark.exists():
                seen["killed_at"] = float(mark.read_text())

    def stop(server, *args, **kwargs):
        original_stop(server, *args, **kwargs)
        if "holder" not in seen:  # something else takes the port before the next method's server starts
            seen["holder"] = hold_port(int(server.base_url.rsplit(":", 1)[1]), 600)

    mp.setattr(
        runtime,
        "subprocess",
        types.SimpleNamespace(
            Popen=spawn,
            STDOUT=subprocess.STDOUT,
            DEVNULL=subprocess.DEVNULL,
            PIPE=subprocess.PIPE,  # a held server's stdin (runtime.prestart_native)
            TimeoutExpired=subprocess.TimeoutExpired,
        ),
    )
    mp.setattr(run_module, "start_native", start)
    mp.setattr(run_module, "stop_native", stop)
    mp.setattr(bench_module, "run_bench", bench)
    results = tmp_path_factory.mktemp("sweep-faults")
    mark = tmp_path_factory.mktemp("kill") / "killed_at"
    opts = options(
        models_dir,
        results,
        "fault-sweep",
        port=free_port(),
        skip_bench=False,
        concurrencies=(1,),
        num_prompts=4,
        perf_output_len=OUTPUT_LEN,
        port_release_timeout=3.0,
    )
    t0 = time.monotonic()
    try:
        with pytest.raises(UserError) as stopped:
            sweep(opts, ["baseline", "ngram"])
        seen["sweep_seconds"] = time.monotonic() - t0
    finally:
        mp.undo()
        holder = seen.get("holder")
    yield {"opts": opts, "run_dir": results / opts.run_id, "seen": seen, "error": str(stopped.value)}
    if holder is not None:
        holder.kill()
        holder.wait(10)


def bundle_of(run_dir, method):
    found = list(run_dir.glob(f"{method}.failed-*"))
    assert len(found) == 1, found
    return found[0], json.loads((found[0] / "summary.json").read_text())


def test_kill_mid_bench_fails_that_window_and_keeps_the_earlier_ones(faulty_sweep):
    run_dir, seen = faulty_sweep["run_dir"], faulty_sweep["seen"]
    assert "killed_at" in seen, "the kill was never injected"
    published, summary = bundle_of(run_dir, "baseline")
    assert_failed_bundle(summary, published, run_dir)
    assert_warmup_intact(summary, published)
    windows = windows_by_name(summary)
    acc = windows["acceptance/code"]
    assert acc["status"] == "ok" and acc["checks_ok"], acc  # the phase before the kill stands
    assert len((published / "acceptance" / "code.jsonl").read_text().splitlines()) == 4
    bench = windows["bench/code-c1-r0"]
    assert bench["status"] == "failed", bench
    assert bench["start"] < seen["killed_at"] < bench["end"], "the kill did not land inside the bench window"
    assert "vLLM server exited with code -9 during the window" in bench["reason"], bench["reason"]
    # The 1st request stands; the 3rd and 4th found no server. The cut 2nd counts as failed only if it had
    # not streamed a chunk yet: bench 0.32.0 counts a stream cut after its first chunk as a success (the
    # collector's completeness checks catch that when the server survives: tests/measure/test_accounting.py).
    assert re.search(r"; [23] of 4 bench requests failed", bench["reason"]), bench["reason"]
    assert summary["error"].startswith("bench/code-c1-r0: failed: vLLM server exited with code -9"), summary["error"]
    cell = summary["tasks"]["code"]["bench"][0]
    assert cell["status"] == "failed"
    # The command line of the cell stays beside it, so it can be rerun by hand.
    assert "vllm" in (published / "bench" / "code-c1-r0.cmd").read_text()
    assert group_gone(seen["server"].process.pid), "processes of the killed server are still alive"


def test_port_not_released_stops_the_sweep_without_a_second_server(faulty_sweep):
    run_dir, seen, error = faulty_sweep["run_dir"], faulty_sweep["seen"], faulty_sweep["error"]
    port, holder = faulty_sweep["opts"].port, seen["holder"]
    # ngram's server process started held while its checks ran (runtime.prestart_native) and, the port still
    # taken, was stopped without being told to serve: no second `vllm serve` ran
    _, *rest = seen["spawned"]
    assert len(rest) <= 1 and all("specstack.server.held_serve" in argv for argv, _ in rest), seen["spawned"]
    assert all(proc.poll() is not None and group_gone(proc.pid) for _, proc in rest), "the held server still runs"
    assert error.startswith("sweep stopped at ngram: port 127.0.0.1:"), error
    assert f"still in use 3 s after the previous server of this sweep stopped (held by pid {holder.pid} (" in error
    assert "refusing to start a second server" in error and "rerun the same command to resume" in error
    published, summary = bundle_of(run_dir, "ngram")
    assert_failed_bundle(summary, published, run_dir, method="ngram")
    # No fact of a server that never started: only the runner methods.toml pins (the plan's, not the server's).
    assert summary["error_type"] == "PortNotReleased" and summary["server"] == {"model_runner_pinned": "V1"}
    assert not (published / "server.log").exists() and summary["windows"] == []
    assert {k: v["status"] for k, v in manifest(run_dir)["methods"].items()} == {
        "baseline": "failed",
        "ngram": "failed",
    }
    # The wait was bounded (3 s here), and the holder was left alone; once it is gone the port is free.
    assert holder.poll() is None and not port_free("127.0.0.1", port)
    holder.kill()
    holder.wait(10)
    assert port_free("127.0.0.1", port)
