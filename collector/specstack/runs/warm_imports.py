"""What a sweep imports only after it measured, imported beside its first server's start (#42): pandas for each
method's tables (results/method_tables.py imports it where it writes them) and the report's pandas and matplotlib
(report/build.py). A command
starts without them (about 0.6 s of its start-up on the CPU host, before any server could start); imported on a
thread of their own while a server starts, which measures nothing, they cost no wall time, and the method's
wind-up and the report find them loaded. Joined before the method's first window: no import of this process
runs beside a measurement. Once a process: later methods find them in sys.modules."""

from __future__ import annotations

import importlib
import threading

MODULES = ("pandas", "specstack.report.build")

_thread: threading.Thread | None = None


def _import_all() -> None:
    for name in MODULES:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - the code that needs it imports it again and fails there, with its error
            return


def begin() -> None:
    """As a server starts; the first call of a process starts the thread, later ones do nothing."""
    global _thread
    if _thread is None:
        _thread = threading.Thread(target=_import_all, name="specstack-warm-imports", daemon=True)
        _thread.start()


def settle() -> None:
    """Before a window: the imports are done (a server start takes many times longer than they do)."""
    if _thread is not None:
        _thread.join()
