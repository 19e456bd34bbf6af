"""What the method's server loaded: a script run INSIDE its container rebuilds the plan with the container's own
services/serve_args.py and environment, then finds each model's Hugging Face snapshot (commit hash) there."""

from __future__ import annotations

import json

# Runs INSIDE the method's vLLM container (python3 of the vLLM image, HF_HOME=/hf-cache).
SNAPSHOT_SCRIPT = r"""
import hashlib, importlib.util, json, os, sys
from pathlib import Path

def snapshot(model, revision=None):
    info = {"id": model, "revision_requested": revision or "main"}
    p = Path(model)
    if p.is_dir():
        info["kind"] = "local"
        cfg = p / "config.json"
        info["config_sha256"] = hashlib.sha256(cfg.read_bytes()).hexdigest() if cfg.exists() else None
        return info
    info["kind"] = "hub"
    hub = Path(os.environ.get("HF_HUB_CACHE") or Path(os.environ.get("HF_HOME", "~/.cache/huggingface")).expanduser() / "hub")
    repo = hub / ("models--" + model.replace("/", "--"))
    ref = repo / "refs" / (revision or "main")
    if revision and len(revision) == 40 and (repo / "snapshots" / revision).is_dir():
        commit = revision
    elif ref.exists():
        commit = ref.read_text().strip()
    else:
        info["snapshot"] = None
        info["error"] = "not in the Hugging Face cache at " + str(repo)
        return info
    snap = repo / "snapshots" / commit
    info["snapshot"] = commit
    info["files"] = sorted(str(f.relative_to(snap)) for f in snap.rglob("*") if f.is_file() or f.is_symlink())
    cfg = snap / "config.json"
    info["config_sha256"] = hashlib.sha256(cfg.read_bytes()).hexdigest() if cfg.exists() else None
    return info

services = sys.argv[1]
method = sys.argv[2]
platform = sys.argv[3] if len(sys.argv) > 3 else "gpu-container"
spec = importlib.util.spec_from_file_location("serve_args", os.path.join(services, "serve_args.py"))
sa = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sa)
override = os.environ.get("SPECSTACK_SPEC_OVERRIDE") or None
plan = sa.build(method, model_set_name=os.environ.get("SPECSTACK_MODEL_SET", "default"),
                platform=platform, spec_override=json.loads(override) if override else None)
flags = plan.flags
models = [dict(role="target", **snapshot(plan.target, flags.get("revision")))]
sc = plan.speculative_config or {}
if sc.get("model"):
    models.append(dict(role="speculative", **snapshot(sc["model"], sc.get("revision"))))
elif sc.get("method") == "mtp":
    models.append(dict(role="speculative", same_as="target", id=plan.target))
runtime = {"python": sys.version.split()[0]}
try:
    import importlib.metadata as md
    runtime["vllm"] = md.version("vllm")
except Exception as e:
    runtime["vllm"] = None
# torch's version and CUDA build, read from torch/version.py: importing torch would take seconds.
runtime["torch"] = runtime["torch_cuda"] = None
try:
    import importlib.metadata as md, re
    runtime["torch"] = md.version("torch")
    spec = importlib.util.find_spec("torch")
    text = Path(list(spec.submodule_search_locations)[0], "version.py").read_text()
    m = re.search(r"^cuda(?::[^=]*)?\s*=\s*['\"]([^'\"]+)['\"]", text, re.M)
    runtime["torch_cuda"] = m.group(1) if m else None
except Exception:
    pass
print(json.dumps({"plan": {"method": plan.method, "target": plan.target, "model_set": plan.model_set,
                           "argv": plan.argv, "speculative_config": plan.speculative_config},
                  "models": models, "runtime": runtime}))
"""


def models_in_container(
    client, container: str, method: str, services: str = "/services", platform: str = "gpu-container"
) -> dict:
    rc, out = client.exec(container, ["python3", "-c", SNAPSHOT_SCRIPT, services, method, platform])
    if rc != 0:
        return {"error": f"snapshot lookup in {container} failed (exit {rc}): {out.strip()[-400:]}"}
    try:
        return json.loads(out.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        return {"error": f"snapshot lookup in {container} printed no JSON: {out.strip()[-400:]}"}
