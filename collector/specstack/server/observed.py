"""What a running vLLM server reveals about itself, and where that contradicts the method asked for.

A `--runtime url` run attaches to a server someone else started: its argv, environment and speculative
config are not known, only what its endpoints say. vLLM 0.32.0 reveals:

* `/v1/models`: the served model id, its `root` (the model path or hub id) and `max_model_len`;
* `/version`: the server's vLLM version;
* `/metrics`: whether the `vllm:spec_decode_*` counters exist at all. SpecDecodingProm
  (vllm/v1/spec_decode/metrics.py) registers them only when the server has a speculative config; a plain
  server has no such family (not a zero-valued one). With one, the per-position counter
  `vllm:spec_decode_num_accepted_tokens_per_pos` gets one child per position 0..K-1 at start-up, before any
  request, so its number of `position` labels is the server's K (num_speculative_tokens);
* each answer's `metrics.speculative_decoding` (servers started with --per-request-spec-decode-metrics):
  `num_spec_tokens` (K), an acceptance histogram of K+1 bins, and with `detailed` the drafts of every step
  (each <= K).

Everything else is unknown and recorded as such; the plan from methods.toml is kept apart as "asked for".
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import requests

from specstack.config import metric_names as m

if TYPE_CHECKING:
    from specstack.config.methods import ServePlan

# Families on /metrics: "# TYPE <name> <type>" lines and sample lines "<name>{labels} value" / "<name> value".
_TYPE_LINE = re.compile(r"^# TYPE (\S+) ")
_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s")
_POSITION = re.compile(r"(?:^|[{,])\s*" + m.POSITION_LABEL + r'="([^"]*)"')

UNKNOWN_ON_URL = (
    "argv",
    "env",
    "target (beyond /v1/models' root)",
    "speculative method and its config (beyond K)",
    "platform",
    "model_set",
    "model runner (unless a saved server log says)",
)


def spec_from_metrics(text: str) -> dict:
    """The spec-decode facts of a /metrics page: which vllm:spec_decode_* families exist and, from the
    per-position counter's `position` labels, K (None when that counter is absent)."""
    families: set[str] = set()
    positions: set[str] = set()
    for line in text.splitlines():
        if line.startswith("#"):
            match = _TYPE_LINE.match(line)
            if match and match.group(1).startswith(m.SPEC_PREFIX):
                families.add(m.family(match.group(1)))
            continue
        match = _SAMPLE.match(line)
        if not match or not match.group(1).startswith(m.SPEC_PREFIX):
            continue
        name = match.group(1)
        families.add(m.family(name))
        if name == m.SPEC_ACCEPTED_PER_POS + "_total" and match.group(2):
            position = _POSITION.search(match.group(2))
            if position:
                positions.add(position.group(1))
    k = len(positions) if m.SPEC_ACCEPTED_PER_POS in families else None
    return {
        "spec_decode_counters": bool(families),
        "families": sorted(families),
        "num_speculative_tokens": k,
        "positions": sorted(positions, key=lambda p: (not p.isdigit(), int(p) if p.isdigit() else p)),
    }


def model_entry(models: list[dict], served_model_name: str) -> dict:
    """The /v1/models facts of the served name (id, root, max_model_len, parent) and the other ids listed."""
    entry = next((e for e in models if e.get("id") == served_model_name), {})
    return {
        "id": entry.get("id"),
        "root": entry.get("root"),
        "max_model_len": entry.get("max_model_len"),
        "parent": entry.get("parent"),
        "other_ids": sorted(str(e.get("id")) for e in models if e.get("id") != served_model_name),
    }


def observe(base_url: str, served_model_name: str, models: list[dict], *, timeout: float = 10.0) -> dict:
    """What the server reveals now: /v1/models (already read when it was found ready), /version, /metrics.
    A /metrics page that cannot be read leaves the spec-decode facts unknown (None), never "absent"."""
    observed: dict = {
        "models": model_entry(models, served_model_name),
        "vllm_version": None,
        "metrics": {
            "read": False,
            "error": None,
            "spec_decode_counters": None,
            "families": [],
            "num_speculative_tokens": None,
            "positions": [],
        },
    }
    with requests.Session() as http:
        try:
            r = http.get(f"{base_url}/version", timeout=timeout)
            observed["vllm_version"] = r.json().get("version") if r.ok else None
        except (requests.RequestException, ValueError):
            pass
        try:
            r = http.get(f"{base_url}/metrics", timeout=timeout)
            r.raise_for_status()
            if "vllm:" not in r.text:  # a page, but not vLLM's (a gateway's own metrics): says nothing
                raise ValueError("the page has no vllm: metric")
            observed["metrics"].update(read=True, **spec_from_metrics(r.text))
        except (requests.RequestException, ValueError) as e:
            observed["metrics"]["error"] = f"{type(e).__name__}: {e}"[:300]
    return observed


def spec_from_responses(spec_metrics: list[dict | None]) -> dict:
    """What the answers' metrics.speculative_decoding reveal: how many carried them, the K they state
    (num_spec_tokens, histogram bins - 1) and the most drafts any one step made (detailed level)."""
    carried = [s for s in spec_metrics if s]
    ks = sorted(
        {int(s["num_spec_tokens"]) for s in carried if s.get("num_spec_tokens") is not None}
        | {len(s["acceptance_histogram"]) - 1 for s in carried if s.get("acceptance_histogram")}
    )
    steps = [int(x) for s in carried for x in (s.get("per_step_drafted") or [])]
    return {
        "requests": len(spec_metrics),
        "with_spec_metrics": len(carried),
        "num_speculative_tokens": ks,
        "max_drafts_per_step": max(steps) if steps else None,
        "drafts_per_step_within_k": (max(steps) <= min(ks)) if steps and ks else None,
    }


def observed_k(observed: dict) -> int | None:
    """The server's K from /metrics, else from the answers when they state one K."""
    k = observed["metrics"].get("num_speculative_tokens")
    if k is None:
        ks = (observed.get("responses") or {}).get("num_speculative_tokens") or []
        k = ks[0] if len(ks) == 1 else None
    return k


def speculative(observed: dict) -> bool | None:
    """Whether the server runs speculative decoding: True/False from /metrics (or from answers carrying spec
    metrics), None when neither says."""
    has = observed["metrics"].get("spec_decode_counters")
    if has is None and (observed.get("responses") or {}).get("with_spec_metrics"):
        return True
    return has


def contradictions(method: str, asked: dict | None, observed: dict, url: str, *, override: bool = False) -> list[str]:
    """Where the observed server contradicts the method asked for (its speculative config from methods.toml,
    `asked`, None for plain decode): each a sentence with both facts. Unknown facts contradict nothing."""
    has, k = speculative(observed), observed_k(observed)
    source = "services/methods.toml" + (" with --k/--spec-override" if override else "")
    if has is None:
        return []
    if asked is None and has:
        at = f" with K={k}" if k is not None else ""
        return [
            f"asked for {method} (plain decoding, {source}), but the server at {url} exposes vllm:spec_decode_* "
            f"counters on /metrics: it runs speculative decoding{at}"
        ]
    if asked is not None and not has:
        return [
            f"asked for {method} (speculative, num_speculative_tokens={asked.get('num_speculative_tokens')}, "
            f"{source}), but the server at {url} exposes no vllm:spec_decode_* counters on /metrics: it runs plain "
            "decoding (vLLM 0.32.0 registers them only with a speculative config)"
        ]
    want = (asked or {}).get("num_speculative_tokens")
    if asked is not None and k is not None and want is not None and k != want:
        return [
            f"asked for {method} with num_speculative_tokens={want} ({source}), but the server at {url} drafts "
            f"K={k} ({m.SPEC_ACCEPTED_PER_POS} has {k} positions)"
        ]
    return []


def plan_contradictions(plan: ServePlan, observed: dict, url: str, *, override: bool = False) -> list[str]:
    """Where a server specstack started contradicts its own plan: the spec-decode facts (as for an attached
    server), the served model name and max-model-len. On this path every known fact must agree."""
    found = contradictions(plan.method, plan.speculative_config, observed, url, override=override)
    models, flags = observed["models"], plan.flags
    if models.get("id") != flags.get("served-model-name"):
        found.append(
            f"the server at {url} does not list the served model name {flags.get('served-model-name')!r} "
            f"(/v1/models lists {models.get('other_ids')})"
        )
    want = flags.get("max-model-len")
    if want is not None and models.get("max_model_len") is not None and int(models["max_model_len"]) != int(want):
        found.append(
            f"asked for max-model-len {want}, but the server at {url} reports max_model_len "
            f"{models['max_model_len']} on /v1/models"
        )
    return found


def fix_for(method: str, asked: dict | None, observed: dict) -> str:
    """The ways out of a contradiction, in one clause."""
    has, k = speculative(observed), observed_k(observed)
    ways = []
    if asked is not None and has and k is not None:
        ways.append(f"pass --k {k} to ask for the server's K")
    if asked is None:
        ways.append("run the speculative method this server was started for")
    elif not has:
        ways.append("run --method baseline against this server")
    ways.append(
        f"point --url at a server started for {method}"
        + (f" with K={asked.get('num_speculative_tokens')}" if asked is not None and has else "")
    )
    ways.append("or pass --trust-server to measure it anyway (the summary records the contradiction)")
    return "; ".join(ways)
