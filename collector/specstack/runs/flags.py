"""The parsers of option values that are not one plain number (a Flag's parse, config/flags.py). Each Options field
that is an option declares its Flag beside it in runs/options.py as dataclass metadata; cli/options.py builds the
options of run, sweep and sweep-k (and the few other commands sharing one) from them, so each option, its help and
its default are written once, on the field."""

from __future__ import annotations

import argparse
import json

from specstack.errors import UserError
from specstack.measure.goodput import parse_slo


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
