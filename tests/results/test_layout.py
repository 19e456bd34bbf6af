"""results/layout.py owns every file and folder name of a bundle: its helpers give today's names (those on disk
in every bundle written so far), and no module outside results/ spells one of them as a string literal."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import specstack
from specstack.results import layout

pytestmark = pytest.mark.unit

PACKAGE = Path(specstack.__file__).parent

# whole file names: spelled as a literal or a path part of one
FILES = {
    layout.MANIFEST,
    layout.SUMS,
    layout.TABLES_FILE,
    layout.REPORT_MD,
    layout.REPORT_HTML,
    layout.SUMMARY_FILE,
    layout.SAMPLER_PROBE_FILE,
    layout.SERVER_LOG,
    layout.WARMUP_RECORDS,
    *layout.PACKAGES_FILE.split("/")[1:],
    *layout.SLURM_SUBMISSIONS.split("/")[1:],
    layout.COMPARE_MD,
    layout.COMPARE_HTML,
    layout.COMPARE_JSON,
    layout.REPRODUCE_VERDICT,
    layout.RUN_LOCK,
    layout.TRACEBACK_FILE,
}
# folder names: common words too (a phase "bench", a manifest key "inputs"), so only as a path part
FOLDERS = {
    layout.INPUTS_DIR,
    layout.HOST_DIR,
    layout.REPORT_DIR,
    layout.BENCH_DIR,
    layout.METHOD_TABLES_DIR,
    layout.acceptance_records("t").split("/")[0],
    layout.sampled_records("t", 1).split("/")[0],
    layout.snapshot("w", "before").split("/")[0],
}
ENDINGS = (".perf.jsonl", ".acceptance.jsonl", ".dataset.json", ".server.log", ".prom", layout.COMMAND_SUFFIX)
MARKS = (layout.TURN2_MARK, layout.FAILED_MARK, layout.REPLACED_MARK, layout.STAGING_MARK)
# (file under the package, literal): not the bundle's, though spelled alike
NOT_BUNDLE = {("host/snapshot.py", "snapshots"): "the Hugging Face cache's snapshots/ folder"}


def _literals(tree: ast.AST):
    """(node, text, joined) of every string literal but docstrings: an f-string's text has {} for each value;
    joined: an operand of `/` (a Path join), so a bare folder name in it is a path part."""
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            skip.add(id(node.value))  # a docstring or a bare string statement: prose
        elif isinstance(node, ast.JoinedStr):
            skip.update(id(v) for v in node.values)
            yield node, "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values), False
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            for side in (node.left, node.right):
                if isinstance(side, ast.Constant) and isinstance(side.value, str):
                    skip.add(id(side))
                    yield side, side.value, True
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            yield node, node.value, False


def spelled(source: str) -> list[tuple[int, str]]:
    """(line, literal) of each bundle name the source spells. Text with whitespace is prose (a message, a
    help text) and may name files; a name in code is a path, with no whitespace."""
    found = []
    for node, text, joined in _literals(ast.parse(source)):
        if any(c.isspace() for c in text):
            continue
        parts = text.split("/")
        if (
            any(p in FILES or p.endswith(ENDINGS) for p in parts)
            or any(m in text for m in MARKS)
            or ((joined or len(parts) > 1) and any(p in FOLDERS for p in parts))
            or text == layout.HOST_DIR
        ):
            found.append((node.lineno, text))
    return sorted(set(found))


def test_no_module_outside_results_spells_a_bundle_name():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith("results/"):
            continue
        found += [
            f"collector/specstack/{rel}:{line}: {text!r}"
            for line, text in spelled(path.read_text())
            if (rel, text) not in NOT_BUNDLE
        ]
    assert not found, "bundle names spelled outside results/ (use results/layout.py's):\n" + "\n".join(found)


def test_the_scan_sees_paths_and_f_strings_not_prose():
    source = '''
"""A docstring naming summary.json and bench/."""
a = run_dir / "manifest.json"
b = f"bench/{cell}.json"
c = bundle / "inputs" / name
d = f"{task}.perf.jsonl"
e = f"{method}.failed-{stamp}"
f = "phase bench: see summary.json"
g = manifest.get("inputs")
h = "bench"
'''
    assert spelled(source) == [
        (3, "manifest.json"),
        (4, "bench/{}.json"),
        (5, "inputs"),
        (6, "{}.perf.jsonl"),
        (7, "{}.failed-{}"),
    ]


def test_the_helpers_give_todays_names():
    assert (layout.MANIFEST, layout.SUMS, layout.TABLES_FILE, layout.REPORT_MD, layout.REPORT_HTML) == (
        "manifest.json",
        "SHA256SUMS",
        "tables.txt",
        "report.md",
        "report.html",
    )
    assert layout.report_table("speed", "csv") == "report/tables/speed.csv"
    assert layout.NOT_METHODS == ("inputs", "host-provenance", "report")
    assert (layout.RUN_LOCK, layout.staging_prefix("ngram"), layout.TRACEBACK_FILE) == (
        ".specstack.lock",
        ".ngram.staging-",
        "traceback.txt",
    )
    assert [layout.staged_method(n) for n in (".ngram-k2.staging-ab_1", "ngram", ".slurm", ".x.staging-")] == [
        "ngram-k2",
        None,
        None,
        "x",
    ]
    assert (layout.failed_dir("eagle3", "20250101T000000"), layout.replaced_dir("eagle3", "X")) == (
        "eagle3.failed-20250101T000000",
        "eagle3.replaced-X",
    )
    assert (
        layout.perf_input("code"),
        layout.acceptance_input("code"),
        layout.dataset_record("mt-bench"),
        layout.turn2_input("mt-bench", "baseline"),
    ) == ("code.perf.jsonl", "code.acceptance.jsonl", "mt-bench.dataset.json", "mt-bench.turn2.baseline.jsonl")
    assert (
        layout.host_record("ngram"),
        layout.host_server_log("ngram"),
        layout.host_pod("ngram"),
        layout.host_container_log("ngram", "vllm"),
    ) == (
        "host-provenance/ngram.json",
        "host-provenance/ngram.server.log",
        "host-provenance/ngram.pod.json",
        "host-provenance/ngram.vllm.log",
    )
    assert (layout.SUMMARY_FILE, layout.SAMPLER_PROBE_FILE, layout.SERVER_LOG, layout.WARMUP_RECORDS) == (
        "summary.json",
        "sampler-probe.json",
        "server.log",
        "warmup.jsonl",
    )
    assert (
        layout.acceptance_records("code"),
        layout.turn2_records("code"),
        layout.sampled_records("code", 0.6),
        layout.sampled_records("code", 1.0),
        layout.method_table("requests"),
    ) == (
        "acceptance/code.jsonl",
        "acceptance/code.turn2.jsonl",
        "sampled/code-t0.6.jsonl",
        "sampled/code-t1.jsonl",
        "tables/requests.csv",
    )
    assert (layout.bench_file("code-c4-r0"), layout.bench_log("code-c4-r0"), layout.bench_window("code-c4-r0")) == (
        "bench/code-c4-r0.json",
        "bench/code-c4-r0.log",
        "bench/code-c4-r0",
    )
    assert {
        layout.bench_cell(p) for p in ("bench/code-c4-r0.json", "../ngram-s1/bench/code-c4-r0.json", "bench/code-c4-r0")
    } == {"code-c4-r0"}
    assert (layout.acceptance_window("code"), layout.turn2_window("code"), layout.sampled_window("code", 0.6)) == (
        "acceptance/code",
        "acceptance/code/turn2",
        "sampled/code/t0.6",
    )
    assert (
        layout.snapshot("warmup", "before"),
        layout.snapshot("bench/code-c1-r0", "after"),
        layout.snapshot("sampled/code/t0.6", "before"),
    ) == (
        "snapshots/warmup.before.prom",
        "snapshots/bench_code-c1-r0.after.prom",
        "snapshots/sampled_code_t0.6.before.prom",
    )


def test_the_layout_imports_only_the_standard_library():
    """host/ runs on the host's python3 and imports the layout."""
    tree = ast.parse(Path(layout.__file__).read_text())
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names} | {
        n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
    }
    assert imported <= {"__future__"}
