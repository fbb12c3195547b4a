"""JSON nested past Python's recursion limit, from an external program's answers or an
option, is refused as any other answer that is not the contract's: one line, exit 2,
never 'internal error: RecursionError' (exit 4)."""

import sys
import textwrap

from helpers import invoked, make_faces

DESCRIBE = ('{"kind": "similarity", "symmetric": true, "range": [0, 1], '
            '"serve": true}')


def _program(tmp_path, name, body):
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return f"{sys.executable} {path}"


def test_a_describe_answer_nested_past_the_stack_is_one_line(tmp_path):
    """--describe printing '[' x 100,000 ended enroll in an internal error."""
    faces = make_faces(str(tmp_path / "faces"), n_clients=2, n_images=3, shape=(16, 12))
    cmd = _program(tmp_path, "deep.py", """
        import sys
        if "--describe" in sys.argv:
            print("[" * 100000)
        """)
    out = invoked(["enroll", faces, "--store", tmp_path / "s.h5", "--matcher-cmd", cmd, "-q"])
    assert out["exit_code"] == 2, out["output"]
    assert out["stderr"].startswith(f"ssgallery: error: matcher {cmd} --describe did not "
                                    "print a JSON object with a 'kind': it printed '[[[[")
    assert out["stderr"].count("\n") == 1
    assert not (tmp_path / "s.h5").exists()


def test_a_served_reply_nested_past_the_stack_is_one_line(tmp_path):
    """A served program (--serve) replying '[' x 5,000 ended compress in an internal
    error."""
    faces = make_faces(str(tmp_path / "faces"), n_clients=3, n_images=6, shape=(16, 12))
    cmd = _program(tmp_path, "served.py", f"""
        import sys
        if "--describe" in sys.argv:
            print({DESCRIBE!r})
            sys.exit(0)
        if "--serve" in sys.argv:
            for line in sys.stdin:
                print("[" * 5000, flush=True)
        """)
    store = tmp_path / "s.h5"
    assert invoked(["enroll", faces, "--store", store, "--matcher-cmd", cmd,
                    "-q"])["exit_code"] == 0
    out = invoked(["compress", "--store", store, "-o", tmp_path / "g.h5", "--matcher-cmd",
                   cmd, "--m", "1", "--cv-folds", "0", "-q"])
    assert out["exit_code"] == 2, out["output"]
    assert out["stderr"].startswith(f"ssgallery: error: matcher {cmd} --serve answered "
                                    "'[[[["), out["stderr"]
    assert "not a JSON object" in out["stderr"] and out["stderr"].count("\n") == 1
    assert not (tmp_path / "g.h5").exists()


def test_an_option_nested_past_the_stack_is_read_as_text(tmp_path):
    """-O variance=[[[... ended enroll in an internal error; it is text, as any value
    that is no JSON, and refused by the option's check."""
    faces = make_faces(str(tmp_path / "faces"), n_clients=2, n_images=3, shape=(16, 12))
    out = invoked(["enroll", faces, "--store", tmp_path / "s.h5", "-O",
                   "variance=" + "[" * 100_000, "-q"])
    assert out["exit_code"] == 2, out["output"]
    assert out["stderr"].startswith("ssgallery: error: eigenface: variance must be a number "
                                    "in (0, 1], got '[[[[")
    assert out["stderr"].count("\n") == 1
