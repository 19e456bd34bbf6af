"""Pre-flight: check a method's `vllm serve` arguments with vLLM 0.32.0's own parser and config
classes before any server starts, so a bad flag fails in seconds with its reason, not after minutes of
model loading.

What is checked, in order (each problem is reported with the fix):
  1. the Python modules the method `requires` (methods.toml), imported for real: vLLM's own check
     only tests that `arctic_inference` imports, while the worker needs `arctic_inference.suffix_decoding`;
  2. the argument list through the parser `vllm serve` itself builds (unknown flags, bad values,
     malformed --speculative-config JSON) and vLLM's pre-start checks of the parsed arguments;
  3. --speculative-config against vLLM's SpeculativeConfig (a pydantic dataclass that forbids unknown
     keys), field types and its own cross-field checks, without loading the draft model;
  4. the cross-config check of VllmConfig: --per-request-spec-decode-metrics needs a speculative config;
  5. when every model's config.json is on disk (local folders such as model set `tiny`, or hub ids
     already in the Hugging Face cache: `make run` fetches them first): the target's chat template, since
     the acceptance phase talks to /v1/chat/completions and vLLM answers HTTP 400 to every chat request of
     a tokenizer without one (the fix: --chat-template, e.g. vLLM's own template_basic.jinja for a base
     model); and, when the plan is for this machine's platform, the whole engine configuration, as
     `vllm serve` builds it before loading weights (reads config.json, no weights, never the network).
     Otherwise these steps are skipped and the report says why.

Runs inside the method's own container too (`make run` does so before the server starts), through
`python3 -m specstack.cli.preflight`: only the standard library, config/ and this module are imported there.
"""

from __future__ import annotations

import argparse  # vLLM's own serve parser is an argparse parser
import contextlib
import difflib
import importlib
import io
import os
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from specstack.config.methods import ServePlan, load
from specstack.config.serving import device
from specstack.server import model_checks

# Modules named in methods.toml `requires` -> how to get them.
INSTALL_HINTS = {
    "arctic_inference": "install arctic-inference==0.3.0 (an sdist that builds C++: cmake + nanobind). "
    "`make venv` does it natively; the suffix container image (services/Dockerfile) "
    "has it",
}
# Speculative "models" that are not model folders or hub ids.
_BUILTIN_SPEC_MODELS = {"ngram", "[ngram]", "ngram_gpu", "suffix", "extract_hidden_states"}


@dataclass
class Report:
    method: str
    errors: list[str] = field(default_factory=list)
    checked: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.errors

    def to_dict(self) -> dict:
        return {
            "method": self.method,
            "ok": self.ok,
            "errors": self.errors,
            "checked": self.checked,
            "skipped": self.skipped,
            "seconds": round(self.seconds, 2),
        }


def check(plan: ServePlan) -> list[str]:
    """Problems with a plan from services/serve_args.py `build()`; an empty list means vLLM accepts it."""
    return run_checks(plan).errors


# --- the checks -------------------------------------------------------------------------------------


@contextlib.contextmanager
def env_overrides(extra: dict[str, str]):
    saved = {k: os.environ.get(k) for k in extra}
    os.environ.update(extra)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _check_requires(modules: list[str]) -> list[str]:
    errors = []
    for mod in modules:
        try:
            importlib.import_module(mod)
        except ImportError as e:
            top = mod.split(".")[0]
            hint = INSTALL_HINTS.get(top, f"install the package that provides {mod}")
            errors.append(
                f"requires: the server needs the Python module {mod!r}, which does not import here "
                f"({type(e).__name__}: {e}). Fix: {hint}."
            )
    return errors


def _vllm_parser():
    """(the top-level `vllm` parser, its `serve` subparser), built by vLLM's own code."""
    from vllm.entrypoints.cli.serve import ServeSubcommand
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = FlexibleArgumentParser(prog="vllm")
    subparsers = parser.add_subparsers(dest="subparser")
    serve = ServeSubcommand().subparser_init(subparsers)
    return parser, serve


def _parse(argv: list[str]) -> tuple[argparse.Namespace | None, str | None]:
    """Parse like `vllm serve ARGV`; (namespace, None) or (None, vLLM's own error message)."""
    parser, _ = _vllm_parser()
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            args = parser.parse_args(["serve", *argv])
    except SystemExit:
        lines = [ln for ln in err.getvalue().strip().splitlines() if ln.strip()]
        msgs = [ln for ln in lines if "error:" in ln]
        return None, (msgs[-1].split("error:", 1)[1].strip() if msgs else (lines[-1] if lines else "rejected"))
    except ValueError as e:
        return None, str(e)
    if getattr(args, "model_tag", None) is not None:
        args.model = args.model_tag
    return args, None


def _readable(message: str) -> str:
    """argparse's message, minus its repr of the JSON parser."""
    message = re.sub(r"cannot be converted to <function loads at 0x[0-9a-f]+>", "is not valid JSON", message)
    return message.rstrip(". ")


def _unknown_flag_hint(message: str) -> str:
    if "unrecognized arguments" not in message:
        return ""
    _, serve = _vllm_parser()
    known = {opt for action in serve._actions for opt in action.option_strings if opt.startswith("--")}
    hints = []
    for flag in re.findall(r"(--[\w-]+)", message):
        close = difflib.get_close_matches(flag, known, n=1)
        if close:
            hints.append(f"{flag}: did you mean {close[0]}?")
    return (" " + " ".join(hints)) if hints else ""


def _offline_speculative_class():
    """vLLM's SpeculativeConfig with its model-loading __post_init__ switched off: field types, the
    unknown-key ban (extra="forbid") and its @model_validator checks still run, nothing is downloaded."""
    import pydantic
    from pydantic import ConfigDict
    from vllm.config import SpeculativeConfig

    cls = type("SpeculativeConfig", (SpeculativeConfig,), {"__post_init__": lambda self: None, "__module__": __name__})
    return pydantic.dataclasses.dataclass(config=ConfigDict(extra="forbid"))(cls)


def _format_validation_error(e, valid: list[str]) -> list[str]:
    out = []
    for err in e.errors():
        loc = ".".join(str(p) for p in err.get("loc", ()) if p not in ("__init__",))
        if err.get("type") == "unexpected_keyword_argument":
            close = difflib.get_close_matches(loc, valid, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            out.append(
                f"--speculative-config: unknown key {loc!r}; vLLM 0.32.0's SpeculativeConfig forbids "
                f"unknown keys.{hint} Fix the key in services/methods.toml (or --spec-override)."
            )
        else:
            msg = err.get("msg", "")
            out.append(
                f"--speculative-config{('.' + loc) if loc else ''}: {msg}. Fix the value in "
                "services/methods.toml (or --spec-override)."
            )
    return out


def _check_speculative(spec: dict) -> list[str]:
    import dataclasses

    import pydantic
    from vllm.config import SpeculativeConfig

    spec = {k.replace("-", "_"): v for k, v in spec.items()}  # what EngineArgs does
    valid = [f.name for f in dataclasses.fields(SpeculativeConfig) if f.init and not f.name.startswith("target_")]
    try:
        _offline_speculative_class()(**spec)
    except pydantic.ValidationError as e:
        return _format_validation_error(e, valid)
    except (ValueError, TypeError) as e:
        return [f"--speculative-config: {e}. Fix it in services/methods.toml (or --spec-override)."]
    return []


def _check_observability(engine_args) -> list[str]:
    """VllmConfig's own cross-check of --per-request-spec-decode-metrics (no model needed)."""
    from vllm.config import VllmConfig

    try:
        VllmConfig(observability_config=engine_args.create_observability_config())
    except (ValueError, TypeError) as e:
        text = str(e)
        if "per-request-spec-decode-metrics" in text:
            return [
                "--per-request-spec-decode-metrics requires speculative decoding to be enabled (via "
                "--speculative-config); vLLM 0.32.0 refuses to start. Fix: give the flag only to "
                "methods with a speculative config ([speculative_common] in services/methods.toml)."
            ]
        return [f"vLLM rejects the observability settings: {_first_line(text)}"]
    return []


def _first_line(text: str) -> str:
    lines = [ln.strip() for ln in str(text).splitlines() if ln.strip()]
    for ln in lines:
        if "Value error," in ln:
            return ln.split("Value error,", 1)[1].split("[type=", 1)[0].strip()
    return lines[0] if lines else str(text)


def model_refs(plan: ServePlan) -> list[tuple[str, str, str | None]]:
    """(role, model, revision) of every checkpoint the server reads."""
    flags = plan.flags
    refs = [("target", plan.target, flags.get("revision"))]
    spec = plan.speculative_config or {}
    model = spec.get("model")
    if model and model not in _BUILTIN_SPEC_MODELS:
        refs.append(("speculative", model, spec.get("revision")))
    return refs


def _config_on_disk(model: str, revision: str | None) -> tuple[bool, str]:
    path = Path(model).expanduser()
    if path.is_dir():
        return (path / "config.json").is_file(), f"{path}/config.json"
    try:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(model, "config.json", revision=revision)
    except Exception:  # noqa: BLE001 - an id huggingface_hub refuses: treat as not cached
        found = None
    return isinstance(found, str), f"{model} (Hugging Face cache)"


def _platform_matches(plan_platform: str) -> tuple[bool, str]:
    from vllm.platforms import current_platform

    if current_platform.is_cpu():
        here = "cpu"
    elif current_platform.is_cuda_alike():
        here = "gpu"
    else:
        here = type(current_platform).__name__
    return device(plan_platform) == here, here


@contextlib.contextmanager
def _hf_offline(offline: bool = True):
    """Set Hugging Face's offline flag for a block, including the copy huggingface_hub read at import.

    True while building the engine config: nothing may touch the network. False while constructing
    EngineArgs: with the flag on, EngineArgs.__post_init__ swaps a hub id for its local snapshot and
    raises when the model was never downloaded, which is not an argument error."""
    saved_env = os.environ.get("HF_HUB_OFFLINE")
    os.environ["HF_HUB_OFFLINE"] = "1" if offline else "0"
    patched = []
    mod, flag = sys.modules.get("huggingface_hub.constants"), "HF_HUB_OFFLINE"
    if mod is not None and hasattr(mod, flag):
        patched.append((mod, flag, getattr(mod, flag)))
        setattr(mod, flag, offline)
    try:
        yield
    finally:
        for m, attr, value in patched:
            setattr(m, attr, value)
        if saved_env is None:
            os.environ.pop("HF_HUB_OFFLINE", None)
        else:
            os.environ["HF_HUB_OFFLINE"] = saved_env


def _deep(engine_args, plan: ServePlan, report: Report, mode: str) -> None:
    missing_local = []
    not_cached = []
    for role, model, revision in model_refs(plan):
        on_disk, where = _config_on_disk(model, revision)
        if on_disk:
            continue
        if Path(model).expanduser().is_absolute() or model.startswith((".", "~")) or Path(model).exists():
            missing_local.append(f"{role} model folder {model} has no config.json")
        else:
            not_cached.append(f"{role} {model}")
    for text in missing_local:
        report.errors.append(
            f"{text}. Fix: build the tiny models (`specstack tiny-models --out DIR`) and "
            "pass --models-dir DIR (or set SPECSTACK_MODELS), or correct the path in "
            "services/methods.toml."
        )
    if missing_local:
        return
    if mode == "off":
        report.skipped.append("engine config build: turned off (--deep off)")
        return
    if not_cached:
        report.skipped.append(
            "engine config build and chat template (read config.json and the tokenizer's files, "
            f"no weights): nothing on disk for {', '.join(not_cached)}, and pre-flight never "
            "downloads. They run once the models are in the Hugging Face cache (make run "
            "fetches them before its pre-flight)."
        )
        return
    problem, skipped = model_checks.chat_template_check(plan)
    if problem:
        report.errors.append(problem)
        return
    if skipped:
        report.skipped.append(skipped)
    else:
        report.checked.append("chat template of the target's tokenizer (the acceptance phase's /v1/chat/completions)")
    matches, here = _platform_matches(plan.platform)
    if not matches and mode != "force":
        report.skipped.append(
            f"engine config build: the plan is for platform {plan.platform!r} but this "
            f"machine's vLLM platform is {here!r}; the engine config is platform-specific "
            "(run pre-flight where the server runs, e.g. in its container)"
        )
        return
    try:
        with _hf_offline():
            engine_args.create_engine_config()
    except Exception as e:  # noqa: BLE001 - vLLM raises many types; all mean "would not start"
        report.errors.append(
            f"vLLM 0.32.0 would not start: building the engine config failed with "
            f"{type(e).__name__}: {_first_line(str(e))}"
        )
        return
    report.checked.append("engine config (VllmConfig, as `vllm serve` builds it before loading weights)")


def run_checks(plan: ServePlan, *, deep: str = "auto") -> Report:
    """All checks on one plan; deep is auto (engine config when possible), off, or force (any platform)."""
    t0 = time.monotonic()
    report = Report(plan.method)
    try:
        report.errors += _check_requires(list(plan.requires))
        report.checked.append(f"required modules: {', '.join(plan.requires) or 'none'}")
        with env_overrides(dict(plan.env)):
            try:
                import vllm
            except ImportError as e:
                report.errors.append(
                    f"vLLM is not importable here ({e}); pre-flight needs vLLM 0.32.0 "
                    "(`make venv`, or run it in the server's container)"
                )
                return report
            want = load().get("vllm_version")
            have = getattr(vllm, "__version__", "?")
            if want and not str(have).startswith(want):
                report.errors.append(
                    f"this vLLM is {have}, methods.toml is written for {want}: the check would "
                    "not be about the server's vLLM. Run pre-flight with vLLM "
                    f"{want} (the venv or the server's image)."
                )
                return report
            args, err = _parse(list(plan.argv))
            if err is not None:
                report.errors.append(
                    f"`vllm serve` (vLLM {have}) rejects the arguments: {_readable(err)}."
                    f"{_unknown_flag_hint(err)} Fix the flag in services/methods.toml."
                )
                return report
            assert args is not None  # _parse: a namespace when there is no error
            report.checked.append(f"`vllm serve` argument parser (vLLM {have})")
            from vllm.entrypoints.launchers.cli_args import validate_parsed_serve_args

            try:
                validate_parsed_serve_args(args)
            except Exception as e:  # noqa: BLE001 - ValueError, VLLMValidationError (a bad --chat-template)...
                report.errors.append(f"`vllm serve` pre-start check: {e}")
                return report
            from vllm.engine.arg_utils import AsyncEngineArgs

            try:
                with _hf_offline(False):
                    engine_args = AsyncEngineArgs.from_cli_args(args)
            except (ValueError, TypeError) as e:
                report.errors.append(f"vLLM rejects the engine arguments: {_first_line(str(e))}")
                return report
            spec = engine_args.speculative_config
            if spec is not None:
                errors = _check_speculative(dict(spec))
                report.errors += errors
                report.checked.append("SpeculativeConfig fields and checks (offline, draft not loaded)")
                if errors:
                    return report
            else:
                errors = _check_observability(engine_args)
                report.errors += errors
                report.checked.append("VllmConfig observability cross-check")
                if errors:
                    return report
            if report.errors:  # e.g. a missing required module: no point building the engine config
                report.skipped.append("engine config build: a required module is missing")
                return report
            _deep(engine_args, plan, report, deep)
    finally:
        report.seconds = time.monotonic() - t0
    return report
