"""`specstack sweep-k --k-per-load` on real vLLM 0.32.0 (CPU, tiny models): ngram at K=3 with its baseline, at
concurrency 1 and 2, 3 repeats each; then the per-load schedule derived from those cells, run as `ngram-kload`
when it differs between the loads. Such tiny cells are often too noisy for the stability gate, so a fixed
schedule (K=3 at batch size 1, K=0 from 2 on) is also run into the same run id with `run --spec-override`:
vLLM 0.32.0 must accept it and draft by it.

Oracles: the report's K-per-load table is the derivation (figures/k_per_load.py) recomputed here from the raw
`vllm bench serve` JSON files; `ngram-kload` exists exactly when the derived schedule differs between bands; the
fixed schedule's server was started with it, drafted at c=1 exactly what fixed K=3 drafted (greedy, same
prompts, same K at batch size 1) and less at c=2 (K=0 whenever two requests share a step), and the table's
figures for it are the raw files' ratios. Kept small (CI time): one task, 4 prompts, 16 output tokens."""

from __future__ import annotations

import json
import statistics

import pandas as pd
import pytest

from specstack.cli.main import main
from specstack.figures import k_per_load as kpl
from specstack.report.build import write_report
from tests.support import free_port

pytestmark = pytest.mark.integration

KS = (3,)
SCHEDULE = [[1, 1, 3], [2, 2, 0]]
CONCURRENCIES = (1, 2)
REPEATS = 3


@pytest.fixture(scope="module")
def kload(models_dir, tmp_path_factory):
    results = tmp_path_factory.mktemp("k-per-load")

    def common() -> list[str]:
        return [
            "--model-set",
            "tiny",
            "--platform",
            "cpu-native",
            "--models-dir",
            str(models_dir),
            "--port",
            str(free_port()),
            "--results",
            str(results),
            "--run-id",
            "it-kload",
            "--tasks",
            "code",
            "--num-prompts",
            "4",
            "--perf-output-len",
            "16",
            "--acceptance-max-tokens",
            "16",
            "--warmup-requests",
            "1",
            "--concurrency",
            ",".join(map(str, CONCURRENCIES)),
            "--repeats",
            str(REPEATS),
        ]

    assert main(["sweep-k", "--method", "ngram", "--k", ",".join(map(str, KS)), "--k-per-load", *common()]) == 0
    override = json.dumps(kpl.spec_override(SCHEDULE))
    assert main(["run", "--method", "ngram", "--spec-override", override, *common()]) == 0
    write_report(results / "it-kload")  # `run` leaves the report to `specstack report`
    return results / "it-kload"


def raw_cells(run_dir, folder: str, k: int) -> list[dict]:
    out = []
    for c in CONCURRENCIES:
        for r in range(REPEATS):
            raw = json.loads((run_dir / folder / "bench" / f"code-c{c}-r{r}.json").read_text())
            out.append(
                {
                    "k": k,
                    "concurrency": c,
                    "repeat": r,
                    "output_throughput": raw["output_throughput"],
                    "ok": raw["failed"] == 0 and raw["completed"] == 4,
                }
            )
    return out


def test_the_k_per_load_table_is_the_derivation_from_the_raw_bench_files(kload):
    cells = raw_cells(kload, "baseline", 0) + [c for k in KS for c in raw_cells(kload, f"ngram-k{k}", k)]
    bands = kpl.bands(cells)
    sched, why = kpl.schedule(bands)
    table = pd.read_csv(kload / "report" / "tables" / "k_per_load.csv")
    assert list(table["concurrency"]) == list(CONCURRENCIES) and set(table["family"]) == {"ngram"}
    for b, (_, row) in zip(bands, table.iterrows()):
        assert (None if pd.isna(row["k"]) else int(row["k"])) == b["k"], (b, row.to_dict())
        assert row["band"] == f"{b['band'][0]}–{b['band'][1]}"
        if b["k"] is not None:
            assert row["median_tok_s"] == pytest.approx(b["median_tok_s"], rel=1e-12)
            assert row["speedup"] == pytest.approx(b["speedup"], rel=1e-12)
    shown = table["schedule"].iloc[0]
    assert (None if pd.isna(shown) else json.loads(shown)) == sched
    assert table["schedule_verdict"].iloc[0] == (why or kpl.verdict(sched))
    md = (kload / "report.md").read_text()
    assert "## K per load" in md and "ngram, code:" in md


def test_the_schedule_ran_exactly_when_it_differs_between_loads(kload):
    table = pd.read_csv(kload / "report" / "tables" / "k_per_load.csv")
    shown = table["schedule"].iloc[0]
    sched = None if pd.isna(shown) else json.loads(shown)
    assert (kload / "ngram-kload").exists() == kpl.runnable(sched), sched
    if kpl.runnable(sched):
        s = json.loads((kload / "ngram-kload" / "summary.json").read_text())
        assert s["status"] == "ok" and s["speculative_config"]["num_speculative_tokens_per_batch_size"] == sched


def test_vllm_runs_a_per_load_schedule_and_the_report_sets_it_beside_fixed_k_and_the_baseline(kload):
    s = json.loads((kload / "ngram" / "summary.json").read_text())
    assert s["status"] == "ok" and s["crosscheck"]["ok"], s["error"]
    argv = s["server"]["argv"]
    spec = json.loads(argv[argv.index("--speculative-config") + 1])
    assert spec["num_speculative_tokens_per_batch_size"] == SCHEDULE and spec["num_speculative_tokens"] == 3

    def drafted(folder: str, c: int) -> list[int]:
        return [
            json.loads((kload / folder / "bench" / f"code-c{c}-r{r}.json").read_text()).get(
                "spec_decode_draft_tokens", 0
            )
            for r in range(REPEATS)
        ]

    assert drafted("ngram", 1) == drafted("ngram-k3", 1)  # K=3 at batch size 1, as fixed K=3
    assert sum(drafted("ngram", 2)) < sum(drafted("ngram-k3", 2))  # K=0 whenever two requests share a step
    table = pd.read_csv(kload / "report" / "tables" / "k_per_load.csv")
    ran = "ngram-kload" if (kload / "ngram-kload").exists() else "ngram"
    mine, base = raw_cells(kload, ran, -1), raw_cells(kload, "baseline", 0)
    for c, (_, row) in zip(CONCURRENCIES, table.iterrows()):
        want = statistics.median(x["output_throughput"] for x in mine if x["concurrency"] == c) / statistics.median(
            x["output_throughput"] for x in base if x["concurrency"] == c
        )
        assert row["schedule_method"] == ran
        assert row["schedule_speedup"] == pytest.approx(want, rel=1e-12)
    assert f"ran on vLLM 0.32.0 as {ran}" in (kload / "report.md").read_text()
