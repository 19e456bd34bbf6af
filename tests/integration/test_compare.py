"""`specstack compare` on two real runs of ngram (real vLLM on the CPU, tiny models): K=2 against K=4 on the
same inputs. The acceptance length must be flagged (exact sums of the acceptance phase; the bench's per-repeat
acceptance length with an interval of B/A that excludes 1.0×), the per-position rates ruled out by the other K,
and a run against itself must change nothing. Kept small: one task, 4 prompts, short outputs, 3 repeats."""

from __future__ import annotations

import json
import tarfile

import pytest

from specstack.cli.main import main
from specstack.runs.method_run import run_method

from .conftest import sweep_options

pytestmark = pytest.mark.integration

SMALL = dict(
    tasks=("code",),
    num_prompts=4,
    perf_output_len=32,
    acceptance_max_tokens=48,
    concurrencies=(1,),
    repeats=3,
    warmup_requests=1,
)


@pytest.fixture(scope="module")
def k_runs(models_dir, tmp_path_factory):
    results = tmp_path_factory.mktemp("compare-k")
    runs = {}
    for k in (2, 4):
        opts = sweep_options(models_dir, results, f"ngram-k{k}", spec_override={"num_speculative_tokens": k}, **SMALL)
        opts.method = "ngram"
        summary, _ = run_method(opts)
        assert summary["status"] == "ok", summary["error"]
        runs[k] = results / f"ngram-k{k}"
    return runs


def test_k2_against_k4_flags_the_acceptance_length(k_runs, tmp_path):
    out = tmp_path / "k2-vs-k4"
    assert main(["compare", str(k_runs[2]), str(k_runs[4]), "--out", str(out)]) == 0
    doc = json.loads((out / "compare.json").read_text())
    summaries = {k: json.loads((k_runs[k] / "ngram" / "summary.json").read_text()) for k in (2, 4)}
    length = [r for r in doc["acceptance"] if r["figure"] == "acceptance_length"]
    assert len(length) == 1
    a, b = (summaries[k]["tasks"]["code"]["mean_acceptance_length"] for k in (2, 4))
    assert (length[0]["a"], length[0]["b"]) == (a, b)
    assert a != b and length[0]["verdict"] == "changed"
    # the bench repeats: an interval of B/A that excludes 1.0x (no change)
    bench = [r for r in doc["speed"] if r["figure"] == "bench_acceptance_length"]
    assert len(bench) == 1 and bench[0]["repeats_a"] == bench[0]["repeats_b"] == SMALL["repeats"], bench
    # What the interval must say follows from bench's own figures: on the tiny models K=2 and K=4 may accept
    # exactly alike in bench's fixed-length cells (every acceptance at position 0), then the ratio is exactly 1.
    per_k = {
        k: sorted(
            json.loads(p.read_text())["spec_decode_acceptance_length"]
            for p in (k_runs[k] / "ngram" / "bench").glob("code-c1-r*.json")
        )
        for k in (2, 4)
    }
    if per_k[2] == per_k[4] and len(set(per_k[2])) == 1:
        assert bench[0]["ratio_low"] == bench[0]["ratio_high"] == 1.0, (per_k, bench)
        assert not bench[0]["verdict"].startswith("changed"), bench
    else:
        assert bench[0]["ratio_low"] is not None and not bench[0]["ratio_low"] <= 1.0 <= bench[0]["ratio_high"], (
            per_k,
            bench,
        )
        assert bench[0]["verdict"].startswith("changed")
    assert doc["positions"] and all(
        r["verdict"].startswith("not comparable: other K (2 → 4)") for r in doc["positions"] + doc["histogram"]
    )
    assert [d["fact"] for d in doc["pairs"][0]["differences"]] == ["K"]
    # greedy decoding is lossless: the outputs are the same request by request, in the target's tokens
    s = doc["outputs_summary"][0]
    assert s["unit"] == "token" and s["compared"] == SMALL["num_prompts"], s
    assert (out / "compare_positions_ngram.png").stat().st_size > 5000
    # the gate, both ways round: it fails exactly when the length fell by more than 1 %
    for ref, new in ((2, 4), (4, 2)):
        fell = (
            summaries[new]["tasks"]["code"]["mean_acceptance_length"]
            / summaries[ref]["tasks"]["code"]["mean_acceptance_length"]
            - 1
            < -0.01
        )
        assert main(
            [
                "compare",
                str(k_runs[ref]),
                str(k_runs[new]),
                "--out",
                str(tmp_path / f"gate-k{ref}-k{new}"),
                "--fail-on",
                "acceptance_length:-1%",
            ]
        ) == (1 if fell else 0), (ref, new)


def test_a_real_run_against_itself_changes_nothing(k_runs, tmp_path):
    out = tmp_path / "same"
    assert (
        main(
            [
                "compare",
                str(k_runs[4]),
                str(k_runs[4]),
                "--out",
                str(out),
                "--fail-on",
                "acceptance_length:-2%,throughput:-5%",
            ]
        )
        == 0
    )
    doc = json.loads((out / "compare.json").read_text())
    assert doc["changed"] == [] and not doc["gate_failed"]


def test_a_real_run_packed_moved_and_unpacked_reads_back(k_runs, tmp_path, capsys):
    """The handoff: pack, move the archive, unpack it elsewhere, verify, then report and compare from there."""
    archive = tmp_path / "sent" / "ngram-k4.tar.gz"
    assert main(["pack", str(k_runs[4]), "--out", str(archive)]) == 0
    moved = tmp_path / "received" / archive.name
    moved.parent.mkdir()
    archive.rename(moved)
    assert main(["verify", str(moved)]) == 0
    with tarfile.open(moved) as tar:
        tar.extractall(tmp_path / "received", filter="data")
    unpacked = tmp_path / "received" / "ngram-k4"
    assert main(["verify", str(unpacked)]) == 0
    capsys.readouterr()
    assert main(["report", str(unpacked)]) == 0
    assert "ngram" in (unpacked / "report.md").read_text()
    out = tmp_path / "cmp"
    assert main(["compare", str(k_runs[4]), str(unpacked), "--out", str(out)]) == 0
    doc = json.loads((out / "compare.json").read_text())
    assert doc["changed"] == [] and doc["acceptance"] and all(r["verdict"] == "same" for r in doc["acceptance"])
    # the report wrote into an intact folder, so it sealed it again: its files are listed, the folder verifies
    capsys.readouterr()
    assert main(["verify", str(unpacked)]) == 0
    assert "  report.md\n" in (unpacked / "SHA256SUMS").read_text()
