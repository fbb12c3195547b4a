"""The same image files under two ids (one person's folder copied under another name, or
into the background): enroll said nothing, and compress then trained each as an impostor
of the other. On sample_data with c01 copied as c21, both clients rejected every held-out
image of their own, the gallery's expected FRR rose from 24.5 % to 31.9 %, and the only
remedy compress's warning named was a matcher that tells the faces apart better. enroll
now names the subjects that share files (it has every file's SHA-256)."""

import shutil

from helpers import invoked, make_faces

from ssgallery.app.enroll_sources import shared_images

ADVICE = ("one person under two ids? compress takes each one's faces for impostors of the "
          "other: a client among them rejects its own faces, and the thresholds every "
          "client shares rise; enrol each person once")


def test_shared_images_pairs_the_subjects_holding_one_digest():
    labels = ["a", "a", "b", "b", "c", "d", "d"]
    shas = ["1", "2", "1", "2", "1", "9", "9"]  # a = b on two files, c = a = b on one
    paths = ["a/x", "a/y", "b/x", "b/y", "c/x", "d/x", "d/y"]  # d: one subject, twice
    assert shared_images(labels, shas, paths) == [
        ("a", "b", 2, "a/x", "b/x"), ("a", "c", 1, "a/x", "c/x"), ("b", "c", 1, "b/x", "c/x")]
    assert shared_images(["a", "b"], ["1", "2"], ["a/x", "b/x"]) == []


def test_enroll_names_the_subjects_that_share_image_files(tmp_path):
    faces = make_faces(str(tmp_path / "faces"), n_clients=3, n_images=3, shape=(16, 12))
    plain = invoked(["enroll", faces, "--store", tmp_path / "plain.h5", "-q"])
    assert plain["exit_code"] == 0 and plain["stderr"] == "", plain["output"]
    shutil.copytree(tmp_path / "faces" / "c01", tmp_path / "faces" / "c03")
    store = tmp_path / "e.h5"
    out = invoked(["enroll", faces, "--store", store, "-q"])
    assert out["exit_code"] == 0, out["output"]
    assert out["stderr"] == (f"ssgallery: warning: {store}: c01 and c03 hold 3 identical "
                             f"image files (c01/0.png is c03/0.png): {ADVICE}\n")
    again = invoked(["enroll", faces, "--store", store, "-q"])  # nothing changed: still said
    assert again["stderr"] == out["stderr"]


def test_enroll_names_a_client_copied_into_the_background(tmp_path):
    faces = make_faces(str(tmp_path / "faces"), n_clients=3, n_images=2, shape=(16, 12))
    bg = make_faces(str(tmp_path / "bg"), n_clients=1, n_images=2, seed=5, shape=(16, 12),
                    prefix="b")
    shutil.copy(tmp_path / "faces" / "c02" / "1.png", tmp_path / "bg" / "b00" / "9.png")
    store = tmp_path / "e.h5"
    out = invoked(["enroll", faces, "--background", bg, "--store", store, "-q"])
    assert out["exit_code"] == 0, out["output"]
    assert out["stderr"] == (f"ssgallery: warning: {store}: b00 and c02 hold 1 identical "
                             f"image file (b00/9.png is c02/1.png): {ADVICE}\n")


def test_enroll_add_names_a_new_client_holding_an_enrolled_one_s_files(tmp_path):
    faces = make_faces(str(tmp_path / "faces"), n_clients=3, n_images=2, shape=(16, 12))
    store = tmp_path / "e.h5"
    assert invoked(["enroll", faces, "--store", store, "-q"])["exit_code"] == 0
    new = tmp_path / "new"
    shutil.copytree(tmp_path / "faces" / "c00", new / "d00")
    out = invoked(["enroll", new, "--add", "--store", store, "-q"])
    assert out["exit_code"] == 0, out["output"]
    assert out["stderr"].splitlines()[0] == (
        f"ssgallery: warning: {store}: c00 and d00 hold 2 identical image files (c00/0.png "
        f"is d00/0.png): {ADVICE}")
