"""server/backend.py: both server backends, the native one (runs/native_server.py) and the compose one
(host/compose_server.py), have the protocol's five steps with its signatures (mypy checks their declarations too)."""

from __future__ import annotations

import inspect
import typing

import pytest

from specstack.host.compose_server import ComposeServer
from specstack.runs.native_server import NativeServer
from specstack.server.backend import ServerBackend

pytestmark = pytest.mark.unit

STEPS = ("prepare", "start", "server_log", "host_facts", "stop")


def test_the_protocol_names_the_five_steps_each_with_what_it_guarantees():
    own = {n for n, member in vars(ServerBackend).items() if inspect.isfunction(member) and not n.startswith("_")}
    assert own == set(STEPS)
    for name in STEPS:
        assert (getattr(ServerBackend, name).__doc__ or "").strip(), f"{name} says nothing of what it guarantees"


@pytest.mark.parametrize("backend", [NativeServer, ComposeServer], ids=["native", "compose"])
def test_each_backend_has_every_step_with_the_protocol_s_parameters(backend):
    for name in STEPS:
        want, have = inspect.signature(getattr(ServerBackend, name)), inspect.signature(getattr(backend, name))
        assert list(have.parameters) == list(want.parameters), f"{backend.__name__}.{name}{have}"


@pytest.mark.parametrize("backend", [NativeServer, ComposeServer], ids=["native", "compose"])
def test_each_backend_returns_what_the_protocol_s_steps_return(backend):
    kinds = {"int": int, "None": type(None), "object": object}
    for name in STEPS:
        want = typing.get_type_hints(getattr(ServerBackend, name))["return"]
        hint = inspect.signature(getattr(backend, name)).return_annotation  # a string (annotations are postponed)
        if want is object:
            continue  # any record (compose writes it to a file: None; native returns it)
        assert kinds.get(hint, hint) is (type(None) if want is None else want), f"{backend.__name__}.{name} -> {hint}"
