"""The hardening selection (issue 8 item 6): generated hostile corpora, run through the
real CLI in worker processes that are killed when they hang. ``pytest -m hardening``
runs only these; ``make test`` runs them with the rest. Each test prints its counts."""

import json
import os
import selectors
import signal
import subprocess
import sys
import time

import pytest

ENV = dict(os.environ, OMP_NUM_THREADS="1")  # a program's: one BLAS thread


def cli(*args):
    """The command line as a program: ``python -m ssgallery ARGS`` (paths as text)."""
    return [sys.executable, "-m", "ssgallery", *map(str, args)]


WORKER = r"""
import json, sys
from click.testing import CliRunner
from ssgallery.cli import main
runner = CliRunner()
for line in sys.stdin:
    job = json.loads(line)  # [args...] or {"args": [...], "env": {name: value or None}}
    args, env = (job, None) if isinstance(job, list) else (job["args"], job["env"])
    r = runner.invoke(main, args, env=env)
    exc = r.exception
    crash = None if exc is None or isinstance(exc, SystemExit) else repr(exc)
    print(json.dumps({"code": r.exit_code, "stdout": r.stdout, "stderr": r.stderr,
                      "crash": crash}), flush=True)
"""


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/hardening/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.hardening)


class Workers:
    """Runs CLI invocations in a long-lived worker process (one interpreter start for
    many runs); a run that does not answer within ``timeout`` seconds is a hang: the
    worker's whole process group is killed with SIGKILL and a new worker started."""

    def __init__(self, timeout=30.0, env=None):
        self.timeout = timeout
        self.env = dict(os.environ, OMP_NUM_THREADS="1", **(env or {}))
        self.proc = None
        self.hangs = 0

    def _start(self):
        self.proc = subprocess.Popen([sys.executable, "-c", WORKER], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True, env=self.env, start_new_session=True)

    def run(self, args, env=None):
        """{"code", "stdout", "stderr", "crash"} or {"hang": True}. ``env``: variables
        set (a value) or unset (None) for this run only."""
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        job = [str(a) for a in args]
        if env is not None:
            job = {"args": job, "env": env}
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if sel.select(timeout=max(0.0, deadline - time.monotonic())):
                line = self.proc.stdout.readline()
                if line:
                    return json.loads(line)
                break  # the worker died
        self.close()
        self.hangs += 1
        return {"hang": True}

    def close(self):
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
            self.proc = None


@pytest.fixture
def workers():
    pool = Workers()
    yield pool
    pool.close()


def clean_error(result):
    """Exit 2, stderr ending in exactly one line ``ssgallery: error: ...`` (a progress
    label such as "compressing" may come before it), no traceback."""
    stderr = result.get("stderr", "")
    lines = stderr.strip().splitlines()
    return (result.get("code") == 2 and bool(lines) and not result.get("crash")
            and lines[-1].startswith("ssgallery: error: ")
            and sum(line.startswith("ssgallery: error: ") for line in lines) == 1
            and "Traceback" not in stderr)


CHANGED = "changed verdicts, impostor still rejected"
KINDS = ("clean errors", "unchanged verdicts", CHANGED, "accepts", "tracebacks", "hangs",
         "other")


def classify(result, baseline):
    """What a ``verify <impostor> <genuine>`` run on a damaged or attacked file did,
    beside the intact file's ``baseline`` run: one of `KINDS` ("accepts": the impostor,
    the first probe, accepted)."""
    if result.get("hang"):
        return "hangs"
    if result.get("crash") or result.get("code") == 4 or "Traceback" in result.get("stderr", ""):
        return "tracebacks"
    if result["code"] == 0 or "ACCEPT" in result["stdout"].split("\n")[0]:
        return "accepts"
    if result["code"] == baseline["code"] and result["stdout"] == baseline["stdout"]:
        return "unchanged verdicts"
    if clean_error(result):
        return "clean errors"
    if result["code"] in (1, 3):
        return CHANGED
    return "other"


def report(title, counts):
    """Print the counts (pytest -s or the captured output of a failure shows them)."""
    line = f"{title}: " + ", ".join(f"{k} {v}" for k, v in counts.items())
    print(line)
    return line
