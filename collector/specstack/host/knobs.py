"""make's knobs (services/compose.mk) refused before anything starts: no image built or pulled, no folder made, no
container started for a value that would only fail later inside the stack (an unknown MODEL_SET in the collector's
first step, K=abc in vLLM's speculative config, a GPU_FREE_TIMEOUT that is no number after the previous server).

Whether a model set has every model a method serves is services/serve_args.py's check_models (the one rule, also
the native CLI's); it needs tomllib, so on a host python3 older than 3.11 that one check is left to the collector
(it refuses the method there, after the stack started); every other check runs on any python3 (3.8 up)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from specstack.host.stack import Settings

_WHOLE = re.compile(r"^[0-9]+$")
_NUMBER = re.compile(r"^[0-9]+(\.[0-9]+)?$")


def problems(s: Settings, methods: list[str]) -> list[str]:
    """Every knob of `s` that cannot work for these methods, each a line naming the fix (empty: all fine)."""
    names, sets = s.methods.names, s.methods.model_sets
    found = [
        f"unknown method '{m}' (METHOD or SWEEP_METHODS); choose from: {' '.join(names)}"
        for m in methods
        if m not in names
    ]
    if s.model_set not in sets:
        found.append(
            f"unknown MODEL_SET '{s.model_set}'; choose one of: {' '.join(sets)} (services/methods.toml's "
            "[model_sets.*])"
        )
    elif not found:
        found += _coverage(s.methods.path, methods, s.model_set)
    if s.k and (not _WHOLE.match(s.k) or int(s.k) == 0):
        found.append(f"K must be a whole number of draft tokens (> 0), not '{s.k}'")
    if s.calibrate not in ("", "0", "1"):
        found.append(f"CALIBRATE must be 1 (calibrate every slot with the baseline), 0 or empty, not '{s.calibrate}'")
    if not _WHOLE.match(s.gpu_free_mib):
        found.append(f"GPU_FREE_MIB must be a whole number of MiB, not '{s.gpu_free_mib}'")
    for knob, value in (("GPU_FREE_TIMEOUT", s.gpu_free_timeout), ("GPU_FREE_POLL", s.gpu_free_poll)):
        if not _NUMBER.match(value):
            found.append(f"{knob} must be a number of seconds, not '{value}'")
    return found


def _coverage(methods_toml: Path, methods: list[str], model_set: str) -> list[str]:
    """serve_args.check_models for each method: the model set's lack of a model a method serves, named."""
    try:
        import tomllib  # noqa: F401  (serve_args needs it: Python 3.11+)
    except ImportError:
        return []
    spec = importlib.util.spec_from_file_location("specstack_host_serve_args", methods_toml.parent / "serve_args.py")
    if spec is None or spec.loader is None:
        return []
    serve_args = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(serve_args)
    cfg = serve_args.load(methods_toml)
    found = []
    for method in methods:
        try:
            serve_args.check_models(cfg, method, model_set)
        except serve_args.MethodError as e:
            found.append(f"MODEL_SET={model_set}: {e}".replace("(--model-set)", "(MODEL_SET, or leave the method out)"))
    return found
