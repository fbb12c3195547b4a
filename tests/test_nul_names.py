"""A file name holding a NUL character, which argv cannot carry but data can (a line of a
claims file, a path a library caller read from a CSV or a JSON string's ``\\u0000``), is
refused in one line naming it (`ssgallery.safeio.file_name`), never Python's bare
``ValueError: embedded null byte``."""

import json
import subprocess
import sys

import pytest
from helpers import invoked

# Each library entry point a caller hands a name to: reading (stores, galleries, key
# files, score files) and writing (outputs, their locks, report and synth folders).
CALLS = {
    "load_store": "from ssgallery.formats.store import load_store; load_store(NAME)",
    "verify a gallery": "from ssgallery.app.verify import verify; "
                        "verify(NAME, [PROBE], 'c01')",
    "verify with a key file": "from ssgallery.app.verify import verify; "
                              "verify(GALLERY, [PROBE], 'c01', key_file=NAME)",
    "identify": "from ssgallery.app.identify import identify; identify(NAME, [PROBE])",
    "compress's store": "from ssgallery.app.compress import compress; compress(NAME, OUT)",
    "compress's gallery": "from ssgallery.app.compress import compress; "
                          "compress(STORE, NAME)",
    "enroll's store": "from ssgallery.app.enroll import enroll; enroll(FACES, NAME)",
    "score files": "from ssgallery.biometrics.scores import read_score_files; "
                   "read_score_files([NAME])",
    "a written file": "from ssgallery.formats.atomic import write_text_atomic; "
                      "write_text_atomic(NAME, 'x')",
    "a report folder": "from ssgallery.biometrics.report import write_report; "
                       "write_report(NAME, [], [])",
    "a synth folder": "from ssgallery.images.synth import write_sample_data; "
                      "write_sample_data(NAME, identities=2, images=2)",
}


@pytest.mark.parametrize("call", sorted(CALLS))
def test_a_nul_name_read_from_data_is_one_line(call, tmp_path, sample_gallery_3,
                                               sample_store):
    """A real process takes the name from a file it reads (as a caller's CSV gives it):
    on main each call ended in 'ValueError: embedded null byte' (os.stat,
    os.path.realpath, pathlib's mkdir), a traceback; now `InputError` naming the file
    ('x\\x00y: the name holds a NUL character, which no file name can'), exit 2, and
    nothing is written."""
    from ssgallery.datasets import sample_faces_path

    names = tmp_path / "names.json"
    names.write_text(json.dumps({"name": str(tmp_path / "x\u0000y")}))
    script = (
        "import json, sys\n"
        "from ssgallery.errors import SsgalleryError\n"
        f"NAME = json.loads(open({str(names)!r}).read())['name']\n"
        f"GALLERY, STORE = {sample_gallery_3['gallery']!r}, {sample_store['store']!r}\n"
        f"FACES = {str(sample_faces_path())!r}\n"
        f"PROBE, OUT = FACES + '/c01/01.png', {str(tmp_path / 'out.h5')!r}\n"
        "try:\n"
        f"    {CALLS[call]}\n"
        "except SsgalleryError as exc:\n"
        "    print(type(exc).__name__, exc)\n"
        "    sys.exit(exc.exit_code)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=False,
                          cwd=tmp_path, timeout=120)
    assert done.stderr == ""
    assert done.stdout == (f"InputError {tmp_path}/x\\x00y: the name holds a NUL "
                           "character, which no file name can\n")
    assert done.returncode == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["names.json"]


def test_a_claims_line_with_a_nul_names_it(tmp_path, sample_gallery_3):
    """verify --claims reads probe names from data: the line is an error claim saying
    why, in the same words (main: 'cannot read image (embedded null byte)'), and the
    other claims are still checked."""
    from ssgallery.datasets import sample_faces_path

    probe = f"{sample_faces_path()}/c01/02.png"
    claims = tmp_path / "claims.txt"
    claims.write_text(f"{probe}\u0000x c01\n{probe} c01\n")
    res = invoked(["verify", "--gallery", sample_gallery_3["gallery"], "--claims", claims,
                   "--json"])
    assert res["exit_code"] == 2
    rows = json.loads(res["stdout"])["results"]
    assert [r["status"] for r in rows] == ["error", "reject"]
    assert rows[0]["reason"] == "the name holds a NUL character, which no file name can"
