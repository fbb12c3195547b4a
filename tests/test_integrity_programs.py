"""Trust the verdict (issue 8, part A), no code from data: stores and galleries never
name the program an external matcher runs (the host does: --matcher-cmd,
$SSGALLERY_MATCHER_CMD), an edited file runs nothing, the host's program must answer
with the file's contract and another program is refused naming the file, and what a
program prints is bounded. Real files edited with h5py, real processes. The rest of
issue 8 part A: tests/test_integrity.py."""

import json
import os
import shlex
import shutil
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest
from click.testing import CliRunner
from helpers import edit_h5, rehash_gallery

from ssgallery.app.verify import verify
from ssgallery.cli import main
from ssgallery.errors import MatcherError
from ssgallery.formats.store import load_store

MATCHERS = Path(__file__).resolve().parent / "matchers"
FOREIGN = [sys.executable, str(MATCHERS / "clipped_corr.py")]


def _names(f):
    names = []
    f.visit(names.append)
    return names


def _copy(src, dst):
    shutil.copy(src, dst)
    return dst


def test_files_hold_no_command(external_built):
    root, _ = external_built
    for name in ("e.h5", "g.h5"):
        with h5py.File(root / name) as f:
            objects = [f] + [f[n] for n in _names(f)]
            text = [str(v) for o in objects for v in o.attrs.values()]
            text += [str(o[()]) for o in objects if isinstance(o, h5py.Dataset)]
        assert not any("clipped_corr" in t for t in text), name
        with h5py.File(root / name) as f:
            assert "command" not in json.loads(f.attrs["matcher_config"])
    store = load_store(root / "e.h5")
    assert "command" not in store.matcher_config
    assert len(store.matcher_state["contract_sha256"]) == 64


def test_edited_gallery_runs_nothing(external_built, tmp_path):
    """A gallery edited to name `sh -c 'id > FILE'` runs nothing, with or without re-hash."""
    root, faces = external_built
    marker = tmp_path / "pwned"
    evil = ["sh", "-c", f"id > {shlex.quote(str(marker))}"]
    probe = os.path.join(faces, "c00", "0.png")
    for rehash in (False, True):
        g = _copy(root / "g.h5", tmp_path / f"evil{rehash}.h5")
        with edit_h5(g) as f:
            config = json.loads(f.attrs["matcher_config"])
            f.attrs["matcher_config"] = json.dumps(dict(config, command=evil))
            f["matcher"].attrs["command"] = json.dumps(evil)
        if rehash:
            rehash_gallery(g)
        r = CliRunner().invoke(main, ["verify", probe, "--claim", "c00", "--gallery", str(g)],
                               env={"SSGALLERY_MATCHER_CMD": None, "SSGALLERY_CONFIG": None,
                                    "XDG_CONFIG_HOME": str(tmp_path)})
        assert r.exit_code == 2, r.output
        message = r.stderr.strip()
        assert "\n" not in message
        assert ("integrity check failed" in message) != rehash
        if rehash:
            assert "program is not named on this host" in message
        assert not marker.exists()


def test_host_matcher_must_match_the_contract(external_built, tmp_path):
    root, faces = external_built
    probe = os.path.join(faces, "c00", "0.png")
    ok = verify(root / "g.h5", [probe], "c00", matcher_cmd=FOREIGN)
    assert ok[0].accept
    other = [sys.executable, str(MATCHERS / "hostile.py"), "nan"]  # a similarity in [0, 1]
    with pytest.raises(MatcherError, match=r"is not the file's matcher: its contract digest"):
        verify(root / "g.h5", [probe], "c00", matcher_cmd=shlex.join(other))
    # the configuration file names it too
    config = tmp_path / "config.toml"
    config.write_text(f"[external]\ncommand = {json.dumps(FOREIGN)}\n")
    os.environ["SSGALLERY_CONFIG"] = str(config)
    try:
        assert verify(root / "g.h5", [probe], "c00")[0].accept
    finally:
        del os.environ["SSGALLERY_CONFIG"]


@pytest.mark.parametrize("name, value, said", [
    ("symmetric", 1, "the file says symmetric: true, the program describes itself as "
     + "symmetric: false"),
    ("range", [0.0, 2.0], "the file says range: [0.0, 2.0], the program describes itself "
     + "as range: [0.0, 1.0]"),
], ids=["symmetric", "range"])
def test_an_edited_stored_description_is_named(external_built, tmp_path, name, value, said):
    """The file's stored description of its external matcher edited (and the file
    re-hashed, unsigned): the program's contract digest is still the file's, so verify
    names the field that differs, not the same digest twice; one line, exit 2."""
    root, faces = external_built
    g = _copy(root / "g.h5", tmp_path / "g.h5")
    with edit_h5(g) as f:
        if name == "range":
            f["matcher/range"][...] = value
        else:
            f["matcher"].attrs[name] = value
    rehash_gallery(g)
    r = CliRunner().invoke(main, ["verify", os.path.join(faces, "c00", "0.png"), "--claim",
                                  "c00", "--gallery", str(g), "--matcher-cmd",
                                  shlex.join(FOREIGN)])
    assert r.exit_code == 2, r.output
    assert r.stderr.count("\n") == 1 and said in r.stderr, r.stderr
    assert "contract digest is" not in r.stderr and "stored description was edited" \
        in r.stderr
    assert r.stderr.startswith(f"ssgallery: error: {g}: matcher "), r.stderr  # the file


def test_another_program_is_refused_naming_the_file(external_built, tmp_path):
    """A program whose contract digest is not the file's: the refusal starts with the
    file's path, the gallery's for verify, the store's for compress; one line, exit 2."""
    root, faces = external_built
    other = shlex.join([sys.executable, str(MATCHERS / "hostile.py"), "nan"])
    runs = {str(root / "g.h5"): ["verify", os.path.join(faces, "c00", "0.png"), "--claim",
                                 "c00", "--gallery", str(root / "g.h5")],
            str(root / "e.h5"): ["compress", "--store", str(root / "e.h5"), "-o",
                                 str(tmp_path / "n.h5"), "--m", "1", "--clients", "c00"]}
    for path, cmd in runs.items():
        r = CliRunner().invoke(main, cmd + ["--matcher-cmd", other])
        assert r.exit_code == 2, r.output
        assert r.stderr.count("\n") == 1, r.stderr
        assert r.stderr.startswith(f"ssgallery: error: {path}: matcher "), r.stderr
        assert "is not the file's matcher: its contract digest is" in r.stderr, r.stderr
    assert not (tmp_path / "n.h5").exists()


def test_matcher_cmd_that_does_not_parse(external_built):
    root, faces = external_built
    probe = os.path.join(faces, "c00", "0.png")
    for cmd in (["verify", probe, "--claim", "c00", "--gallery", str(root / "g.h5")],
                ["enroll", faces, "--store", str(root / "x.h5")]):
        r = CliRunner().invoke(main, cmd + ["--matcher-cmd", "x 'unclosed"])
        assert r.exit_code == 2, r.output
        assert r.stderr.count("\n") == 1 and "cannot parse the matcher command" in r.stderr
    assert not (root / "x.h5").exists()


def test_matcher_output_is_bounded(tmp_path):
    """A program that answers gigabytes is killed after the documented limit."""
    from ssgallery.matchers.external import ExternalMatcher, answer_limit

    prog = tmp_path / "chatty.py"
    prog.write_text("import sys, json\n"
                    "if '--describe' in sys.argv:\n"
                    "    print(json.dumps({'kind': 'similarity', 'range': [0, 1]}))\n"
                    "else:\n"
                    "    sys.stdout.write('0.5 ' * (1 << 22))\n")
    m = ExternalMatcher([sys.executable, str(prog)]).fit(np.zeros((2, 4, 4)) + [[[0]], [[9]]])
    with pytest.raises(MatcherError, match=rf"wrote more than {answer_limit(2)} bytes"):
        m.score_images(np.zeros((1, 4, 4)), np.ones((2, 4, 4)))
