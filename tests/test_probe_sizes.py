"""Probes of another size than the gallery's are resized with one summary warning
(docs/guide.md, face folders): verify and identify read probes 256 at a time and warned
once per batch ('resized 256 ...' then 'resized 44 ...' for 300 probes), verify --claims
once per claimed client."""

import pytest
from helpers import invoked
from PIL import Image

from ssgallery.datasets import sample_faces_path

PROBE = sample_faces_path().parent / "probes" / "c03_genuine_1.png"


def _halved(folder, n):
    """``n`` copies of a sample probe at half the gallery's size (46x56)."""
    image = Image.open(PROBE).resize((46, 56))
    paths = [folder / f"p{i:03d}.png" for i in range(n)]
    for p in paths:
        image.save(p)
    return paths


@pytest.mark.parametrize("command", [["verify", "--claim", "c03"], ["identify"]])
def test_probes_of_several_batches_are_warned_once(sample_gallery_3, tmp_path, command):
    paths = _halved(tmp_path, 300)
    r = invoked([command[0], *paths, *command[1:], "--gallery", sample_gallery_3["gallery"]])
    assert r["exit_code"] in (0, 1), r["output"]
    assert r["stderr"] == ("ssgallery: warning: resized 300 probe image(s) to 92x112 "
                           f"(first: {paths[0]} was 46x56)\n"), r["stderr"]


def test_claims_of_several_clients_are_warned_once(sample_gallery_3, tmp_path):
    paths = _halved(tmp_path, 3)
    claims = tmp_path / "claims.txt"
    claims.write_text("".join(f"{p} c0{i + 1}\n" for i, p in enumerate(paths)))
    r = invoked(["verify", "--claims", claims, "--gallery", sample_gallery_3["gallery"]])
    assert r["exit_code"] in (0, 1), r["output"]
    assert r["stderr"] == ("ssgallery: warning: resized 3 probe image(s) to 92x112 "
                           f"(first: {paths[0]} was 46x56)\n"), r["stderr"]
