"""How a field of Options is spelled on the command line: its Flag (help, option name, value parser), declared
beside the field in runs/options.py as dataclass metadata, and the parsers of values that are not one plain number.
cli/options.py builds the options of run, sweep and sweep-k (and the few other commands sharing one) from them,
so each option, its help and its default are written once, on the field."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from specstack.errors import UserError
from specstack.measure.goodput import parse_slo

KEY = "specstack.flag"  # the dataclass metadata key holding a field's Flag
AS_FIELD: Any = object()  # Flag.cli_default's own default: the field's default (dataclasses.MISSING would mean none)


@dataclass(frozen=True)
class Flag:
    help: str
    option: str | None = None  # the option when not --<field-name> (dashes for underscores)
    dest: str | None = None  # the parsed name when not the field's (as the commands always had it)
    parse: Callable[[str], Any] | None = None  # argparse's type; None: int, float or Path from the annotation
    metavar: str | None = None
    choices: tuple | None = None
    repeatable: bool = False  # action="append": each occurrence adds one value
    env: str | None = None  # an environment variable whose value, when set, is the default
    cli_default: Any = AS_FIELD  # the parser's default when not the field's (None: worked out later)
    shared: bool = True  # False: not an option of every method run; its command adds it by name


def flag(help: str, **kw: Any) -> dict[str, Flag]:
    """The metadata of an Options field that is a command-line option."""
    return {KEY: Flag(help, **kw)}


def parse_ints(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None


def parse_floats(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None


def parse_rates(text: str) -> tuple[float, ...] | str:
    if text.strip().lower() == "auto":
        return "auto"
    try:
        return parse_floats(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated requests per second (e.g. 0.5,1,2) or auto, got {text!r}"
        ) from None


def parse_slo_option(text: str) -> dict[str, float]:
    try:
        return parse_slo(text)
    except UserError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix(f"--slo {text!r}: ")) from None


def parse_json_object(text: str) -> dict:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise argparse.ArgumentTypeError(f"not valid JSON ({e.msg}): {text!r}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {text!r}")
    return value
