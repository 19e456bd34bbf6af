"""A stand-in for the docker CLI and nvidia-smi that records every call (the GPU form's make orchestration runs
against it), a fake Hugging Face cache, and readers of what was called."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

from specstack.config import methods

from .render import REPO

FAKE_DOCKER = r'''#!__PYTHON__
"""A stand-in for the docker CLI: logs every call, keeps which services are "up", answers inspect/exec."""
import fcntl, json, os, subprocess, sys, time
from pathlib import Path

state = Path(os.environ["FAKE_STATE"])
log = state / "calls.jsonl"
args = sys.argv[1:]
# A parallel sweep calls docker from several processes at once: one call at a time changes the state.
held = open(state / "lock", "a")
fcntl.flock(held, fcntl.LOCK_EX)
with open(log, "a") as f:
    f.write(json.dumps(args) + "\n")
with open(state / "slot-env.jsonl", "a") as f:
    f.write(json.dumps([args, {k: os.environ.get(k) for k in ("SPECSTACK_GPU", "SPECSTACK_GPU_CPUSET", "VLLM_PORT")},
                        time.time()]) + "\n")
with open(state / "overrides.jsonl", "a") as f:
    f.write(json.dumps([args, os.environ.get("SPECSTACK_SPEC_OVERRIDE")]) + "\n")
with open(state / "start-period.jsonl", "a") as f:
    f.write(json.dumps([args, os.environ.get("SPECSTACK_START_PERIOD")]) + "\n")
up = set(json.loads((state / "up.json").read_text())) if (state / "up.json").exists() else set()

def save():
    (state / "up.json").write_text(json.dumps(sorted(up)))

def positional_after(words, verb):
    """Services named after a compose verb (skipping its options)."""
    rest = words[words.index(verb) + 1:]
    out, skip = [], False
    for w in rest:
        if skip:
            skip = False
            continue
        if w in ("--wait-timeout", "--tail", "-v", "-e", "--entrypoint"):
            skip = True
            continue
        if w.startswith("-"):
            continue
        out.append(w)
    return out

if args[:2] == ["compose", "version"]:
    print("Docker Compose version v2.40.3"); sys.exit(0)
if args[:2] == ["buildx", "version"]:
    if os.environ.get("FAKE_BUILDX"):
        print(os.environ["FAKE_BUILDX"]); sys.exit(0)
    print("docker: unknown command: docker buildx", file=sys.stderr); sys.exit(1)
if args and args[0] == "compose":
    words = [a for a in args[1:]]
    files = [words[i + 1] for i, w in enumerate(words[:-1]) if w == "-f"]
    missing = [f for f in files if not Path(f).exists()]
    if missing and not os.environ.get("FAKE_COMPOSE_WRAPPER"):  # the Go binary fails; PyPI's wrapper exits 0
        print(f"open {missing[0]}: no such file or directory", file=sys.stderr); sys.exit(1)
    verbs = [w for w in words if w in ("build", "up", "run", "stop", "logs", "down", "ps")]
    verb = verbs[0] if verbs else None
    if verb == "up":
        up.update(positional_after(words, "up")); save()
    elif verb == "stop":
        up.difference_update(positional_after(words, "stop")); save()
    elif verb == "run":
        svc = positional_after(words, "run")[0]
        fail = os.environ.get("FAKE_FAIL_PREFLIGHT")
        if "specstack.cli.preflight" in words and fail and f"vllm-{fail}" == svc:
            print("preflight FAILED", file=sys.stderr); sys.exit(2)
        fail = os.environ.get("FAKE_FAIL_FETCH")
        if "/services/fetch_models.py" in words and fail and f"vllm-{fail}" == svc:
            print("fetch: Qwen/Qwen3-8B is gated or needs a token", file=sys.stderr); sys.exit(2)
        if svc == "collector" and "run" in words[words.index(svc):]:
            # The collector sees the Prometheus targets of the running servers (every file file_sd reads).
            targets = [t for p in sorted(Path(".specstack/prometheus-targets").glob("*.json"))
                       for t in json.loads(p.read_text())]
            (state / "targets-during-collector.jsonl").open("a").write(json.dumps(targets) + "\n")
            # As the collector's `specstack run` does first: take the run's lock, joining make's with its token.
            token = [w.split("=", 1)[1] for w in words if w.startswith("SPECSTACK_RUN_LOCK=")]
            lock = subprocess.run([sys.executable, "-c", "import sys; from specstack.results import run_lock; "
                                   "run_lock.acquire(sys.argv[1])", "results/" + words[words.index("--run-id") + 1]],
                                  env={**os.environ, "PYTHONPATH": "collector", "SPECSTACK_RUN_LOCK": "".join(token)},
                                  capture_output=True, text=True)
            (state / "collector-lock.jsonl").open("a").write(json.dumps(lock.stderr.strip()[-300:] or "joined") + "\n")
            held.close()
            time.sleep(float(os.environ.get("FAKE_COLLECTOR_SECONDS", "0")))  # a measurement takes a while
    if verb == "ps":   # compose ps -q SERVICE: the id of a started service's container
        for s in positional_after(words, "ps"):
            if s in up:
                print("id-" + s)
    sys.exit(0)
if args[:1] == ["ps"]:
    for s in sorted(up):
        print("id-" + s)
    sys.exit(0)
if args[:2] == ["inspect", "-f"]:   # make's own health check after up --wait: a started server is healthy
    print("healthy" if "Health" in args[2] else "2026-01-01T00:00:00Z"); sys.exit(0)
if args[:1] == ["inspect"]:
    out = []
    for cid in args[1:]:
        s = cid[3:]
        out.append({"Id": cid, "Name": "/specstack-" + s + "-1", "Image": "sha256:" + "1" * 64,
                    "Config": {"Image": "vllm/vllm-openai:v0.32.0", "Env": ["HF_TOKEN_PATH=/run/secrets/hf_token", "SECRET_CANARY=do-not-record"],
                               "Labels": {"com.docker.compose.service": s, "com.docker.compose.project": "specstack"},
                               "Entrypoint": ["python3", "/services/serve_args.py"], "Cmd": ["--method", s[5:]]},
                    "State": {"Status": "running", "StartedAt": "2026-01-01T00:00:00Z", "Health": {"Status": "healthy"}}})
    print(json.dumps(out)); sys.exit(0)
if args[:2] == ["image", "inspect"]:
    print(json.dumps([{"RepoDigests": ["vllm/vllm-openai@sha256:" + "2" * 64], "Created": "2026-01-01"}])); sys.exit(0)
if args[:1] == ["version"]:
    print(json.dumps({"Version": "28.2.2", "ApiVersion": "1.50", "Os": "linux", "Arch": "amd64"})); sys.exit(0)
if args[:1] == ["exec"]:
    cmd = args[2:]
    if cmd[0] == "python3":
        cmd = [sys.executable] + [os.environ["FAKE_SERVICES"] if a == "/services" else a for a in cmd[1:]]
        env = dict(os.environ, HF_HOME=os.environ["FAKE_HF_HOME"])
        sys.exit(subprocess.run(cmd, env=env).returncode)
    sys.exit(subprocess.run(cmd).returncode)
print("fake docker: unexpected " + " ".join(args), file=sys.stderr)
sys.exit(3)
'''

FAKE_NVIDIA_SMI = r"""#!__PYTHON__
import json, os, sys
from pathlib import Path
state = Path(os.environ["FAKE_STATE"])
with open(state / "calls.jsonl", "a") as f:
    f.write(json.dumps(["nvidia-smi", *sys.argv[1:]]) + "\n")
q = next((a for a in sys.argv[1:] if a.startswith("--query-gpu=")), None)
if q == "--query-gpu=memory.used":
    # Memory is released one poll after a server stopped: 30000 MiB, then 300 MiB. Counted per GPU (-i), and
    # written by rename: a parallel sweep polls two GPUs at once (a shared count once read a half-written file).
    gpu = sys.argv[sys.argv.index("-i") + 1] if "-i" in sys.argv else "all"
    n = state / f"mem-polls-{gpu}"
    k = int(n.read_text()) if n.exists() else 0
    tmp = state / f".mem-polls-{gpu}.{os.getpid()}"
    tmp.write_text(str(k + 1))
    os.replace(tmp, n)
    print(30000 if k % 3 == 0 else 300)
elif q == "--query-gpu=driver_version,compute_cap":
    print(os.environ.get("FAKE_DRIVER", "580.65.06") + ", " + os.environ.get("FAKE_CC", "9.0"))
elif q:
    print("0, GPU-abc, NVIDIA H100 80GB HBM3, 570.86.15, 81559, 30000, 00000000:18:00.0")
    print("1, GPU-def, NVIDIA H100 80GB HBM3, 570.86.15, 81559, 30000, 00000000:2A:00.0")
else:
    print("| NVIDIA-SMI 570.86.15   Driver Version: 570.86.15   CUDA Version: 12.8 |")
"""


def fake_main(repo_id: str) -> str:
    return (repo_id.encode().hex() + "0" * 40)[:40]


_MODELS = methods.serve_args.model_set(methods.load(), "default")
PINS = {_MODELS[k]: rev for k, rev in methods.load()["model_sets"]["default"].get("revisions", {}).items()}


def make_stack(tmp_path) -> dict:
    """A copy of the stack's files, a fake docker + nvidia-smi first on PATH, and a fake HF cache."""
    work = tmp_path / "repo"
    for rel in ("compose.yaml", "images.lock", "services", "images/images.mk", "prometheus", "collector/specstack"):
        src = REPO / rel
        dst = work / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__")) if src.is_dir() else shutil.copy(
            src, dst
        )
    (work / "Makefile").write_text("SHELL := /bin/bash\ninclude services/compose.mk\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("docker", FAKE_DOCKER), ("nvidia-smi", FAKE_NVIDIA_SMI)):
        (bin_dir / name).write_text(text.replace("__PYTHON__", sys.executable))
        (bin_dir / name).chmod(0o755)
    state = tmp_path / "state"
    state.mkdir()
    hf = tmp_path / "hf"
    for repo_id in (
        "Qwen/Qwen3-8B",
        "Qwen/Qwen3-0.6B",
        "RedHatAI/Qwen3-8B-speculator.eagle3",
        "XiaomiMiMo/MiMo-7B-Base",
    ):
        base = hf / "hub" / ("models--" + repo_id.replace("/", "--"))
        (base / "refs").mkdir(parents=True)
        (base / "refs" / "main").write_text(fake_main(repo_id))
        # main's snapshot, and the pinned commit's (what the fetch step downloads for a pinned model)
        for commit in {fake_main(repo_id), PINS.get(repo_id, fake_main(repo_id))}:
            (base / "snapshots" / commit).mkdir(parents=True)
            (base / "snapshots" / commit / "config.json").write_text(json.dumps({"id": repo_id}))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPECSTACK_", "MAKE"))}
    env.update(
        PATH=f"{bin_dir}:{env['PATH']}",
        FAKE_STATE=str(state),
        FAKE_SERVICES=str(work / "services"),
        FAKE_HF_HOME=str(hf),
        HF_TOKEN="hf_canary_token_value",
    )
    return {"dir": work, "env": env, "state": state}


def run_make(fake_stack, *targets: str, check: bool = True) -> subprocess.CompletedProcess:
    out = subprocess.run(
        ["make", "-C", str(fake_stack["dir"]), *targets],
        capture_output=True,
        text=True,
        env=fake_stack["env"],
        timeout=300,
    )
    if check:
        assert out.returncode == 0, out.stdout + out.stderr
    return out


def docker_calls(fake_stack) -> list[list[str]]:
    return [json.loads(line) for line in (fake_stack["state"] / "calls.jsonl").read_text().splitlines()]


def step_of(call: list[str]) -> str | None:
    """A short name for a recorded docker call."""
    if call[0] != "compose" or call[:2] == ["compose", "version"]:
        return None
    if "specstack.cli.preflight" in call:
        return f"preflight:{call[call.index('--entrypoint') + 2]}"
    if "/services/fetch_models.py" in call:
        return f"fetch:{call[call.index('--entrypoint') + 2]}"
    for verb in ("build", "up", "stop", "down", "logs"):
        if verb in call:
            return f"{verb}:{','.join(c for c in call[call.index(verb) + 1 :] if not c.startswith('-') and not c.isdigit())}"
    if "run" in call:
        i = call.index("collector")
        return f"collector:{call[i + 1]}"
    return None


def pulls_or_builds(fake_stack) -> list[list[str]]:
    path = fake_stack["state"] / "calls.jsonl"
    calls = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    return [c for c in calls if c[0] == "compose" and any(v in c for v in ("build", "up", "pull", "run"))]


def compose_verbs(fake_stack) -> list[tuple[str, list[str]]]:
    out = []
    for call in docker_calls(fake_stack):
        if call[0] != "compose" or call[:2] == ["compose", "version"]:
            continue
        verb = next((w for w in call if w in ("build", "up", "run", "stop", "logs", "down", "ps", "config")), None)
        if verb != "config":  # make's probe of the plugin's exit status
            out.append((verb, call))
    return out
