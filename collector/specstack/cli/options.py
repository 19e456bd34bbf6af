"""Options shared by several commands, and their translation into the engine's Options: the options of a method
run are built from Options' own fields (their flag(...) metadata, runs/options.py), so each is declared once."""

from __future__ import annotations

import argparse
import time
import types
from collections.abc import Callable
from dataclasses import Field, fields
from pathlib import Path
from typing import Any, get_args, get_type_hints

from specstack.config import methods
from specstack.config.flags import KEY, Flag, add_flag
from specstack.config.serving import Runtime
from specstack.config.workloads import TASKS
from specstack.errors import UserError
from specstack.runs.options import Options


def default_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S")


def _tokenizer(text: str) -> str:
    """A folder named by --tokenizer must be on this machine: the user asked for tokens, so a typo is refused
    instead of falling back to characters. A hub id is tried when the table is built (its failure is shown)."""
    if text.startswith(("/", ".", "~")) and not Path(text).expanduser().is_dir():
        raise argparse.ArgumentTypeError(
            f"no folder {text} on this machine; pass a tokenizer folder that exists "
            "here (one holding tokenizer.json) or a hub id"
        )
    return text


def add_tokenizer_option(p: argparse.ArgumentParser, recorded: str) -> None:
    """--tokenizer of report and compare: what counts the greedy outputs' first diverging token."""
    p.add_argument(
        "--tokenizer",
        type=_tokenizer,
        default=None,
        metavar="PATH_OR_HUB_ID",
        help=f"tokenizer folder or hub id for the greedy-output comparison (default: the target recorded "
        f"in {recorded}; characters if it is not on this machine, e.g. a bundle from another host)",
    )


def add_methods_option(p: argparse.ArgumentParser) -> None:
    """--methods of the commands that run several methods (sweep, slurm submit). Left out: services/methods.toml's
    [sweep] methods, the one default list, read when the command runs (sweep_methods), so a bad table refuses only
    the commands that need it."""
    p.add_argument(
        "--methods",
        default=None,
        help=f"comma-separated, in order (default: services/methods.toml's [sweep] methods, {_sweep_default_text()})",
    )


def _sweep_default_text() -> str:
    try:
        return ",".join(methods.default_sweep_methods())
    except methods.MethodError:
        return "which cannot be read: a sweep without --methods names why"


def sweep_methods(args: argparse.Namespace) -> str:
    """--methods as given, else [sweep] methods (comma-separated); a MethodError naming the fix for a bad table."""
    return args.methods if args.methods is not None else ",".join(methods.default_sweep_methods())


def run_tasks(tasks: str | None, datasets: list[str], workloads: tuple[str, ...] = ()) -> tuple[str, ...]:
    """--tasks plus each --dataset's and --workload's task; without --tasks, those alone (or the built-in tasks).
    A set the user names is measured: `--workload mine=P,A` alone measures mine, not code and chat beside it."""
    given = tuple(d.partition("=")[0] for d in datasets) + tuple(workloads)
    named = tuple(t for t in (tasks or "").split(",") if t) or (() if given else TASKS)
    return named + tuple(dict.fromkeys(n for n in given if n not in named))


# The Options fields that are options, in declaration order (the order --help lists them), with their Flag.
FLAGS: dict[str, tuple[Field, Flag]] = {f.name: (f, f.metadata[KEY]) for f in fields(Options) if KEY in f.metadata}
_HINTS = get_type_hints(Options)


def _parser_of(name: str) -> Callable[[str], Any] | None:
    """A plain field's value type as argparse's type: int, float or Path (int | None: int); else a string (a tuple
    or dict field declares its own parser)."""
    hint = _HINTS[name]
    kinds = get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
    return next((k for k in kinds if k in (int, float, Path)), None)


def add_option(p: argparse.ArgumentParser, name: str) -> None:
    """The option of Options field `name` as its Flag declares it, the field's default its default (or $ENV's)."""
    f, spec = FLAGS[name]
    add_flag(p, name, spec, f.default, _parser_of(name))


def add_run_options(p: argparse.ArgumentParser, *, single_k: bool = True) -> None:
    """The options of a method run (run, sweep, sweep-k): every shared Options field's. sweep-k adds its own --k
    (a list of K)."""
    for name, (_, spec) in FLAGS.items():
        if spec.shared:
            add_option(p, name)
        if name == "spec_override" and single_k:  # not a field: options_from_args merges it into spec_override
            p.add_argument("--k", type=int, default=None, help="shorthand for num_speculative_tokens")


def options_from_args(args: argparse.Namespace, method: str) -> Options:
    """The Options of a parsed command line: each field's option as parsed (a field whose option the command does
    not have keeps its default), then the few whose value is worked out from several options."""
    values = {
        name: getattr(args, spec.dest or name) for name, (_, spec) in FLAGS.items() if hasattr(args, spec.dest or name)
    }
    override = dict(args.spec_override or {})
    if getattr(args, "k", None) is not None:  # sweep-k has none: its --k is a list (dest ks)
        override["num_speculative_tokens"] = args.k
    workload_files = {}
    for item in args.workload:
        task, _, files = item.partition("=")
        perf, _, acc = files.partition(",")
        if not task or not perf or not acc:
            raise UserError(f"--workload expects TASK=PERF.jsonl,ACCEPTANCE.jsonl, got {item!r}")
        workload_files[task] = (Path(perf), Path(acc))
    values.update(
        run_id=args.run_id or default_run_id(),
        # --url names a server to attach to: alone it means the url runtime (Options.validate refuses it with native)
        runtime=args.runtime or (Runtime.URL if args.url else Runtime.NATIVE),
        tasks=run_tasks(args.tasks, args.datasets, tuple(workload_files)),
        datasets=tuple(args.datasets),
        workload_files=workload_files,
        spec_override=override or None,
        rates=() if args.rates == "auto" else args.rates,
        rates_auto=args.rates == "auto",
    )
    return Options(method=method, **values)
