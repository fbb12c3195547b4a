"""What a person reads in daily use: the lines of enroll, info, show, compress and roc say
what holds, with the same precision for the same kind of figure, and bad input is one
clear line."""

import re

from helpers import invoked

from ssgallery.images.montage import beta_label

SIGNED = re.compile(r"[+-]\d+\.\d{4}$")


def test_show_prints_beta_b_and_threshold_alike(sample_gallery_3, tmp_path):
    out = invoked(["show", "--claim", "c01", "-o", tmp_path / "c01.png",
                   "--gallery", sample_gallery_3["gallery"]])
    assert out["exit_code"] == 0, out["output"]
    line = out["stdout"].strip()
    figures = re.findall(r"[+-]?\d+\.\d+", line)
    assert len(figures) == 4, line  # beta_1, beta_2, b, threshold (m = 2)
    assert all(SIGNED.match(f) for f in figures), line
    assert beta_label(0.834) == ("beta = +0.8340", "genuine-like")


def test_thresholds_print_as_verify_prints_them(sample_gallery_3):
    from ssgallery.tables import signed

    info = invoked(["info", "--gallery", sample_gallery_3["gallery"]])
    assert info["exit_code"] == 0, info["output"]
    rows = [line.split() for line in info["stdout"].splitlines() if line.startswith("c0")]
    assert len(rows) == 3 and all(SIGNED.match(r[-1]) for r in rows), info["stdout"]
    assert signed(0.2149) == "+0.2149" and signed(-1.76) == "-1.7600"
