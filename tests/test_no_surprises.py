"""Daily use without surprises: what a user met running the commands by hand (session
16): each case as the user ran it, and what they expect instead."""

from helpers import invoked


def test_ssgallery_alone_prints_the_help_and_succeeds():
    """``ssgallery`` with no command printed the help on stderr and exited 2 (click 8.2
    and later treat it as a usage error); it is the help asked for, as ``--help``."""
    alone, asked = invoked([]), invoked(["--help"])
    assert alone["exit_code"] == 0, alone["output"]
    assert alone["stdout"] == asked["stdout"] and "Commands:" in alone["stdout"]
    assert alone["stderr"] == ""


def test_a_background_folder_that_is_not_there_is_named_as_a_folder(tmp_path, monkeypatch):
    """``enroll faces --background nobg/`` (a folder not there, a trailing slash) said "no
    client folder named nobg/": the value was read as a subject name. A value with a path
    separator names a folder; a name that is neither a subject nor a folder says both."""
    from helpers import refused

    from ssgallery.datasets import sample_faces_path

    faces = str(sample_faces_path())
    monkeypatch.chdir(tmp_path)
    store = ["--store", "e.h5", "-q"]
    refused(["enroll", faces, "--background", "nobg/", *store],
            "nobg/: no such folder for --background (a folder DIR/<subject>/* of "
            "impostor-only subjects, or subject folder names of the faces folder, A,B,...)")
    out = refused(["enroll", faces, "--background", "c04/", *store], "c04/: no such folder")
    assert out["stderr"].rstrip().endswith(
        "; did you mean --background c04, the subject folder of the faces folder?")
    (tmp_path / "afile").write_text("x")
    refused(["enroll", faces, "--background", "./afile", *store],
            "./afile: not a folder for --background")
    refused(["enroll", faces, "--background", "nobg", *store],
            f"{faces}: no subject folder named nobg for --background (nor a folder of that "
            f"name)")
    assert not (tmp_path / "e.h5").exists()
