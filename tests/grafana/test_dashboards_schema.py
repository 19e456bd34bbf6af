"""The committed dashboards type-check against Grafana 12.0.2's own schema types (@grafana/schema).

No Grafana binary is needed: grafana/schema-check/check.mjs writes each dashboard as typed TypeScript (every panel's
options and custom field config against its plugin's generated types, annotations, variables, datasource refs) and
runs tsc. Needs node and npm; the pinned packages are installed with `npm ci` on first use (and again whenever
package-lock.json changes), later runs take a few seconds.
"""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path

import pytest

from tests.support import npm_installed

pytestmark = pytest.mark.config

REPO = Path(__file__).resolve().parents[2]
CHECK_DIR = REPO / "grafana" / "schema-check"
DASHBOARDS = REPO / "grafana" / "dashboards"


def installed_node() -> str:
    """node, with grafana/schema-check/node_modules installed from the committed lockfile."""
    return npm_installed(CHECK_DIR)


def run_check(node: str, *args: str | Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [node, str(CHECK_DIR / "check.mjs"), *map(str, args)], capture_output=True, text=True, timeout=300
    )


def test_committed_dashboards_match_grafana_schema(tmp_path):
    proc = run_check(installed_node(), "--out", tmp_path / "generated", *sorted(DASHBOARDS.glob("*.json")))
    assert proc.returncode == 0, proc.stderr
    assert "OK:" in proc.stdout


# --- the check can fail: three realistic breakages of a copy of a committed dashboard --------------------------


def _barchart(dash: dict) -> tuple[int, dict]:
    return next((i, p) for i, p in enumerate(dash["panels"]) if p["type"] == "barchart")


def _misspelt_option(dash: dict) -> str:
    i, panel = _barchart(dash)
    panel["options"]["barWidht"] = panel["options"].pop("barWidth")
    return f"panels[{i}].options.barWidht"


def _string_for_number(dash: dict) -> str:
    i, panel = _barchart(dash)
    panel["fieldConfig"]["defaults"]["custom"]["fillOpacity"] = "80"
    return f"panels[{i}].fieldConfig.defaults.custom.fillOpacity"


def _datasource_as_name(dash: dict) -> str:
    """The pre-8.3 form: a datasource name string instead of a {type, uid} DataSourceRef."""
    dash["annotations"]["list"][0]["datasource"] = "Prometheus"
    return "annotations.list[0].datasource"


BREAKAGES = {
    # name: (how to break the copy, what tsc must say at that JSON path)
    "misspelt-barchart-option": (_misspelt_option, "'\"barWidht\"' does not exist in type"),
    "string-for-number-in-fieldconfig": (_string_for_number, "Type 'string' is not assignable to type 'number'"),
    "annotation-datasource-not-a-ref": (_datasource_as_name, "Type 'string' has no properties in common with type"),
}


_broken_runs: list[tuple[subprocess.CompletedProcess, dict[str, str]]] = []


def broken_run(tmp_path_factory) -> tuple[subprocess.CompletedProcess, dict[str, str]]:
    """One check over all broken copies (one tsc run, shared by the tests): its result and, per breakage, the
    JSON path it broke."""
    if _broken_runs:
        return _broken_runs[0]
    node = installed_node()
    folder = tmp_path_factory.mktemp("broken")
    original = json.loads((DASHBOARDS / "specstack-spec-decode.json").read_text(encoding="utf-8"))
    paths = {}
    for name, (breakage, _) in BREAKAGES.items():
        dash = copy.deepcopy(original)
        paths[name] = breakage(dash)
        (folder / f"{name}.json").write_text(json.dumps(dash, indent=2), encoding="utf-8")
    _broken_runs.append((run_check(node, "--out", folder / "generated", *sorted(folder.glob("*.json"))), paths))
    return _broken_runs[0]


@pytest.mark.parametrize("name", BREAKAGES)
def test_check_rejects_broken_dashboard(tmp_path_factory, name):
    proc, paths = broken_run(tmp_path_factory)
    assert proc.returncode != 0
    lines = proc.stderr.splitlines()
    # check.mjs heads each tsc message with "<file>: <piece> at <JSON path> [...]"; the message is the next line.
    located = [
        lines[i + 1]
        for i, line in enumerate(lines[:-1])
        if line.startswith(f"{name}.json: ") and f" at {paths[name]} [" in line
    ]
    assert located, f"nothing reported at {paths[name]} in {name}.json:\n{proc.stderr[-4000:]}"
    assert any(BREAKAGES[name][1] in message for message in located), located
