"""The default methods of a sweep: services/methods.toml's [sweep] table, the one default list.

`methods` is what `specstack sweep`, `specstack slurm submit`, the Helm chart and make sweep (SWEEP_METHODS) run
when not told otherwise; `mtp_methods` is make sweep's SWEEP_MTP_METHODS, run after them. config/methods.py reads
the table for the package, the host helper (`python3 -m specstack.host sweep-methods`, how make gets it) for make.

Standard library only and Python 3.8 compatible: make runs the host helper with the host's python3, which may have
no tomllib (3.11+); then the table is read by the minimal reader below (method names are TOML bare keys: letters,
digits, '-' and '_', so a string never holds a quote or a '#').
"""

from __future__ import annotations

import re
from typing import Any

TABLE = "sweep"
METHODS, MTP_METHODS = "methods", "mtp_methods"
KEYS = (METHODS, MTP_METHODS)
FIX = 'e.g. [sweep] with methods = ["baseline", "ngram"] and mtp_methods = ["mtp-baseline", "mtp"]'


class SweepError(ValueError):
    """services/methods.toml's [sweep] table cannot be the default list (the message names the fix)."""


def table_of(text: str) -> object:
    """The [sweep] table of methods.toml's text (None when it has none): by tomllib where this Python has it,
    else by the minimal reader."""
    try:
        import tomllib
    except ImportError:  # Python < 3.11: the host's python3
        return minimal_table(text)
    return tomllib.loads(text).get(TABLE)


_STRING = re.compile(r'"([^"]*)"|\'([^\']*)\'')


def _strings(text: str) -> list[str]:
    return [a or b for a, b in _STRING.findall(text)]


def minimal_table(text: str) -> dict[str, Any] | None:
    """[sweep] read without tomllib: its `key = [...]` arrays of strings (on one line or several, comments
    allowed); a key whose value is not an array keeps its text, which check() refuses."""
    table: dict[str, Any] = {}
    found, key, items = False, "", ""  # the key of an array still open and its text so far
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if key:
            items += " " + line
            if "]" in line:
                table[key], key = _strings(items), ""
        elif line.startswith("["):
            if found:
                break
            found = re.match(r"^\[\s*" + TABLE + r"\s*\]$", line) is not None
        elif found:
            m = re.match(r'^([A-Za-z0-9_-]+|"[^"]*")\s*=\s*(.*)$', line)
            if not m:
                continue
            name, value = m.group(1).strip('"'), m.group(2)
            if not value.startswith("["):
                table[name] = value
            elif "]" in value:
                table[name] = _strings(value)
            else:
                key, items = name, value
    return table if found else None


def check(table: object, names: list[str], where: str = "services/methods.toml") -> dict[str, list[str]]:
    """{"methods": [...], "mtp_methods": [...]} of the table, or SweepError naming the fix: `methods` a non-empty
    list, `mtp_methods` a list (may be empty or left out), every name a method of methods.toml, none twice."""
    if table is None:
        raise SweepError(f"{where} has no [sweep] table, the default methods of a sweep: add one, {FIX}")
    if not isinstance(table, dict):
        raise SweepError(f"{where}: sweep must be a table, the default methods of a sweep, {FIX}")
    unknown = sorted(k for k in table if k not in KEYS)
    if unknown:
        raise SweepError(
            f"{where} [sweep] has {unknown[0]!r}; it holds only methods and mtp_methods (lists of method names), {FIX}"
        )
    out: dict[str, list[str]] = {}
    for key in KEYS:
        value = table.get(key, [] if key == MTP_METHODS else None)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise SweepError(
                f"{where} [sweep] {key} must be a list of method names, like "
                f'{key} = ["baseline", "ngram"], got {value!r}'
            )
        out[key] = value
    if not out[METHODS]:
        raise SweepError(f"{where} [sweep] methods is empty: a sweep needs at least one method, {FIX}")
    seen: set[str] = set()
    for key in KEYS:
        for name in out[key]:
            if name not in names:
                raise SweepError(
                    f"{where} [sweep] {key} names {name!r}, which is no method of {where} (no "
                    f"[methods.{name}] table){_case_hint(name, names)}: fix the name or remove it "
                    f"from [sweep]; the methods: {', '.join(names)}"
                )
            if name in seen:
                raise SweepError(
                    f"{where} [sweep] names {name!r} twice (methods and mtp_methods together): a sweep "
                    "runs each method once; remove one"
                )
            seen.add(name)
    return out


def _case_hint(name: str, names: list[str]) -> str:
    for known in names:
        if known.lower() in (name.lower(), name.lower().replace("_", "-")):
            return f"; method names are case-sensitive: use {known!r}"
    return ""
