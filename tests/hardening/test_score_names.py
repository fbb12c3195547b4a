"""Issue 20 family 10: roc reads back its own score files, whatever the names.

Client ids starting with ``#`` and names holding Unicode spaces or line breaks (U+202F,
U+00A0, U+3000 in client ids; VT, FF, U+0085, U+2028, U+2029 in probe file names) must
round-trip through ``roc -o`` and ``roc --scores``; what cannot be a client id (VT,
U+2028, ...) is refused at enroll with one line."""

import json
import os
from pathlib import Path

import numpy as np
from conftest import Workers, clean_error, report
from helpers import make_faces
from hypothesis import given, settings
from hypothesis import strategies as st

from ssgallery.biometrics.scores import Scores, format_scores, read_scores, write_scores
from ssgallery.errors import InputError

CLIENTS = ["#s1", "#s2", "a\u202fb", "g\u00a0h", "i\u3000j", "k%20l", "50%", "x#y"]
PROBE_NAMES = ["v\x0bt.png", "l\u2028s.png", "n\x85l.png", "f\x0cf.png", "p\u2029s.png",
               "#h.png", "s p.png", "z\ufeffw.png"]
NOT_IDS = ["v\x0bt", "l\u2028s", "p\u2029s", "n\x85l", "t\tab"]


def _faces(root):
    """8 clients named CLIENTS, 6 images each; one image of each renamed PROBE_NAMES."""
    make_faces(str(root), n_clients=len(CLIENTS), n_images=6)
    for i, name in enumerate(CLIENTS):
        os.rename(root / f"c{i:02d}", root / name)
        os.rename(root / name / "5.png", root / name / PROBE_NAMES[i])
    return root


def test_roc_reads_back_its_own_score_files(tmp_path):
    faces = _faces(tmp_path / "faces")
    pool = Workers(timeout=120)
    counts = {"score files": 0, "read back": 0, "claims kept": 0, "claims lost": 0,
              "refused at enroll": 0, "failures": 0}
    failures = []
    try:
        first = pool.run(["roc", faces, "-o", tmp_path / "r", "--methods", "svm,ssvm",
                          "--m", "1", "--repetitions", "2", "--train-images", "3",
                          "--enrolled", "7", "--no-plot"])
        assert first["code"] == 0, first
        files = sorted(str(p) for p in (tmp_path / "r").glob("*/*.txt"))
        for path in files:  # scores/ and identification/
            counts["score files"] += 1
            lines = Path(path).read_text(encoding="utf-8").count("\n")
            again = pool.run(["roc", "--scores", path, "-o", tmp_path / "again", "--no-plot"])
            try:
                table = read_scores(path)
            except InputError as exc:  # not even read back
                table = Scores("?", None, 0, *[np.array([])] * 4)
                again["library"] = str(exc)
            counts["claims kept"] += len(table.score)
            counts["claims lost"] += lines - len(table.score)
            names = set(table.claimed) | set(table.real)
            ok = again["code"] == 0 and names <= set(CLIENTS) and len(table.score) == lines
            if ok and "scores" in path:  # verification files name every enrolled client
                summary = json.loads((tmp_path / "again" / "summary.json").read_text())
                ok = summary["methods"][0]["clients"] == 7 and len(set(table.claimed)) == 7
            counts["read back" if ok else "failures"] += 1
            if not ok:
                failures.append((path, again))
        for name in NOT_IDS:  # cannot be a client id: one clear line at enroll
            folder = make_faces(str(tmp_path / f"bad{len(name)}{ord(name[1])}"), n_clients=2)
            os.rename(os.path.join(folder, "c01"), os.path.join(folder, name))
            result = pool.run(["enroll", folder, "--store", tmp_path / "e.h5"])
            ok = clean_error(result) and "cannot enrol this folder" in result["stderr"]
            counts["refused at enroll" if ok else "failures"] += 1
            if not ok:
                failures.append((name, result))
    finally:
        pool.close()
    line = report("family 10, score files: "
                  f"{len(CLIENTS)} client ids, {len(PROBE_NAMES)} probe names", counts)
    assert not failures, (line, failures)
    assert counts["claims lost"] == 0 and counts["score files"] >= 4, line
    assert not (tmp_path / "e.h5").exists()


def test_comment_lines_are_refused(tmp_path):
    """A '#' line that is not an old ssgallery header is an error naming the line, never
    a silently dropped row."""
    path = tmp_path / "foreign.txt"
    path.write_text("s1 s1 a.png 0.5\n#s2 #s2 b.png 0.7\ns1 s2 c.png 0.1\n")
    result = Workers().run(["roc", "--scores", path, "-o", tmp_path / "r", "--no-plot"])
    assert clean_error(result) and "line 2 starts with '#'" in result["stderr"], result


# NUL is no name's character (POSIX paths, client ids), and "%00" is the empty field
_NAME = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"),
                min_size=0, max_size=12)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_NAME, _NAME, _NAME), min_size=1, max_size=5,
                unique_by=lambda row: (row[0], row[2])))
def test_any_name_round_trips(tmp_path_factory, rows):
    """Any text (every Unicode category but lone surrogates; no NUL) as claimed id, real
    id and probe label reads back exactly as written (one claim per claimed id and
    probe: a claim on two lines is refused)."""
    claimed, real, probe = (np.array(col, dtype=object) for col in zip(*rows))
    table = Scores("svm", None, 0, claimed, real, probe, np.linspace(0, 1, len(rows)))
    path = tmp_path_factory.mktemp("rt") / "svm.r0.txt"
    write_scores(path, table)
    back = read_scores(path)
    assert format_scores(back) == format_scores(table)
    assert list(back.claimed) == list(claimed) and list(back.real) == list(real)
    assert list(back.probe) == list(probe)
