"""An external matcher's timeouts come in as data too (a store's or gallery's recorded
options): out of their range they are refused in one line naming the file, so a file
can never turn off the timeout that kills a program that stalls."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import h5py
import pytest
from helpers import make_faces, rehash_store

from ssgallery.matchers.external.contract import contract_digest

HOSTILE = [sys.executable, str(Path(__file__).parent / "matchers" / "hostile.py")]


def _kill_left(pidfile):
    """Kill the process group a hung hostile.py wrote to ``pidfile`` (if it got there)."""
    if pidfile.exists():
        pgid = int(pidfile.read_text().split()[0])
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _store_with(tmp_path, key, value):
    """A store enrolled with hostile.py (it describes itself, then hangs on any scoring)
    whose recorded option ``key`` is ``value``, written as anybody who can run the
    program and write the file can: the contract digest made again over the edited
    options, the digest and the seal made to match."""
    faces = make_faces(str(tmp_path / "faces"), n_clients=3, n_images=6, shape=(16, 12))
    store = tmp_path / "s.h5"
    cmd = " ".join(HOSTILE + ["hang"])
    run = subprocess.run([sys.executable, "-m", "ssgallery", "enroll", faces, "--store",
                          str(store), "--matcher-cmd", cmd, "-q"], capture_output=True,
                         text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stderr
    described = json.loads(subprocess.run(HOSTILE + ["hang", "--describe"], check=True,
                                          capture_output=True, text=True).stdout)
    with h5py.File(store, "a") as f:
        config = json.loads(f.attrs["matcher_config"])
        config[key] = value
        f.attrs["matcher_config"] = json.dumps(config)
        f["matcher"].attrs["contract_sha256"] = contract_digest(described, config)
    rehash_store(store)
    return store, cmd


@pytest.mark.parametrize("key", ["timeout_base", "timeout_per_pair"])
def test_a_store_s_timeout_beyond_a_week_is_refused(tmp_path, key):
    """A store recording timeout_base (or timeout_per_pair) = 1e300 was read as is: the
    program (here one that stalls) ran with no timeout in effect, and compress waited
    for it without end (still running after 30 s). The recorded timeouts are checked as
    the command line's are, at most a week each (and a request waits at most a week in
    all): one line naming the store, exit 2, before the program scores anything."""
    store, cmd = _store_with(tmp_path, key, 1e300)
    pidfile = tmp_path / "pids"
    try:
        run = subprocess.run([sys.executable, "-m", "ssgallery", "compress", "--store",
                              str(store), "-o", str(tmp_path / "g.h5"), "--matcher-cmd", cmd,
                              "--m", "1", "--cv-folds", "0", "-q"], capture_output=True,
                             text=True, timeout=30, check=False,
                             env=dict(os.environ, HOSTILE_PIDFILE=str(pidfile)))
    except subprocess.TimeoutExpired:
        run = None
    finally:
        _kill_left(pidfile)
    assert run is not None, "compress still waiting for the program after 30 s"
    assert run.returncode == 2, run.stderr
    assert run.stderr == (f"ssgallery: error: {store}: bad matcher state for 'external': "
                          f"external matcher option {key} must be at most 604800 (seconds), "
                          "got 1e+300\n")
    assert not pidfile.exists() and not (tmp_path / "g.h5").exists()


@pytest.mark.parametrize("option", ["timeout_base=1e10", "timeout_per_pair=1e300"])
def test_a_timeout_beyond_a_week_is_refused_on_the_command_line_too(tmp_path, option):
    """One check for both ways in: ``-O timeout_base=1e10`` is refused at enroll as the
    same value in a store is, so enroll never writes a store the other commands
    refuse."""
    from helpers import invoked

    faces = make_faces(str(tmp_path / "faces"), n_clients=2, n_images=3, shape=(16, 12))
    out = invoked(["enroll", faces, "--store", tmp_path / "s.h5", "--matcher-cmd",
                   " ".join(HOSTILE + ["hang"]), "-O", option, "-q"])
    key, value = option.split("=")
    assert out["exit_code"] == 2, out["output"]
    assert out["stderr"] == (f"ssgallery: error: external matcher option {key} must be at "
                             f"most 604800 (seconds), got {float(value)!r}\n")
    assert not (tmp_path / "s.h5").exists()


def test_a_request_waits_at_most_a_week():
    """The timeout of one request, timeout_base + timeout_per_pair x pairs, grew without
    bound with the pairs (a week per pair, 10**6 pairs: 19,000 years): it is at most a
    week, whatever the options and the batch."""
    from ssgallery.matchers.external import ExternalMatcher

    m = ExternalMatcher(command=HOSTILE + ["hang"], timeout_base=604800,
                        timeout_per_pair=604800)
    assert m._timeout(0) == 604800 and m._timeout(10**6) == 604800
    assert ExternalMatcher(timeout_base=60, timeout_per_pair=0.01)._timeout(100) == 61
