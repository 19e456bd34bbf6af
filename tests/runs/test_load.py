"""Open-loop cells inside a method run (runs/load.py) without a server: the bench argv of a rate cell, the rates
--rates auto derives from the baseline's own cells and records for the run's other methods, the capacity search
driven by the cells' SLO shares, and the options that cannot work refused with the fix."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from specstack.cli.options import add_run_options, options_from_args
from specstack.config.workloads import load_task
from specstack.errors import UserError
from specstack.measure import bench
from specstack.measure.windows import Outcome
from specstack.results.summary import Summary
from specstack.runs import load
from specstack.runs.options import Options
from specstack.server.runtime import Server
from tests.support import serve_plan

pytestmark = pytest.mark.unit

SLO = {"ttft": 100.0}


def _task(tmp_path: Path):
    perf, acc = tmp_path / "p.jsonl", tmp_path / "a.jsonl"
    perf.write_text('{"prompt": "hi", "output_tokens": 4}\n')
    acc.write_text('{"id": "x", "prompt": "hi", "max_tokens": 4}\n')
    return load_task("code", perf, acc, default_max_tokens=4)


def test_a_rate_cell_sends_at_the_rate_without_a_concurrency_cap(tmp_path):
    server = Server("http://127.0.0.1:1", "spec-demo", "url")
    common = dict(num_prompts=8, output_len=16, tokenizer="tok", result_dir=tmp_path, result_name="x.json")
    open_loop = bench.bench_command(
        server, _task(tmp_path), concurrency=None, request_rate=2.5, burstiness=0.5, **common
    )
    assert "--max-concurrency" not in open_loop
    assert open_loop[open_loop.index("--request-rate") + 1] == "2.5"
    assert open_loop[open_loop.index("--burstiness") + 1] == "0.5"
    closed = bench.bench_command(server, _task(tmp_path), concurrency=4, request_rate=None, **common)
    assert closed[closed.index("--max-concurrency") + 1] == "4" and "--burstiness" not in closed
    assert closed[closed.index("--request-rate") + 1] == "inf"
    # every cell keeps bench's per-request data (stalls, burst reads, percentiles recomputable from the bundle)
    assert closed.count("--save-detailed") == open_loop.count("--save-detailed") == 1


def test_cell_names_keep_the_kinds_apart():
    assert bench.cell_name("code", 0, concurrency=4) == "code-c4-r0"
    assert bench.cell_name("code", 2, rate=0.5) == "code-rate0.5-r2"
    assert bench.cell_name("code", 0, rate=12.0, probe=True) == "code-probe12-r0"


class FakeRun:
    """What runs/load.py uses of a MethodRun; each bench cell 'measures' a share of requests meeting the SLO."""

    def __init__(
        self,
        run_dir: Path,
        method: str,
        baseline: str | None,
        opts: Options,
        share_at=lambda r: 1.0,
        rps: dict | None = None,
    ):
        self.opts, self.run_dir, self.summary = opts, run_dir, Summary.make()
        self.plan = serve_plan(method=method, baseline=baseline)
        self.tasks = {"code": None}
        self.console = SimpleNamespace(print=lambda *a, **k: None)
        self.share_at, self.rps, self.cells = share_at, rps or {}, []

    def bench_result(self, cell: str) -> dict | None:
        return {"request_throughput": self.rps[cell]} if cell in self.rps else None

    def bench_cell(self, task, repeat, *, rate=None, probe=False, concurrency=None):
        self.cells.append(bench.cell_name(task.name, repeat, rate=rate, probe=probe))
        good = round(10 * self.share_at(rate))
        per_request = {
            "ttfts": [0.01] * good + [1.0] * (10 - good),
            "latencies": [0.5] * 10,
            "output_lens": [4] * 10,
            "errors": [""] * 10,
            "duration": 5.0,
        }
        return None, Outcome(bench=per_request)


def _opts(tmp_path, **kw) -> Options:
    return Options(method="baseline", run_id="r", results_dir=tmp_path, concurrencies=(1, 4), slo=SLO, **kw)


def test_auto_rates_come_from_the_baseline_capacity_and_every_method_reuses_them(tmp_path):
    opts = _opts(tmp_path, rates_auto=True, repeats=3)
    rps = {f"code-c4-r{r}": v for r, v in enumerate((8.0, 10.0, 9.0))} | {"code-c1-r0": 50.0}
    base = FakeRun(tmp_path, "baseline", None, opts, rps=rps)
    load.run_open_loop(base, SimpleNamespace(name="code"))
    # × median 9 req/s at c=4
    assert base.summary.to_json()["load"]["tasks"]["code"]["rates"] == [2.25, 4.5, 6.75, 9.0]
    recorded = json.loads((tmp_path / "manifest.json").read_text())["load_rates"]["baseline"]["code"]
    assert recorded["capacity_req_s"] == 9.0 and "median of 3 repeat(s) at concurrency 4" in recorded["how"]
    spec = FakeRun(tmp_path, "ngram", "baseline", opts)
    load.check_rates_known(spec)
    load.run_open_loop(spec, SimpleNamespace(name="code"))
    assert spec.summary.to_json()["load"]["tasks"]["code"]["rates"] == [2.25, 4.5, 6.75, 9.0]
    assert spec.cells[:3] == ["code-rate2.25-r0", "code-rate2.25-r1", "code-rate2.25-r2"]


def test_a_method_without_its_baseline_rates_fails_before_its_server_starts(tmp_path):
    spec = FakeRun(tmp_path, "mtp", "mtp-baseline", _opts(tmp_path, rates_auto=True))
    with pytest.raises(UserError, match="no rates from its baseline 'mtp-baseline' for task 'code'; run mtp-baseline"):
        load.check_rates_known(spec)


def test_capacity_search_runs_probes_as_cells_and_records_the_bracket(tmp_path):
    opts = _opts(tmp_path, rates=(1.0, 8.0), capacity_share=0.9, capacity_probes=3, capacity_resolution=0.5)
    run = FakeRun(tmp_path, "baseline", None, opts, share_at=lambda r: 1.0 if r <= 3.0 else 0.5)
    load.run_open_loop(run, SimpleNamespace(name="code"))
    cap = run.summary.to_json()["load"]["tasks"]["code"]["capacity"]
    assert run.cells[:2] == ["code-rate1-r0", "code-rate8-r0"]
    assert run.cells[2:] == [f"code-probe{p['rate']:g}-r0" for p in cap["probes"]] and len(cap["probes"]) <= 3
    assert cap["rate"] <= 3.0 < cap["bound"] and cap["share"] == 0.9 and cap["slo"] == SLO


@pytest.mark.parametrize(
    "fields, message",
    [
        (dict(rates=(0.0, 1.0)), "--rates must be positive, finite"),
        (dict(rates=(1.0, 1.0)), "--rates lists a rate twice"),
        (dict(burstiness=0.5), "--burstiness shapes the arrivals of open-loop cells; add --rates"),
        (dict(rates=(1.0,), burstiness=0.0), "--burstiness must be > 0"),
        (dict(rates_max_concurrency=4), "--rates-max-concurrency caps the requests in flight of open-loop cells"),
        (dict(rates=(1.0,), rates_max_concurrency=0), "it needs --rates and a value > 0, got 0"),
        (
            dict(rates=(1.0,), capacity_share=0.9),
            "--capacity searches the highest rate meeting the SLO: it needs --slo",
        ),
        (dict(capacity_share=0.9, slo=SLO), r"it needs --slo \(the targets\) and --rates"),
        (dict(rates=(1.0,), slo=SLO, capacity_share=1.5), r"--capacity is the share of requests .* in \(0, 1\]"),
        (dict(rates=(1.0,), slo=SLO, capacity_share=0.9, capacity_resolution=0.0), "--capacity-resolution > 0"),
    ],
)
def test_load_options_that_cannot_work_are_refused(tmp_path, fields, message):
    with pytest.raises(UserError, match=message):
        Options(method="baseline", run_id="r", results_dir=tmp_path, **fields).validate()


def test_the_command_line_reads_rates_and_auto(tmp_path):
    p = argparse.ArgumentParser()
    add_run_options(p)
    opts = options_from_args(
        p.parse_args(
            [
                "--rates",
                "0.5,2",
                "--burstiness",
                "0.5",
                "--slo",
                "ttft:100",
                "--capacity",
                "0.9",
                "--rates-max-concurrency",
                "8",
            ]
        ),
        "ngram",
    )
    assert (opts.rates, opts.rates_auto, opts.burstiness, opts.capacity_share, opts.rates_max_concurrency) == (
        (0.5, 2.0),
        False,
        0.5,
        0.9,
        8,
    )
    opts.validate()
    assert options_from_args(p.parse_args(["--rates", "auto"]), "ngram").rates_auto
    with pytest.raises(SystemExit):
        p.parse_args(["--rates", "fast"])


def test_a_method_run_caps_open_loop_cells_only_when_asked(tmp_path, monkeypatch):
    from specstack.runs.method_run import MethodRun

    monkeypatch.setattr(bench, "run_bench", lambda argv, *a: argv)  # the cell's argv instead of a bench run
    fake = SimpleNamespace(
        server=Server("http://127.0.0.1:1", "spec-demo", "url"),
        plan=serve_plan(target="tok"),
        bundle=SimpleNamespace(path=lambda rel: tmp_path / rel),
        windows=SimpleNamespace(run=lambda window, total, body: (window, body())),
    )

    def flag(argv, name):
        return argv[argv.index(name) + 1] if name in argv else None

    for cap in (None, 3):
        fake.opts = Options(
            method="baseline",
            run_id="r",
            results_dir=tmp_path,
            rates=(2.0,),
            request_rate=9.0,
            rates_max_concurrency=cap,
        )
        window, argv = MethodRun.bench_cell(fake, _task(tmp_path), 1, rate=2.0)
        assert (window.name, window.load, window.request_rate, window.concurrency) == (
            "bench/code-rate2-r1",
            "rate",
            2.0,
            cap,
        )
        assert flag(argv, "--request-rate") == "2.0" and flag(argv, "--max-concurrency") == (cap and str(cap))
    window, argv = MethodRun.bench_cell(fake, _task(tmp_path), 0, concurrency=4)
    assert (window.name, window.load, window.request_rate, window.concurrency) == (
        "bench/code-c4-r0",
        "concurrency",
        None,
        4,
    )
    assert flag(argv, "--request-rate") == "9.0" and flag(argv, "--max-concurrency") == "4"  # --request-rate
