"""`vllm serve` whose imports run before it is told to serve (#42): the native runtime starts it while the
harness's pre-flight runs (runtime.prestart_native), so the two vLLM imports of a run's first start (the
pre-flight's and the server's own, about 20 s each on a lent H100) overlap instead of following each other; and a
sweep starts each later method's server so as the method before starts its own (runs/next_server.py).

Held, it only imports what the `vllm` console script and `serve` import: no port, no GPU, no model, no engine
core; it prints IMPORTED with the time they ended (the harness reads it at the release, so that the time
breakdown counts the pre-flight's seconds beside those imports as the start). It then reads one line from stdin:
`go LOG` moves what it printed so far into LOG, points its stdout and stderr at LOG and runs vLLM's own CLI main
with the `vllm serve` argument list (the same process, so the same pid, group and leash as an unheld start).
Anything else (EOF: the harness cancelled, or died) ends it without starting anything.

Before its imports it starts modelinfo_cache.py's process for the model folders it is given (the target's, a
drafter's), so that vLLM's model-class inspection, which a fresh cache root makes the first start pay after the
release, runs while held; the release waits for it (it started first, so it ends first).

Usage (by the native runtime, behind the leash):
  python -m specstack.server.held_serve PRE_LOG [MODEL_DIR...] -- VLLM serve ARGS...
Only the standard library is imported before vLLM.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

from specstack.server import modelinfo_cache

# Written to PRE_LOG once the imports are done: the harness's tests, and a reader of a server log, see where the
# held part ended
IMPORTED = "specstack: vLLM imported; held until its method's checks passed"
# ... followed by when (epoch seconds): the harness reads it at the release, to tell how much of its own pre-flight
# the server's imports ran beside (the time breakdown counts those seconds as the server's start)
_IMPORTED_AT = re.compile(re.escape(IMPORTED) + r" \(imports done at (\d+(?:\.\d+)?)\)")


def imported_line(at: float) -> str:
    return f"{IMPORTED} (imports done at {at:.3f})"


def imported_at(printed: str) -> float | None:
    """When a held server's imports ended (epoch seconds), from what it printed; None while it still imports."""
    found = _IMPORTED_AT.search(printed)
    return float(found.group(1)) if found else None


def release(pre_log: str, log: str) -> None:
    """What was printed while held goes first into LOG; from here on stdout and stderr are LOG, stdin /dev/null
    (as an unheld start's)."""
    sys.stdout.flush()
    sys.stderr.flush()
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    with open(pre_log, "rb") as held:
        while chunk := held.read(1 << 16):
            os.write(fd, chunk)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    os.unlink(pre_log)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)


# The longest the release waits for the model-class cache: past it vLLM inspects the class itself, as unheld
MODELINFO_WAIT_S = 120.0


def finish(cache_filler: subprocess.Popen | None, *, wait: bool) -> None:
    if cache_filler is None:
        return
    if wait:
        try:
            cache_filler.wait(MODELINFO_WAIT_S)
            return
        except subprocess.TimeoutExpired:
            pass
    cache_filler.kill()
    cache_filler.wait()


def main(args: list[str]) -> int:
    if len(args) < 3 or "--" not in args[1:]:
        sys.exit(
            "usage: python -m specstack.server.held_serve PRE_LOG [MODEL_DIR...] -- VLLM serve ARGS... "
            "(started by specstack)"
        )
    split = args.index("--", 1)
    pre_log, model_dirs, argv = args[0], args[1:split], args[split + 1 :]
    cache_filler = modelinfo_cache.start(model_dirs)
    try:
        import vllm.entrypoints.cli.main as cli  # what the `vllm` console script imports
        import vllm.entrypoints.openai.api_server  # noqa: F401 (what `serve` imports before its first log line)

        print(imported_line(time.time()), flush=True)
        line = sys.stdin.readline()
    except BaseException:
        finish(cache_filler, wait=False)
        raise
    if not line.startswith("go "):
        finish(cache_filler, wait=False)
        return 0  # cancelled: nothing was started
    finish(cache_filler, wait=True)  # its line, if any, then lands in what release moves to the log
    release(pre_log, line[3:].rstrip("\n"))
    sys.argv = argv
    cli.main()
    return 0


if __name__ == "__main__":  # guarded: a spawned multiprocessing child imports this module again as __mp_main__
    sys.exit(main(sys.argv[1:]))
