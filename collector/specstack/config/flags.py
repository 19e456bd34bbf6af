"""How an option is declared (Flag: help, spelling, parser, environment default) and added to a parser, and the
options of a serve plan (model set, platform, models folder), each declared once for every command that builds a
plan: run, sweep and sweep-k take them as Options fields (runs/options.py), preflight adds them itself
(cli/preflight.py). Standard library and config/ only: preflight runs in a method's server image, where
specstack is mounted, not installed."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from specstack.config.serving import Platform

KEY = "specstack.flag"  # the dataclass metadata key holding a field's Flag
AS_FIELD: Any = object()  # Flag.cli_default's own default: the field's default (dataclasses.MISSING would mean none)


@dataclass(frozen=True)
class Flag:
    help: str
    option: str | None = None  # the option when not --<field-name> (dashes for underscores)
    dest: str | None = None  # the parsed name when not the field's (as the commands always had it)
    parse: Callable[[str], Any] | None = None  # argparse's type; None: int, float or Path from the annotation
    metavar: str | None = None
    choices: tuple[Any, ...] | None = None
    repeatable: bool = False  # action="append": each occurrence adds one value
    env: str | None = None  # an environment variable whose value, when set, is the default
    cli_default: Any = AS_FIELD  # the parser's default when not the field's (None: worked out later)
    shared: bool = True  # False: not an option of every method run; its command adds it by name


def flag(help: str, **kw: Any) -> dict[str, Flag]:
    """The metadata of an Options field that is a command-line option."""
    return {KEY: Flag(help, **kw)}


def add_flag(
    p: argparse.ArgumentParser, name: str, spec: Flag, default: Any, parse: Callable[[str], Any] | None = None
) -> None:
    """The option `name` as `spec` declares it; `default` is its field's (or $ENV's when set), `parse` the value
    type when the Flag names none (a bool default: a switch)."""
    option, dest = spec.option or f"--{name.replace('_', '-')}", spec.dest or name
    value: Any = default if spec.cli_default is AS_FIELD else spec.cli_default
    if spec.env:  # argparse passes a string default through the option's type, as it would a typed value
        value = os.environ.get(spec.env, value)
    if isinstance(default, bool):
        p.add_argument(option, dest=dest, action="store_true", help=spec.help)
        return
    kw: dict[str, Any] = {"action": "append", "default": list(value)} if spec.repeatable else {"default": value}
    parse = spec.parse or parse
    if parse is not None:  # none: the string as given
        kw["type"] = parse
    p.add_argument(option, dest=dest, help=spec.help, metavar=spec.metavar, choices=spec.choices, **kw)


# The serve plan's options: name -> (Flag, default). Options' fields of the same names take both (plan_field).
PLAN: dict[str, tuple[Flag, Any]] = {
    "model_set": (
        Flag(
            "which models serve the method: a [model_sets] table of methods.toml (default: $SPECSTACK_MODEL_SET or "
            "default)",
            env="SPECSTACK_MODEL_SET",
        ),
        "default",
    ),
    "platform": (
        Flag(
            "the machine's overrides: a [platforms] table of methods.toml, e.g. gpu-native, gpu-native-eager, "
            "cpu-native (default: $SPECSTACK_PLATFORM or gpu-native)",
            env="SPECSTACK_PLATFORM",
        ),
        Platform.GPU_NATIVE,
    ),
    "models_dir": (Flag("folder of local models ({models} in methods.toml)"), None),
}


def plan_default(name: str) -> Any:
    """The default of serve-plan option `name` (an Options field's default)."""
    return PLAN[name][1]


def plan_metadata(name: str) -> dict[str, Flag]:
    """The Flag of serve-plan option `name` as an Options field's metadata."""
    return {KEY: PLAN[name][0]}


def add_plan_options(p: argparse.ArgumentParser) -> None:
    """The serve plan's options, as run, sweep and sweep-k have them (preflight's parser)."""
    for name, (spec, default) in PLAN.items():
        add_flag(p, name, spec, default)
