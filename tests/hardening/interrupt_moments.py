"""Deliver a real SIGINT or SIGTERM at every moment CPython may run a signal handler
in the writer's and the command line's code, during a real ``ssgallery enroll`` over an
existing store; print one JSON line per moment (used by test_processes.py).

    python interrupt_moments.py SIGNAL STORE NEW_FACES

CPython runs a Python signal handler only in the main thread, at a check of its "eval
breaker": when a function starts (RESUME), after a CALL (or CALL_FUNCTION_EX) returns
normally and at a backward jump (Python 3.11). An opcode trace (``sys.settrace`` with
``f_trace_opcodes``) finds each such moment in the frames of the watched files and
raises the signal there with ``signal.raise_signal``: the process's own handler then
runs at exactly that point, as it would for a signal from outside arriving just
before it. One run per moment, in this process (a fresh interpreter's state is reset
between runs: the written-outputs record, the default handlers).
"""

import contextlib
import dis
import io
import json
import os
import signal
import sys

WATCHED = ("ssgallery/__main__.py", "ssgallery/errors.py", "ssgallery/cli/__init__.py",
           "ssgallery/formats/atomic.py")
CHECKS = {dis.opmap["CALL"], dis.opmap["CALL_FUNCTION_EX"]}
RESUME, JUMP_BACKWARD = dis.opmap["RESUME"], dis.opmap["JUMP_BACKWARD"]


class Injector:
    """The opcode tracer: counts the handler-check moments, signals at the chosen one."""

    def __init__(self, signum, at, state):
        self.signum, self.at, self.state = signum, at, state
        self.count, self.where, self.killed = 0, "", None
        self.previous = {}  # frame id -> the opcode it executed last

    def __call__(self, frame, event, arg):  # the global trace function: frame starts
        if not frame.f_code.co_filename.replace(os.sep, "/").endswith(WATCHED):
            return None
        frame.f_trace_opcodes, frame.f_trace_lines = True, False
        self.previous[id(frame)] = None
        return self.local

    def local(self, frame, event, arg):
        if event != "opcode":
            return self.local
        code, at = frame.f_code.co_code, frame.f_lasti
        op, oparg = code[at], code[at + 1]
        last, after = self.previous.get(id(frame)) or (None, None)
        # after a CALL that returned (not one that raised: no check on that path)
        check = (op == RESUME and oparg < 2) or (last in CHECKS and at == after) \
            or last == JUMP_BACKWARD
        self.previous[id(frame)] = (op, at + 2 + 2 * dis._inline_cache_entries[op])
        if check:
            if self.count == self.at:
                sys.settrace(None)
                self.where = (f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno} "
                              f"{frame.f_code.co_name} {dis.opname[op]}")
                if signal.getsignal(self.signum) == signal.SIG_DFL:
                    self.killed = self.state()  # the process dies here: what it leaves
                    raise SystemExit(-self.signum)
                signal.raise_signal(self.signum)
            self.count += 1
        return self.local


def state(store, old):
    """(temporary files beside ``store``, whether it was replaced, its clients)."""
    from ssgallery.formats.atomic import TMP_MARK
    from ssgallery.formats.store import load_store

    folder = os.path.dirname(store)
    with open(store, "rb") as handle:
        replaced = handle.read() != old
    return {"leftovers": sorted(n for n in os.listdir(folder) if TMP_MARK in n),
            "replaced": replaced, "clients": len(load_store(store).clients)}


def run_once(signum, at, argv, store, old):
    """One ``ssgallery enroll`` signalled at moment ``at`` (-1: never)."""
    from ssgallery.__main__ import run
    from ssgallery.formats.atomic import forget_written

    with open(store, "wb") as handle:
        handle.write(old)
    forget_written()
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    injector = Injector(signum, at, lambda: state(store, old))
    err, code = io.StringIO(), None
    saved_argv, sys.argv = sys.argv, ["ssgallery", *argv]
    sys.settrace(injector)
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            run()
    except SystemExit as exc:
        code = exc.code
    except BaseException as exc:  # noqa: BLE001 - what escapes is the finding
        code = f"escaped: {exc!r}"
    finally:
        sys.settrace(None)
        sys.argv = saved_argv
    return injector, code, err.getvalue()


def main():
    name, store, faces = sys.argv[1:4]
    signum = getattr(signal, name)
    argv = ["enroll", faces, "--store", store]
    with open(store, "rb") as handle:
        old = handle.read()
    run_once(signum, -1, argv, store, old)  # imports the modules: their code runs once
    total = run_once(signum, -1, argv, store, old)[0].count
    for at in range(total):
        injector, code, err = run_once(signum, at, argv, store, old)
        after = injector.killed or state(store, old)
        for leftover in after["leftovers"]:
            os.unlink(os.path.join(os.path.dirname(store), leftover))
        print(json.dumps({"moment": injector.where, "killed": injector.killed is not None,
                          "code": code, "stderr": err, **after}), flush=True)


if __name__ == "__main__":
    main()
