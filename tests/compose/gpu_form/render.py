"""compose.yaml as compose renders it: the subset of compose's interpolation compose.yaml uses, the lock file's
variables, and the paths the GPU-form tests read."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from specstack.config import methods
from specstack.host.image_lock import read_lock

REPO = Path(__file__).resolve().parents[3]
COMPOSE = REPO / "compose.yaml"
LOCK = REPO / "images.lock"
PROM_CONFIG = REPO / "prometheus" / "prometheus.yml"
SERVE_ARGS = REPO / "services" / "serve_args.py"
METHODS = methods.names()
NON_METHOD_PROFILES = {"tools"}

# --- compose interpolation (the subset compose.yaml uses, with compose's semantics) ------------------

_VAR = re.compile(
    r"\$(?:(?P<esc>\$)|\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\}"
    r"|(?P<bare>[A-Za-z_][A-Za-z0-9_]*))"
)


def interpolate(value, env: dict[str, str]):
    if isinstance(value, dict):
        return {k: interpolate(v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v, env) for v in value]
    if not isinstance(value, str):
        return value

    def sub(m: re.Match) -> str:
        if m.group("esc"):
            return "$"
        name = m.group("name") or m.group("bare")
        op, arg = m.group("op"), m.group("arg")
        have = env.get(name)
        unset_or_empty = have is None or (op or "").startswith(":") and have == ""
        if op in (":-", "-"):
            return arg if unset_or_empty else have
        if op in (":?", "?"):
            if unset_or_empty:
                raise KeyError(f"{name}: {arg}")
            return have
        return have or ""

    return _VAR.sub(sub, value)


def lock_env() -> dict[str, str]:
    return read_lock(LOCK)


def vllm_services(doc: dict) -> dict[str, dict]:
    return {
        name: svc
        for name, svc in doc["services"].items()
        if (svc.get("labels") or {}).get("org.specstack.role") == "vllm"
    }


def check_jsonschema() -> str:
    exe = Path(sys.executable).with_name("check-jsonschema")
    found = str(exe) if exe.exists() else shutil.which("check-jsonschema")
    if not found:
        pytest.fail("check-jsonschema is missing: pip install check-jsonschema (the venv has it)")
    return found


def container_plan(svc: dict, env: dict[str, str]) -> dict:
    """Run the service's entrypoint + command as the container would, with --print instead of --exec."""
    argv = [*svc["entrypoint"], *svc["command"]]
    assert argv[:2] == ["python3", "/services/serve_args.py"] and "--exec" in argv
    mounts = {v.split(":")[1]: v.split(":")[0] for v in svc["volumes"] if isinstance(v, str)}
    assert mounts["/services"] == "./services"
    argv = [sys.executable, str(SERVE_ARGS), *["--print" if a == "--exec" else a for a in argv[2:]]]
    container_env = {k: str(v) for k, v in svc["environment"].items()}
    run_env = {**{k: v for k, v in os.environ.items() if not k.startswith("SPECSTACK_")}, **container_env, **env}
    out = subprocess.run(argv, capture_output=True, text=True, env=run_env, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)
