"""Signals at random moments of a write, concurrent writers, hostile matcher programs:
real processes, real signals."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import ENV, clean_error, cli, report
from helpers import make_faces

from ssgallery.formats.atomic import TMP_MARK
from ssgallery.formats.store import load_store

MATCHERS = Path(__file__).resolve().parents[1] / "matchers"


# 130, or death by the signal itself (Python re-raises an interrupt it could not finish
# handling): a shell reports both as 128 + 2 = 130 / 128 + 15 = 143
INTERRUPTED = (130, -signal.SIGINT, -signal.SIGTERM)


def _leftovers(folder):
    return [n for n in os.listdir(folder) if TMP_MARK in n]


OUTCOMES = ("finished", "interrupted, nothing written", "interrupted after the write",
            "killed outside the command", "untruthful or broken")


def _outcome(code, err, replaced, clients, leftovers):
    """Which of OUTCOMES a signalled ``enroll`` of 4 clients over a 3-client store had: the
    message must say truthfully whether the store was replaced, the store is whole (the
    old one or the new one) and no temporary file is left."""
    if leftovers:
        return "untruthful or broken"
    if code == 0 and replaced and clients == 4:
        return "finished"
    if code in INTERRUPTED and "nothing was written" in err and not replaced:
        return "interrupted, nothing written"
    if code in INTERRUPTED and "interrupted after writing" in err and replaced and clients == 4:
        return "interrupted after the write"
    if code < 0 and err == "" and clients in (3, 4):
        # the signal came while Python started or exited, when the default action
        # (death by the signal) is in force: no message, the store whole (old or new)
        return "killed outside the command"
    return "untruthful or broken"


def test_signals_at_random_moments_of_enroll(tmp_path):
    """SIGTERM or SIGINT at a random moment (fixed seed) of `enroll` over an existing
    store: exit 0 or 130; the message says whether the store was replaced, and it is
    true; the store is always whole (the old one or the new one); no temporary file."""
    old_faces = make_faces(str(tmp_path / "old"), n_clients=3, n_images=4, seed=1)
    new_faces = make_faces(str(tmp_path / "new"), n_clients=4, n_images=4, seed=2)
    store = tmp_path / "e.h5"
    assert subprocess.run(cli("enroll", old_faces, "--store", store), env=ENV,
                          capture_output=True, check=False).returncode == 0
    original = store.read_bytes()
    t0 = time.monotonic()
    subprocess.run(cli("enroll", new_faces, "--store", tmp_path / "probe.h5"), env=ENV,
                   capture_output=True, check=False)
    duration = time.monotonic() - t0
    rng = np.random.default_rng(11)
    counts = dict.fromkeys(OUTCOMES, 0)
    broken = []
    for trial in range(8):
        store.write_bytes(original)
        proc = subprocess.Popen(cli("enroll", new_faces, "--store", store), env=ENV,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(float(rng.uniform(0.3, 1.1)) * duration)
        proc.send_signal(signal.SIGTERM if trial % 2 == 0 else signal.SIGINT)
        _, err = proc.communicate(timeout=120)
        clients = len(set(load_store(store).clients))  # always a whole store
        replaced = store.read_bytes() != original
        outcome = _outcome(proc.returncode, err, replaced, clients, _leftovers(tmp_path))
        counts[outcome] += 1
        if outcome == "untruthful or broken":
            broken.append((proc.returncode, err, replaced, _leftovers(tmp_path)))
    line = report("signals during enroll: 8", counts)
    assert counts["untruthful or broken"] == 0, (line, broken)


@pytest.mark.parametrize("name", ["SIGINT", "SIGTERM"])
def test_signal_at_every_moment_of_the_writer(tmp_path, name):
    """The guarantee of the test above at every moment rather than at random ones: the
    signal comes at each point where CPython may run a signal handler in the code of
    the writer (formats/atomic.py), the command line (cli/__init__.py, __main__.py) and
    the handlers' helpers (errors.py), one `enroll` per moment (interrupt_moments.py).
    Each outcome must be truthful, the store whole, no temporary file left; the moments
    cover the rename (some runs end before it, some after)."""
    old_faces = make_faces(str(tmp_path / "old"), n_clients=3, n_images=3, seed=1)
    new_faces = make_faces(str(tmp_path / "new"), n_clients=4, n_images=3, seed=2)
    store = tmp_path / "out" / "e.h5"
    store.parent.mkdir()
    assert subprocess.run(cli("enroll", old_faces, "--store", store), env=ENV,
                          capture_output=True, check=False).returncode == 0
    r = subprocess.run([sys.executable, str(Path(__file__).with_name("interrupt_moments.py")),
                        name, str(store), new_faces], env=ENV, capture_output=True, text=True,
                       timeout=600, check=False)
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    counts = dict.fromkeys(OUTCOMES, 0)
    broken = []
    for row in rows:
        code = -getattr(signal, name) if row["killed"] else row["code"]
        code = code if isinstance(code, int) else 1  # an exception escaped the command
        outcome = _outcome(code, row["stderr"], row["replaced"], row["clients"],
                           row["leftovers"])
        counts[outcome] += 1
        if outcome == "untruthful or broken":
            broken.append(row)
    line = report(f"{name} at each of {len(rows)} moments of enroll", counts)
    assert any("_install" in row["moment"] for row in rows), line  # the rename is covered
    assert counts["interrupted, nothing written"] and counts["interrupted after the write"]
    assert broken == [], (line, broken)


def test_concurrent_writers(tmp_path):
    """Four `enroll --add` runs started together on one store: all four clients land.
    Two `compress` runs on one gallery: both succeed, the gallery is whole."""
    base = make_faces(str(tmp_path / "base"), n_clients=3, n_images=4)
    store = tmp_path / "e.h5"
    assert subprocess.run(cli("enroll", base, "--store", store), env=ENV,
                          capture_output=True, check=False).returncode == 0
    folders = [make_faces(str(tmp_path / f"new{i}"), n_clients=1, n_images=4, seed=10 + i,
                          prefix=f"n{i}_") for i in range(4)]
    procs = [subprocess.Popen(cli("enroll", f, "--add", "--store", store), env=ENV,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
             for f in folders]
    codes = [p.wait(timeout=300) for p in procs]
    errors = [p.stderr.read() for p in procs]
    clients = set(load_store(store).clients)
    added = sum(f"n{i}_00" in clients for i in range(4))
    gallery = tmp_path / "g.h5"
    procs = [subprocess.Popen(cli("compress", "--store", store, "-o", gallery, "--m", 1,
                                   "--cv-folds", 0, "--max-iter", 3, "--seed", s), env=ENV,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
             for s in (0, 1)]
    compress_codes = [p.wait(timeout=300) for p in procs]
    errors += [p.stderr.read() for p in procs]
    info = subprocess.run(cli("info", "--gallery", gallery), env=ENV, capture_output=True,
                          check=False)
    report("concurrent writers", {"enroll --add runs": 4, "landed": added,
                                  "compress runs": 2,
                                  "succeeded": compress_codes.count(0)})
    assert codes == [0] * 4 and added == 4, errors
    assert compress_codes == [0, 0] and info.returncode == 0, (errors, info.stderr)
    assert _leftovers(tmp_path) == []


def _wait_for(path, text, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in path.read_text():
            return True
        time.sleep(0.1)
    return False


def test_concurrent_compress_runs_take_turns(tmp_path):
    """`compress` holds the gallery's lock from before it touches ``<gallery>.parts/`` to
    the gallery's rename: while another run holds it, a run waits (saying so) without
    having made the parts folder; released, the runs take turns and both succeed. (Each
    used to remove the other's parts folder as it started or finished: "cannot write it
    (No such file or directory)", exit 2, in about 1 of 15 pairs under load.)"""
    from ssgallery.formats.atomic import output_lock

    faces = make_faces(str(tmp_path / "faces"), n_clients=3, n_images=4)
    store, gallery = tmp_path / "e.h5", tmp_path / "g.h5"
    assert subprocess.run(cli("enroll", faces, "--store", store), env=ENV,
                          capture_output=True, check=False).returncode == 0
    errs = [tmp_path / f"{s}.err" for s in (0, 1)]
    with output_lock(gallery):  # another run writing the gallery
        procs = []
        for s, err in zip((0, 1), errs):
            with open(err, "w") as handle:
                procs.append(subprocess.Popen(
                    cli("compress", "--store", store, "-o", gallery, "--m", 1, "--cv-folds",
                         0, "--max-iter", 3, "--seed", s), env=ENV,
                    stdout=subprocess.DEVNULL, stderr=handle))
        waited = [_wait_for(err, "another ssgallery run is writing it") for err in errs]
        running = [p.poll() is None for p in procs]
        parts_made = os.path.exists(f"{gallery}.parts")
    codes = [p.wait(timeout=300) for p in procs]
    messages = [err.read_text() for err in errs]
    assert waited == [True, True] and running == [True, True], messages
    assert not parts_made
    assert codes == [0, 0], messages
    info = subprocess.run(cli("info", "--gallery", gallery), env=ENV, capture_output=True,
                          check=False)
    assert info.returncode == 0, info.stderr
    assert not os.path.exists(f"{gallery}.parts") and _leftovers(tmp_path) == []


@pytest.mark.parametrize("mode", ["crash", "garbage", "wrong_shape", "nan", "no_output",
                                  "bad_describe", "hang"])
def test_hostile_matchers(tmp_path, mode):
    """A misbehaving external matcher program: one clean line, exit 2, within its
    timeout; a hanging one is killed with its whole process group."""
    faces = make_faces(str(tmp_path / "faces"), n_clients=3, n_images=3, shape=(16, 12))
    cmd = f"{sys.executable} {MATCHERS / 'hostile.py'} {mode}"
    pidfile = tmp_path / "pids"
    env = dict(ENV, HOSTILE_PIDFILE=str(pidfile))
    store = tmp_path / "e.h5"
    r = subprocess.run(cli("enroll", faces, "--store", store, "--matcher-cmd", cmd,
                            "-O", "timeout_base=3", "-O", "timeout_per_pair=0"),
                       env=env, capture_output=True, text=True, timeout=120, check=False)
    t0 = time.monotonic()
    if mode != "bad_describe":  # --describe answers well: the damage comes at scoring
        assert r.returncode == 0, r.stderr
        r = subprocess.run(cli("compress", "--store", store, "-o", tmp_path / "g.h5",
                                "--matcher-cmd", cmd, "--m", 1, "--cv-folds", 0,
                                "--max-iter", 1), env=env, capture_output=True, text=True,
                           timeout=120, check=False)
    elapsed = time.monotonic() - t0
    result = {"code": r.returncode, "stderr": r.stderr, "stdout": r.stdout}
    assert clean_error(result), result
    assert not (tmp_path / "g.h5").exists()
    if mode == "hang":
        assert elapsed < 60
        for pid in map(int, pidfile.read_text().split()[1:]):  # the matcher and its child
            assert _dead(pid), pid


def _dead(pid):
    """Gone, or a zombie waiting for a parent that does not reap (PID 1 in a container)."""
    try:
        with open(f"/proc/{pid}/status") as handle:
            return any(line.startswith("State:") and "Z" in line for line in handle)
    except FileNotFoundError:
        return True
