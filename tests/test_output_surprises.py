"""What surprised a user of the command line in the files show and roc write: the name
an image gets without -o, and the files they may not replace (refused in one line
before anything is written or trained, replaced with --force, never a store or a
gallery). The other surprises: tests/test_user_surprises.py."""

import pytest
from helpers import invoked, make_faces

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
