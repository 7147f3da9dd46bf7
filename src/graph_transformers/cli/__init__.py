"""The ``graph-transformers`` command line (thin: parse, load config, call ``training``): the
arguments (:mod:`.parser`), the training commands (:mod:`.training_commands`), the commands on
trained runs (:mod:`.run_commands`), and here the entry point :func:`main` with its logging, exit
statuses and Ctrl-C handling (``python -m graph_transformers.cli`` runs it too)."""
from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator

from .._warnings import filter_cli_warnings
from .parser import build_parser
from .quiet import quiet_output
from .run_commands import analyze, check_device, compare, evaluate, predict, table
from .sweep_command import sweep
from .training_commands import benchmark, params, slice_run, train

log = logging.getLogger("graph_transformers")

#: sub-command → its handler (each returns the exit status)
_COMMANDS = {"train": train, "slice": slice_run, "evaluate": evaluate, "predict": predict,
             "benchmark": benchmark, "params": params, "table": table, "compare": compare,
             "analyze": analyze, "check-device": check_device, "sweep": sweep}


class _NoAdverts(logging.Filter):
    """Drops Lightning's promotional 'Tip' lines."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Tip:" not in record.getMessage()


def _setup_logging(verbose: bool, quiet: bool = False) -> None:
    """Our messages go to stderr with a timestamp (WARNING and above only with ``quiet``);
    Lightning keeps its own handler (no duplicates through the root logger)."""
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s",
                                           datefmt="%H:%M:%S"))
    handler.set_name("graph-transformers-cli")
    ours = logging.getLogger("graph_transformers")
    for old in [h for h in ours.handlers if h.get_name() == "graph-transformers-cli"]:
        ours.removeHandler(old)  # one handler, bound to the current stderr
    ours.addHandler(handler)
    ours.setLevel(logging.DEBUG if verbose else logging.WARNING if quiet else logging.INFO)
    ours.propagate = False
    logging.getLogger("lightning.pytorch.utilities.rank_zero").addFilter(_NoAdverts())


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``graph-transformers`` console script.

    Args:
        argv: the arguments (default: ``sys.argv[1:]``).

    Returns:
        int: the exit status: 0, 2 for bad inputs (config, data, arguments), 1 for a training
        failure, 130 for Ctrl-C, 143 for SIGTERM (``docs/reliability.md``).
    """
    args = build_parser().parse_args(argv)
    quiet = bool(getattr(args, "quiet", False))  # train --quiet
    _setup_logging(args.verbose, quiet)
    filter_cli_warnings()
    from .._optional import MissingDependencyError
    from ..data.cache import DataNotFoundError
    from ..errors import RunError
    from ..training.config import ConfigError
    if args.command in ("benchmark", "evaluate", "analyze", "predict"):  # CPU work; training
        from ..training.allocator import keep_freed_memory  # decides by its accelerator (fit.train)
        keep_freed_memory()
    input_errors = (ConfigError, DataNotFoundError, MissingDependencyError, ValueError,
                    TypeError, FileNotFoundError, PermissionError)
    try:
        with _sigint_once(), quiet_output(quiet):
            return _COMMANDS[args.command](args)
    except KeyboardInterrupt:  # Ctrl-C outside training (which says where it stopped)
        print("graph-transformers: error: interrupted by SIGINT (Ctrl-C)", file=sys.stderr)
        return 130
    except RunError as err:  # exit status by kind: 2 inputs, 1 training failure, 143 SIGTERM,
        if args.verbose and err.exit_code not in (130, 143):  # 130 SIGINT
            raise
        print(f"graph-transformers: error: {err}", file=sys.stderr)
        return err.exit_code
    except (*input_errors, OSError) as err:  # OSError: e.g. a full disk outside a checkpoint write
        if args.verbose:
            raise
        print(f"graph-transformers: error: {_one_line(err)}", file=sys.stderr)
        return 2 if isinstance(err, input_errors) else 1
    except RuntimeError as err:  # torch.save of a dataset cache on a full disk, say
        from ..fileio import file_being_written, is_torch_write_failure
        if args.verbose or not is_torch_write_failure(err):
            raise
        where = file_being_written(err)
        print(f"graph-transformers: error: a file could not be written"
              f"{f' ({where})' if where else ''} (a full disk or a file-size limit; torch: "
              f"{str(err).splitlines()[0][-60:].strip()})", file=sys.stderr)
        return 1


@contextlib.contextmanager
def _sigint_once() -> Iterator[None]:
    """While the command runs (main thread only), the first SIGINT (Ctrl-C) raises
    ``KeyboardInterrupt`` as usual and every later one is ignored, so that a second Ctrl-C
    while the run stops (Lightning's teardown, the CLI's message) cannot escape as a traceback
    or change the exit status (always 130, ``docs/reliability.md``). After an interrupted
    command SIGINT stays ignored, as the process is ending (a later one would print a traceback
    from the interpreter's exit); otherwise the previous handler is restored."""
    import signal
    import threading
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []

    def handler(signum, frame):
        if not received:
            received.append(signum)
            raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN if received else previous)


def _one_line(err: BaseException) -> str:
    """An OS error as ``<what>: <path>``; other errors as their message."""
    if isinstance(err, OSError) and err.strerror:
        where = f": {err.filename}" if err.filename else ""
        return f"{err.strerror}{where}"
    return str(err)
