"""Issue 20 family 8: the last tracebacks, wrong exit statuses and lines that do not
name their file. Every case is one line naming the input (exit 2), a quiet 141 for a
closed standard output: never exit 4, never a second stderr line. Interrupts (130, never
"Exception ignored"): tests/hardening/test_interrupts.py."""

import os
import resource
import shutil
import struct
import subprocess

import h5py
import numpy as np
import pytest
from conftest import ENV, Workers, clean_error, cli, report
from helpers import make_faces, rehash_gallery, rehash_store

from ssgallery.app.compress import compress
from ssgallery.app.enroll import enroll
from ssgallery.app.options import CompressOptions


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("tracebacks")
    faces = make_faces(str(root / "faces"), n_clients=4, n_images=5)
    enroll(faces, root / "e.h5")
    compress(root / "e.h5", root / "g.h5", CompressOptions(m=2, cv_folds=0))
    return {"root": root, "faces": faces}


def _store_edit(f, name):
    def replace(key, value):
        del f[key]
        f.create_dataset(key, data=value)

    clients = [c.decode() for c in f["clients"][()]]
    if name == "/labels a group":
        del f["labels"]
        f.create_group("labels")
    elif name == "/images a group":
        del f["images"]
        f.create_group("images")
    elif name == "/clients names an unknown id":
        replace("clients", np.array(clients + ["nobody"], dtype=h5py.string_dtype()))
    elif name == "/clients lists a client twice":
        replace("clients", np.array(clients + clients[:1], dtype=h5py.string_dtype()))
    elif name == "a client also background":
        replace("background", np.array(clients[:1], dtype=h5py.string_dtype()))
    elif name == "/labels 2-D":
        replace("labels", f["labels"][()].reshape(-1, 1))
    else:
        raise KeyError(name)


STORE_EDITS = ["/labels a group", "/images a group", "/clients names an unknown id",
               "/clients lists a client twice", "a client also background", "/labels 2-D"]


def _libtiff_files(face, folder):
    """A TIFF libtiff warns about (a private tag of an undefined type; it decodes fine)
    and one whose LZW data is zeroed (libtiff errors)."""
    from PIL import TiffImagePlugin

    tags = TiffImagePlugin.ImageFileDirectory_v2()
    tags[65000] = "private"
    tags.tagtype[65000] = 2
    good = folder / "warns.tif"
    face.save(good, compression="tiff_lzw", tiffinfo=tags)
    data = bytearray(good.read_bytes())
    (offset,) = struct.unpack("<I", data[4:8])
    (count,) = struct.unpack("<H", data[offset:offset + 2])
    for k in range(count):  # the private tag's type: ASCII -> UNDEFINED (libtiff warns)
        at = offset + 2 + 12 * k
        if struct.unpack("<H", data[at:at + 2])[0] == 65000:
            data[at + 2:at + 4] = struct.pack("<H", 7)
    good.write_bytes(bytes(data))
    cut = folder / "cut.tif"
    face.save(cut, compression="tiff_lzw")
    whole = cut.read_bytes()
    (ifd,) = struct.unpack("<I", whole[4:8])
    cut.write_bytes(whole[:8] + bytes(ifd - 208) + whole[ifd - 200:])  # most data zeroed
    return good, cut


def _size_cases(judge, pool, site, tmp_path):
    """An image size and an m too large to hold: one line naming the value."""
    root, faces = site["root"], site["faces"]
    judge("enroll --size 20000x20000",
          pool.run(["enroll", faces, "--store", tmp_path / "big.h5", "--size",
                    "20000x20000", "-q"]), "20000x20000")
    judge("compress --m 100000",
          pool.run(["compress", "--store", root / "e.h5", "-o", tmp_path / "g.h5",
                    "--m", "100000", "-q"]), f"{root / 'e.h5'}: --m = 100000")


def _corrupt_store_cases(judge, pool, site, tmp_path):
    """Each of `STORE_EDITS` (digests made to match), through compress and info."""
    for name in STORE_EDITS:
        store = tmp_path / f"{name.replace('/', '_').replace(' ', '_')}.h5"
        shutil.copy(site["root"] / "e.h5", store)
        with h5py.File(store, "a") as f:
            _store_edit(f, name)
        rehash_store(store)
        for args in (["compress", "--store", store, "-o", tmp_path / "g.h5", "--m", "1",
                      "--cv-folds", "0", "-q"], ["info", "--store", store]):
            judge(f"{name}: {args[0]}", pool.run(args), f"{store}: corrupt")


def _client_dataset_cases(judge, pool, site, tmp_path):
    """A gallery's client group replaced by a dataset, through verify, info and roc."""
    faces = site["faces"]
    gallery = tmp_path / "dataset-client.h5"
    shutil.copy(site["root"] / "g.h5", gallery)
    with h5py.File(gallery, "a") as f:
        del f["clients/c01"]
        f["clients/c01"] = np.zeros(3)
    rehash_gallery(gallery)
    probe = os.path.join(faces, "c01", "0.png")
    for args in (["verify", probe, "--claim", "c01", "--gallery", gallery, "-q"],
                 ["info", "--svm", "--gallery", gallery],
                 ["roc", "--gallery", gallery, "--probes", faces, "-o", tmp_path / "rg",
                  "--no-plot"]):
        judge(f"client group a dataset: {args[0]}", pool.run(args),
              f"{gallery}: corrupt file: /clients/c01 is a dataset")


def _identical_images_cases(judge, pool, site, tmp_path):
    """A face folder whose images are all the same one, through enroll and roc."""
    same = tmp_path / "same"
    for client in ("a", "b", "c", "d"):
        (same / client).mkdir(parents=True)
        for i in range(3):
            shutil.copy(os.path.join(site["faces"], "c01", "0.png"),
                        same / client / f"{i}.png")
    judge("all training images identical",
          pool.run(["enroll", same, "--store", tmp_path / "same.h5", "-q"]),
          f"{same}: eigenface: training images are all identical")
    judge("roc on identical images",
          pool.run(["roc", same, "-o", tmp_path / "r", "--no-plot", "--train-images",
                    "1", "--repetitions", "1", "--enrolled", "2"]), f"{same}: ")


def test_clean_lines_for_the_listed_inputs(site, tmp_path):
    root, faces = site["root"], site["faces"]
    counts = {"cases": 0, "clean outcomes": 0, "exit 4": 0, "extra stderr lines": 0,
              "failures": 0}
    failures = []

    def judge(what, result, needle):
        counts["cases"] += 1
        lines = result.get("stderr", "").strip().splitlines()
        ok = clean_error(result) and needle in lines[-1] if lines else False
        if result.get("code") == 4 or result.get("crash"):
            counts["exit 4"] += 1
        if len(lines) > 1 and not clean_error(result):  # (a progress label may come first)
            counts["extra stderr lines"] += 1
        counts["clean outcomes" if ok else "failures"] += 1
        if not ok:
            failures.append((what, result))

    pool = Workers()
    try:
        for cases in (_size_cases, _corrupt_store_cases, _client_dataset_cases,
                      _identical_images_cases):
            cases(judge, pool, site, tmp_path)
        from PIL import Image

        good, cut = _libtiff_files(Image.open(os.path.join(faces, "c01", "0.png")), tmp_path)
    finally:
        pool.close()
    # libtiff writes to file descriptor 2 itself: real processes show it
    for path in (cut, good):
        r = subprocess.run(cli("verify", path, "--claim", "c01", "--gallery", root / "g.h5",
                                "-q"),
                           env=ENV, capture_output=True, text=True, check=False)
        result = {"code": r.returncode, "stderr": r.stderr, "stdout": r.stdout}
        if path == cut:
            judge("libtiff errors", result, f"{cut}: corrupt image")
            continue
        counts["cases"] += 1  # a TIFF libtiff warns about: accepted, nothing on stderr
        counts["extra stderr lines" if r.stderr else "clean outcomes"] += 1
        if r.returncode != 0 or r.stderr:
            counts["failures"] += 1
            failures.append(("libtiff warnings", result))
    line = report("family 8, listed inputs", counts)
    assert not failures, (line, failures)


@pytest.mark.parametrize("limit", ["enroll", "compress"])
def test_full_disk_names_the_output(site, tmp_path, limit):
    """EFBIG (``ulimit -f``) while writing the store or gallery: one line naming it."""
    root = site["root"]
    out = tmp_path / ("e.h5" if limit == "enroll" else "g.h5")
    args = (["enroll", site["faces"], "--store", out] if limit == "enroll" else
            ["compress", "--store", root / "e.h5", "-o", out, "--m", "1", "--cv-folds", "0"])

    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (40_000, 40_000))

    r = subprocess.run(cli(*args, "-q"), env=ENV, capture_output=True, text=True,
                       preexec_fn=small_files, check=False)
    result = {"code": r.returncode, "stderr": r.stderr}
    assert clean_error(result), result
    assert f"{out}: cannot write it (File too large)" in r.stderr
    left = [n for n in os.listdir(tmp_path) if not n.endswith((".lock", ".parts"))]
    assert not out.exists() and left == []  # lock files and resume parts stay


@pytest.mark.parametrize("args", [["info", "--gallery", "G"], ["info", "--store", "E", "--json"],
                                  ["verify", "P", "P", "P", "--claim", "c01", "--gallery", "G",
                                   "-q"],
                                  ["identify", "P", "P", "--gallery", "G", "--top", "4", "-q"]],
                         ids=["info", "info --store --json", "verify", "identify"])
def test_closed_stdout_is_quiet(site, args):
    """`ssgallery ... | head -c 0` (the reader is gone before anything is written): no
    "error: Broken pipe", no "Exception ignored"; exit 141 as for a program killed by
    SIGPIPE (never 0: a verify verdict that was not delivered is not an accept)."""
    root = site["root"]
    where = {"G": root / "g.h5", "E": root / "e.h5",
             "P": os.path.join(site["faces"], "c01", "0.png")}
    argv = cli(*[where.get(a, a) for a in args])
    reader, writer = os.pipe()
    proc = subprocess.Popen(argv, env=ENV, stdout=writer, stderr=subprocess.PIPE, text=True)
    os.close(writer)
    os.close(reader)  # nobody reads
    _, err = proc.communicate(timeout=120)
    assert err == "" and proc.returncode == 141, (proc.returncode, err)
