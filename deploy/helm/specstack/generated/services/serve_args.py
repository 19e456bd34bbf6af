#!/usr/bin/env python3
"""Build the `vllm serve` argument list of one method from services/methods.toml.

The one place where serve arguments are assembled. Used three ways:
  * the GPU containers run `python3 /services/serve_args.py --method ngram --exec` (compose.yaml);
  * the native runtime imports this module (specstack.methods) and starts the same list;
  * `--print` shows the list as JSON (pre-flight, tests, debugging).
One override reaches every method alike: `--prefix-caching 1|0` (env SPECSTACK_PREFIX_CACHING, which compose
passes to every server; `specstack ... --prefix-caching` natively) sets [common] enable-prefix-caching before
anything else is merged, so no method can differ from another in it.
Standard library only: it runs inside the stock vllm/vllm-openai image.
"""

# No `from __future__ import annotations`: a dataclass resolves string annotations through sys.modules, and this
# file is loaded by path without being registered there (config/methods.py, host/knobs.py, host/snapshot.py).
import argparse
import copy
import dataclasses
import json
import os
import string
import sys
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
METHODS_FILE = HERE / "methods.toml"
SPEC_KEY = "speculative-config"
# [model_sets.NAME.revisions]: the hub commit each model is pinned to; [model_sets.NAME.unpinned]: models
# knowingly served from the hub's main until a commit is filled in (with the reason).
REVISIONS_KEY, UNPINNED_KEY = "revisions", "unpinned"
COMMIT_LENGTH = 40
RUNNER_ENV = "VLLM_USE_V2_MODEL_RUNNER"
# vLLM reads the env var as int(value) (envs.maybe_convert_bool): "0" or "1", nothing else.
RUNNERS = {"0": "V1", "1": "V2"}
# The prefix-caching override: the [common] key it sets, the env var the containers read, its values
# ("" or unset: methods.toml as written). A method or platform table may not set the key itself.
PREFIX_CACHING_KEY = "enable-prefix-caching"
PREFIX_CACHING_ENV = "SPECSTACK_PREFIX_CACHING"
PREFIX_CACHING_VALUES = {"": None, "1": True, "0": False}


class MethodError(ValueError):
    """A user-caused problem with a method, model set, platform or override."""


@dataclasses.dataclass(frozen=True)
class ServePlan:
    """Everything needed to start one method (build()). Frozen: every reader sees the plan as built.
    to_json() is the plan as `--print` shows it: these fields, in this order."""

    method: str
    label: str  # what tables call it (e.g. "suffix (prompt trees only)")
    baseline: str | None  # the method it is compared with; None: a baseline itself
    target: str
    model_set: str
    platform: str
    speculative_config: dict | None  # None: plain decode
    requires: list[str]  # Python modules the server needs (suffix: arctic_inference.suffix_decoding)
    flags: dict  # the merged flag table, before rendering
    argv: list[str]  # after `vllm serve`
    env: dict[str, str]
    # The runner the env pins (None: vLLM chooses); the collector compares it with the server's log.
    model_runner: str | None

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


def load(path: Path | str | None = None) -> dict:
    with open(path or METHODS_FILE, "rb") as f:
        return tomllib.load(f)


def method_names(cfg: dict) -> list[str]:
    return list(cfg["methods"])


def resolve_method(cfg: dict, name: str) -> str:
    """Return the canonical method name or raise naming the valid choices."""
    methods = cfg["methods"]
    if name in methods:
        return name
    for known in methods:
        if known.lower() == name.lower().replace("_", "-") or known.lower() == name.lower():
            raise MethodError(f"unknown method {name!r}; method names are case-sensitive: use {known!r}")
    raise MethodError(f"unknown method {name!r}; choose one of: {', '.join(methods)}")


def _substitute(value, models: dict[str, str]):
    if isinstance(value, str):
        try:
            return value.format(**models)
        except KeyError as e:
            raise MethodError(f"{value!r} names {e} which the model set does not define") from None
    if isinstance(value, dict):
        return {k: _substitute(v, models) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, models) for v in value]
    return value


def model_set(cfg: dict, name: str, models_dir: str | os.PathLike | None = None) -> dict[str, str]:
    sets = cfg["model_sets"]
    if name not in sets:
        raise MethodError(f"unknown model set {name!r}; choose one of: {', '.join(sets)}")
    models_dir = str(models_dir or os.environ.get("SPECSTACK_MODELS", ".specstack/models"))
    return {k: str(v).replace("{models}", models_dir) for k, v in sets[name].items() if not isinstance(v, dict)}


def is_commit(revision) -> bool:
    return (
        isinstance(revision, str) and len(revision) == COMMIT_LENGTH and all(c in "0123456789abcdef" for c in revision)
    )


def model_revisions(cfg: dict, name: str) -> dict[str, str]:
    """Model-set key -> the commit it is pinned to ([model_sets.NAME.revisions]); every value a 40-hex commit."""
    table = cfg["model_sets"][name].get(REVISIONS_KEY, {})
    models = {k for k, v in cfg["model_sets"][name].items() if not isinstance(v, dict)}
    for key, rev in table.items():
        if key not in models:
            raise MethodError(
                f"[model_sets.{name}.{REVISIONS_KEY}] pins {key!r}, which model set {name!r} does "
                f"not name (its models: {', '.join(sorted(models))})"
            )
        if not is_commit(rev):
            raise MethodError(
                f"[model_sets.{name}.{REVISIONS_KEY}] {key} = {rev!r} is not a commit: give the "
                "40-hex commit id of the model's hub repository (docs/gpu.md, 'Model revisions'), "
                "never a branch or tag, which can move"
            )
    return dict(table)


def _pin(table: dict, models: dict[str, str], revisions: dict[str, str], target_key: str) -> None:
    """--revision (and --code-revision for remote code) of the target, `revision` (and `code_revision`) of
    the speculative model, from the model set's pins; a method's own explicit value wins."""
    remote_code = table.get("trust-remote-code") is True
    rev = revisions.get(target_key)
    if rev:
        table.setdefault("revision", rev)
        if remote_code:
            table.setdefault("code-revision", rev)
    spec = table.get(SPEC_KEY)
    if spec and spec.get("model"):
        by_model = {models[k]: r for k, r in revisions.items()}
        rev = by_model.get(spec["model"])
        if rev:
            spec.setdefault("revision", rev)
            if remote_code:
                spec.setdefault("code_revision", rev)


def prefix_caching_value(text: str | None) -> bool | None:
    """ "1" -> on, "0" -> off, "" or None -> as methods.toml's [common] says."""
    value = (text or "").strip()
    if value not in PREFIX_CACHING_VALUES:
        raise MethodError(
            f"{PREFIX_CACHING_ENV} (make PREFIX_CACHING=) must be 1 (prefix caching on for every "
            f"method), 0 (off) or empty (methods.toml's [common]), got {text!r}"
        )
    return PREFIX_CACHING_VALUES[value]


def _common(cfg: dict, method: str, platform: str, prefix_caching: bool | None) -> dict:
    """[common], with the prefix-caching override applied; refuses a method or platform that sets the key
    itself (caching must be alike for every method of a comparison)."""
    for where, table in (
        (f"[methods.{method}.flags]", cfg["methods"][method].get("flags", {})),
        (f"[platforms.{platform}]", cfg["platforms"][platform]),
    ):
        if PREFIX_CACHING_KEY in table:
            raise MethodError(
                f"{where} sets {PREFIX_CACHING_KEY}: it belongs in [common] only, so every method "
                "caches alike (turn it on for a whole run with --prefix-caching)"
            )
    common = dict(cfg["common"])
    if prefix_caching is not None:
        common[PREFIX_CACHING_KEY] = prefix_caching
    return common


def speculative_config(
    cfg: dict, method: str, models: dict[str, str], spec_override: dict | None = None
) -> dict | None:
    entry = cfg["methods"][method]
    spec = copy.deepcopy(entry.get(SPEC_KEY))
    if spec_override:
        if spec is None:
            raise MethodError(
                f"method {method!r} has no speculative config to override (the baseline runs plain decode)"
            )
        spec.update(spec_override)
    return _substitute(spec, models) if spec is not None else None


def flags(
    cfg: dict,
    method: str,
    *,
    platform: str = "gpu-native",
    extra: dict | None = None,
    spec_override: dict | None = None,
    models: dict[str, str],
    prefix_caching: bool | None = None,
) -> dict:
    """The merged flag table of a method, before rendering (common < spec common < method < platform < extra);
    `prefix_caching` (None: as methods.toml) overrides [common] enable-prefix-caching."""
    method = resolve_method(cfg, method)
    if platform not in cfg["platforms"]:
        raise MethodError(f"unknown platform {platform!r}; choose one of: {', '.join(cfg['platforms'])}")
    entry = cfg["methods"][method]
    merged = _common(cfg, method, platform, prefix_caching)
    spec = speculative_config(cfg, method, models, spec_override)
    if spec is not None:
        merged.update(cfg.get("speculative_common", {}))
    merged.update({k: v for k, v in entry.get("flags", {}).items()})
    merged.update({k: v for k, v in cfg["platforms"][platform].items() if not isinstance(v, dict)})
    merged.update(extra or {})
    if spec is not None:
        merged[SPEC_KEY] = spec
    if spec is None and merged.get("per-request-spec-decode-metrics", "none") != "none":
        raise MethodError(
            "--per-request-spec-decode-metrics needs a speculative config; vLLM 0.32.0 refuses "
            f"to start method {method!r} with it. Remove it for plain-decode methods."
        )
    return merged


def render(model: str, table: dict) -> list[str]:
    argv = [model]
    for key, value in table.items():
        flag = f"--{key}"
        if value is None:
            continue
        if isinstance(value, bool):
            argv.append(flag if value else f"--no-{key}")
        elif isinstance(value, (dict, list)):
            argv += [flag, json.dumps(value, separators=(",", ":"))]
        else:
            argv += [flag, str(value)]
    return argv


def models_needed(entry: dict) -> list[str]:
    """The model-set keys a method serves: its target and every {key} its speculative config names."""
    keys = [entry.get("target", "target")]

    def walk(value):
        if isinstance(value, str):
            keys.extend(f for _, f, _, _ in string.Formatter().parse(value) if f and f not in keys)
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    walk(entry.get(SPEC_KEY))
    return keys


def check_models(cfg: dict, method: str, set_name: str, models: dict[str, str] | None = None) -> None:
    """Refuse a method the model set cannot serve (eagle3 on a set without an EAGLE-3 head, mtp on one without an
    MTP model), naming the sets that can. A sweep checks every method so before its first server starts."""
    method = resolve_method(cfg, method)
    models = model_set(cfg, set_name, "/models") if models is None else models
    for key in models_needed(cfg["methods"][method]):
        if key not in models:
            having = [n for n, t in cfg["model_sets"].items() if key in t and not isinstance(t[key], dict)]
            raise MethodError(
                f"model set {set_name!r} has no {key!r} model, which method {method!r} needs; the model "
                f"sets that have one: {', '.join(having) or 'none'} (--model-set)"
            )


def _pinned_runner(env: dict[str, str]) -> str | None:
    if RUNNER_ENV not in env:
        return None
    if env[RUNNER_ENV] not in RUNNERS:
        raise MethodError(
            f'{RUNNER_ENV}={env[RUNNER_ENV]!r} in methods.toml: vLLM reads only "0" (V1) or "1" (V2); set one of them'
        )
    return RUNNERS[env[RUNNER_ENV]]


def build(
    method: str,
    *,
    model_set_name: str = "default",
    platform: str = "gpu-native",
    models_dir: str | None = None,
    extra: dict | None = None,
    spec_override: dict | None = None,
    cfg: dict | None = None,
    prefix_caching: bool | None = None,
) -> ServePlan:
    """Everything needed to start one method: argv after `vllm serve`, env, and what it serves.
    `prefix_caching`: True/False sets enable-prefix-caching for this method as for every other; None keeps
    methods.toml's [common]."""
    cfg = cfg or load()
    method = resolve_method(cfg, method)
    models = model_set(cfg, model_set_name, models_dir)
    entry = cfg["methods"][method]
    target_key = entry.get("target", "target")
    check_models(cfg, method, model_set_name, models)
    table = flags(
        cfg,
        method,
        platform=platform,
        extra=extra,
        spec_override=spec_override,
        models=models,
        prefix_caching=prefix_caching,
    )
    _pin(table, models, model_revisions(cfg, model_set_name), target_key)
    env = {k: str(v) for k, v in {**cfg.get("env", {}), **cfg["platforms"][platform].get("env", {})}.items()}
    return ServePlan(
        method=method,
        label=entry.get("label", method),
        baseline=entry.get("baseline"),
        target=models[target_key],
        model_set=model_set_name,
        platform=platform,
        speculative_config=table.get(SPEC_KEY),
        requires=entry.get("requires", []),
        flags=table,
        argv=render(models[target_key], table),
        env=env,
        model_runner=_pinned_runner(env),
    )


def parser() -> argparse.ArgumentParser:
    """The container entrypoint's command line (compose.yaml: `serve_args.py --exec`)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--method", required=True, help="a [methods] table of methods.toml (e.g. baseline, suffix)")
    p.add_argument(
        "--model-set",
        default=os.environ.get("SPECSTACK_MODEL_SET", "default"),
        help="a [model_sets] table of methods.toml (default: $SPECSTACK_MODEL_SET, else default)",
    )
    p.add_argument(
        "--platform",
        default=os.environ.get("SPECSTACK_PLATFORM", "gpu-native"),
        help="a [platforms] table of methods.toml (default: $SPECSTACK_PLATFORM, else gpu-native)",
    )
    p.add_argument(
        "--spec-override",
        default=os.environ.get("SPECSTACK_SPEC_OVERRIDE") or None,
        help="JSON merged into the method's speculative config",
    )
    p.add_argument(
        "--prefix-caching",
        choices=list(PREFIX_CACHING_VALUES),
        default=None,
        help=f"1: enable-prefix-caching for every method, 0: off, empty: as [common] says "
        f"(default: ${PREFIX_CACHING_ENV})",
    )
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--print", action="store_true", help="print the plan as JSON")
    mode.add_argument("--exec", action="store_true", help="replace this process with `vllm serve ...`")
    return p


def main(argv: list[str] | None = None) -> int:
    a = parser().parse_args(argv)
    try:
        override = json.loads(a.spec_override) if a.spec_override else None
        caching = prefix_caching_value(
            a.prefix_caching if a.prefix_caching is not None else os.environ.get(PREFIX_CACHING_ENV)
        )
        plan = build(
            a.method, model_set_name=a.model_set, platform=a.platform, spec_override=override, prefix_caching=caching
        )
    except (MethodError, json.JSONDecodeError) as e:
        print(f"serve_args: {e}", file=sys.stderr)
        return 2
    if a.print:
        print(json.dumps(plan.to_json(), indent=2))
        return 0
    os.environ.update(plan.env)
    print("vllm serve " + " ".join(plan.argv), file=sys.stderr, flush=True)
    os.execvp("vllm", ["vllm", "serve", *plan.argv])
    return 1  # not reached


if __name__ == "__main__":
    sys.exit(main())
