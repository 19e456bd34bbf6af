"""Model revisions: every hub model of the default model set is pinned to a commit (or listed as knowingly not
yet pinned, with the reason, in methods.toml and docs/gpu.md), and the pin reaches vLLM as the arguments vLLM
0.32.0 reads: --revision, --code-revision for remote code, the speculative config's revision / code_revision."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from specstack.config import methods
from specstack.server import preflight

pytestmark = pytest.mark.config

REPO = Path(__file__).resolve().parents[2]
SERVE_ARGS = methods.serve_args


def _hub_models(cfg: dict, name: str) -> dict[str, str]:
    models = SERVE_ARGS.model_set(cfg, name, "/models")
    return {k: v for k, v in models.items() if not v.startswith(("/", ".", "~"))}


def _docs_unpinned() -> set[str]:
    """The model ids docs/gpu.md's 'Model revisions' section lists as not yet pinned."""
    text = (REPO / "docs" / "gpu.md").read_text()
    section = text.split("### Model revisions", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `([^`]+)` \| \*\*not yet pinned\*\*", section, re.M))


def test_every_hub_model_of_the_default_set_is_pinned_to_a_commit_or_listed_as_not_yet():
    cfg = methods.load()
    default = cfg["model_sets"]["default"]
    pins = default.get("revisions", {})
    unpinned = default.get("unpinned", {})
    problems = []
    for key, model in _hub_models(cfg, "default").items():
        if key in pins and key in unpinned:
            problems.append(f"{key} ({model}) is both pinned and listed as unpinned")
        elif key in pins:
            if not SERVE_ARGS.is_commit(pins[key]):
                problems.append(f"{key} ({model}): revision {pins[key]!r} is not a 40-hex commit")
        elif not str(unpinned.get(key, "")).strip():
            problems.append(
                f'{key} = {model!r} has no pinned revision: add `{key} = "<40-hex commit>"` to '
                "[model_sets.default.revisions] in services/methods.toml (docs/gpu.md, 'Model "
                "revisions', says how to find it), or list it with the reason in "
                "[model_sets.default.unpinned]"
            )
    assert problems == [], "\n".join(problems)
    # What methods.toml says is unpinned, docs/gpu.md says too (and nothing else).
    assert _docs_unpinned() == {default[k] for k in unpinned}


def test_no_revision_table_names_a_model_the_set_lacks():
    cfg = methods.load()
    for name, table in cfg["model_sets"].items():
        models = set(SERVE_ARGS.model_set(cfg, name, "/m"))
        assert set(table.get("revisions", {})) <= models and set(table.get("unpinned", {})) <= models, name


@pytest.mark.parametrize("method", methods.names())
def test_the_pins_reach_the_serve_arguments(method):
    cfg = methods.load()
    pins = cfg["model_sets"]["default"].get("revisions", {})
    models = SERVE_ARGS.model_set(cfg, "default")
    by_model = {models[k]: r for k, r in pins.items()}
    plan = methods.build(method, platform="gpu-container")
    argv = plan.argv
    want = by_model.get(plan.target)
    if want:
        assert argv[argv.index("--revision") + 1] == want
    else:
        assert "--revision" not in argv
    assert ("--code-revision" in argv) == bool(want and plan.flags.get("trust-remote-code"))
    spec = plan.speculative_config or {}
    if spec.get("model") in by_model:
        assert spec["revision"] == by_model[spec["model"]]
        assert json.loads(argv[argv.index("--speculative-config") + 1])["revision"] == spec["revision"]


def test_the_tiny_set_is_local_and_pins_nothing(models_dir):
    for method in methods.names():
        plan = methods.build(method, model_set_name="tiny", platform="cpu-native", models_dir=str(models_dir))
        assert "--revision" not in plan.argv and "revision" not in (plan.speculative_config or {})


def _pinned_cfg(**pins: str) -> dict:
    cfg = copy.deepcopy(methods.load())
    cfg["model_sets"]["default"].setdefault("revisions", {}).update(pins)
    for key in pins:
        cfg["model_sets"]["default"].get("unpinned", {}).pop(key, None)
    return cfg


def test_remote_code_gets_its_code_revision_and_vllm_parses_both():
    """mtp runs MiMo's own code (trust-remote-code): once pinned, the code comes from the same commit, and
    vLLM 0.32.0's own parser and config classes accept the arguments."""
    commit = "0123456789abcdef0123456789abcdef01234567"
    cfg = _pinned_cfg(mtp_target=commit)
    for method in ("mtp", "mtp-baseline"):
        plan = methods.build(method, platform="gpu-container", cfg=cfg)
        argv = plan.argv
        assert argv[argv.index("--revision") + 1] == argv[argv.index("--code-revision") + 1] == commit
        assert "--trust-remote-code" in argv
        report = preflight.run_checks(plan, deep="off")
        assert report.errors == [], report.errors


def test_a_remote_code_draft_gets_the_speculative_code_revision():
    commit = "fedcba9876543210fedcba9876543210fedcba98"
    cfg = _pinned_cfg(draft=commit)
    cfg["methods"]["draft_model"]["flags"] = {"trust-remote-code": True}
    plan = methods.build("draft_model", platform="gpu-container", cfg=cfg)
    assert plan.speculative_config["revision"] == plan.speculative_config["code_revision"] == commit
    assert preflight.run_checks(plan, deep="off").errors == []


@pytest.mark.parametrize("value", ["main", "v1.0", "B968826D9C46DD6066D109EABC6255188DE91218", "b968826"])
def test_a_branch_tag_or_short_hash_is_refused_with_the_fix(value):
    cfg = _pinned_cfg(target=value)
    with pytest.raises(methods.MethodError, match=r"target = .* is not a commit: give the 40-hex commit id"):
        methods.build("baseline", cfg=cfg)


def test_a_pin_of_a_key_the_set_lacks_is_refused():
    cfg = _pinned_cfg(medusa="0123456789abcdef0123456789abcdef01234567")
    with pytest.raises(methods.MethodError, match="pins 'medusa', which model set 'default' does not name"):
        methods.build("baseline", cfg=cfg)


def test_a_methods_own_revision_wins_over_the_set():
    cfg = _pinned_cfg()
    own = "1111111111111111111111111111111111111111"
    cfg["methods"]["baseline"]["flags"] = {"revision": own}
    argv = methods.build("baseline", cfg=cfg).argv
    assert argv.count("--revision") == 1 and argv[argv.index("--revision") + 1] == own
