"""Errors a user sees as one line (the CLI prints ``graph-transformers: error: <message>``).

Each carries the process exit status the CLI returns for it (see ``docs/reliability.md``):
``2`` for a run that cannot start or continue because of its inputs (config, arguments, run
directory, data), ``1`` for a failure while training, ``3`` for a set of runs whose wall-clock
slice ended before all of them finished, ``143`` for a terminated run (SIGTERM), ``130`` for an
interrupted one (SIGINT, Ctrl-C).
"""
from __future__ import annotations


class RunError(RuntimeError):
    """A run that cannot start or continue (e.g. an existing run directory without --resume)."""

    exit_code = 2


class RunLockedError(RunError):
    """The run directory is locked by another live run; the message names the holder."""


class CheckpointError(RunError):
    """A checkpoint that cannot be read (missing, empty, truncated, not a checkpoint) or written
    (disk full, no permission); the message names the file and what is wrong."""


class CheckpointWriteError(CheckpointError):
    """A checkpoint could not be written (full disk, no permission) while training; the previous
    checkpoint is untouched."""

    exit_code = 1


class TrainingError(RunError):
    """Training cannot go on (e.g. a non-finite loss); the run directory keeps the last good
    checkpoint."""

    exit_code = 1


class RunUnfinished(RunError):
    """A run of a set (seeds, folds, configs) stopped before its schedule ended (its wall-clock
    slice, ``trainer.slice_minutes``, ran out, or it was interrupted), so the set has no summary
    yet; the message names the run and says how to continue: the same command plus ``--resume``."""

    exit_code = 3


class RunTerminated(RunError):
    """The run received SIGTERM (e.g. a scheduler's preemption); the message says how to resume.
    ``detail`` is the message without its advice on how to go on (where training stopped), for a
    caller that runs several trainings to give its own (``None``: the message has no such
    advice)."""

    exit_code = 143

    def __init__(self, message: str, detail: str | None = None):
        super().__init__(message)
        self.detail = detail


class RunInterrupted(RunTerminated):
    """The run received SIGINT (Ctrl-C); as :class:`RunTerminated` (the message says how to
    resume, ``detail`` where training stopped), with the shell's status for SIGINT, 128 + 2."""

    exit_code = 130


class UnsafeNameError(RunError, ValueError):
    """A name that becomes a file or folder (a config's ``name``, a run, fold or label name, a
    dataset name in a cache path) is not a plain name (a path separator, ``..``, an absolute
    path, a control character), or a path built from one would leave its root (the run or
    cache directory); the message names the name and where it came from."""


class DataError(ValueError):
    """A dataset file or cached dataset whose content cannot be used (non-finite labels,
    corrupt cache without raw data, graphs with out-of-range indices); the message names the
    file and the row or graph."""


class ConfigError(ValueError):
    """A configuration that cannot be used (an unknown key, a wrong type, a YAML syntax error, a
    bad ``--set`` override); the message, one line, names the offending key(s) or the file and
    line."""
