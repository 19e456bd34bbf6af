"""Method definitions: a thin bridge to services/serve_args.py, the single source of serve arguments.

The GPU containers execute that file directly; here it is imported so the native runtime starts the
very same argument list.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from specstack.config import sweep

SERVICES_DIR = Path(os.environ.get("SPECSTACK_SERVICES_DIR", Path(__file__).resolve().parents[3] / "services"))


def _load_serve_args() -> ModuleType:
    path = SERVICES_DIR / "serve_args.py"
    if not path.exists():
        raise FileNotFoundError(f"{path} not found; set SPECSTACK_SERVICES_DIR to the repo's services/ folder")
    spec = importlib.util.spec_from_file_location("specstack_serve_args", path)
    assert spec is not None and spec.loader is not None, path  # a .py path always has a spec and a loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


serve_args = _load_serve_args()
MethodError = serve_args.MethodError
load = serve_args.load
resolve_method = serve_args.resolve_method
if TYPE_CHECKING:
    # services/ is in mypy's files: it reads the very class the import above loads at run time
    from serve_args import ServePlan as ServePlan
    from serve_args import build as build
else:
    ServePlan, build = serve_args.ServePlan, serve_args.build


def check_model_set(method: str, model_set: str) -> None:
    """MethodError unless the model set has every model the method serves (naming the sets that have them)."""
    serve_args.check_models(load(), method, model_set)


def weights_of(model_set: str) -> str | None:
    """ "trained" or "random": what the set's weights are ([model_weights] in methods.toml), None if not said."""
    weights: str | None = load().get("model_weights", {}).get(model_set)
    return weights


def names() -> list[str]:
    listed: list[str] = serve_args.method_names(load())
    return listed


def is_speculative(method: str) -> bool:
    cfg = load()
    return serve_args.SPEC_KEY in cfg["methods"][resolve_method(cfg, method)]


def baseline_of(method: str) -> str | None:
    cfg = load()
    baseline: str | None = cfg["methods"][resolve_method(cfg, method)].get("baseline")
    return baseline


def sweep_lists(cfg: dict[str, Any] | None = None) -> dict[str, list[str]]:
    """services/methods.toml's [sweep] (the one default list of a sweep): {"methods": [...], "mtp_methods": [...]},
    checked (config/sweep.py); a MethodError naming the fix otherwise."""
    cfg = cfg or load()
    try:
        return sweep.check(cfg.get(sweep.TABLE), serve_args.method_names(cfg), where=str(SERVICES_DIR / "methods.toml"))
    except sweep.SweepError as e:
        raise MethodError(str(e)) from None


def default_sweep_methods() -> list[str]:
    """What a sweep runs when not told otherwise: [sweep] methods (`specstack sweep`, `slurm submit`, the chart)."""
    return sweep_lists()[sweep.METHODS]


def default_mtp_sweep_methods() -> list[str]:
    """[sweep] mtp_methods: what make sweep runs after the methods (SWEEP_MTP_METHODS)."""
    return sweep_lists()[sweep.MTP_METHODS]
