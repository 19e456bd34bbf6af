"""Faults on the running CPU stack: the vLLM container killed (`docker kill`) while bench's requests are
in flight, a server that never turns healthy (weights missing; a start slower than WAIT_TIMEOUT)."""

from __future__ import annotations

import json
import os
import threading
import time

import pytest

from specstack.measure.bench import bench_requests_done

from . import engine
from .conftest import tail
from .stack import Stack

pytestmark = pytest.mark.compose

# A bench long enough to be killed inside (16 prompts x 256 tokens at concurrency 1).
KILL_RUN_ARGS = (
    "--tasks code --num-prompts 16 --perf-output-len 256 --acceptance-max-tokens 48 --concurrency 1 --warmup-requests 1"
)


def running(stack: Stack, service: str) -> list[str]:
    return engine.docker(
        "ps",
        "-q",
        "--filter",
        f"label=com.docker.compose.project={stack.project}",
        "--filter",
        f"label=com.docker.compose.service={service}",
    ).stdout.split()


def kill_when_bench_runs(stack: Stack, done: threading.Event) -> dict:
    """`docker kill` the server the moment bench's main run starts: its progress bar (tqdm, flushed) appears in
    the cell's log in the method's staging folder on the host right before its requests go out. Watching the
    file, not the server's log through the docker CLI (slow on a busy host), keeps the kill inside a bench
    that lasts seconds: the CI failure of stop 21 was a kill that landed after the bench had ended."""
    deadline = time.monotonic() + 900
    while not done.is_set() and time.monotonic() < deadline:
        for log in (stack.results / "cpu-kill").glob(".ngram.staging-*/bench/*.log"):
            if bench_requests_done(log) is not None:
                # Read before the kill: the failed window's staging folder is renamed as soon as it lands (the
                # CI failure of stop 25 was this read racing that rename).
                try:
                    bench_log = log.read_text(errors="replace")[-2000:]
                except FileNotFoundError:  # the method ended between the glob and this read: look again
                    continue
                (cid,) = running(stack, "vllm-ngram")
                at = time.time()  # when the kill was issued: the window fails as soon as it lands
                engine.docker("kill", cid)
                return {"killed": cid, "at": at, "bench_log": bench_log}
        time.sleep(0.05)
    return {"error": "the sweep never reached bench's main run"}


@pytest.fixture(scope="module")
def killed_sweep(stack, sweep_run):
    proc = stack.popen(
        "sweep",
        "PLATFORM=cpu",
        "MODEL_SET=tiny",
        "RUN_ID=cpu-kill",
        "SWEEP_METHODS=ngram baseline",
        "SWEEP_MTP_METHODS=",
        f"RUN_ARGS={KILL_RUN_ARGS}",
    )
    lines: list[tuple[float, str]] = []
    done = threading.Event()

    def read():
        for line in proc.stdout:
            lines.append((time.time(), line.rstrip("\n")))
        done.set()

    with engine.Events(stack.project) as events:
        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        try:
            kill = kill_when_bench_runs(stack, done)
        finally:  # even when the watch fails, the sweep ends here: it must not run under the tests after it
            rc = proc.wait(timeout=1500)
            reader.join(30)
    (stack.logs / "sweep-kill.log").write_text("\n".join(line for _, line in lines))
    return {
        "rc": rc,
        "output": "\n".join(line for _, line in lines),
        "kill": kill,
        "events": events,
        "run_dir": stack.results / "cpu-kill",
    }


def test_killed_server_fails_its_bench_window_and_the_sweep_goes_on(killed_sweep):
    kill, out = killed_sweep["kill"], killed_sweep["output"]
    assert "killed" in kill, kill
    assert killed_sweep["rc"] != 0 and "sweep cpu-kill failed: ngram" in out, tail(out)
    (failed,) = killed_sweep["run_dir"].glob("ngram.failed-*")
    s = json.loads((failed / "summary.json").read_text())
    windows = {w["name"]: w for w in s["windows"]}
    assert s["status"] == "failed"
    assert windows["warmup"]["status"] == "ok" and windows["acceptance/code"]["status"] == "ok"
    bench = windows["bench/code-c1-r0"]
    assert bench["status"] == "failed" and bench["start"] < kill["at"] < bench["end"], (
        bench["start"],
        bench["end"],
        bench["reason"],
        kill,
    )
    # The sweep went on: the next method's server started after the kill and its run is whole.
    baseline = json.loads((killed_sweep["run_dir"] / "baseline" / "summary.json").read_text())
    assert baseline["status"] == "ok" and baseline["crosscheck"]["ok"]
    starts = [e for e in killed_sweep["events"].of("start", "vllm-baseline")]
    assert starts and all(e["timeNano"] / 1e9 > kill["at"] for e in starts)
    (dead,) = engine.inspect(kill["killed"])
    assert dead["State"]["ExitCode"] == 137 and not dead["State"]["OOMKilled"]
    assert (killed_sweep["run_dir"] / "report.md").exists()


@pytest.fixture()
def broken_model(stack, killed_sweep, cpu_images):
    """A model folder with every JSON file and the chat template of the tiny target but no weights, in the
    models volume, and a model set that names it (pre-flight reads config and tokenizer files only, so the
    server itself has to fail)."""
    collector = cpu_images["refs"]["COLLECTOR_IMAGE"]
    engine.docker(
        "run",
        "--rm",
        "--network",
        "none",
        "-u",
        "0",
        "-v",
        f"{stack.project}_models:/models",
        "--entrypoint",
        "sh",
        collector,
        "-c",
        "rm -rf /models/no-weights && mkdir /models/no-weights && "
        "cp /models/tiny-qwen3/*.json /models/tiny-qwen3/*.jinja /models/no-weights/",
    )
    methods_toml = stack.dir / "services" / "methods.toml"
    original = methods_toml.read_text()
    methods_toml.write_text(original + '\n[model_sets.no-weights]\ntarget = "{models}/no-weights"\n')
    yield "no-weights"
    methods_toml.write_text(original)
    os.chown(methods_toml, stack.user.pw_uid, stack.user.pw_gid)


def test_server_without_weights_stops_within_wait_timeout_with_its_last_log_lines(stack, broken_model):
    out, seconds = stack.make(
        "run",
        "METHOD=baseline",
        "PLATFORM=cpu",
        f"MODEL_SET={broken_model}",
        "RUN_ID=cpu-no-weights",
        "WAIT_TIMEOUT=240",
        log="no-weights",
    )
    text = out.stdout
    assert out.returncode != 0, tail(text)
    assert "preflight baseline (no-weights, cpu-container): ok" in text  # the server, not pre-flight, failed
    assert "vllm-baseline did not become healthy" in text
    # The last log lines are vLLM's final traceback; the root cause (in a worker) is logged earlier, and make
    # names it.
    exceptions = text.split("--- exceptions vllm-baseline logged (the first is usually the cause):")[1]
    assert (
        exceptions.lstrip()
        .split("\n")[0]
        .endswith("RuntimeError: Cannot find any model weights with `/models/no-weights`")
    ), tail(text, 20)
    assert seconds < 240, seconds
    assert running(stack, "vllm-baseline") == []


def first_time(stamped: list[tuple[float, str]], needle: str, text: str) -> float:
    """When the first line holding `needle` arrived; a missing line fails with the output's tail, not a bare
    StopIteration."""
    times = [t for t, line in stamped if needle in line]
    assert times, f"no line holds {needle!r}; the output ends:\n{tail(text, 80)}"
    return times[0]


def test_server_slower_than_wait_timeout_is_stopped_at_the_timeout(stack, killed_sweep):
    proc = stack.popen(
        "run", "METHOD=baseline", "PLATFORM=cpu", "MODEL_SET=tiny", "RUN_ID=cpu-timeout", "WAIT_TIMEOUT=5"
    )
    stamped = [(time.monotonic(), line.rstrip("\n")) for line in proc.stdout]
    rc = proc.wait(timeout=600)
    ended = time.monotonic()
    text = "\n".join(line for _, line in stamped)
    (stack.logs / "timeout.log").write_text(text)
    assert rc != 0, tail(text)
    start = first_time(stamped, "starting vllm-baseline", text)
    verdict = first_time(stamped, "vllm-baseline did not become healthy", text)
    assert 5 <= verdict - start < 5 + 25, verdict - start
    # Its last log lines were shown (serve_args.py prints the command before exec'ing vLLM).
    assert any("vllm serve /models/tiny-qwen3" in line for _, line in stamped), tail(text)
    assert running(stack, "vllm-baseline") == []
    # make returned soon after its verdict: the server was killed, not given the 60 s grace period of a stop
    # (vLLM 0.32.0 hangs on SIGTERM mid-start); what is left after the verdict is the report step.
    assert ended - verdict < 40, ended - verdict


def test_a_port_in_use_is_named_with_the_knob_that_fixes_it(stack, killed_sweep):
    import socket

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        out, _ = stack.make(
            "run",
            "METHOD=baseline",
            "PLATFORM=cpu",
            "MODEL_SET=tiny",
            "RUN_ID=cpu-port",
            env=stack.env(VLLM_PORT=str(port)),
            log="port-in-use",
        )
    text = out.stdout
    assert out.returncode != 0, tail(text)
    assert f"127.0.0.1:{port}" in text and "address already in use" in text, tail(text)
    assert (
        f"vllm-baseline never started; if a port it publishes is in use (see the error above), choose free "
        f"ones: VLLM_PORT=, PROMETHEUS_PORT=, GRAFANA_PORT= (now {port}," in text
    ), tail(text)
    assert running(stack, "vllm-baseline") == []
