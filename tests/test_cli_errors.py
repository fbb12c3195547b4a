"""Every bad input gets one line `ssgallery: error: <file>: <problem>` and exit 2."""

import os
import shutil

import pytest
from click.testing import CliRunner
from helpers import edit_h5, make_faces

from ssgallery.cli import main
from ssgallery.datasets import sample_faces_path
from ssgallery.tables import did_you_mean


def _fails(args, *expected):
    """Run the CLI; assert exit 2 and a single stderr line containing ``expected``."""
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 2, (r.exit_code, r.output)
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("ssgallery: error: "), lines[0]
    for text in expected:
        assert text in lines[0], lines[0]
    assert "Traceback" not in r.output
    return lines[0]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("err")
    faces = make_faces(str(root / "faces"), n_clients=3, n_images=5)
    store, gallery = str(root / "e.h5"), str(root / "g.h5")
    runner = CliRunner()
    assert runner.invoke(main, ["enroll", faces, "--store", store]).exit_code == 0
    assert runner.invoke(main, ["compress", "--store", store, "-o", gallery]).exit_code == 0
    return root, faces, store, gallery


@pytest.fixture
def faces(tmp_path):
    return make_faces(str(tmp_path / "faces"), n_clients=3, n_images=3)


def test_non_image_file(faces, tmp_path):
    bad = os.path.join(faces, "c01", "notes.txt")
    with open(bad, "w") as fh:
        fh.write("not a face\n")
    store = str(tmp_path / "e.h5")
    _fails(["enroll", faces, "--store", store], f"{bad}: not an image file", "--skip-bad")
    assert not os.path.exists(store)
    r = CliRunner().invoke(main, ["enroll", faces, "--store", store, "--skip-bad"])
    assert r.exit_code == 0 and "ssgallery: warning:" in r.stderr and "notes.txt" in r.stderr


def test_disguised_and_truncated_images(faces, tmp_path):
    fake = os.path.join(faces, "c02", "fake.png")
    with open(fake, "wb") as fh:
        fh.write(b"this is text, not a PNG")
    _fails(["enroll", faces, "--store", str(tmp_path / "e.h5")], f"{fake}: not an image")
    os.remove(fake)
    good = os.path.join(faces, "c02", "0.png")
    with open(good, "rb") as fh:
        data = fh.read()
    with open(good, "wb") as fh:
        fh.write(data[: len(data) // 2])
    _fails(["enroll", faces, "--store", str(tmp_path / "e.h5")], f"{good}: truncated image")
    # nothing written (the store's lock file stays, hidden, as lock files do)
    assert sorted(os.listdir(tmp_path)) == [".e.h5.lock", "faces"]


def test_empty_root_missing_root_and_too_few_images(tmp_path, faces):
    empty = tmp_path / "empty"
    empty.mkdir()
    _fails(["enroll", str(empty), "--store", str(tmp_path / "e.h5")], f"{empty}: no client")
    _fails(["enroll", str(tmp_path / "nope"), "--store", str(tmp_path / "e.h5")],
           str(tmp_path / "nope"))
    for name in os.listdir(os.path.join(faces, "c01"))[1:]:
        os.remove(os.path.join(faces, "c01", name))
    _fails(["enroll", faces, "--store", str(tmp_path / "e.h5")],
           os.path.join(faces, "c01"), "1 image(s), at least 2 needed")


def test_bad_store(tmp_path, built):
    missing = str(tmp_path / "enrollment.h5")
    _fails(["compress", "--store", missing, "-o", str(tmp_path / "g.h5")],
           f"{missing}: no such ssgallery enrollment store", "ssgallery enroll")
    foreign = tmp_path / "foreign.h5"
    foreign.write_text("some text")
    _fails(["compress", "--store", str(foreign)], f"{foreign}: not an ssgallery enrollment")
    # a gallery given for the store (and the reverse): named, with who writes which
    _fails(["compress", "--store", built[3]], f"{built[3]}: not an ssgallery enrollment "
           "store but an ssgallery gallery (format 'ssgallery-gallery'; enroll writes a "
           "store, compress turns it into a gallery)")
    _fails(["info", "--gallery", built[2]], f"{built[2]}: not an ssgallery gallery but an "
           "ssgallery enrollment store (format 'ssgallery-enrollment'; enroll writes a "
           "store, compress turns it into a gallery)")
    corrupt = tmp_path / "corrupt.h5"
    shutil.copy(built[2], corrupt)
    with edit_h5(corrupt) as f:
        del f["images"]
    _fails(["compress", "--store", str(corrupt), "-o", str(tmp_path / "g.h5")],
           f"{corrupt}: integrity check failed: the store's content does not match")
    _fails(["compress", "--store", built[2], "--clients", "zz", "-o", str(tmp_path / "g.h5")],
           "not an enrolled client: zz")
    assert sorted(os.listdir(tmp_path)) == ["corrupt.h5", "foreign.h5"]  # no gallery, no temp


def test_bad_gallery_and_unknown_claim(tmp_path, built):
    _, faces, store, gallery = built
    probe = os.path.join(faces, "c01", "0.png")
    missing = str(tmp_path / "gallery.h5")
    _fails(["verify", probe, "--claim", "c01", "--gallery", missing],
           f"{missing}: no such ssgallery gallery", "ssgallery compress")
    _fails(["verify", probe, "--claim", "c01", "--gallery", store],
           f"{store}: not an ssgallery gallery")
    corrupt = tmp_path / "corrupt.h5"
    with open(gallery, "rb") as fh:
        corrupt.write_bytes(fh.read()[:2048])
    _fails(["verify", probe, "--claim", "c01", "--gallery", str(corrupt)], f"{corrupt}: ")
    newer = tmp_path / "newer.h5"
    shutil.copy(gallery, newer)
    with edit_h5(newer) as f:
        f.attrs["format_version"] = 99
    _fails(["verify", probe, "--claim", "c01", "--gallery", str(newer)],
           "format version 99 is newer")
    _fails(["verify", probe, "--claim", "bob", "--gallery", gallery],
           f"{gallery}: unknown client 'bob' (known: c00, c01, c02)")
    _fails(["info", "--gallery", missing], f"{missing}: no such ssgallery gallery")
    _fails(["show", "--claim", "bob", "--gallery", gallery, "-o", str(tmp_path / "p.png")],
           "unknown client 'bob'")


def test_a_mistyped_client_id_names_the_closest_one(tmp_path, built):
    """A client id typed with another case or a letter missing: the one line says which
    id was meant, wherever an id is typed (verify, show, info --client, compress
    --clients, enroll --clients); nothing close, no guess."""
    _, faces, store, gallery = built
    probe = os.path.join(faces, "c01", "0.png")
    _fails(["verify", probe, "--claim", "C01", "--gallery", gallery],
           f"{gallery}: unknown client 'C01': did you mean 'c01'? (known: c00, c01, c02)")
    _fails(["show", "--claim", "c1", "--gallery", gallery, "-o", str(tmp_path / "p.png")],
           "unknown client 'c1': did you mean 'c01'? (known: ")
    _fails(["info", "--gallery", gallery, "--client", "c02 "], "did you mean 'c02'?")
    _fails(["compress", "--store", store, "-o", str(tmp_path / "g.h5"), "--clients", "c1"],
           f"{store}: not an enrolled client: c1; did you mean 'c01'? (enrolled: c00, ")
    _fails(["enroll", faces, "--store", str(tmp_path / "e.h5"), "--clients", "c00,C02"],
           f"{faces}: no client folder named C02; did you mean 'c02'?")
    assert "did you mean" not in _fails(["verify", probe, "--claim", "bob", "--gallery",
                                         gallery])


def test_ids_equally_close_to_a_typed_one_are_all_named_or_none(tmp_path):
    """difflib's tie-break named the last id in sort order as the one meant: 'enroll
    sample_data/faces --clients c3' (folders c01..c20) said "did you mean 'c13'?", c1
    'c19', c0 'c20'. Equally close ids are all named, or none when more than 3 are; ids
    that differ only in case are both named."""
    faces, store = str(sample_faces_path()), str(tmp_path / "e.h5")
    _fails(["enroll", faces, "--store", store, "--clients", "c3"],
           f"{faces}: no client folder named c3; did you mean 'c03' or 'c13'?")
    for typed in ("c1", "c0"):  # 12 and 11 ids equally close: no guess
        assert "did you mean" not in _fails(["enroll", faces, "--store", store,
                                             "--clients", typed])
    _fails(["enroll", faces, "--store", store, "--clients", "C07"], "did you mean 'c07'?")
    assert not os.path.exists(store)
    assert did_you_mean(["ANN"], ["Ann", "bob", "ann"]) == "did you mean 'Ann' or 'ann'?"
    assert did_you_mean(["c2"], [f"c{i:02d}" for i in range(1, 21)]) == \
        "did you mean 'c02', 'c12' or 'c20'?"


def test_an_id_in_another_unicode_form_is_named_as_such(tmp_path):
    """A folder named 'José' spelt e + a combining accent (NFD, as macOS writes names),
    the id typed with the one letter é (NFC): 'no client folder named José' and nothing
    else, two names that look the same. The hint names it, and says why they differ."""
    import unicodedata

    faces = tmp_path / "faces"
    make_faces(str(faces), n_clients=2, n_images=2)
    os.rename(faces / "c00", faces / unicodedata.normalize("NFD", "José"))
    os.rename(faces / "c01", faces / "Ann")
    typed = unicodedata.normalize("NFC", "José")
    line = _fails(["enroll", str(faces), "--store", str(tmp_path / "e.h5"), "--clients",
                   typed], f"no client folder named {typed}; did you mean ")
    assert line.endswith("is the same letters in Unicode form NFD)"), line


def test_an_id_typed_without_its_accents_names_the_one_meant(tmp_path):
    """'verify --claim Jose' on a gallery holding 'José' said 'unknown client 'Jose'
    (known: Ann, José, ann, c 01, Ünal, 名前)' with no hint (difflib ratio 0.75): ids are
    compared with their accents (combining marks) left out too, and today's rules hold
    (equally close ids all named, more than 3: no guess)."""
    import unicodedata

    faces = tmp_path / "faces"
    make_faces(str(faces), n_clients=4, n_images=2)
    for old, new in (("c00", "José"), ("c01", "Ünal"), ("c02", "名前"), ("c03", "Ann")):
        os.rename(faces / old, faces / unicodedata.normalize("NFD", new))
    store = str(tmp_path / "e.h5")
    for typed, meant in (("Jose", "José"), ("unal", "Ünal"), ("UNAL", "Ünal")):
        line = _fails(["enroll", str(faces), "--store", store, "--clients", typed],
                      f"no client folder named {typed}; did you mean ")
        assert unicodedata.normalize("NFC", line).split("did you mean ")[1].startswith(
            f"'{meant}'?"), line
    assert not os.path.exists(store)
    known = ["Ann", "José", "ann", "c 01", "Ünal", "名前"]
    assert did_you_mean(["Jose"], known) == "did you mean 'José'?"
    assert did_you_mean(["Jose"], ["Josè", "José", "Bob"]) == "did you mean 'Josè' or 'José'?"
    assert did_you_mean(["Jose"], ["Jóse", "Josè", "José", "Jösé", "Bob"]) == ""
    assert did_you_mean(["Ann"], ["Änn", "Bob"]) == "did you mean 'Änn'?"
    assert did_you_mean(["Bob"], known) == ""


def test_a_matcher_option_given_to_o_is_not_a_store(faces, tmp_path, monkeypatch):
    """enroll's -o names the store since 7356a91 and -O sets a matcher option: 'enroll
    faces -o variance=0.9' wrote a store named 'variance=0.9' with variance 0.95, exit 0.
    A bare KEY=VALUE store is refused, nothing written; given with its folder it is a
    store."""
    monkeypatch.chdir(tmp_path)
    for args in (["-o", "variance=0.9"], ["--store", "gamma=median"]):
        _fails(["enroll", faces, *args], f"'{args[1]}' looks like a matcher option, which "
               f"-O sets (-O {args[1]}); a store named so: ./{args[1]}")
    assert sorted(os.listdir(tmp_path)) == ["faces"]
    r = CliRunner().invoke(main, ["enroll", faces, "-o", "./variance=0.9", "-q"])
    assert r.exit_code == 0 and (tmp_path / "variance=0.9").is_file(), r.output


def test_an_option_the_matcher_does_not_take_is_named_with_those_it_takes(faces, tmp_path):
    """enroll --matcher dlib --variance 0.9 (an eigenface option) or -O foo=1: one line
    naming the option and the matcher's options, not Python's TypeError text
    ('DlibMatcher.__init__() got an unexpected keyword argument 'variance''); no store."""
    store = str(tmp_path / "e.h5")
    line = _fails(["enroll", faces, "--store", store, "-O", "foo=1"],
                  "matcher 'eigenface' has no option 'foo' (its options: variance, "
                  "n_components, gamma)")
    assert "__init__" not in line and not os.path.exists(store)
    _fails(["enroll", faces, "--store", store, "--matcher", "dlib", "--variance", "0.9"],
           "matcher 'dlib' has no option 'variance' (its options: gamma, detect)")


def test_bad_probes(tmp_path, built):
    gallery = built[3]
    _fails(["verify", str(tmp_path / "none.png"), "--claim", "c01", "--gallery", gallery],
           "none.png: no such file")
    text = tmp_path / "probe.png"
    text.write_text("hello")
    _fails(["verify", str(text), "--claim", "c01", "--gallery", gallery],
           f"{text}: not an image")
    _fails(["verify", "--claim", "c01", "--gallery", gallery], "no probe images given")
    _fails(["verify", "--list", str(tmp_path / "none.txt"), "--claim", "c01", "--gallery",
            gallery], "none.txt: no such probe list")
    # a list written beside the probes, with their names: its line, and where they are
    # (was: 'c01.png: no such file', after the gallery was read)
    (tmp_path / "probes_list").mkdir()
    (tmp_path / "probes_list" / "c01.png").write_bytes(b"")
    listing = tmp_path / "probes_list" / "list.txt"
    listing.write_text("# today\nc01.png\n")
    for command in (["verify", "--claim", "c01"], ["identify"]):
        _fails(command + ["--list", str(listing), "--gallery", str(tmp_path / "none.h5")],
               f"{listing}: line 2: no such file c01.png; paths are read from the current "
               f"folder, not the list's: {tmp_path / 'probes_list' / 'c01.png'} exists")
    # a listed path of 100,000 characters (no file can have it) was echoed whole: a
    # 100 KB error line (a list of 64 MiB, 64 MiB); its first 200 characters now
    listing.write_text("a" * 100_000 + "\n")
    line = _fails(["verify", "--claim", "c01", "--list", str(listing), "--gallery",
                   str(tmp_path / "none.h5")],
                  f"{listing}: line 1: no such file {'a' * 200}... (100000 characters)")
    assert len(line) < 1000, len(line)
    # a folder of probes (verify probes/, identify probes/): how to give its images, said
    # before the gallery is read (was: 'probes: image is a folder, expected a regular file')
    folder = tmp_path / "probes"
    folder.mkdir()
    (folder / "0.png").write_bytes(b"")
    for args in (["verify", str(folder), "--claim", "c01"], ["identify", str(folder)]):
        _fails(args + ["--gallery", str(tmp_path / "none.h5")],
               f"{folder}: a folder, not a probe image: give its images ({folder}/*.png) or "
               "list them in --list FILE")


def test_a_folder_of_probes_is_given_as_its_own_images(tmp_path):
    """'verify att_faces/s1 --claim s1' advised 'give its images (att_faces/s1/*.png)':
    AT&T's faces are .pgm, so the advised command failed ('s1/*.png: no such file'). The
    patterns name the extensions of the folder's images (the commonest first, each in
    its own case); a folder with no image says so."""
    jpg = tmp_path / "photos"
    jpg.mkdir()
    for name in ("a.JPG", "b.JPG", "c.png", "notes.txt", ".d.png"):
        (jpg / name).write_bytes(b"")
    _fails(["identify", str(jpg), "--gallery", str(tmp_path / "none.h5")],
           f"{jpg}: a folder, not a probe image: give its images ({jpg}/*.JPG {jpg}/*.png) "
           "or list them in --list FILE")
    # a folder with no image file: no pattern that would match nothing ('empty/*.png'
    # advised it, and the shell gave 'empty/*.png: no such file'), but what is there
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_bytes(b"")
    for folder in (empty, tmp_path / "none"):
        folder.mkdir(exist_ok=True)
        _fails(["identify", str(folder), "--gallery", str(tmp_path / "none.h5")],
               f"{folder}: a folder, not a probe image, and it holds no image file (.pgm "
               ".png .jpg .jpeg .bmp .tif .tiff): give probe images or list them in --list "
               "FILE")


def test_a_folder_of_png_and_jpg_probes_is_given_as_all_its_images(tmp_path, built):
    """'verify DIR --claim c01' on a folder of 2 .png and 1 .jpg probes advised 'give its
    images (DIR/*.png)': the advised command left the .jpg probe out. The advice names a
    pattern per extension there, and those patterns, expanded as a shell does, give
    every probe of the folder, which verify then scores."""
    import glob
    import re

    from PIL import Image

    _, faces, _, gallery = built
    probes = tmp_path / "probes"
    probes.mkdir()
    for i, name in enumerate(("0.png", "1.png", "2.jpg")):
        Image.open(os.path.join(faces, "c01", f"{i}.png")).convert("L").save(probes / name)
    line = _fails(["verify", str(probes), "--claim", "c01", "--gallery", gallery],
                  f"{probes}: a folder, not a probe image: give its images ({probes}/*.png "
                  f"{probes}/*.jpg) or list them in --list FILE")
    patterns = re.search(r"give its images \((.*)\) or list", line).group(1).split()
    given = [path for pattern in patterns for path in sorted(glob.glob(pattern))]
    assert sorted(given) == sorted(str(p) for p in probes.iterdir())
    r = CliRunner().invoke(main, ["verify", *given, "--claim", "c01", "--gallery", gallery])
    assert r.exit_code in (0, 1) and all(p in r.stdout for p in given), r.output


def test_a_folder_with_a_space_is_advised_as_a_shell_takes_it(tmp_path, built):
    """'verify "my probes" --claim c01' advised 'give its images (my probes/*.png)':
    pasted into a shell, that is the words 'my' and 'probes/*.png', neither the probes.
    The folder is quoted as a shell reads it, and the advice, split and expanded as a
    shell does, gives every probe there, which verify scores."""
    import glob
    import shlex

    from PIL import Image

    _, faces, _, gallery = built
    probes = tmp_path / "my probes"
    probes.mkdir()
    for i, name in enumerate(("0.png", "1.jpg")):
        Image.open(os.path.join(faces, "c01", f"{i}.png")).convert("L").save(probes / name)
    line = _fails(["verify", str(probes), "--claim", "c01", "--gallery", gallery],
                  f"{probes}: a folder, not a probe image: give its images "
                  f"({shlex.quote(str(probes))}/*.jpg {shlex.quote(str(probes))}/*.png)")
    advice = line.split("give its images (", 1)[1].rsplit(") or list", 1)[0]
    given = [path for word in shlex.split(advice) for path in sorted(glob.glob(word))]
    assert sorted(given) == sorted(str(p) for p in probes.iterdir())
    r = CliRunner().invoke(main, ["verify", *given, "--claim", "c01", "--gallery", gallery])
    assert r.exit_code in (0, 1) and all(p in r.stdout for p in given), r.output


def test_a_folder_of_att_probes_is_given_as_pgm(att_faces, tmp_path):
    s1 = os.path.join(att_faces, "s1")
    _fails(["verify", s1, "--claim", "s1", "--gallery", str(tmp_path / "none.h5")],
           f"{s1}: a folder, not a probe image: give its images ({s1}/*.pgm)")


def test_usage_errors_exit_2(built):
    gallery = built[3]
    for args in (["verify", "x.png", "--gallery", gallery],       # no --claim
                 ["compress", "--m", "zero"], ["compress", "--target-far", "1.5"],
                 ["enroll"], ["enroll", "x", "--size", "92by112"], ["nosuchcommand"],
                 ["info", "--store", built[2], "--client", "c01"]):      # no gallery
        r = CliRunner().invoke(main, args)
        assert r.exit_code == 2, (args, r.output)
        assert "Traceback" not in r.output


def test_no_files_for_info(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _fails(["info"], "no gallery.h5 or enrollment.h5 here")


def test_matcher_cmd_usage_errors(faces, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the default store (and its lock) would land here
    _fails(["enroll", faces, "--matcher", "eigenface", "--matcher-cmd", "my-matcher"],
           "--matcher-cmd is for --matcher external, not --matcher eigenface")
    _fails(["enroll", faces, "--matcher", "external"],
           "--matcher external needs the program: --matcher-cmd")
    _fails(["enroll", faces, "--matcher-cmd", "a", "-O", "command=b"],
           "--matcher-cmd or --matcher-option command=..., not both")  # -O's long name
    _fails(["enroll", faces, "--matcher-cmd", "  "], "--matcher-cmd is empty")
    _fails(["enroll", faces, "--matcher-cmd", "no-such-matcher-program --x"],
           "matcher program 'no-such-matcher-program' not found")


def test_a_long_id_given_is_clipped_in_the_error(built, tmp_path):
    """An id of 100,000 characters (a script's data passed on the command line) was echoed
    whole by compress --clients, enroll --clients, verify --claim and info --client: a
    100 KB error line. Clipped as a listed path is (`ssgallery.errors.clipped`)."""
    _, faces, store, gallery = built
    long = "a" * 100_000
    shown = f"{'a' * 200}... (100000 characters)"
    probe = os.path.join(faces, "c01", "0.png")
    for args, what in (
            (["compress", "--store", store, "-o", str(tmp_path / "g.h5"), "--clients", long],
             f"not an enrolled client: {shown}"),
            (["enroll", faces, "--store", str(tmp_path / "e.h5"), "--clients", f"c01,{long}"],
             f"no client folder named {shown}"),
            (["verify", "--gallery", gallery, "--claim", long, probe],
             f"unknown client '{shown}'"),
            (["info", "--gallery", gallery, "--client", long], f"unknown client '{shown}'")):
        line = _fails(args, what)
        assert len(line) < 1000, (args[0], len(line))
