"""How a method run ends, whatever ends it (runs/method_run.py records each cause here).

Only a run whose every phase completed can be published ok. A phase's own failure (ServerError, UserError: a server
that did not come up, a contradiction) fails the method with its message, and a sweep goes on with the next method.
A signal (KeyboardInterrupt, interrupts.py) fails it as interrupted and ends the command. Any other exception, of
whatever type, fails it too: its type and message in the summary, where it was raised in the bundle's traceback.txt;
then the command ends with one line and exit 1 (MethodCrashed) instead of a traceback, and a sweep stops there: it is
a specstack bug or a server answering what no vLLM would, which the next method would likely meet again. A full disk
or an unwritable run folder ends it the same way with the fix named (BundleNotWritten). In every case the server is
stopped and the bundle kept as `<method>.failed-<time>/` (the manifest says failed, a resumed sweep runs it again).
"""

from __future__ import annotations

import errno
import traceback
from pathlib import Path

from specstack import interrupts
from specstack.errors import UserError
from specstack.results import layout
from specstack.results.files import FULL, atomic_write_text, unwritable_message
from specstack.results.summary import Summary
from specstack.server.runtime import ServerError

EXPECTED = (ServerError, UserError)  # a phase's own failures: the method fails, the sweep goes on
UNWRITABLE = (errno.EROFS, errno.EACCES, errno.EPERM)


class RunBroke(Exception):
    """A method run ended by something no phase expects, its bundle kept as failed: the command says it in one line
    (specstack: error: ...) and exits 1, the run having started (docs/errors.md)."""

    exit_code = 1


class MethodCrashed(RunBroke):
    """An unexpected exception ended a method run."""


class BundleNotWritten(RunBroke):
    """The run folder could not be written any more: the disk is full, or it became read-only."""


class Ending:
    """The causes that ended one method run, first cause first: the phases', then any the wind-up met."""

    def __init__(self) -> None:
        self.interrupt: KeyboardInterrupt | None = None
        self.unexpected: list[BaseException] = []

    @property
    def interrupted(self) -> bool:
        return self.interrupt is not None

    def record(self, summary: Summary, error: BaseException, *, window_failed: bool = False) -> Summary:
        """The summary with the cause in it (its status is derived from "error" when it is published)."""
        if isinstance(error, KeyboardInterrupt):
            self.interrupt = self.interrupt or error
            return summary.updated(error=interrupts.reason(error), error_type="Interrupted")
        if isinstance(error, EXPECTED):
            if window_failed:  # the failed windows say why, first cause first (method_summary.finish)
                return summary.updated(error_type=type(error).__name__)
            return summary.updated(error_type=type(error).__name__, error=str(error))
        self.unexpected.append(error)
        text = f"unexpected {describe(error)}"
        if summary.error is None:
            return summary.updated(error=text, error_type=type(error).__name__)
        return summary.updated(error=f"{summary.error}; then, while finishing: {text}")

    def write_traceback(self, folder: Path) -> None:
        """Where each unexpected exception was raised, into the method's folder (staged or published)."""
        if self.unexpected:
            atomic_write_text(
                Path(folder) / layout.TRACEBACK_FILE,
                "\n".join("".join(traceback.format_exception(e)) for e in self.unexpected),
            )

    def raise_if_fatal(self, method: str, run_dir: Path, published: Path | None) -> None:
        """After publishing: a signal ends the command as before; an unexpected exception ends it as RunBroke."""
        if self.interrupt is not None:
            raise self.interrupt
        if not self.unexpected:
            return
        cause = self.unexpected[0]
        kept = f"; kept as {published}" if published is not None else "; nothing of it was kept"
        if isinstance(cause, OSError) and (
            cause.errno in FULL or cause.errno in UNWRITABLE and str(cause.filename or "").startswith(str(run_dir))
        ):
            raise BundleNotWritten(
                f"{method} failed writing its bundle: {unwritable_message(run_dir, cause)}{kept}"
            ) from cause
        where = f" ({layout.TRACEBACK_FILE} there shows where)" if published is not None else ""
        raise MethodCrashed(
            f"{method} failed: unexpected {describe(cause)}{kept}{where}. Rerun the same command to "
            "run it again; if it happens again, it is likely a specstack bug: please report it with "
            "that file"
        ) from cause


def describe(error: BaseException) -> str:
    """The type and the first line of the message, at most 300 characters: one line."""
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0][:300] if text else '(no message)'}"
