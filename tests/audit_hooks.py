"""Audit hooks (``sys.addaudithook``) for tests of the moments between a command's
file operations: `opens_of` counts a path's opens and can swap a file in between them,
`run_at_rename` runs a real process when a file is renamed onto its target. No code of
ssgallery is replaced. `helpers` re-exports both."""

import contextlib
import os

_OPENS = []  # what the audit hook watches: one dict while an `opens_of` block runs


def _count_and_swap(event, args):
    if event != "open" or not _OPENS or not isinstance(args[0], (str, bytes, os.PathLike)):
        return
    seen = _OPENS[0]
    if os.fspath(args[0]) != seen["path"]:
        return
    seen["opens"] += 1
    if seen["other"] is not None and seen["opens"] > seen["after"] and not seen["swapped"]:
        os.replace(seen["other"], seen["path"])
        seen["swapped"] = True


@contextlib.contextmanager
def opens_of(path, swap_in=None, after=0):
    """Count the opens of ``path`` by Python's ``open`` inside the block (ssgallery reads
    a file's first bytes and its seal before HDF5 opens it); with ``swap_in``, put that
    file at ``path`` (``os.replace``) right before the open that follows the first
    ``after`` ones: a real file replaced between one command's reads, by an audit hook
    (``sys.addaudithook``, installed once per process; no code of ssgallery replaced).
    Yields a dict: ``opens``, ``swapped``."""
    import sys

    if not getattr(_count_and_swap, "installed", False):
        sys.addaudithook(_count_and_swap)
        _count_and_swap.installed = True
    seen = {"path": os.fspath(path), "other": None if swap_in is None else os.fspath(swap_in),
            "after": after, "opens": 0, "swapped": False}
    _OPENS.append(seen)
    try:
        yield seen
    finally:
        _OPENS.clear()


_AT_RENAME = []  # the rename hook's one job: [(target, command, results)] while armed


def _run_at_rename(event, args):
    if event != "os.rename" or not _AT_RENAME:
        return
    target, command, results = _AT_RENAME[0]
    if os.fspath(args[1]) == target and not results:
        import subprocess

        results.append(subprocess.run(command, capture_output=True, text=True, check=False,
                                      env=dict(os.environ, SSGALLERY_LOCK_TIMEOUT="1")))


@contextlib.contextmanager
def run_at_rename(target, command):
    """Run ``command`` (a real process, ``$SSGALLERY_LOCK_TIMEOUT`` 1 s) once, when a
    file is renamed onto ``target`` inside the block: the moment between a writer's
    check of its output and its rename, by an audit hook (``sys.addaudithook``,
    installed once per process; no code of ssgallery replaced). Yields the list that
    receives its ``subprocess.CompletedProcess``."""
    import sys

    if not getattr(_run_at_rename, "installed", False):
        sys.addaudithook(_run_at_rename)
        _run_at_rename.installed = True
    results = []
    _AT_RENAME[:] = [(os.path.realpath(target), command, results)]
    try:
        yield results
    finally:
        _AT_RENAME.clear()
