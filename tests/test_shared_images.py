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


def test_a_file_held_by_many_subjects_is_named_not_paired_one_by_one(tmp_path):
    """Every pair of the subjects holding one file was listed: 10,000 background subjects
    holding one image made 50 million pairs (enroll on main: 199 s, then 'out of memory'
    under a 4 GB limit; 3,000 subjects: 28 s, 1.8 GB in shared_images alone). The first
    PAIRED (20) of a file's subjects are paired, and the warning names the file and how
    many hold it."""
    n = 300
    args = ([f"s{i:03d}" for i in range(n)], ["1"] * n, [f"s{i:03d}/x" for i in range(n)])
    pairs = shared_images(*args)
    assert len(pairs) == 190  # 20 subjects' pairs; on main: 44,850

    from ssgallery.app.enroll_sources import PAIRED, crowded_images

    assert PAIRED == 20
    assert pairs[0] == ("s000", "s001", 1, "s000/x", "s001/x")
    assert crowded_images(*args) == [(300, "s000/x")]
    assert crowded_images(["a", "b"], ["1", "1"], ["a/x", "b/x"]) == []
    faces = make_faces(str(tmp_path / "faces"), n_clients=3, n_images=2, shape=(16, 12))
    for i in range(25):
        (tmp_path / "bg" / f"b{i:02d}").mkdir(parents=True)
        shutil.copy(tmp_path / "faces" / "c00" / "0.png", tmp_path / "bg" / f"b{i:02d}" / "1.png")
    store = tmp_path / "e.h5"
    out = invoked(["enroll", faces, "--background", tmp_path / "bg", "--store", store, "-q"])
    assert out["exit_code"] == 0, out["output"]
    assert out["stderr"] == (
        f"ssgallery: warning: {store}: b00 and b01 hold 1 identical image file (b00/1.png "
        "is b01/1.png); b00 and b02 hold 1 identical image file (b00/1.png is b02/1.png); "
        "b00 and b03 hold 1 identical image file (b00/1.png is b03/1.png); 187 more pairs "
        "of subjects; 1 file held by more than 20 subjects each, whose pairs are not all "
        f"counted (the most: 26 subjects, b00/1.png): {ADVICE}\n"), out["stderr"]
