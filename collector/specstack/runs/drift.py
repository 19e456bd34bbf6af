"""How this machine differs from the one a run was recorded on, fact by fact: what `specstack reproduce`
lists before refusing to start (unless --allow-drift). A fact the original did not record is not a difference;
it is listed as unknown, so an older bundle can still be reproduced, and the user reads what was not checked.

Facts: specstack's commit, the Python locks and the installed packages (the same lock natively; vLLM's version
among them), the host (CPU, cores, Python, OS), each method's serve command (services/methods.toml resolved
now) and the checkpoints each server would read (server/model_identity.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from specstack.runs.options import Options, plan_for
from specstack.server import model_identity, provenance

REPO = Path(__file__).resolve().parents[3]
_SHOWN = 8  # package differences named one by one; the rest counted


@dataclass
class Drift:
    fact: str
    recorded: object
    now: object

    def text(self) -> str:
        return f"{self.fact}: {_show(self.recorded)} (recorded) → {_show(self.now)} (here)"

    def to_dict(self) -> dict:
        return {"fact": self.fact, "recorded": self.recorded, "now": self.now}


def _show(v) -> str:
    if isinstance(v, dict):
        return ", ".join(f"{k}={_show(x)}" for k, x in v.items()) or "—"
    if isinstance(v, list):
        return "; ".join(map(str, v)) or "—"
    return "—" if v is None else str(v)


@dataclass
class Environment:
    """What this machine has now, computed once per reproduce."""

    commit: str | None
    locks: dict
    packages: list[str]
    host: dict

    @classmethod
    def here(cls) -> Environment:
        return cls(provenance.git_commit(REPO), provenance.lock_hashes(REPO), provenance.packages(), provenance.host())


def package_changes(recorded: list[str], now: list[str]) -> list[str]:
    """`name a → b`, `+name==v`, `-name==v`; names compared case-insensitively."""

    def table(lines):
        out = {}
        for line in lines:
            name, _, version = line.strip().partition("==")
            if name:
                out[name.lower().replace("_", "-")] = (name, version)
        return out

    a, b = table(recorded), table(now)
    changes = [f"{a[k][0]} {a[k][1]} → {b[k][1]}" for k in sorted(a.keys() & b.keys()) if a[k][1] != b[k][1]]
    changes += [f"-{a[k][0]}=={a[k][1]}" for k in sorted(a.keys() - b.keys())]
    changes += [f"+{b[k][0]}=={b[k][1]}" for k in sorted(b.keys() - a.keys())]
    return changes


def environment(manifest: dict, packages_recorded: list[str] | None, env: Environment) -> tuple[list[Drift], list[str]]:
    """(differences, facts not recorded) of the run-wide environment."""
    drifts, unknown = [], []
    if manifest.get("git_commit") and env.commit:
        if manifest["git_commit"] != env.commit:
            drifts.append(Drift("specstack commit", manifest["git_commit"], env.commit))
    else:
        unknown.append("specstack commit")
    if manifest.get("locks") is not None and env.locks:
        changed = sorted(
            k for k in manifest["locks"].keys() | env.locks.keys() if manifest["locks"].get(k) != env.locks.get(k)
        )
        if changed:
            drifts.append(
                Drift(
                    "Python locks",
                    {k: (manifest["locks"].get(k) or "absent")[:12] for k in changed},
                    {k: (env.locks.get(k) or "absent")[:12] for k in changed},
                )
            )
    else:
        unknown.append("Python locks")
    if packages_recorded is not None:
        changes = package_changes(packages_recorded, env.packages)
        if changes:
            more = [f"… and {len(changes) - _SHOWN} more"] if len(changes) > _SHOWN else []
            drifts.append(Drift("installed packages", f"{len(changes)} differ", changes[:_SHOWN] + more))
    else:
        unknown.append("installed packages")
    host = manifest.get("host") or {}
    for key in ("machine", "cpu_model", "cores", "python", "platform"):
        if host.get(key) is None:
            unknown.append(f"host {key}")
        elif host[key] != env.host.get(key):
            drifts.append(Drift(f"host {key}", host[key], env.host.get(key)))
    return drifts, unknown


def _argv_changes(recorded: list[str], now: list[str]) -> list[str]:
    """The serve arguments that differ, as `--flag a → b` where both sides have the flag."""

    def flags(argv):
        out, key = {"<model>": argv[0] if argv else None}, None
        for item in argv[1:]:
            if item.startswith("--"):
                key = item
                out[key] = True
            elif key is not None:
                out[key] = item
                key = None
        return out

    a, b = flags(recorded), flags(now)
    return [
        f"{k} {a.get(k, 'absent')} → {b.get(k, 'absent')}"
        for k in sorted(a.keys() | b.keys(), key=str)
        if a.get(k) != b.get(k) and k not in WHERE_NOT_WHAT
    ]


# Where the server listens changes nothing it measures: `reproduce --port` may move it.
WHERE_NOT_WHAT = {"--port", "--host"}


def method(folder: str, summary: dict, opts: Options) -> tuple[list[Drift], list[str]]:
    """The serve command and checkpoints of one method: as recorded vs as methods.toml and the disk give them now."""
    drifts, unknown = [], []
    asked = summary.get("asked_for") or {}
    plan = plan_for(opts)
    if asked.get("argv") is None:
        unknown.append(f"{folder} serve command")
    else:
        changes = _argv_changes(asked["argv"], plan.argv)
        env_a, env_b = asked.get("env") or {}, plan.env
        changes += [
            f"env {k}={env_a.get(k, 'unset')} → {env_b.get(k, 'unset')}"
            for k in sorted(env_a.keys() | env_b.keys())
            if env_a.get(k) != env_b.get(k)
        ]
        if changes:
            drifts.append(Drift(f"{folder} serve command", f"{len(changes)} differ", changes))
    recorded = (summary.get("provenance") or {}).get("models")
    if recorded is None:
        unknown.append(f"{folder} checkpoints")
        return drifts, unknown
    now = model_identity.of_plan(plan)
    for role in sorted(recorded.keys() | now.keys()):
        a, b = recorded.get(role), now.get(role)
        if _identity(a) != _identity(b):
            drifts.append(Drift(f"{folder} {role} checkpoint", _describe(a), _describe(b)))
    return drifts, unknown


def _identity(ident: dict | None):
    if ident is None:
        return None
    if ident.get("kind") == "hub":
        return ("hub", ident.get("model"), ident.get("revision"))
    return ("local", (ident.get("fingerprint") or {}).get("sha256"))


def _describe(ident: dict | None) -> str:
    if ident is None:
        return "none"
    if ident.get("kind") == "hub":
        return f"{ident.get('model')}@{ident.get('revision') or 'not cached'}"
    fp = ident.get("fingerprint")
    return f"{ident.get('model')} " + (f"sha256:{fp['sha256'][:12]} ({fp['files']} files)" if fp else "(missing)")
