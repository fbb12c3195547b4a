"""What surprised a user of the command line: an option silently ignored, an output
that had to be named, a refusal that did not name the option that changes it."""

import json

import pytest
from helpers import invoked, make_faces, refused

from ssgallery.datasets import sample_faces_path

PROBE = sample_faces_path().parent / "probes" / "c01_genuine_1.png"
IGNORED = ("ssgallery: warning: --matcher-cmd is ignored: {path} uses the eigenface "
           "matcher, which runs no program (--matcher-cmd names an external matcher's)")

FOLDER_IGNORED = ("ssgallery: warning: --matcher-cmd is ignored: roc on a faces folder ({path}) "
                  "runs the eigenface matcher, which runs no program; to measure the external "
                  "matcher, enroll {path} with --matcher-cmd and run roc on the store")


def _warned(out, path, expected=IGNORED):
    """``out`` ended as it would without --matcher-cmd, with one warning that names it
    (and the command's own warnings, if any)."""
    assert out["exit_code"] in (0, 1), out["output"]
    named = [line for line in out["stderr"].splitlines() if "--matcher-cmd" in line]
    assert named == [expected.format(path=path)], out["stderr"]


@pytest.mark.parametrize("args", [
    ["verify", PROBE, "--claim", "c01"],
    ["identify", PROBE],
    ["roc", "--probes", sample_faces_path(), "--no-plot", "-q"]])
def test_matcher_cmd_on_a_gallery_that_runs_no_program_is_named(sample_gallery_3, tmp_path,
                                                                 args):
    """verify, identify and roc --gallery read an eigenface gallery with
    ``--matcher-cmd PROG`` as without it, without a word: the option was dropped."""
    gallery = sample_gallery_3["gallery"]
    if args[0] == "roc":
        args = args + ["--gallery", gallery, "-o", tmp_path / "report"]
    else:
        args = args + ["--gallery", gallery, "-q"]
    _warned(invoked(args + ["--matcher-cmd", "no-such-matcher --model x"]), gallery)


def test_matcher_cmd_with_verify_claims_is_named_once(sample_gallery_3, tmp_path):
    claims = tmp_path / "claims.txt"
    claims.write_text(f"{PROBE} c01\n{PROBE} c02\n")
    gallery = sample_gallery_3["gallery"]
    _warned(invoked(["verify", "--claims", claims, "--gallery", gallery, "-q",
                     "--matcher-cmd", "no-such-matcher"]), gallery)


def test_matcher_cmd_on_a_store_that_runs_no_program_is_named(tmp_path):
    """compress and roc on an eigenface store: the same warning, naming the store; roc
    on a faces folder (eigenface) says how an external matcher is measured (main said
    'FACES uses the eigenface matcher', as if a folder chose one, and not how)."""
    faces = make_faces(str(tmp_path / "faces"), n_clients=4, n_images=5, shape=(16, 12))
    store = tmp_path / "s.h5"
    assert invoked(["enroll", faces, "--store", store, "-q"])["exit_code"] == 0
    _warned(invoked(["compress", "--store", store, "-o", tmp_path / "g.h5", "--m", "1",
                     "--clients", "c00", "--target-far", "0.2", "-q",
                     "--matcher-cmd", "no-such-matcher"]), store)
    _warned(invoked(["roc", "--store", store, "--repetitions", "1", "--methods", "ssvm",
                     "--m", "1", "--enrolled", "2", "--train-images", "3", "--no-plot",
                     "--no-identification", "-q", "-o", tmp_path / "report",
                     "--matcher-cmd", "no-such-matcher"]), store)
    _warned(invoked(["roc", faces, "--repetitions", "1", "--methods", "ssvm", "--m", "1",
                     "--enrolled", "2", "--train-images", "3", "--no-plot",
                     "--no-identification", "-q", "-o", tmp_path / "report2",
                     "--matcher-cmd", "no-such-matcher"]), faces, FOLDER_IGNORED)


def test_the_hosts_matcher_program_from_the_environment_is_not_named(sample_gallery_3,
                                                                      monkeypatch):
    """$SSGALLERY_MATCHER_CMD names the host's program for every external gallery: a
    gallery of another matcher says nothing about it."""
    monkeypatch.setenv("SSGALLERY_MATCHER_CMD", "no-such-matcher")
    out = invoked(["verify", PROBE, "--claim", "c01", "--gallery", sample_gallery_3["gallery"],
                   "-q"])
    assert out["exit_code"] in (0, 1) and out["stderr"] == "", out["output"]


PNG = b"\x89PNG\r\n\x1a\n"


def test_show_writes_prototypes_id_png_by_default(sample_gallery_3, tmp_path, monkeypatch):
    """``show --claim c01`` needed ``-o``: it writes ``prototypes_c01.png`` here, as
    ``make demo`` names it, and writes it again on the next run (its own kind of file)."""
    monkeypatch.chdir(tmp_path)
    for _ in range(2):
        out = invoked(["show", "--claim", "c01", "--gallery", sample_gallery_3["gallery"]])
        assert out["exit_code"] == 0, out["output"]
        assert out["stdout"].startswith("prototypes_c01.png: 2 prototypes of client c01 ")
        assert (tmp_path / "prototypes_c01.png").read_bytes().startswith(PNG)


@pytest.mark.parametrize("name", [None, "notes.jpg", "notes.png"])
def test_show_never_replaces_a_file_that_is_not_its_image_unless_forced(
        sample_gallery_3, tmp_path, monkeypatch, name):
    """A file that is not an image of the output's format is refused in one line (exit
    2), left as it was, and replaced with --force, as compress and roc do: ``-o
    notes.jpg`` replaced any file, and the refusal of ``-o notes.png`` said 'unless
    forced' to a command without --force."""
    from helpers import refused

    monkeypatch.chdir(tmp_path)
    target = tmp_path / (name or "prototypes_c01.png")
    target.write_text("my notes\n")
    args = ["show", "--claim", "c01", "--gallery", sample_gallery_3["gallery"]]
    args += ["-o", name] if name else []
    refused(args, f"{target.name}: exists and is not an output of this kind; refusing to "
                  "replace it unless forced")
    assert target.read_text() == "my notes\n"
    forced = invoked(args + ["--force"])
    assert forced["exit_code"] == 0, forced["output"]
    assert target.read_bytes()[:3] in (PNG[:3], b"\xff\xd8\xff")


@pytest.mark.parametrize("readable", [False, True])
def test_enroll_names_min_images_when_a_client_has_too_few(tmp_path, readable):
    """'client folder has 1 image(s), at least 2 needed' did not say that --min-images
    changes the least: the line says what would enrol the folder, and nothing is written.
    ``readable``: 2 files of which 1 is corrupt, skipped with --skip-bad."""
    from helpers import refused

    faces = make_faces(str(tmp_path / "faces"), n_clients=3, n_images=3, shape=(16, 12))
    (tmp_path / "faces" / "c01" / "2.png").unlink()
    if readable:
        (tmp_path / "faces" / "c01" / "1.png").write_bytes(b"\x89PNG\r\n\x1a\nbroken")
    else:
        (tmp_path / "faces" / "c01" / "1.png").unlink()
    store = tmp_path / "s.h5"
    args = ["enroll", faces, "--store", store, "-q"] + (["--skip-bad"] if readable else [])
    what = "1 readable image(s)" if readable else "1 image(s)"
    refused(args, f"c01: client folder has {what}, at least 2 needed (--min-images 1 would "
                  "enrol it)")
    assert not store.exists()
    assert invoked(args + ["--min-images", "1"])["exit_code"] == 0


def test_no_min_images_hint_where_it_cannot_help(tmp_path):
    """A folder without images (--min-images is at least 1), and roc, which has no such
    option: the refusal names no option."""
    from helpers import refused

    faces = make_faces(str(tmp_path / "faces"), n_clients=3, n_images=3, shape=(16, 12))
    for png in (tmp_path / "faces" / "c01").iterdir():
        png.unlink()
    for args in (["enroll", faces, "--store", tmp_path / "s.h5", "-q"],
                 ["roc", faces, "-q", "-o", tmp_path / "report"]):
        out = refused(args, "c01: client folder has 0 image(s), at least ")
        assert "--min-images" not in out["stderr"], out["stderr"]


def test_roc_names_no_option_it_does_not_have(tmp_path):
    """roc FACES_DIR (and roc --gallery --probes DIR) read the folder as enroll does, but
    roc has neither --skip-bad nor --strict: a stray file was refused with 'use
    --skip-bad to skip it' (then "No such option '--skip-bad'"), an image of another
    size resized with 'use --strict to refuse them'. enroll still names them."""
    from helpers import refused
    from PIL import Image

    faces = make_faces(str(tmp_path / "faces"), n_clients=4, n_images=6, shape=(16, 12))
    notes = tmp_path / "faces" / "c01" / "notes.txt"
    notes.write_text("a note")
    out = refused(["roc", faces, "-q", "-o", tmp_path / "report"],
                  f"{notes}: not an image file (extension '.txt')")
    assert "--skip-bad" not in out["stderr"], out["stderr"]
    refused(["enroll", faces, "--store", tmp_path / "s.h5", "-q"], "use --skip-bad to skip it")
    notes.unlink()
    Image.new("L", (24, 32), 128).save(tmp_path / "faces" / "c01" / "big.png")
    out = invoked(["roc", faces, "-q", "-o", tmp_path / "report", "--repetitions", "1",
                   "--methods", "svm", "--enrolled", "2", "--train-images", "3", "--no-plot"])
    assert out["exit_code"] == 0, out["output"]
    resized = [ln for ln in out["stderr"].splitlines() if "resized 1 image(s)" in ln]
    assert len(resized) == 1 and "--strict" not in resized[0], out["stderr"]


def test_identify_fpir_out_of_range_names_fpir(sample_gallery_3):
    """identify --fpir 2 was refused as '--target-fpir must be in (0, 1), got 2.0', an
    option of compress: the refusal names the option given."""
    from helpers import refused

    out = refused(["identify", PROBE, "--gallery", sample_gallery_3["gallery"], "--fpir",
                   "2"], "ssgallery: error: --fpir must be in (0, 1), got 2.0")
    assert "target" not in out["stderr"], out["stderr"]


JOBS = "--jobs must be a positive integer or -1 (one per core), got 0"


def test_every_jobs_option_takes_minus_one_and_names_itself(tmp_path):
    """compress and synth took ``--jobs -1`` (one per core), roc refused it as a usage
    error; ``--jobs 0`` was refused by compress and synth as 'jobs must be ...', not
    naming the flag, and by roc with click's range. One check, one line for all three."""
    from helpers import refused

    faces = make_faces(str(tmp_path / "faces"), n_clients=4, n_images=5, shape=(16, 12))
    store = tmp_path / "s.h5"
    assert invoked(["enroll", faces, "--store", store, "-q"])["exit_code"] == 0
    out = invoked(["roc", faces, "--jobs", "-1", "--repetitions", "1", "--methods", "ssvm",
                   "--m", "1", "--enrolled", "2", "--train-images", "3", "--no-plot",
                   "--no-identification", "-q", "-o", tmp_path / "report"])
    assert out["exit_code"] == 0, out["output"]
    refused(["roc", faces, "--jobs", "0", "-o", tmp_path / "r0"], JOBS)
    refused(["compress", "--store", store, "-o", tmp_path / "g.h5", "--jobs", "0"], JOBS)
    refused(["synth", tmp_path / "s", "--identities", "3", "--jobs", "0"], JOBS)
    assert not (tmp_path / "g.h5").exists() and not (tmp_path / "s").exists()


@pytest.fixture(scope="module")
def score_files(tmp_path_factory):
    """Score files of a one-repetition roc run on small synthetic faces."""
    root = tmp_path_factory.mktemp("roc")
    faces = make_faces(str(root / "faces"), n_clients=4, n_images=5, shape=(16, 12))
    out = invoked(["roc", faces, "--repetitions", "1", "--methods", "ssvm", "--m", "1",
                   "--enrolled", "2", "--train-images", "3", "--no-plot",
                   "--no-identification", "-q", "-o", root / "report"])
    assert out["exit_code"] == 0, out["output"]
    return root, sorted(str(p) for p in (root / "report" / "scores").glob("*.txt"))


@pytest.mark.parametrize("extra, ignored", [
    (["--m", "5", "--repetitions", "9"],
     ("--m, --repetitions are ignored: roc --scores recomputes the figures of the score "
      "files (no protocol, no matcher, no dev threshold)")),
    (["--key-file", "KEY", "--matcher-cmd", "prog"],
     "--key-file, --matcher-cmd are ignored: roc --scores recomputes"),
    (["--criterion", "min-hter", "--store", "other.h5"],
     "--store, --criterion are ignored: roc --scores"),
    (["--jobs", "2"], "--jobs is ignored: roc --scores")])
def test_roc_names_the_options_its_mode_does_not_read(score_files, tmp_path, extra,
                                                      ignored):
    """``roc --scores FILES --m 5`` ran as without --m, without a word: an option the
    mode does not read is named in one warning (the run is the same)."""
    _, files = score_files
    key = tmp_path / "key"
    key.write_bytes(b"k" * 32)
    extra = [str(key) if a == "KEY" else a for a in extra]
    out = invoked(["roc", "--scores", *files, "-o", tmp_path / "again", "--no-plot", "-q",
                   *extra])
    assert out["exit_code"] == 0, out["output"]
    assert out["stderr"].startswith(f"ssgallery: warning: {ignored}"), out["stderr"]
    assert len(out["stderr"].splitlines()) == 1, out["stderr"]


def test_roc_protocol_names_a_key_file_and_a_criterion(score_files, tmp_path):
    """The protocol trains its own models (no gallery's signature to check) and sets no
    dev threshold; a default value given explicitly is not named."""
    root, _ = score_files
    key = tmp_path / "key"
    key.write_bytes(b"k" * 32)
    out = invoked(["roc", root / "faces", "--repetitions", "1", "--methods", "ssvm", "--m",
                   "1", "--enrolled", "2", "--train-images", "3", "--no-plot",
                   "--no-identification", "-q", "-o", tmp_path / "r", "--key-file", key,
                   "--criterion", "far", "--criterion-far", "0.01", "--seed", "0"])
    assert out["exit_code"] == 0, out["output"]
    assert out["stderr"] == ("ssgallery: warning: --key-file, --criterion, --criterion-far "
                             "are ignored: roc FACES_DIR runs the protocol, which trains its "
                             "own models and chooses no dev threshold\n"), out["stderr"]


def test_enroll_over_a_store_names_the_clients_it_drops(tmp_path):
    """``enroll other_faces/`` over a store of other clients replaced it without a word,
    and the next compress trained a gallery without them: the line names them (and
    --add, which keeps them); the JSON lists them; re-enrolling the same folder, or a
    folder that keeps every client, says nothing of the kind."""
    import json

    first = make_faces(str(tmp_path / "first"), n_clients=4, n_images=3, shape=(16, 12))
    second = make_faces(str(tmp_path / "second"), n_clients=2, n_images=3, shape=(16, 12),
                        prefix="d")
    store = tmp_path / "e.h5"
    assert invoked(["enroll", first, "--store", store, "-q"])["exit_code"] == 0
    again = invoked(["enroll", first, "--store", store, "-q"])
    assert again["exit_code"] == 0 and "warning" not in again["stderr"]
    out = invoked(["enroll", second, "--store", store, "-q", "--json"])
    assert out["exit_code"] == 0, out["output"]
    assert json.loads(out["stdout"])["dropped_clients"] == ["c00", "c01", "c02", "c03"]
    assert out["stderr"].splitlines() == [(
        f"ssgallery: warning: {store}: replaced; 4 clients it held are no longer enrolled "
        f"(not enrolled from {second}): c00, c01, c02, c03 (--add adds clients to a store "
        "instead)")]
    back = invoked(["enroll", first, "--store", store, "-q"])
    assert "2 clients it held are no longer enrolled" in back["stderr"]
    fewer = invoked(["enroll", first, "--store", store, "-q", "--clients", "c00,c01,c02"])
    assert fewer["stderr"].endswith(f"1 client it held is no longer enrolled (not enrolled "
                                    f"from {first}): c03 (--add adds clients to a store "
                                    "instead)\n"), fewer["stderr"]


@pytest.mark.parametrize("name, content", [
    ("sound.webp", b"RIFF\x24\x00\x00\x00WAVEfmt \x10\x00\x00\x00"),  # a WAV file: RIFF too
    ("notes.bmp", b"BM is where the notes begin\n"),  # text that begins with "BM"
], ids=["wav-as-webp", "text-as-bmp"])
def test_show_replaces_only_its_own_format_not_a_file_sharing_its_first_bytes(
        sample_gallery_3, tmp_path, monkeypatch, name, content):
    """The signatures were ``RIFF`` for WebP and ``BM`` for BMP: ``-o sound.webp``
    replaced a WAV file and ``-o notes.bmp`` a text beginning "BM", without --force. Now
    refused in one line, left as they were; show's own WebP or BMP is replaced."""
    from helpers import refused

    monkeypatch.chdir(tmp_path)
    (tmp_path / name).write_bytes(content)
    args = ["show", "--claim", "c01", "--gallery", sample_gallery_3["gallery"], "-o", name]
    refused(args, f"{name}: exists and is not an output of this kind")
    assert (tmp_path / name).read_bytes() == content
    (tmp_path / name).unlink()
    for _ in range(2):  # written, then replaced: its own kind of file
        out = invoked(args)
        assert out["exit_code"] == 0, out["output"]


def test_show_force_never_replaces_a_store_or_a_gallery(sample_gallery_3, tmp_path,
                                                         monkeypatch):
    """``show --force -o my.png`` replaced a gallery renamed my.png (exit 0): --force
    replaces a file that is not an image, never an ssgallery store or gallery, as
    compress's and enroll's --force (ssgallery.formats.atomic.check_writable). Refused
    in one line, exit 2, the gallery left as it was."""
    import shutil

    from helpers import refused

    monkeypatch.chdir(tmp_path)
    shutil.copyfile(sample_gallery_3["gallery"], tmp_path / "my.png")
    before = (tmp_path / "my.png").read_bytes()
    # without --force too: it said '... refusing to replace it unless forced', offering
    # a --force that cannot help
    for force in (["--force"], []):
        refused(["show", "--claim", "c01", "--gallery", sample_gallery_3["gallery"], "-o",
                 "my.png", *force],
                "my.png: an ssgallery gallery, not an output of this kind; refusing to "
                "replace it, even forced (choose another name)")
    assert (tmp_path / "my.png").read_bytes() == before


def test_roc_force_replaces_the_identification_files_too(tmp_path):
    """``roc -o DIR --force`` replaced summary.json, curves.csv, the score files and the
    verification plots that were not its own, but refused a full-search score file
    (identification/) 'unless forced' to the forced command, after writing half the
    report; cmc.png and det_identification.png were not forced either."""
    faces = make_faces(str(tmp_path / "faces"), n_clients=4, n_images=5, shape=(16, 12))
    report = tmp_path / "report"
    (report / "identification").mkdir(parents=True)
    mine = [report / "identification" / "svm.r0.txt", report / "cmc.png",
            report / "det_identification.png"]
    for path in mine:
        path.write_text("my notes\n")
    args = ["roc", faces, "--repetitions", "1", "--methods", "svm", "--enrolled", "2",
            "--train-images", "3", "-q", "-o", report]
    from helpers import refused

    refused(args, "exists and is not an output of this kind")
    out = invoked(args + ["--force"])
    assert out["exit_code"] == 0, out["output"]
    assert all(path.read_bytes() != b"my notes\n" for path in mine)


@pytest.mark.parametrize("mine", ["summary.json", "identification/svm.r0.txt"])
def test_roc_refuses_a_report_file_before_writing_any(tmp_path, mine):
    """A report file roc may not replace was refused when its turn came: after
    scores/ (and summary.json, curves.csv for an identification file) had been written,
    a half-replaced report. Now every existing file is checked first: one line, exit 2,
    the folder as it was."""
    from helpers import refused

    faces = make_faces(str(tmp_path / "faces"), n_clients=4, n_images=5, shape=(16, 12))
    report = tmp_path / "report"
    (report / mine).parent.mkdir(parents=True, exist_ok=True)
    (report / mine).write_text("my notes\n")
    before = sorted(p.relative_to(report) for p in report.rglob("*"))
    refused(["roc", faces, "--repetitions", "1", "--methods", "svm", "--enrolled", "2",
             "--train-images", "3", "-q", "-o", report],
            f"{mine}: exists and is not an output of this kind")
    assert sorted(p.relative_to(report) for p in report.rglob("*")) == before
    assert (report / mine).read_text() == "my notes\n"


@pytest.mark.parametrize("mine", ["summary.json", "scores/svm.r1.txt",
                                  "identification/ssvm-m2.r0.txt"])
def test_roc_refuses_a_report_file_before_it_trains(tmp_path, monkeypatch, mine):
    """The refusal of a report file roc may not replace came after the whole protocol
    had run (minutes to hours of training, then 'exists'); now it comes before the
    first repetition: the progress lines (one per step) show only the images read."""
    monkeypatch.setenv("SSGALLERY_PROGRESS_INTERVAL", "0")
    faces = make_faces(str(tmp_path / "faces"), n_clients=4, n_images=5, shape=(16, 12))
    report = tmp_path / "report"
    (report / mine).parent.mkdir(parents=True, exist_ok=True)
    (report / mine).write_text("my notes\n")
    out = invoked(["roc", faces, "--repetitions", "2", "--methods", "svm,ssvm", "--m", "2",
                   "--enrolled", "2", "--train-images", "3", "-o", report])
    lines = out["stderr"].splitlines()
    errors = [line for line in lines if line.startswith("ssgallery: error: ")]
    assert out["exit_code"] == 2 and len(errors) == 1, out["output"]
    assert f"{mine}: exists and is not an output of this kind" in errors[0]
    phases = {line.split(": ")[2].split(" ")[0] for line in lines if line not in errors}
    assert phases == {"reading"}, out["stderr"]  # "reading images i/n": nothing trained
    assert (report / mine).read_text() == "my notes\n"


def test_o_command_over_a_different_hosts_program_is_named(tmp_path, monkeypatch):
    """'enroll --matcher external -O command=PROG' with $SSGALLERY_MATCHER_CMD naming
    another program ran PROG without a word (-O command is --matcher-cmd's other spelling
    at enroll, and wins over the variable): one warning names the program used and the
    one left out; none when both name the same program."""
    import json
    import os
    import shlex
    import sys

    faces = make_faces(str(tmp_path / "faces"), n_clients=2, n_images=2, shape=(16, 12))
    program = [sys.executable, os.path.join(os.path.dirname(__file__), "matchers",
                                            "clipped_corr.py")]
    args = ["enroll", faces, "--matcher", "external", "-O", f"command={json.dumps(program)}"]
    monkeypatch.setenv("SSGALLERY_MATCHER_CMD", "no-such-matcher --model x")
    out = invoked(args + ["--store", tmp_path / "e.h5"])
    assert out["exit_code"] == 0, out["output"]
    warning = (f"ssgallery: warning: the external matcher program is -O command's "
               f"({shlex.join(program)}), not the one $SSGALLERY_MATCHER_CMD names "
               "(no-such-matcher --model x)")
    assert out["stderr"].splitlines() == [warning], out["stderr"]
    monkeypatch.setenv("SSGALLERY_MATCHER_CMD", shlex.join(program))
    out = invoked(args + ["--store", tmp_path / "e2.h5"])
    assert out["exit_code"] == 0 and out["stderr"] == "", out["output"]
    monkeypatch.delenv("SSGALLERY_MATCHER_CMD")
    config = tmp_path / "config.toml"
    config.write_text('[external]\ncommand = "other-matcher"\n')
    monkeypatch.setenv("SSGALLERY_CONFIG", str(config))
    out = invoked(args + ["--store", tmp_path / "e3.h5"])
    assert out["exit_code"] == 0, out["output"]
    assert out["stderr"].endswith(f", not the one {config} names (other-matcher)\n"), \
        out["stderr"]


def test_o_command_naming_the_hosts_program_by_another_path_is_not_warned(
        tmp_path, monkeypatch):
    """91cef5a warned whenever -O command's words differed from $SSGALLERY_MATCHER_CMD's:
    the same program and script named by a relative path, or by its name on $PATH, was
    'not the one $SSGALLERY_MATCHER_CMD names'. Words naming the same file agree; another
    argument is still named."""
    import json
    import os
    import shlex
    import shutil
    import sys

    faces = make_faces(str(tmp_path / "faces"), n_clients=2, n_images=2, shape=(16, 12))
    shutil.copy(os.path.join(os.path.dirname(__file__), "matchers", "clipped_corr.py"),
                tmp_path / "m.py")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable) + os.pathsep
                       + os.environ.get("PATH", ""))
    given = [sys.executable, "m.py"]  # relative script, the interpreter's full path
    args = ["enroll", faces, "--matcher", "external", "-O", f"command={json.dumps(given)}"]
    monkeypatch.setenv("SSGALLERY_MATCHER_CMD", shlex.join(
        [os.path.basename(sys.executable), str(tmp_path / "m.py")]))
    out = invoked(args + ["--store", tmp_path / "e.h5"])
    assert out["exit_code"] == 0 and out["stderr"] == "", out["output"]
    monkeypatch.setenv("SSGALLERY_MATCHER_CMD", shlex.join(
        [sys.executable, str(tmp_path / "m.py"), "--model", "x"]))
    out = invoked(args + ["--store", tmp_path / "e2.h5"])
    assert out["exit_code"] == 0, out["output"]
    assert "not the one $SSGALLERY_MATCHER_CMD names" in out["stderr"], out["stderr"]


def test_info_says_when_the_gallery_beside_a_store_was_not_compressed_from_it(
        sample_store, sample_gallery_3, tmp_path):
    """'ssgallery info' shows gallery.h5 and enrollment.h5 side by side; after 'enroll'
    wrote another store there (another folder, or --add), nothing said that the gallery
    no longer comes from it. Now a warning names both, with or without --json."""
    gallery, store = sample_gallery_3["gallery"], sample_store["store"]
    other = tmp_path / "other.h5"
    assert invoked(["enroll", make_faces(str(tmp_path / "faces"), n_clients=4, n_images=5,
                                         shape=(112, 90)), "--store", other,
                    "-q"])["exit_code"] == 0
    said = (f"ssgallery: warning: {gallery} was not compressed from {other} as it is now "
            "(another enrollment store, or this one enrolled again or added to since): its "
            "models and thresholds are not this store's; compress it again from this store "
            "(after enroll --add: compress --update)")
    for extra in ([], ["--json"]):
        same = invoked(["info", "--gallery", gallery, "--store", store, *extra])
        assert same["exit_code"] == 0 and "was not compressed from" not in same["stderr"]
        out = invoked(["info", "--gallery", gallery, "--store", other, *extra])
        assert out["exit_code"] == 0 and said in out["stderr"].splitlines(), out["stderr"]
    summary = json.loads(out["stdout"])
    assert summary["gallery"]["store_fingerprint"] != summary["store"]["fingerprint"]


def test_the_main_help_names_every_variable_a_command_s_help_names():
    """'ssgallery --help' lists the host configuration, the variables the commands read:
    it named $SSGALLERY_KEY_FILE but not $SSGALLERY_PRIVACY_KEY_FILE, the default of
    every command's --privacy-key-file; its exit status 1 named verify only (identify:
    a probe unknown)."""
    import re

    from ssgallery.cli import COMMANDS

    named = set()
    for command in COMMANDS:
        out = invoked([command, "--help"])
        named |= set(re.findall(r"\$(SSGALLERY_[A-Z_]+)", out["stdout"]))
    main_help = invoked(["--help"])["stdout"]
    host = main_help[main_help.index("Host configuration"):]
    assert named and {v for v in named if v not in host} == set()
    assert "1  reject (verify) / unknown (identify)" in main_help


def test_a_client_that_can_never_be_accepted_is_told_to_raise_the_target_far(tmp_path):
    """A client whose threshold is above every score its model gives was told 'try ...
    or a lower --target-far': a lower target FAR raises the thresholds; a higher one
    lowers them (as the expected-FRR warning says). Synthetic faces (synth's seed 0,
    20 x 8) at --target-far 0 have such clients."""
    assert invoked(["synth", tmp_path / "syn", "--identities", "20", "--images", "8",
                    "--probes", "0", "-q"])["exit_code"] == 0
    store = tmp_path / "e.h5"
    assert invoked(["enroll", tmp_path / "syn" / "faces", "--store", store,
                    "-q"])["exit_code"] == 0
    out = invoked(["compress", "--store", store, "-o", tmp_path / "g.h5", "--target-far",
                   "0", "-q"])
    assert out["exit_code"] == 0, out["output"]
    line = next(ln for ln in out["stderr"].splitlines() if "can never be accepted" in ln)
    assert line.endswith("; try more impostors (--max-impostors, --impostors sample) or a "
                         "higher --target-far (a lower threshold; now 0.0)"), line


def test_compress_update_without_a_gallery_says_every_client_is_trained(sample_store,
                                                                       tmp_path):
    """'compress --update -o NAME' with no gallery at NAME (a misspelt name) trained every
    client without a word, where '--resume' without parts warns; now a warning names it,
    before the training."""
    gallery = tmp_path / "galery.h5"
    out = invoked(["compress", "--store", sample_store["store"], "-o", gallery, "--update",
                   "--clients", "c01,c02", "--cv-folds", "0", "-q"])
    assert out["exit_code"] == 0, out["output"]
    assert f"ssgallery: warning: {gallery}: no gallery to update: every client is trained" \
        in out["stderr"].splitlines(), out["stderr"]


def test_a_missing_faces_folder_is_said_alike_by_enroll_and_roc(tmp_path):
    """'enroll nowhere' said 'no such folder' and 'roc nowhere' 'face folder does not
    exist' (and a file given as the folder: 'not a folder' against 'not a folder
    (expected ROOT/<client>/<images>)'): two checks of one thing. Now one
    (images.scan.check_faces_root), one line each, exit 2."""
    from helpers import refused

    missing, a_file = tmp_path / "nowhere", tmp_path / "a.png"
    a_file.write_bytes(b"x")
    for path, said in ((missing, "face folder does not exist"),
                       (a_file, "not a folder (expected ROOT/<client>/<images>)")):
        for args in (["enroll", path, "--store", tmp_path / "e.h5"], ["roc", path]):
            refused(args, f"ssgallery: error: {path}: {said}")


def test_info_client_with_a_store_reads_the_folder_s_gallery(sample_store, sample_gallery_3,
                                                            tmp_path, monkeypatch):
    """'info --client c01' reads ./gallery.h5, but 'info --client c01 --store S' was
    refused: '--client needs a gallery (--gallery FILE)', exit 2, with gallery.h5 right
    there. Now the folder's gallery is read, as without --store."""
    import shutil

    monkeypatch.chdir(tmp_path)
    shutil.copyfile(sample_gallery_3["gallery"], tmp_path / "gallery.h5")
    out = invoked(["info", "--client", "c01", "--store", sample_store["store"]])
    assert out["exit_code"] == 0, out["output"]
    assert out["stdout"].startswith("client c01 of gallery.h5: m = 2, ")
    assert f"store {sample_store['store']}: 20 clients" in out["stdout"]
    (tmp_path / "gallery.h5").unlink()
    refused(["info", "--client", "c01", "--store", sample_store["store"]],
            "--client needs a gallery (--gallery FILE)")
