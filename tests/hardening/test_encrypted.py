"""Encrypted galleries and stores under attack (issue 23), through the real CLI in worker
processes: a wrong or missing key, truncated ciphertext, swapped chunks, chunks spliced
from another file under the same key, a replayed file under a retired key, edited
headers and random byte flips. Every case must end in a clean one-line error (exit 2)
or an unchanged verdict: never an accept, never a traceback, never a hang."""

import os

import numpy as np
import pytest
from conftest import CHANGED, KINDS, classify, clean_error, report
from helpers import make_faces

from ssgallery.app.compress import compress
from ssgallery.app.enroll import enroll
from ssgallery.app.options import CompressOptions, CompressRun
from ssgallery.formats.encryption import CHUNK, HEADER, TAG

N_FLIPS = 40


@pytest.fixture(scope="module")
def sealed(tmp_path_factory):
    """An encrypted store, and an encrypted, signed gallery with protected templates;
    the same gallery compressed again (another file under the same key), and under a
    retired key."""
    root = tmp_path_factory.mktemp("encrypted")
    faces = make_faces(str(root / "faces"), n_clients=4, n_images=5)
    keys = {}
    for name in ("privacy", "retired", "other", "sign"):
        keys[name] = root / f"{name}.key"
        keys[name].write_bytes(os.urandom(32))
    enroll(faces, root / "e.h5", privacy_key_file=str(keys["privacy"]))
    enroll(faces, root / "plain.h5")  # what the deployment compressed before its key changed
    options = CompressOptions(m=2, cv_folds=0, protect_templates=True)
    for store, out, key in (("e.h5", "g.h5", "privacy"), ("e.h5", "again.h5", "privacy"),
                            ("plain.h5", "old.h5", "retired")):
        compress(root / store, root / out, options,
                 CompressRun(privacy_key_file=str(keys[key]), key_file=str(keys["sign"])))
    return {"root": root, "keys": keys,
            "impostor": os.path.join(faces, "c02", "0.png"),  # claimed as c01
            "genuine": os.path.join(faces, "c01", "0.png")}


def _verify(s, gallery, privacy="privacy"):
    args = ["verify", s["impostor"], s["genuine"], "--claim", "c01", "--gallery", gallery,
            "--key-file", s["keys"]["sign"]]
    if privacy:
        args += ["--privacy-key-file", s["keys"][privacy]]
    return args


def _cases(s, rng):
    """(name, gallery bytes, privacy key name) of every attack on the gallery."""
    root = s["root"]
    data = (root / "g.h5").read_bytes()
    again = (root / "again.h5").read_bytes()
    step = CHUNK + TAG
    n_chunks = (len(data) - HEADER) // step + 1
    assert n_chunks >= 2, "the gallery must span several chunks"
    cases = [("no key", data, None), ("wrong key", data, "other"),
             ("replayed file under a retired key", (root / "old.h5").read_bytes(), "privacy"),
             ("retired key for the current file", data, "retired")]
    for cut in (HEADER - 1, HEADER + 10, HEADER + step, len(data) - 1):
        cases.append((f"truncated at {cut}", data[:cut], "privacy"))
    cases.append(("extended", data + bytes(TAG), "privacy"))
    for a, b in sorted({(0, 1), (n_chunks - 2, n_chunks - 1)}):
        x, y = HEADER + a * step, HEADER + b * step
        swapped = bytearray(data)
        swapped[x:x + step], swapped[y:y + step] = data[y:y + step], data[x:x + step]
        cases.append((f"chunks {a} and {b} swapped", bytes(swapped), "privacy"))
    for i in range(min(n_chunks - 1, 3)):  # a block of another file under the same key
        x = HEADER + i * step
        spliced = bytearray(data)
        spliced[x:x + step] = again[x:x + step]
        cases.append((f"chunk {i} from another file", bytes(spliced), "privacy"))
    for field in (b"length ", b"nonce ", b"salt ", b"chunk ", b"check "):
        at = data.index(field) + len(field)  # its first digit, changed
        edited = bytearray(data)
        edited[at] = ord("1") if data[at] != ord("1") else ord("2")
        cases.append((f"header edit {field.decode().strip()}", bytes(edited), "privacy"))
    other_kind = data.replace(b"format ssgallery-gallery\n", b"format ssgallery-galleryy\n")
    cases.append(("header edit format", other_kind[:HEADER] + data[HEADER:], "privacy"))
    for i in range(N_FLIPS):
        flipped = bytearray(data)
        for _ in range(int(rng.integers(1, 4))):
            flipped[int(rng.integers(0, len(data)))] ^= int(rng.integers(1, 256))
        cases.append((f"flip {i}", bytes(flipped), "privacy"))
    return cases


def test_attacks_on_an_encrypted_gallery(sealed, workers, tmp_path):
    baseline = workers.run(_verify(sealed, sealed["root"] / "g.h5"))
    assert baseline["code"] == 1 and baseline["stdout"].split("\n")[0].endswith("REJECT"), \
        baseline
    again = workers.run(_verify(sealed, sealed["root"] / "again.h5"))
    assert again["code"] == 1  # a whole other file under the same key is a valid gallery
    counts = dict.fromkeys(KINDS, 0)
    examples = {}
    for i, (name, data, key) in enumerate(_cases(sealed, np.random.default_rng(23))):
        bad = tmp_path / f"g{i}.h5"
        bad.write_bytes(data)
        result = workers.run(_verify(sealed, bad, key))
        kind = classify(result, baseline)
        counts[kind] += 1
        examples.setdefault(kind, (name, result))
        if not name.startswith("flip"):  # every named attack is refused
            assert kind == "clean errors", (name, result)
        bad.unlink()
    line = report(f"encrypted galleries: {sum(counts.values())}", counts)
    assert counts["accepts"] == counts["tracebacks"] == counts["hangs"] == 0, (line, examples)
    assert counts["other"] == counts[CHANGED] == 0, (line, examples)


def test_attacks_on_an_encrypted_store(sealed, workers, tmp_path):
    store = sealed["root"] / "e.h5"
    data = store.read_bytes()
    rng = np.random.default_rng(24)
    cases = [("no key", data, None), ("wrong key", data, "other"),
             ("truncated", data[:len(data) // 2], "privacy")]
    for i in range(20):
        flipped = bytearray(data)
        flipped[int(rng.integers(0, len(data)))] ^= int(rng.integers(1, 256))
        cases.append((f"flip {i}", bytes(flipped), "privacy"))
    counts = {"clean errors": 0, "failures": 0}
    for i, (name, raw, key) in enumerate(cases):
        bad = tmp_path / f"e{i}.h5"
        bad.write_bytes(raw)
        args = ["info", "--store", bad]
        if key:
            args += ["--privacy-key-file", sealed["keys"][key]]
        result = workers.run(args)
        counts["clean errors" if clean_error(result) else "failures"] += 1
        if not clean_error(result):
            print("store failure:", name, result)
        bad.unlink()
    line = report(f"encrypted stores: {len(cases)}", counts)
    assert counts["failures"] == 0, line
