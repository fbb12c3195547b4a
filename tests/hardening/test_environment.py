"""Issue 20 family 9: environment variables are validated, never a silent fallback.

An operator who sets ``SSGALLERY_KEY_FILE`` means "signatures required": an empty or
misspelt variable must not let an unsigned gallery through. Every ``SSGALLERY_*``
variable is checked by every command (`ssgallery.safeio.check_environment`)."""

import os

import pytest
from conftest import Workers, clean_error, report
from helpers import make_faces

from ssgallery.app.compress import CompressOptions, compress
from ssgallery.app.enroll import enroll
from ssgallery.safeio import ENVIRONMENT


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("environment")
    faces = make_faces(str(root / "faces"), n_clients=3, n_images=5)
    enroll(faces, root / "e.h5")
    compress(root / "e.h5", root / "unsigned.h5", CompressOptions(m=1, cv_folds=0, max_iter=3))
    (root / "key").write_bytes(b"k" * 32)
    return {"root": root, "faces": faces, "genuine": os.path.join(faces, "c01", "0.png")}


# (variable, value): each must be a clean error of every command, naming the variable
BAD = [("SSGALLERY_KEY_FILE", ""), ("SSGALLERY_KEY_FILE", "  "),
       ("SSGALLERY_PRIVACY_KEY_FILE", ""),
       ("SSGALLERY_KEYFILE", "KEY"), ("SSGALLERY_KEY", "KEY"), ("SSGALLERY_KEY_FILES", "KEY"),
       ("SSGALLERY_LOCK_TIMEOUT", "abc"), ("SSGALLERY_LOCK_TIMEOUT", "nan"),
       ("SSGALLERY_LOCK_TIMEOUT", "-1"), ("SSGALLERY_LOCK_TIMEOUT", "inf"),
       ("SSGALLERY_LOCK_TIMEOUT", "1e12"), ("SSGALLERY_LOCK_TIMEOUT", ""),
       ("SSGALLERY_DEBUG", "yes"), ("SSGALLERY_DEBUG", ""), ("SSGALLERY_DEBUG", "true"),
       ("SSGALLERY_MATCHER_CMD", ""), ("SSGALLERY_MATCHER_CMD", " "),
       ("SSGALLERY_CONFIG", ""), ("SSGALLERY_DATA", ""), ("SSGALLERY_ATT_FACES", ""),
       ("SSGALLERY_LFW", ""), ("SSGALLERY_BENCH_PAGES", ""), ("SSGALLERY_BENCH_OUT", ""),
       ("SSGALLERY_PROGRESS_INTERVAL", "soon"), ("SSGALLERY_PROGRESS_INTERVAL", "")]


def test_bad_environment_is_one_line(site, tmp_path):
    """Each bad variable through verify (of an unsigned gallery: an accept there is the
    silent fallback), enroll (which takes the lock) and info: a clean error naming the
    variable; nothing written."""
    root = site["root"]
    assert {name for name, _ in BAD} >= set(ENVIRONMENT)  # every variable is exercised
    key = str(root / "key")
    pool = Workers()
    counts = {"cases": 0, "clean errors": 0, "accepts": 0, "files written": 0,
              "failures": 0}
    failures = []
    try:
        for name, value in BAD:
            env = {name: value.replace("KEY", key)}
            store = tmp_path / "new.h5"
            runs = [["verify", site["genuine"], "--claim", "c01", "--gallery",
                     root / "unsigned.h5"],
                    ["enroll", site["faces"], "--store", store],
                    ["info", "--gallery", root / "unsigned.h5"]]
            for args in runs:
                result = pool.run(args, env=env)
                counts["cases"] += 1
                ok = clean_error(result) and f"environment variable {name} " in \
                    result["stderr"]
                if result.get("code") == 0 and args[0] == "verify":
                    counts["accepts"] += 1
                if store.exists():
                    counts["files written"] += 1
                    store.unlink()
                counts["clean errors" if ok else "failures"] += 1
                if not ok:
                    failures.append((name, value, args[0], result))
        # the same commands with good values still work
        good = pool.run(["verify", site["genuine"], "--claim", "c01", "--gallery",
                         root / "unsigned.h5"],
                        env={"SSGALLERY_DEBUG": "0", "SSGALLERY_LOCK_TIMEOUT": "0.5"})
        signed = pool.run(["verify", site["genuine"], "--claim", "c01", "--gallery",
                           root / "unsigned.h5"], env={"SSGALLERY_KEY_FILE": key})
        empty_option = pool.run(["verify", site["genuine"], "--claim", "c01", "--gallery",
                                 root / "unsigned.h5", "--key-file", ""])
    finally:
        pool.close()
    line = report(f"family 9, environment variables: {len(BAD)} settings", counts)
    assert not failures, (line, failures)
    assert counts["accepts"] == counts["files written"] == 0, line
    assert good["code"] == 0, good
    assert clean_error(signed) and "not signed" in signed["stderr"], signed
    assert clean_error(empty_option) and "key file name is empty" in \
        empty_option["stderr"], empty_option


def test_library_reads_apply_the_same_rules(monkeypatch, tmp_path):
    """The library functions that read a variable refuse an empty or malformed value
    themselves (not only the command line)."""
    from ssgallery.errors import SsgalleryError
    from ssgallery.formats.atomic import output_lock
    from ssgallery.formats.integrity import load_key
    from ssgallery.matchers.host import host_matcher

    monkeypatch.setenv("SSGALLERY_KEY_FILE", "")
    with pytest.raises(SsgalleryError, match="SSGALLERY_KEY_FILE is set but empty"):
        load_key()
    monkeypatch.setenv("SSGALLERY_LOCK_TIMEOUT", "abc")
    with pytest.raises(SsgalleryError, match="SSGALLERY_LOCK_TIMEOUT must be a number"), \
            output_lock(tmp_path / "x.h5"):
        pass
    monkeypatch.setenv("SSGALLERY_MATCHER_CMD", "")
    with pytest.raises(SsgalleryError, match="SSGALLERY_MATCHER_CMD is set but empty"):
        host_matcher()
