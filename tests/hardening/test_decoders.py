"""Issue 20 family 5: only the documented image formats are decoded (docs/guide.md:
PGM/PPM, PNG, JPEG, BMP, TIFF). An EPS or PostScript probe never starts Ghostscript:
a ``gs`` on PATH that records every run must never run, whatever the file is named and
whichever command reads it; every other format Pillow knows is one clean line."""

import io
import os
import stat
import struct

import numpy as np
import pytest
from conftest import Workers, clean_error, report
from helpers import make_faces
from PIL import Image

from ssgallery.app.compress import CompressOptions, compress
from ssgallery.app.enroll import enroll

EPS = (b"%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 24 32\n"
       b"newpath 0 0 moveto 24 32 lineto stroke\nshowpage\n%%EOF\n")
PS = b"%!PS-Adobe-3.0\n%%Pages: 1\nnewpath 0 0 moveto 24 32 lineto stroke\nshowpage\n"


def _dos_eps(body):
    """The binary DOS EPS header (C5D0D3C6) that Pillow's EPS plugin also accepts."""
    return struct.pack("<4sIIIIIIH", b"\xc5\xd0\xd3\xc6", 30, len(body), 0, 0, 0, 0,
                       0xFFFF) + body


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("decoders")
    faces = make_faces(str(root / "faces"), n_clients=3, n_images=5)
    enroll(faces, root / "e.h5")
    compress(root / "e.h5", root / "g.h5", CompressOptions(m=2, cv_folds=0))
    stub = root / "bin"
    stub.mkdir()
    log = root / "programs-run"
    for name in ("gs", "gsc", "gswin32c", "gswin64c"):  # every name Pillow looks for
        (stub / name).write_text(f"#!/bin/sh\necho \"$0 $*\" >> {log}\nexit 1\n")
        (stub / name).chmod(stat.S_IRWXU)
    return {"root": root, "faces": faces, "log": log,
            "env": {"PATH": f"{stub}{os.pathsep}{os.environ.get('PATH', '')}"}}


def _undocumented(face):
    """Bytes of ``face`` in every format Pillow can write that the docs do not list."""
    out = {}
    for fmt, ext in (("GIF", "gif"), ("WEBP", "webp"), ("ICO", "ico"), ("PCX", "pcx"),
                     ("TGA", "tga"), ("SGI", "sgi"), ("DDS", "dds"),
                     ("JPEG2000", "jp2"), ("QOI", "qoi"), ("SPIDER", "spi")):
        buf = io.BytesIO()
        try:
            face.convert("L" if fmt != "DDS" else "RGB").save(buf, format=fmt)
        except (KeyError, OSError, ValueError):  # a codec this Pillow lacks
            continue
        out[f"{fmt.lower()}.{ext}"] = buf.getvalue()
    return out


def _documented(face, folder):
    """The face in every documented format; path -> format name."""
    out = {}
    for fmt, ext, mode in (("PPM", "pgm", "L"), ("PPM", "ppm", "RGB"), ("PNG", "png", "L"),
                           ("JPEG", "jpg", "RGB"), ("BMP", "bmp", "L"),
                           ("TIFF", "tif", "L"), ("TIFF", "tiff", "F")):
        path = folder / f"doc-{mode}.{ext}"
        face.convert(mode).save(path, format=fmt)
        out[str(path)] = fmt
    return out


def test_only_documented_decoders_run(site, tmp_path):
    """EPS, PS and DOS EPS under their own and under documented extensions, and every
    undocumented format, through verify, identify and enroll (with and without
    --skip-bad): clean one-line errors (or a skip), Ghostscript never run. The
    documented formats still give the PNG's verdict."""
    face = Image.open(os.path.join(site["faces"], "c01", "0.png"))
    hostile = {"probe.eps": EPS, "probe.ps": PS, "dos.eps": _dos_eps(EPS),
               "eps-named.png": EPS, "eps-named.jpg": EPS, "eps-named.tif": EPS,
               "dos-named.pgm": _dos_eps(EPS), **_undocumented(face)}
    assert {"gif.gif", "webp.webp", "pcx.pcx"} <= set(hostile)
    paths = []
    for name, data in hostile.items():
        (tmp_path / name).write_bytes(data)
        paths.append(tmp_path / name)
    gallery = site["root"] / "g.h5"
    pool = Workers(env=site["env"])
    counts = {"cases": 0, "clean errors": 0, "skipped with a warning": 0,
              "programs run": 0, "failures": 0}
    failures = []
    try:
        for path in paths:
            runs = {"verify": ["verify", path, "--claim", "c01", "--gallery", gallery],
                    "identify": ["identify", path, "--gallery", gallery]}
            if path.suffix in (".png", ".jpg", ".tif", ".pgm"):  # enroll scans extensions
                faces = tmp_path / f"faces-{path.name}"
                make_faces(str(faces), n_clients=2, n_images=3)
                (faces / "c00" / path.name).write_bytes(path.read_bytes())
                runs["enroll"] = ["enroll", faces, "--store", tmp_path / "new.h5", "--force"]
                runs["enroll --skip-bad"] = runs["enroll"] + ["--skip-bad"]
            for how, args in runs.items():
                result = pool.run(args)
                counts["cases"] += 1
                if how == "enroll --skip-bad":
                    ok = (result.get("code") == 0 and "Traceback" not in result["stderr"]
                          and f"{path.name}: not an image in a supported format"
                          in result["stderr"])
                    kind = "skipped with a warning"
                else:
                    ok = clean_error(result) and "supported format" in result["stderr"]
                    kind = "clean errors"
                counts[kind if ok else "failures"] += 1
                if not ok:
                    failures.append((path.name, how, result))
        documented = _documented(face, tmp_path)
        png = pool.run(["verify", os.path.join(site["faces"], "c01", "0.png"), "--claim",
                        "c01", "--gallery", gallery])
        verdicts = {p: pool.run(["verify", p, "--claim", "c01", "--gallery", gallery])
                    for p in documented}
    finally:
        pool.close()
    ran = site["log"].read_text().splitlines() if site["log"].exists() else []
    counts["programs run"] = len(ran)
    line = report(f"family 5, image decoders: {len(hostile)} files", counts)
    assert ran == [], (line, ran)
    assert not failures, (line, failures)
    assert png["code"] == 0 and png["stdout"].rstrip().endswith("ACCEPT")
    for path, result in verdicts.items():
        assert result["code"] == 0 and result["stdout"].rstrip().endswith("ACCEPT"), \
            (path, result)


def test_non_finite_float_tiff(site, tmp_path):
    """A float TIFF holding NaN or infinity is an input error naming the file, and
    --skip-bad skips it (issue 20 family 8)."""
    faces = make_faces(str(tmp_path / "faces"), n_clients=2, n_images=3)
    for name, value in (("nan.tif", np.nan), ("inf.tif", np.inf)):
        pixels = np.full((32, 24), 100, dtype=np.float32)
        pixels[3, 4] = value
        Image.fromarray(pixels, mode="F").save(os.path.join(faces, "c00", name))
    pool = Workers()
    try:
        plain = pool.run(["enroll", faces, "--store", tmp_path / "e.h5"])
        skip = pool.run(["enroll", faces, "--store", tmp_path / "e.h5", "--skip-bad"])
        probe = pool.run(["verify", os.path.join(faces, "c00", "nan.tif"), "--claim", "c01",
                          "--gallery", site["root"] / "g.h5"])
    finally:
        pool.close()
    assert clean_error(plain) and "inf.tif: image has non-finite pixels" in plain["stderr"]
    assert skip["code"] == 0, skip
    assert "inf.tif: image has non-finite pixels" in skip["stderr"]
    assert "nan.tif: image has non-finite pixels" in skip["stderr"]
    assert clean_error(probe) and "non-finite" in probe["stderr"], probe
