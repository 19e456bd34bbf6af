"""Every file and folder name of a run's bundle, in one place: results/<run-id>/ and its <method>/ folders.

Paths are relative (to the run folder, or to a method folder where marked) and use `/`, as the manifest and the
summary record them. Nothing outside results/ spells these names (tests/results/test_layout.py keeps it so).
Standard library only: host/ (run by the host's python3) imports it too.
"""

from __future__ import annotations

# --- the run folder ---------------------------------------------------------------------------------------
MANIFEST = "manifest.json"  # the run's recipe, inputs' sha256 and each method's status (bundle.update_manifest)
SUMS = "SHA256SUMS"  # sha256 of every file of the run, written at its end (results/archive.py)
TABLES_FILE = "tables.txt"  # the console tables as the run printed them at its end
REPORT_MD = "report.md"  # `specstack report`: the comparison report
REPORT_HTML = "report.html"  # the same report, plots embedded
REPORT_DIR = "report"  # `specstack report`: its plots and report/tables/
REPORT_TABLES_DIR = f"{REPORT_DIR}/tables"  # the report's tidy tables, one .csv and one .parquet each
INPUTS_DIR = "inputs"  # the workload files the run measured (built-in tasks, datasets, turn-2 chats)
HOST_DIR = "host-provenance"  # what `make` wrote on the host per result: image digests, server logs, pods
SLURM_DIR = ".slurm"  # `specstack slurm submit`: its scripts, plans, job ids and the tasks' logs (a
# dot folder: the reader, the archive and SHA256SUMS pass over it)
SLURM_SUBMISSIONS = f"{SLURM_DIR}/submissions.json"  # every submit's job ids and methods, in order
NOT_METHODS = (INPUTS_DIR, HOST_DIR, REPORT_DIR)  # the run folder's folders that are no method's result
FAILED_MARK = ".failed-"  # <method>.failed-<time>/: a failed attempt, listed, never used as data
REPLACED_MARK = ".replaced-"  # <method>.replaced-<time>/: the result --force replaced, kept, ignored
STAGING_MARK = ".staging-"  # .<method>.staging-<random>/: a method's files while it runs (results/bundle.py)
RUN_LOCK = ".specstack.lock"  # held (flock) by the one harness measuring into the run (results/run_lock.py)


def report_table(name: str, ext: str) -> str:
    """One tidy table of the report (ext: csv or parquet)."""
    return f"{REPORT_TABLES_DIR}/{name}.{ext}"


def failed_dir(method: str, stamp: str) -> str:
    return f"{method}{FAILED_MARK}{stamp}"


def replaced_dir(method: str, stamp: str) -> str:
    return f"{method}{REPLACED_MARK}{stamp}"


def staging_prefix(method: str) -> str:
    """The start of a method's staging folder's name (a dot folder: the reader and the archive pass over it)."""
    return f".{method}{STAGING_MARK}"


def staged_method(name: str) -> str | None:
    """The method a staging folder's name belongs to; None for any other name."""
    if not name.startswith(".") or STAGING_MARK not in name:
        return None
    return name[1:].rsplit(STAGING_MARK, 1)[0] or None


# --- inputs/ (names inside it: the task loaders are handed the folder) -------------------------------------
def perf_input(task: str) -> str:
    """The task's bench prompts (vllm bench serve's custom dataset)."""
    return f"{task}.perf.jsonl"


def acceptance_input(task: str) -> str:
    """The task's acceptance-phase rows (prompt, max_tokens, category, turn2)."""
    return f"{task}.acceptance.jsonl"


def dataset_record(task: str) -> str:
    """Which rows of a pinned dataset the task holds, and how they were chosen."""
    return f"{task}.dataset.json"


TURN2_MARK = ".turn2."  # in the turn-2 chats' names, as the manifest's inputs list them


def turn2_input(task: str, baseline: str) -> str:
    """The turn-2 chats the baseline's turn-1 answers made, the same for every method (runs/turns.py)."""
    return f"{task}{TURN2_MARK}{baseline}.jsonl"


# --- host-provenance/ -------------------------------------------------------------------------------------
def host_record(name: str) -> str:
    """`make run`'s record of one result (name: its folder): image digests, GPU, CPU, model snapshots."""
    return f"{HOST_DIR}/{name}.json"


def host_server_log(name: str) -> str:
    """This start's lines of the result's server container log (compose)."""
    return f"{HOST_DIR}/{name}.server.log"


def host_pod(method: str) -> str:
    """The k8s Job's pod as it ran (k8s/gather.py)."""
    return f"{HOST_DIR}/{method}.pod.json"


def host_container_log(method: str, container: str) -> str:
    """One container's log of the k8s Job's pod."""
    return f"{HOST_DIR}/{method}.{container}.log"


# --- a method folder (paths relative to it) ---------------------------------------------------------------
SUMMARY_FILE = "summary.json"  # the method's figures and verdict (bundle.MethodBundle.write_summary)
TRACEBACK_FILE = "traceback.txt"  # a run ended by an unexpected exception: where it was raised (runs/outcome.py)
SAMPLER_PROBE_FILE = "sampler-probe.json"  # the engine sampler probe's full verdict (runs/sampler_probe.py)
SERVER_LOG = "server.log"  # the server's log, on every runtime that has one
PACKAGES_FILE = "provenance/packages.txt"  # `pip freeze` of the collector that measured (reproduce's drift check)
WARMUP_RECORDS = "warmup.jsonl"  # the warm-up requests' records
METHOD_TABLES_DIR = "tables"  # per-method tidy tables: requests, windows, checks, bench (.csv)
BENCH_DIR = "bench"  # one bench cell each: <cell>.json (bench's result), .log, .cmd
COMMAND_SUFFIX = ".cmd"  # beside a bench log: the command line that ran, to rerun the cell by hand


def acceptance_records(task: str) -> str:
    """The acceptance phase's request records (greedy, turn 1)."""
    return f"acceptance/{task}.jsonl"


def turn2_records(task: str) -> str:
    """--turns 2: turn 2's request records."""
    return f"acceptance/{task}.turn2.jsonl"


def sampled_records(task: str, temperature: float) -> str:
    """--temperatures: one sampled phase's request records."""
    return f"sampled/{task}-t{temperature:g}.jsonl"


def method_table(name: str) -> str:
    return f"{METHOD_TABLES_DIR}/{name}.csv"


def bench_file(cell: str) -> str:
    """A bench cell's result as `vllm bench serve` wrote it (the summary's cell `file`)."""
    return f"{BENCH_DIR}/{cell}.json"


def bench_log(cell: str) -> str:
    return f"{BENCH_DIR}/{cell}.log"


def bench_cell(path: str) -> str:
    """The cell of a bench file or window: `bench/<cell>.json`, `../<method>-s<i>/bench/<cell>.json` (a merged
    session's), `bench/<cell>` -> `<cell>`."""
    return path.rsplit(f"{BENCH_DIR}/", 1)[-1].removesuffix(".json")


# --- windows: a window's name is its snapshots' file stem, so it is named here too ----------------------------
def acceptance_window(task: str) -> str:
    return f"acceptance/{task}"


def turn2_window(task: str) -> str:
    return f"acceptance/{task}/turn2"


def sampled_window(task: str, temperature: float) -> str:
    return f"sampled/{task}/t{temperature:g}"


def bench_window(cell: str) -> str:
    """A bench cell's window: its file's path without .json (the report matches the two)."""
    return f"{BENCH_DIR}/{cell}"


def snapshot(window: str, edge: str) -> str:
    """The server's /metrics at one edge (before, after) of a window, as scraped."""
    return f"snapshots/{window.replace('/', '_')}.{edge}.prom"


# --- a comparison's folder (`specstack compare`, `specstack reproduce`): beside the runs, never inside a bundle ---
COMPARE_MD = "compare.md"
COMPARE_HTML = "compare.html"  # the same, plots embedded
COMPARE_JSON = "compare.json"  # every figure, paired, with its verdict
REPRODUCE_VERDICT = "reproduce.json"  # `specstack reproduce`: reproduced or not, drift and failures


def compare_dir(run_a: str, run_b: str) -> str:
    """The comparison of run A with run B, beside run B (names already made safe for a folder)."""
    return f"compare-{run_a}-vs-{run_b}"
