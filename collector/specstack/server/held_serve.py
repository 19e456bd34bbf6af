"""`vllm serve` whose imports run before it is told to serve (#42): the native runtime starts it while the
harness's pre-flight runs (runtime.prestart_native), so the two vLLM imports of a run's first start (the
pre-flight's and the server's own, about 20 s each on a lent H100) overlap instead of following each other.

Held, it only imports what the `vllm` console script and `serve` import: no port, no GPU, no model, no engine
core. It then reads one line from stdin: `go LOG` moves what it printed so far into LOG, points its stdout and
stderr at LOG and runs vLLM's own CLI main with the `vllm serve` argument list (the same process, so the same pid,
group and leash as an unheld start). Anything else (EOF: the harness cancelled, or died) ends it without starting
anything.

Usage (by the native runtime, behind the leash): python -m specstack.server.held_serve PRE_LOG -- VLLM serve ARGS...
Only the standard library is imported before vLLM.
"""

from __future__ import annotations

import os
import sys

# Written to PRE_LOG once the imports are done: the harness's tests, and a reader of a server log, see where the
# held part ended
IMPORTED = "specstack: vLLM imported; held until the pre-flight passed"


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


def main(args: list[str]) -> int:
    if len(args) < 3 or args[1] != "--":
        sys.exit("usage: python -m specstack.server.held_serve PRE_LOG -- VLLM serve ARGS... (started by specstack)")
    pre_log, argv = args[0], args[2:]
    import vllm.entrypoints.cli.main as cli  # what the `vllm` console script imports
    import vllm.entrypoints.openai.api_server  # noqa: F401 (what `serve` imports before its first log line)

    print(IMPORTED, flush=True)
    line = sys.stdin.readline()
    if not line.startswith("go "):
        return 0  # cancelled: nothing was started
    release(pre_log, line[3:].rstrip("\n"))
    sys.argv = argv
    cli.main()
    return 0


if __name__ == "__main__":  # guarded: a spawned multiprocessing child imports this module again as __mp_main__
    sys.exit(main(sys.argv[1:]))
