"""Daily use without surprises: what a user met running the commands by hand (session
16): each case as the user ran it, and what they expect instead."""

from pathlib import Path

import numpy as np
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


def test_roc_json_says_where_it_wrote_the_report(tmp_path):
    """``roc --json`` printed summary.json alone: not where the report was (the text
    output's 'wrote to DIR: ...' line). It now carries ``files``, the path of each file
    written; the rest is summary.json as written."""
    import json

    rng = np.random.default_rng(0)
    scores = tmp_path / "svm.r0.txt"
    scores.write_text("".join(
        f"c{c} {who} {who}/{k}.png {rng.normal(1 if who == f'c{c}' else -1):.4f}\n"
        for c in range(4) for who in (f"c{c}", "x", "y") for k in range(3)))
    out = invoked(["roc", "--scores", scores, "-o", tmp_path / "rep", "--json", "-q"])
    assert out["exit_code"] == 0, out["output"]
    printed = json.loads(out["stdout"])
    files = printed.pop("files")
    assert files["summary"] == str(tmp_path / "rep" / "summary.json")
    assert files["curves"] == str(tmp_path / "rep" / "curves.csv")
    assert files["scores"] == []  # --scores: the inputs, never written again
    assert all(Path(p).is_file() for k, p in files.items() if k != "scores")
    assert printed == json.loads(Path(files["summary"]).read_text())


def test_compress_s_table_says_what_each_column_is(sample_store, tmp_path):
    """compress printed its table (threshold, FRR, CV FRR, SVM #SVs, SVM CV FRR, vs SVM)
    with no word on what the columns are; one line under it now says."""
    out = invoked(["compress", "--store", sample_store["store"], "-o", tmp_path / "g.h5",
                   "--m", "1", "--clients", "c01"])
    assert out["exit_code"] == 0, out["output"]
    lines = out["stdout"].splitlines()
    assert lines[0].split()[:3] == ["client", "m", "threshold"] and lines[2].startswith("c01")
    assert lines[3] == (
        "threshold: accept when g(x) >= it; FRR: held-out genuine images rejected at it; "
        "CV FRR: at a cross-validated threshold of the client's own; SVM #SVs, SVM CV FRR: "
        "its full SVM's; vs SVM: share of held-out genuine-impostor pairs misranked beyond "
        "the SVM")
    for column in ("threshold", "FRR", "CV FRR", "SVM #SVs", "SVM CV FRR", "vs SVM"):
        assert column in lines[0] and column in lines[3]


def test_verify_and_identify_print_the_same_score(sample_gallery_3):
    """verify --json said 1.2510149259554577 and identify --json 1.2510149259554595 for
    the same probe and client: identify printed the stacked index's sums, verify the
    record's. Both print the record's now, digit for digit, on one probe and on a batch
    (the same probes in the same order)."""
    import json

    from ssgallery.datasets import sample_faces_path

    gallery = sample_gallery_3["gallery"]
    probes = sorted(str(p) for p in (sample_faces_path().parent / "probes").glob("*.png"))
    for batch in ([probes[0]], probes):
        found = json.loads(invoked(["identify", *batch, "--gallery", gallery, "--top", "3",
                                    "--json"])["stdout"])
        for client in ("c01", "c02", "c03"):
            said = json.loads(invoked(["verify", *batch, "--claim", client, "--gallery",
                                       gallery, "--json"])["stdout"])
            for verdict, search in zip(said["results"], found["results"]):
                (candidate,) = [c for c in search["candidates"] if c["client"] == client]
                assert candidate["score"] == verdict["score"], (client, verdict["probe"])
                assert candidate["verified"] == verdict["accept"]


def test_info_says_what_a_client_s_impostor_count_counts(sample_gallery_3):
    """``info --client c01`` printed ``n_impostor: 190`` beside ``impostors: sample``: 190
    read as impostors (people), when it counts the other people's images the client
    trained on (19 people here). The count says its unit now; --json keeps the key."""
    import json

    gallery = sample_gallery_3["gallery"]
    text = invoked(["info", "--gallery", gallery, "--client", "c01"])["stdout"]
    prov = json.loads(invoked(["info", "--gallery", gallery, "--client", "c01",
                               "--json"])["stdout"])["client"]["provenance"]
    n = prov["n_impostor"]
    assert n == 190 and prov["n_genuine"] == 10
    assert f"  n_impostor: {n} (other people's images the client trained on)\n" in text
    assert "  n_genuine: 10 (the client's own training images)\n" in text
    assert f"  max_impostors: {prov['max_impostors']} (at most this many impostor images " \
        "per client, 0: no cap)\n" in text


def test_a_probe_scores_the_same_alone_and_in_any_batch(sample_gallery_3):
    """The same probe and client printed different last digits alone and in a batch
    (sample gallery, c01: 1.2973133232754832 alone, 1.297313323275485 beside one other
    probe, 1.2973133232754863 in a batch of 8): one BLAS product over the batch sums in
    an order that depends on the batch's size. Each probe is summed as it would be alone
    now: bit-identical alone and in batches of 2 to 50, whatever comes before it."""
    from ssgallery.app.verify import verify
    from ssgallery.datasets import sample_faces_path

    gallery = sample_gallery_3["gallery"]
    faces = sample_faces_path()
    probes = sorted(str(p) for p in faces.glob("c0[1-5]/*"))[:40] + sorted(
        str(p) for p in (faces.parent / "probes").glob("*.png"))
    for client in ("c01", "c03"):
        alone = [verify(gallery, [p], client)[0].score for p in probes]
        for start, size in ((0, 2), (0, 3), (1, 5), (0, 8), (3, 17), (0, 33), (0, 50)):
            batch = [r.score for r in verify(gallery, probes[start:start + size], client)]
            assert batch == alone[start:start + size], (client, start, size)


def test_verify_asks_the_matcher_for_a_probe_s_quality_once(sample_gallery_3):
    """verify's failure-to-acquire check asked an eigenface matcher for every probe's
    quality twice (face_check called ``quality``, then the default ``is_face``, which
    computes it again): a fifth of verify's batch time on the sample gallery. A matcher
    whose is_face is the default is asked once; the verdicts are the default rule's."""
    from ssgallery.app.verify import load_client
    from ssgallery.datasets import sample_faces_path
    from ssgallery.images.ingest import load_image_list
    from ssgallery.matchers.base import face_check
    from ssgallery.matchers.eigenface import EigenfaceMatcher

    class Counted(EigenfaceMatcher):  # a plug-in that counts what it is asked
        asked = 0

        def quality(self, images):
            Counted.asked += len(images)
            return super().quality(images)

    matcher = load_client(sample_gallery_3["gallery"], "c01").matcher
    counted = Counted()
    counted.__dict__.update(matcher.__dict__)
    probes = sorted(str(p) for p in (sample_faces_path().parent / "probes").glob("*.png"))
    images = load_image_list(probes, size=(92, 112))
    ok, quality = face_check(counted, images)
    assert Counted.asked == len(probes) == 10
    assert list(ok) == list(matcher.is_face(images)) and list(quality) == list(
        matcher.quality(images))


def _interrupted_compress(*args):
    """Run ``ssgallery compress ARGS`` as a program, Ctrl-C it once its first of 4
    clients is trained; (exit status, stderr)."""
    import os
    import signal
    import subprocess
    import sys

    proc = subprocess.Popen(
        [sys.executable, "-m", "ssgallery", "compress", *map(str, args)],
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
        env=dict(os.environ, SSGALLERY_PROGRESS_INTERVAL="0"))
    for line in proc.stderr:
        if "training clients 1/4" in line:
            proc.send_signal(signal.SIGINT)
            break
    said = proc.stderr.read()
    return proc.wait(), said


def test_compress_s_resume_hint_names_the_key_it_signed_with(sample_store, tmp_path):
    """Ctrl-C in 'compress -o g.h5 --key-file k' said "'ssgallery compress -o g.h5
    --resume' with the same other options continues": run as printed, it wrote an
    unsigned gallery (exit 0) that verify --key-file then refused. --resume compares
    the training options, not the host's key files and program: the hint names them."""
    key, gallery = tmp_path / "k.key", tmp_path / "g.h5"
    key.write_bytes(bytes(range(32)))
    code, said = _interrupted_compress("--store", sample_store["store"], "-o", gallery,
                                       "--key-file", key, "--clients", "c01,c02,c03,c04")
    assert code != 0
    assert (f"'ssgallery compress --store {sample_store['store']} -o {gallery} --key-file "
            f"{key} --clients c01,c02,c03,c04 --resume' with the same other options "
            "continues") in said, said


def test_compress_s_resume_hint_keeps_an_update_an_update(sample_store, tmp_path):
    """Ctrl-C in 'compress --update' (after enroll --add) printed a resume command without
    --update (nor --clients): run as printed it trained every client again, the ones the
    gallery held too, and said 'kept 0 from the gallery' (AT&T s1-s10 kept + s11-s20
    new: 18 trained, 2 resumed). The hint names --clients and --update as the run had
    them, and run as printed it keeps the gallery's clients."""
    import shlex

    gallery, store = tmp_path / "g.h5", sample_store["store"]
    first = invoked(["compress", "--store", store, "-o", gallery, "--m", "1", "-q",
                     "--clients", "c01,c02"])
    assert first["exit_code"] == 0, first["output"]
    code, said = _interrupted_compress("--store", store, "-o", gallery, "--m", "1",
                                       "--clients", "c01,c02,c03,c04,c05,c06", "--update")
    assert code == 130, said
    hint = f"'ssgallery compress --store {store} -o {gallery} --clients " \
           "c01,c02,c03,c04,c05,c06 --update --resume' with the same other options continues"
    assert hint in said, said
    printed = shlex.split(hint.split("'")[1])  # ssgallery compress ... --resume
    again = invoked([*printed[1:], "--m", "1"])
    assert again["exit_code"] == 0, again["output"]
    assert "; kept 2 from the gallery, resumed " in again["stdout"], again["stdout"]


def test_a_probe_s_quality_is_the_same_alone_and_in_any_batch(sample_gallery_3):
    """verify --json's ``quality`` of a probe changed in its last digits with the batch
    it came in (its score no longer did, 1de8670): the eigenface DFFS and DIFS projected
    the batch with one BLAS product. Each probe is projected as it would be alone now:
    its quality alone and in a batch of 8 are equal to the last bit."""
    from ssgallery.app.verify import verify
    from ssgallery.datasets import sample_faces_path

    gallery = sample_gallery_3["gallery"]
    faces = sample_faces_path()
    probes = sorted(str(p) for p in faces.glob("c0[1-5]/*"))[:40] + sorted(
        str(p) for p in (faces.parent / "probes").glob("*.png"))
    alone = [verify(gallery, [p], "c01")[0].quality for p in probes]
    assert all(q is not None for q in alone)
    for start, size in ((0, 8), (1, 8), (3, 17), (0, 50)):
        batch = [r.quality for r in verify(gallery, probes[start:start + size], "c01")]
        assert batch == alone[start:start + size], (start, size)
