"""The external-matcher contract with real processes: a foreign matcher and hostile ones."""

import json
import os
import shlex
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from helpers import smooth_images

from ssgallery.errors import MatcherError
from ssgallery.matchers import get_matcher_class
from ssgallery.matchers.external import ExternalMatcher, write_pgm
from ssgallery.matchers.host import HostMatcher

HERE = Path(__file__).resolve().parent / "matchers"
FOREIGN = [sys.executable, str(HERE / "clipped_corr.py")]
HOSTILE = [sys.executable, str(HERE / "hostile.py")]


def fitted(command, images=None, **kw):
    return ExternalMatcher(command, **kw).fit(smooth_images() if images is None else images)


def test_registered_under_external():
    assert get_matcher_class("external") is ExternalMatcher


def test_foreign_distance_matcher_contract():
    imgs = smooth_images()
    m = fitted(FOREIGN, imgs)
    assert m.describe() == {"kind": "distance", "symmetric": False, "range": [0.0, 1.0],
                            "quality": False}
    state = m.get_state()
    assert state["conversion"] == "exp(-d/scale)" and state["distance_scale"] > 0
    X = m.transform(imgs)
    assert X.shape == (6, 16 * 12)
    sim = m.similarity()
    S = sim(X, X)
    assert S.shape == (6, 6)
    # exp(-0 / scale) = 1 on the diagonal, lower elsewhere, and not symmetric
    np.testing.assert_allclose(np.diag(S), 1.0, atol=1e-8)
    assert np.all(S[~np.eye(6, dtype=bool)] < 1.0)
    assert np.abs(S - S.T).max() > 1e-3
    raw = m.score_images(imgs, imgs)
    np.testing.assert_allclose(S, np.exp(-raw / state["distance_scale"]))


def test_one_run_per_call_and_cache_of_unchanged_pairs():
    imgs = smooth_images()
    m = fitted(FOREIGN, imgs)
    sim, X = m.similarity(), m.transform(imgs)
    calls = m.n_calls_
    Z = X[:3] + 0.25  # float prototypes
    S1 = sim(X, Z)
    assert (m.n_calls_, m.n_pairs_) == (calls + 1, m.n_pairs_) and m.n_cached_ == 0
    # move one prototype (Algorithm 1): only its column is sent to the program
    Z2 = Z.copy()
    Z2[1] += 1.5
    before = m.n_pairs_
    S2 = sim(X, Z2)
    assert m.n_calls_ == calls + 2 and m.n_pairs_ - before == 6 and m.n_cached_ == 12
    np.testing.assert_array_equal(S2[:, [0, 2]], S1[:, [0, 2]])
    sim(X, Z2)  # nothing changed: no run at all
    assert m.n_calls_ == calls + 2


def test_prototypes_travel_as_float_npy():
    imgs = smooth_images()
    m = fitted(FOREIGN, imgs)
    wiggle = 0.4 * np.where(np.indices(imgs.shape[1:]).sum(0) % 2, 1.0, -1.0)
    z = np.clip(imgs[:1] + wiggle, 0, 255)  # rounds back to imgs[0]
    assert m.score_images(imgs[:1], np.round(z))[0, 0] == 0.0
    assert m.score_images(imgs[:1], z)[0, 0] > 1e-6


def test_state_round_trip_rebuilds_the_program(tmp_path):
    imgs = smooth_images()
    m = fitted(FOREIGN, imgs, cache_dir=str(tmp_path / "cache"))
    X = m.transform(imgs)
    S = m.similarity()(X[:2], X)
    config = json.loads(json.dumps(m.get_config()))  # what a gallery stores
    assert "command" not in config and "cache_dir" not in config  # host settings, never data
    state = m.get_state()
    assert len(state["contract_sha256"]) == 64 and FOREIGN[-1] not in json.dumps(
        {k: v for k, v in state.items() if isinstance(v, str)})
    again = ExternalMatcher.from_state(config, state).attach_host(
        HostMatcher(FOREIGN, str(tmp_path / "cache")))
    assert again.image_shape == m.image_shape
    np.testing.assert_array_equal(again.similarity()(X[:2], X), S)
    assert again.n_calls_ == 0  # answered from the persistent cache
    np.testing.assert_array_equal(again.render(X[:2] + 300), np.full((2, 16, 12), 255.0))
    assert again.bounds() == (0.0, 255.0)


def test_an_answer_cache_it_cannot_trust_or_use_is_refused_in_one_line(tmp_path):
    """The persistent answer cache is a file like any other: an answer edited in it that
    the program cannot give (its range is [0, 1]) made a score of it (-inf: NaN scores,
    a claim rejected without a word; 'abc': Python's ValueError), a cache file that is
    no database Python's sqlite3.DatabaseError, a cache_dir that is a file 'File exists'.
    Now one line naming the file, as an InputError (exit 2 at the command line)."""
    import sqlite3

    from ssgallery.errors import InputError

    imgs = smooth_images()
    folder = tmp_path / "cache"
    m = fitted(FOREIGN, imgs, cache_dir=str(folder))
    X = m.transform(imgs)
    m.similarity()(X[:2], X)  # the cache file now holds the 12 answers
    db_file = folder / "external_matcher_cache.sqlite"
    for stored, shown in (("-1e999", "-inf"), ("'abc'", "'abc'"), ("2.5", "2.5"),
                          ("NULL", "null")):
        with sqlite3.connect(db_file) as db:
            db.execute(f"UPDATE s SET v = {stored}")
        db.close()
        again = fitted(FOREIGN, imgs, cache_dir=str(folder))  # its memory cache is empty
        with pytest.raises(InputError) as refused:
            again.similarity()(X[:2], X)
        assert str(refused.value) == (
            f"{db_file}: external matcher answer cache holds {shown} for a pair, which the "
            "program cannot answer (a finite number in [0, 1]): edited or damaged; remove "
            "it (the program is asked again) or set another cache_dir")
    db_file.write_bytes(b"not a database, " * 64)
    with pytest.raises(InputError, match=r"^.*external_matcher_cache\.sqlite: cannot use "
                       r"this external matcher answer cache \(file is not a database\); "
                       r"remove it \(the program is asked again\) or set another "
                       r"cache_dir$"):
        fitted(FOREIGN, imgs, cache_dir=str(folder)).similarity()(X[:2], X)
    a_file = tmp_path / "notes.txt"
    a_file.write_text("mine\n", encoding="utf-8")
    with pytest.raises(InputError) as refused:
        fitted(FOREIGN, imgs, cache_dir=str(a_file)).similarity()(X[:2], X)
    assert str(refused.value) == (f"{a_file}: cannot use it as the external matcher's "
                                  "cache_dir (not a folder); set another cache_dir")
    assert a_file.read_text(encoding="utf-8") == "mine\n"
    folder.joinpath(db_file.name).unlink()  # removed, as the line says: asked again
    np.testing.assert_array_equal(fitted(FOREIGN, imgs, cache_dir=str(folder)).similarity()(
        X[:2], X), m.similarity()(X[:2], X))


def test_verify_sends_probe_and_prototypes_in_one_call():
    imgs = smooth_images()
    m = fitted(FOREIGN, imgs)
    calls = m.n_calls_
    probe, prototypes = m.transform(imgs[:1]), m.transform(imgs[1:6]) + 0.5
    assert m.similarity()(probe, prototypes).shape == (1, 5)
    assert m.n_calls_ == calls + 1


def test_strange_paths_and_program_location(tmp_path):
    folder = tmp_path / "my matchers; it's \"odd\" ünïcode"
    folder.mkdir()
    prog = folder / "clipped corr;rm -rf x.py"
    shutil.copy(HERE / "clipped_corr.py", prog)
    imgs = smooth_images(3)
    paths = []
    for i, name in enumerate(["a b.pgm", "it's.pgm", 'say "hi"; ls.pgm']):
        paths.append(folder / f"{i} {name}")
        write_pgm(paths[-1], imgs[i])
    m = ExternalMatcher(shlex.join([sys.executable, str(prog)]))  # a shell-quoted string
    assert m.argv == [sys.executable, str(prog)]
    S = m.score_paths([str(p) for p in paths], [str(paths[0]), str(paths[2])])
    assert S.shape == (3, 2) and S[0, 0] == pytest.approx(0.0) and S[2, 1] == pytest.approx(0.0)
    assert not (tmp_path / "x").exists()


def test_temporary_folder_with_spaces(tmp_path, monkeypatch):
    import tempfile

    tmp = tmp_path / "tmp dir ' ; é"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    m = fitted(FOREIGN)
    S = m.similarity()(m.transform(smooth_images(2)), m.transform(smooth_images(2)) + 0.5)
    assert S.shape == (2, 2) and list(tmp.iterdir()) == []


def _group_gone(pgid, patience=10.0):
    """True once no process of group ``pgid`` exists (zombies are reaped by init)."""
    deadline = time.monotonic() + patience
    while True:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


def test_hanging_matcher_is_killed_with_its_children(tmp_path, monkeypatch):
    pidfile = tmp_path / "pids"
    monkeypatch.setenv("HOSTILE_PIDFILE", str(pidfile))
    m = fitted(HOSTILE + ["hang"], timeout_base=1.0, timeout_per_pair=0.0)
    with pytest.raises(MatcherError, match=r"hostile\.py hang timed out after 1 s and was killed "
                       r"\(timeout_base 1 s \+ timeout_per_pair 0 s x 12 pairs: "):
        m.similarity()(m.transform(smooth_images(4)), m.transform(smooth_images(3)) + 0.5)
    pgid, pid, _child = map(int, pidfile.read_text().split())
    assert pgid == pid  # its own process group, not ours
    assert pgid != os.getpgid(0)
    assert _group_gone(pgid)


@pytest.mark.parametrize("mode, message", [
    ("crash", r"hostile\.py crash failed with exit status 3: hostile: segmentation fault"),
    ("garbage", r"returned 6 rows, expected a 6 x 2 matrix|non-number"),
    ("wrong_shape", r"expected a 6 x 2 matrix"),
    ("nan", r"returned 1 non-finite score\(s\) \(first: probe 0, gallery 0: nan\)"),
    ("no_output", (r"returned nothing \(no answer file written and nothing on stdout\), "
                  r"expected a 6 x 2 matrix")),
])
def test_misbehaving_matchers_give_one_clear_line(mode, message):
    m = fitted(HOSTILE + [mode])
    with pytest.raises(MatcherError, match=message) as info:
        m.similarity()(m.transform(smooth_images()), m.transform(smooth_images(2)) + 0.5)
    text = str(info.value)
    assert "\n" not in text and "hostile.py" in text


def test_garbage_matrix_names_the_token():
    m = fitted(HOSTILE + ["garbage"])
    with pytest.raises(MatcherError, match=r"non-number 'hello'"):
        m.score_images(smooth_images(2), smooth_images(2))


def test_bad_describe():
    with pytest.raises(MatcherError, match=r"--describe did not print a JSON object"):
        fitted(HOSTILE + ["bad_describe"])


def test_missing_and_not_executable_programs(tmp_path):
    with pytest.raises(MatcherError, match=r"matcher program 'no-such-matcher-xyz' not found"):
        fitted(["no-such-matcher-xyz"])
    script = tmp_path / "not executable.py"
    shutil.copy(HERE / "clipped_corr.py", script)
    script.chmod(0o644)
    with pytest.raises(MatcherError, match=r"is not executable"):
        fitted([str(script)])
    with pytest.raises(MatcherError, match=r"matcher command .*is empty"):
        fitted("  ")


def test_shape_mismatch_is_an_input_error():
    from ssgallery.errors import InputError

    m = fitted(FOREIGN)
    with pytest.raises(InputError, match=r"fitted on \(16, 12\)"):
        m.transform(np.zeros((1, 8, 8)))


def test_readme_example_matcher():
    imgs = smooth_images(4)
    m = fitted([sys.executable, str(HERE / "example_mad.py")], imgs)
    assert m.get_state()["conversion"] == "exp(-d/scale)"
    X = m.transform(imgs)
    Z = X[:2] + 0.5
    S = m.similarity()(X, Z)
    mad = np.abs(X[:, None, :] - Z[None, :, :]).mean(-1)
    np.testing.assert_allclose(S, np.exp(-mad / m.get_state()["distance_scale"]), rtol=1e-6)
    m.similarity()(Z, X)  # symmetric: the transposed pairs come from the cache
    assert m.n_cached_ == 8


def test_sigterm_cleans_up_like_ctrl_c(tmp_path):
    """`kill PID` of a running ssgallery: no temporary image folder left in $TMPDIR, the
    matcher's process group killed, no gallery written, exit 130 as for Ctrl-C."""
    import signal
    import subprocess

    from click.testing import CliRunner

    from ssgallery.cli import main

    faces_dir = tmp_path / "faces"
    for c in range(2):
        for i, img in enumerate(smooth_images(3, seed=c)):
            (faces_dir / f"c{c}").mkdir(parents=True, exist_ok=True)
            write_pgm(faces_dir / f"c{c}" / f"{i}.pgm", img)
    store, gallery = tmp_path / "e.h5", tmp_path / "g.h5"
    r = CliRunner().invoke(main, ["enroll", str(faces_dir), "--store", str(store),
                                  "--matcher-cmd", shlex.join(HOSTILE + ["hang"])])
    assert r.exit_code == 0, r.output
    tmp, pidfile = tmp_path / "tmp", tmp_path / "pids"
    tmp.mkdir()
    env = dict(os.environ, TMPDIR=str(tmp), HOSTILE_PIDFILE=str(pidfile), OMP_NUM_THREADS="1",
               SSGALLERY_MATCHER_CMD=shlex.join(HOSTILE + ["hang"]))  # the host names it
    proc = subprocess.Popen([sys.executable, "-m", "ssgallery", "compress", "--store",
                             str(store), "-o", str(gallery)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not (pidfile.exists() and pidfile.read_text().endswith("\n")):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the matcher never started"
            time.sleep(0.05)
        assert any(p.name.startswith("ssgallery-img-") for p in tmp.iterdir())
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert "interrupted; nothing was written" in err and "Traceback" not in err
    assert list(tmp.iterdir()) == []
    assert _group_gone(int(pidfile.read_text().split()[0]))
    assert not gallery.exists()


SERVE_MAD = [sys.executable, str(HERE / "serve_mad.py")]


def test_persistent_mode_starts_the_program_once(tmp_path, monkeypatch):
    from ssgallery.matchers.external.serve import close_shared

    log = tmp_path / "log"
    monkeypatch.setenv("MAD_SERVE_LOG", str(log))
    # another test of this process may have left the program's shared server running
    # (tests/test_daily_use.py enrolls with it): this test counts a start of its own
    close_shared(ExternalMatcher(SERVE_MAD).argv)
    served = fitted(SERVE_MAD)  # fitting: one scoring call (the distance scale), one quality
    oneshot = fitted(SERVE_MAD, serve=False)
    log.unlink()
    X = smooth_images(5, seed=1).reshape(5, -1)
    sims = [served.similarity()(X[i:i + 2], X) for i in range(3)]
    assert served.n_calls_ == 2 + 3 and served.n_starts_ == 1
    for i, S in enumerate(sims):
        np.testing.assert_allclose(S, oneshot.similarity()(X[i:i + 2], X), rtol=1e-12)
    assert oneshot.n_starts_ == oneshot.n_calls_ == 2 + 3
    events = log.read_text().split()
    assert events.count("start") == 3 and events.count("request") == 3 + 3
    # a served program that dies is restarted on the next call
    served._server.proc.kill()
    served._server.proc.wait()
    served._cache.clear()
    np.testing.assert_allclose(served.similarity()(X[:2], X), sims[0], rtol=1e-12)
    assert served.n_starts_ == 2
    served.close()
    assert served._server is None


def test_persistent_mode_reports_failures(tmp_path):
    served = fitted(SERVE_MAD)
    bad = tmp_path / "missing.txt"
    from ssgallery.matchers.serve import MatcherServer

    server = MatcherServer(served._resolve(), served.program)
    with pytest.raises(MatcherError, match="failed: .*missing.txt"):
        server.request({"probe_list": str(bad), "gallery_list": str(bad),
                        "out": str(tmp_path / "out.txt")}, timeout=30)
    server.close()
    assert not server.alive()


def test_enroll_again_with_another_program_refits(tmp_path):
    """The store's fingerprint covers the program's contract: the same images enrolled
    again with another program are fitted anew (not "nothing changed"), with the same
    program they are not."""
    from helpers import make_faces

    from ssgallery.app.enroll import enroll
    from ssgallery.formats.store import load_store

    faces_dir = make_faces(str(tmp_path / "faces"), n_clients=2, n_images=3, shape=(16, 12))
    store = tmp_path / "e.h5"
    mad = {"command": [sys.executable, str(HERE / "example_mad.py")]}
    assert enroll(faces_dir, store, matcher="external", matcher_options=mad).changed
    first = load_store(store).matcher_state["contract_sha256"]
    assert not enroll(faces_dir, store, matcher="external", matcher_options=mad).changed
    assert enroll(faces_dir, store, matcher="external",
                  matcher_options={"command": FOREIGN}).changed
    assert load_store(store).matcher_state["contract_sha256"] != first
