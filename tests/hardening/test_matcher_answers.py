"""Issue 20 family 6 (answers outside the declared range are errors; a negative
distance is never a NaN score or a RuntimeWarning) and family 7's ``--serve`` bounds (a
reply and stderr of any length cost bounded memory), with a real program
(tests/matchers/ranged.py) whose ``--describe`` never changes, so the galleries made in
its normal mode are its galleries in every mode."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ENV, clean_error, report
from helpers import make_faces

MATCHERS = Path(__file__).resolve().parents[1] / "matchers"
RSS = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:]); "
       "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); "
       "sys.exit(r.returncode)")


def _run(args, mode=None, timeout=300):
    """Run the CLI (through a wrapper that prints the peak RSS of the run in KiB as the
    last stderr line); {"code", "stdout", "stderr", "rss_kib"}."""
    env = dict(ENV, RANGED_MODE=mode) if mode else ENV
    r = subprocess.run([sys.executable, "-c", RSS, sys.executable, "-m", "ssgallery",
                        *map(str, args)], env=env, capture_output=True, text=True,
                       timeout=timeout, check=False)
    lines = r.stderr.splitlines()
    return {"code": r.returncode, "stdout": r.stdout, "stderr": "\n".join(lines[:-1]) + "\n",
            "rss_kib": int(lines[-1])}


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("answers")
    faces = make_faces(str(root / "faces"), n_clients=3, n_images=5, shape=(16, 12))
    out = {"root": root, "faces": faces}
    for kind in ("similarity", "distance"):
        cmd = f"{sys.executable} {MATCHERS / 'ranged.py'} {kind}"
        store, gallery = root / f"{kind}-e.h5", root / f"{kind}-g.h5"
        for args in (["enroll", faces, "--store", store, "-q"],
                     ["compress", "--store", store, "-o", gallery, "--m", "1", "--cv-folds",
                      "0", "--max-iter", "5", "-q"]):
            r = _run([*args, "--matcher-cmd", cmd])
            assert r["code"] == 0, r
        out[kind] = {"cmd": cmd, "store": store, "gallery": gallery}
    return out


def test_answers_outside_the_declared_range(site, tmp_path):
    faces = site["faces"]
    impostor = os.path.join(faces, "c02", "0.png")  # claimed as c01
    counts = {"cases": 0, "clean errors": 0, "accepts": 0, "RuntimeWarnings": 0,
              "exit 4": 0, "failures": 0}
    failures = []
    for kind in ("similarity", "distance"):
        s = site[kind]
        modes = ("below", "above") + (("negative",) if kind == "distance" else ())
        for mode in modes:
            runs = {"verify": ["verify", impostor, "--claim", "c01", "--gallery", s["gallery"]],
                    "identify": ["identify", impostor, "--gallery", s["gallery"],
                                 "--open-set"],
                    "compress": ["compress", "--store", s["store"], "-o",
                                 tmp_path / "g.h5", "--m", "1", "--cv-folds", "0", "-q"]}
            for what, args in runs.items():
                r = _run([*args, "--matcher-cmd", s["cmd"]], mode)
                counts["cases"] += 1
                counts["accepts"] += r["code"] == 0
                counts["RuntimeWarnings"] += "Warning" in r["stderr"]
                counts["exit 4"] += r["code"] == 4
                ok = clean_error(r) and "outside its range" in r["stderr"]
                counts["clean errors" if ok else "failures"] += 1
                if not ok:
                    failures.append((kind, mode, what, r))
    line = report("family 6, matcher answers out of range", counts)
    assert not failures, (line, failures)
    assert not (tmp_path / "g.h5").exists()


def test_serve_output_is_bounded(site):
    """200 MB of reply without a newline: killed, one line; 200 MB of stderr: drained,
    only its tail kept; either way far less memory than the output."""
    s = site["similarity"]
    probe = os.path.join(site["faces"], "c01", "0.png")
    args = ["verify", probe, "--claim", "c01", "--gallery", s["gallery"], "--matcher-cmd",
            s["cmd"], "-q"]
    normal = _run(args)
    spew_out = _run(args, "spew_stdout")
    spew_err = _run(args, "spew_stderr")
    report("family 7, --serve output", {
        "normal rss MiB": normal["rss_kib"] >> 10,
        "200 MB reply rss MiB": spew_out["rss_kib"] >> 10,
        "200 MB stderr rss MiB": spew_err["rss_kib"] >> 10})
    assert normal["code"] == 0, normal
    assert clean_error(spew_out) and "without ending its reply line" in spew_out["stderr"], \
        spew_out
    assert spew_err["code"] == 0 and spew_err["stdout"] == normal["stdout"], spew_err
    for r in (spew_out, spew_err):
        assert r["rss_kib"] < normal["rss_kib"] + 64 * 1024, r["rss_kib"]
