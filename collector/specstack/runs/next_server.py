"""A sweep's next server, started held (server/held_serve.py) as this method's server starts (#42). Every start
after a sweep's first spent about 20 s importing vLLM before its first log line (the process column, a lent H100,
docs/measured.md); held, those imports run beside this method's start, which measures nothing, and the process then
waits on its stdin, using no CPU, through this method's windows. The next method's checks release it instead of
starting another (runs/checks.py), or cancel it where its plan is no longer theirs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from specstack.server.runtime import Server, wait_imported

# The longest this method's first window waits for the next server's imports (20-26 s on a lent H100); past it
# the windows run anyway, their "other processes' CPU" (measure/cpu_share.py) showing what the imports took
IMPORT_WAIT_S = 180.0


@dataclass
class NextServer:
    """start: the next method's server, held, or None (no next method to run, or not a native one)."""

    start: Callable[[], Server | None]
    server: Server | None = None

    def begin(self) -> None:
        """As this method's server starts."""
        try:
            self.server = self.start()
        except Exception:  # noqa: BLE001 - the next method's own checks name what is wrong with it, in its turn
            self.server = None

    def settle(self) -> None:
        """Before this method's first window: no vLLM import runs beside a measurement."""
        if self.server is not None:
            wait_imported(self.server, IMPORT_WAIT_S)
