"""runs/native_server.py: the native server's life without a real server (runtime's start_native, attach and
stop_native replaced): what start writes and emits in which order, what stop does on each way it can end, where
the server log and the host's facts come from."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from types import SimpleNamespace

import pytest
from rich.console import Console

from specstack import events
from specstack.config.serving import Runtime
from specstack.results import layout
from specstack.runs import native_server
from specstack.runs.native_server import INTERRUPT_GRACE, STOP_TIMEOUT, NativeServer
from specstack.server.runtime import Server, ServerError

pytestmark = pytest.mark.unit


class Bundle:
    """What NativeServer uses of a MethodBundle."""

    def __init__(self, root: Path):
        self.staging = root / "staging"
        self.staging.mkdir(exist_ok=True)

    def path(self, rel: str) -> Path:
        p = self.staging / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        return p

    def write_text(self, rel: str, text: str) -> Path:
        p = self.path(rel)
        p.write_text(text)
        return p


def backend(tmp_path, *, runtime=Runtime.NATIVE, interrupted=False, targets=None, slot=None, name="ngram"):
    opts = SimpleNamespace(
        runtime=runtime,
        url="http://10.0.0.5:9000" if runtime == Runtime.URL else None,
        served_model_name="m",
        ready_timeout=5.0,
        port_wait=0.0,
        prometheus_targets=targets,
        slot=slot,
    )
    plan = SimpleNamespace(method="ngram", flags={"host": "127.0.0.1", "port": 8123, "served-model-name": "m"})
    return NativeServer(
        opts,
        plan,
        name=name,
        run_dir=tmp_path / "run",
        bundle=Bundle(tmp_path),
        labels={"run_id": "r", "method": name},
        interrupted=lambda: interrupted,
        console=Console(file=open(tmp_path / "console.txt", "w")),  # noqa: SIM115 - closed with tmp_path
    )


def live(log_path: Path | None = None, pid: int = 4242, runtime=Runtime.NATIVE) -> Server:
    process = SimpleNamespace(pid=pid) if runtime == Runtime.NATIVE else None
    return Server("http://127.0.0.1:8123", "m", runtime, log_path=log_path, process=process, ready_seconds=1.5)


def test_prepare_has_nothing_left_and_the_url_is_known_before_the_start(tmp_path):
    assert backend(tmp_path).prepare() == 0
    assert backend(tmp_path).url == "http://127.0.0.1:8123"
    assert backend(tmp_path, runtime=Runtime.URL).url == "http://10.0.0.5:9000"


def test_start_writes_the_target_first_then_starts_into_the_bundle_s_log_and_says_so_in_order(tmp_path, monkeypatch):
    targets = tmp_path / "targets.json"
    b = backend(tmp_path, targets=targets, slot=1)
    seen = []

    def start_native(plan, log_path, timeout, *, port_wait, held):
        assert held is None  # a backend made without a held server
        seen.append(("start", json.loads(targets.read_text()), log_path, timeout, port_wait))
        return live(log_path)

    monkeypatch.setattr(native_server, "start_native", start_native)
    with events.listening(events.Recorder()) as recorder:
        assert b.start() == 0
    ((_, target, log_path, timeout, port_wait),) = seen
    assert target == [{"targets": ["127.0.0.1:8123"], "labels": {"run_id": "r", "method": "ngram", "slot": 1}}]
    assert log_path == b.bundle.staging / layout.SERVER_LOG and (timeout, port_wait) == (5.0, 0.0)
    names = [(e, f.get("name")) for e, f in recorder.events]
    assert names == [("server.start", None), ("step.start", "server start"), ("step.end", "server start"),
                     ("server.ready", None)]  # fmt: skip
    assert recorder.named("server.ready")[0]["pid"] == 4242 and b.server is not None


def test_the_url_runtime_attaches_and_has_no_pid(tmp_path, monkeypatch):
    b = backend(tmp_path, runtime=Runtime.URL)
    monkeypatch.setattr(native_server, "attach", lambda url, name, timeout: live(runtime=Runtime.URL))
    monkeypatch.setattr(native_server, "start_native", None)  # never called
    with events.listening(events.Recorder()) as recorder:
        b.start()
    assert recorder.named("server.ready")[0]["pid"] is None


def test_a_failed_start_leaves_nothing_to_stop(tmp_path, monkeypatch):
    b = backend(tmp_path)

    def broken(*args, **kwargs):
        raise ServerError("vLLM exited")

    monkeypatch.setattr(native_server, "start_native", broken)
    monkeypatch.setattr(native_server, "stop_native", None)  # never called: start_native stopped its own
    with pytest.raises(ServerError):
        b.start()
    b.stop()
    b.stop()
    assert b.server is None and b.stop_problem is None


@pytest.mark.parametrize("interrupted, grace", [(False, STOP_TIMEOUT), (True, INTERRUPT_GRACE)])
def test_stop_gives_the_grace_of_the_run_s_state_once(tmp_path, monkeypatch, interrupted, grace):
    b = backend(tmp_path, interrupted=interrupted)
    b.server = live()
    calls = []
    monkeypatch.setattr(native_server, "stop_native", lambda server, timeout: calls.append(timeout))
    with events.listening(events.Recorder()) as recorder:
        b.stop()
        b.stop()  # again: nothing more
    assert calls == [grace]
    assert [f["name"] for f in recorder.named("step.start")] == ["stop server"]


def test_a_stop_that_cannot_be_confirmed_is_recorded_not_raised(tmp_path, monkeypatch):
    b = backend(tmp_path)
    b.server = live()

    def unconfirmed(server, timeout):
        raise ServerError("pid 9 of the stopped server still listens on port 8123; stop it by pid")

    monkeypatch.setattr(native_server, "stop_native", unconfirmed)
    monkeypatch.setattr(native_server.os, "killpg", None)  # not killed: the stop ran
    b.stop()
    assert b.stop_problem == "pid 9 of the stopped server still listens on port 8123; stop it by pid"
    assert "still listens" in (tmp_path / "console.txt").read_text()


def test_a_stop_that_breaks_kills_the_group_and_raises(tmp_path, monkeypatch):
    b = backend(tmp_path)
    b.server = live(pid=4343)
    killed = []

    def interrupted(server, timeout):
        raise KeyboardInterrupt

    monkeypatch.setattr(native_server, "stop_native", interrupted)
    monkeypatch.setattr(native_server.os, "killpg", lambda pgid, sig: killed.append((pgid, sig)))
    with pytest.raises(KeyboardInterrupt):
        b.stop()
    assert killed == [(4343, signal.SIGKILL)] and b.stop_problem is None
    b.stop()  # again: nothing more
    assert killed == [(4343, signal.SIGKILL)]


def test_an_attached_server_is_not_stopped_or_killed(tmp_path, monkeypatch):
    b = backend(tmp_path, runtime=Runtime.URL)
    b.server = live(runtime=Runtime.URL)
    monkeypatch.setattr(native_server, "stop_native", None)
    monkeypatch.setattr(native_server.os, "killpg", None)
    b.stop()
    b.kill()


def test_the_native_log_is_the_bundle_s_own(tmp_path):
    b = backend(tmp_path)
    b.server = live(b.bundle.path(layout.SERVER_LOG))
    b.server.log_path.write_text("INFO started\n")
    assert b.log_file() == b.bundle.staging / layout.SERVER_LOG
    b.server_log()
    assert (b.bundle.staging / layout.SERVER_LOG).read_text() == "INFO started\n"


def test_without_a_server_log_of_its_own_the_host_s_copy_goes_into_the_bundle(tmp_path):
    """The url runtime under `make run`: the host saved this start's lines; a result under another name (a
    parallel sweep's calibration run) finds its method's."""
    b = backend(tmp_path, runtime=Runtime.URL, name="ngram-k3")
    b.server = live(runtime=Runtime.URL)
    assert not b.log_file().exists()
    b.server_log()  # nothing to copy
    assert not (b.bundle.staging / layout.SERVER_LOG).exists()
    saved = tmp_path / "run" / layout.host_server_log("ngram")
    saved.parent.mkdir(parents=True)
    saved.write_text("compose lines\n")
    assert b.log_file() == saved
    b.server_log()
    assert (b.bundle.staging / layout.SERVER_LOG).read_text() == "compose lines\n"
    own = tmp_path / "run" / layout.host_server_log("ngram-k3")
    own.write_text("its own\n")
    assert b.log_file() == own


def test_host_facts_are_the_host_s_record_or_none(tmp_path):
    b = backend(tmp_path)
    assert b.host_facts() is None
    record = tmp_path / "run" / layout.host_record("ngram")
    record.parent.mkdir(parents=True)
    record.write_text("{}")
    assert b.host_facts() is None  # an empty record says nothing
    record.write_text(json.dumps({"platform": "cpu-native"}))
    assert b.host_facts() == {"platform": "cpu-native"}
