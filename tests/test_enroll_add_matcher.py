"""What enroll --add says of the store's matcher: it keeps the store's matcher and
options (options given are named in one warning as ignored, another matcher refused in
one line before any image is read), names no host program as one of the store's
options, refuses a program that is not the external store's, and ignores --matcher-cmd
on a store that runs no program as compress does; a background subject of the store
named as a client is said to stay one. The lines of daily use:
tests/test_daily_use.py."""

import os
import re
import sys
from pathlib import Path

import pytest
from helpers import invoked, make_faces, refused

from ssgallery.formats.store import load_store

MATCHERS = Path(__file__).resolve().parent / "matchers"


def test_enroll_add_keeps_the_store_matcher_and_names_what_it_ignores(tmp_path):
    """'enroll DIR --add --variance 0.9 -O gamma=1' kept the store's options without a
    word, and '--add --matcher dlib' added to an eigenface store as if asked for nothing:
    another matcher is refused in one line naming the store (before any image is read,
    the store unchanged), options are named in one warning as ignored; the store's
    matcher named again is no change."""
    first = make_faces(str(tmp_path / "a"), n_clients=3, n_images=4, shape=(16, 12))
    more = make_faces(str(tmp_path / "b"), n_clients=2, n_images=4, shape=(16, 12),
                      prefix="d", seed=1)
    store = tmp_path / "s.h5"
    assert invoked(["enroll", first, "--store", store, "-q"])["exit_code"] == 0
    before = store.read_bytes()
    other = invoked(["enroll", more, "--store", store, "--add", "--matcher", "dlib"])
    assert other["exit_code"] == 2 and other["stderr"] == (
        f"ssgallery: error: {store}: --add adds clients with the store's eigenface matcher, "
        "not --matcher dlib: enrol every client again without --add to change the "
        "matcher\n"), other["output"]
    assert store.read_bytes() == before
    added = invoked(["enroll", more, "--store", store, "--add", "--variance", "0.9", "-O",
                     "gamma=1"])  # no -q: its summary names the matcher kept
    assert added["exit_code"] == 0, added["output"]
    assert f"ssgallery: warning: {store}: --add keeps the store's eigenface matcher and its " \
        "options; ignored: gamma=1, variance=0.9 (enrol every client again without --add " \
        "to change them)\n" in added["stderr"], added["stderr"]
    assert "(gamma paper, variance 0.95)" in added["stdout"], added["stdout"]
    again = invoked(["enroll", more, "--store", store, "--add", "--matcher", "eigenface"])
    assert again["exit_code"] == 0 and "ignored" not in again["stderr"], again["output"]


def test_enroll_add_to_an_external_store_says_nothing_of_the_host_program(external_built,
                                                                          tmp_path):
    """--matcher-cmd names the host's program, not an option of the store (a file never
    holds it): 'enroll DIR --add --matcher-cmd PROG' on an external store warned that it
    was ignored as one of the store's options."""
    import shutil

    root, _ = external_built
    store = tmp_path / "e.h5"
    shutil.copy(root / "e.h5", store)
    more = make_faces(str(tmp_path / "b"), n_clients=2, n_images=3, shape=(16, 12),
                      prefix="d", seed=1)
    added = invoked(["enroll", more, "--store", store, "--add", "--matcher-cmd",
                     f"{sys.executable} {MATCHERS / 'clipped_corr.py'}"])  # no -q: its summary
    assert added["exit_code"] == 0, added["output"]
    assert "ignored" not in added["stderr"] and "added 2 client(s)" in added["stdout"], \
        added["output"]


@pytest.mark.parametrize("spelling", ["--matcher-cmd", "-O"])
def test_enroll_add_refuses_a_program_that_is_not_the_external_stores(external_built,
                                                                      tmp_path, spelling,
                                                                      monkeypatch):
    """'enroll DIR --add --matcher-cmd OTHER' (or -O command=OTHER) on a store made with
    another program added the clients without a word (exit 0), and every compress with
    OTHER then refused the store: now refused at once, with the line compress gives,
    before any image is read, the store untouched."""
    import shutil

    root, _ = external_built
    store = tmp_path / "e.h5"
    shutil.copy(root / "e.h5", store)
    before = store.read_bytes()
    more = make_faces(str(tmp_path / "b"), n_clients=2, n_images=3, shape=(16, 12),
                      prefix="d", seed=1)
    other = f"{sys.executable} {MATCHERS / 'described.py'}"
    given = ["--matcher-cmd", other] if spelling == "--matcher-cmd" else ["-O", f"command={other}"]
    monkeypatch.delenv("DESCRIBED_JSON", raising=False)  # its default: a distance
    added = invoked(["enroll", more, "--store", store, "--add", *given, "-q"])
    assert added["exit_code"] == 2 and added["stdout"] == "", added["output"]
    assert re.fullmatch(rf"ssgallery: error: {re.escape(str(store))}: matcher .*described\.py "
                        r"is not the file's matcher: its contract digest is \w+\.\.\., the "
                        r"file was made with \w+\.\.\. \(.*\)\n", added["stderr"]), added["stderr"]
    assert store.read_bytes() == before


def test_enroll_add_ignores_matcher_cmd_as_compress_does_on_a_store_that_runs_no_program(
        tmp_path):
    """'enroll DIR --add --matcher-cmd PROG' on an eigenface store was refused with a line
    naming '--matcher external', a flag nobody typed, where compress (and verify) only
    warn that --matcher-cmd is ignored: now the clients are added, with compress's
    warning line. --matcher external typed with --add is still refused."""
    first = make_faces(str(tmp_path / "a"), n_clients=3, n_images=4, shape=(16, 12))
    more = make_faces(str(tmp_path / "b"), n_clients=2, n_images=4, shape=(16, 12),
                      prefix="d", seed=1)
    store = tmp_path / "s.h5"
    assert invoked(["enroll", first, "--store", store, "-q"])["exit_code"] == 0
    warning = (f"ssgallery: warning: --matcher-cmd is ignored: {store} uses the eigenface "
               "matcher, which runs no program (--matcher-cmd names an external matcher's)\n")
    compressed = invoked(["compress", "--store", store, "-o", tmp_path / "g.h5", "--m", "1",
                          "--cv-folds", "0", "-q", "--matcher-cmd", "my-matcher"])
    assert compressed["exit_code"] == 0 and warning in compressed["stderr"], compressed["output"]
    typed = invoked(["enroll", more, "--store", store, "--add", "--matcher", "external",
                     "--matcher-cmd", "my-matcher", "-q"])
    assert typed["exit_code"] == 2 and "not --matcher external" in typed["stderr"]
    added = invoked(["enroll", more, "--store", store, "--add", "--matcher-cmd", "my-matcher"])
    assert added["exit_code"] == 0, added["output"]
    assert "added 2 client(s) (d00, d01)" in added["stdout"], added["stdout"]
    assert added["stderr"].startswith(warning) and "--matcher external" not in added["output"], \
        added["stderr"]


def test_enroll_add_names_a_program_the_stores_matcher_never_runs(tmp_path):
    """-O command=PROG on a store whose matcher runs no program (eigenface) was dropped
    without a word, as the host's program of an external store is; it is named among the
    ignored options, as -O foo=1 is (a fresh eigenface enrol refuses it: no such option)."""
    first = make_faces(str(tmp_path / "a"), n_clients=3, n_images=4, shape=(16, 12))
    more = make_faces(str(tmp_path / "b"), n_clients=2, n_images=4, shape=(16, 12),
                      prefix="d", seed=1)
    store = tmp_path / "s.h5"
    assert invoked(["enroll", first, "--store", store, "-q"])["exit_code"] == 0
    added = invoked(["enroll", more, "--store", store, "--add", "-O", "command=my-matcher",
                     "-q"])
    assert added["exit_code"] == 0, added["output"]
    assert f"ssgallery: warning: {store}: --add keeps the store's eigenface matcher and its " \
        "options; ignored: command=my-matcher (enrol every client again without --add to " \
        "change them)\n" in added["stderr"], added["stderr"]


def _background_store(tmp_path):
    """A store of c00-c02 with c03 a background subject, and a folder that names c03 as
    a client beside a new one (d00): c03's files copied from the enrolled ones."""
    import shutil

    faces = make_faces(str(tmp_path / "a"), n_clients=4, n_images=4, shape=(16, 12))
    store = tmp_path / "s.h5"
    assert invoked(["enroll", faces, "--store", store, "--background", "c03",
                    "-q"])["exit_code"] == 0
    more = make_faces(str(tmp_path / "b"), n_clients=1, n_images=4, shape=(16, 12),
                      prefix="d", seed=1)
    shutil.copytree(os.path.join(faces, "c03"), os.path.join(more, "c03"))
    return faces, more, store


def test_enroll_add_of_a_background_subject_as_a_client_says_it_stays_background(tmp_path):
    """'enroll ADD --add' with ADD/c03 the same files as the store's background subject
    c03 skipped it without a word: the user meaning c03 as a new client got 'added 1
    client(s) (d00)' and c03 stayed impostor-only. Now one warning says so and how to
    make it a client (enroll again without --add), and that remedy works."""
    faces, more, store = _background_store(tmp_path)
    added = invoked(["enroll", more, "--store", store, "--add"])
    assert added["exit_code"] == 0, added["output"]
    assert f"ssgallery: warning: {store}: 'c03' is a background (impostor-only) subject " \
        "of the store, not a client: kept as such by --add; to make 'c03' a client, " \
        "enroll every subject again without --add ('c03' not among --background)\n" \
        in added["stderr"], added["stderr"]
    assert load_store(store, images=False).background == ["c03"]
    again = invoked(["enroll", faces, "--store", store, "-q"])  # the remedy named
    assert again["exit_code"] == 0, again["output"]
    assert "c03" in load_store(store, images=False).clients


def test_enroll_add_of_a_background_subject_with_other_files_is_no_client_refused(tmp_path):
    """With ADD/c03 holding other files than the store's background subject c03, --add
    said "client 'c03' is already enrolled with other images" (c03 is no client): now it
    names c03 a background subject and the remedy, exit 2, the store untouched."""
    from PIL import Image

    _, more, store = _background_store(tmp_path)
    Image.new("L", (12, 16), 7).save(os.path.join(more, "c03", "0.png"))
    before = store.read_bytes()
    refused(["enroll", more, "--store", store, "--add"],
            f"{store}: 'c03' is a background (impostor-only) subject of the store, not a "
            "client: --add adds new subjects only; to make 'c03' a client, enroll every "
            "subject again without --add ('c03' not among --background)")
    assert store.read_bytes() == before
