"""Exact ties in open-set 1:N search: two or more clients sharing a search's best score
identify nobody, in ``identify`` (text, --csv, --json) and in ``roc --gallery``'s
identification figures alike (`ssgallery.biometrics.identification.tied_at_top`)."""

import csv
import dataclasses
import json
import shutil

import numpy as np
import pytest
from helpers import invoked

from ssgallery.biometrics import identification as ident
from ssgallery.datasets import sample_faces_path
from ssgallery.formats.gallery.protected import WRITER_ATTRS
from ssgallery.formats.gallery.read import read_gallery
from ssgallery.formats.gallery.write import write_gallery

PROBES = sample_faces_path().parent / "probes"


def _twins(src, dst, twin="c01", of="c02", name=None):
    """``src`` written again by the gallery writer (digests, index and all) with client
    ``twin``'s model replaced by a copy of ``of``'s (named ``name``, else ``twin``):
    every search ties them."""
    g = read_gallery(src, arrays=True, matcher=True, images=True)
    attrs = {k: v for k, v in g.header.items() if k not in WRITER_ATTRS}
    models = [dataclasses.replace(g.clients[of], client_id=name or twin) if cid == twin else m
              for cid, m in g.clients.items()]
    write_gallery(dst, matcher_name=g.matcher_name, matcher_config=g.matcher_config,
                  matcher_state=g.matcher_state, image_shape=g.header["image_shape"],
                  clients=models, attrs=attrs)
    return str(dst)


@pytest.fixture(scope="module")
def twins(sample_gallery_3, tmp_path_factory):
    """sample_gallery_3 (c01, c02, c03) with c01 a copy of c02, and a probe of c02 that
    c02's model accepts (verify) at or above the gallery's 1:N threshold."""
    gallery = _twins(sample_gallery_3["gallery"], tmp_path_factory.mktemp("ties") / "twins.h5")
    probe = str(PROBES / "c02_genuine_1.png")
    res = invoked(["verify", probe, "--claim", "c02", "--gallery", gallery])
    assert res["exit_code"] == 0, res["output"]  # the set-up: verify accepts it
    return gallery, probe


def test_a_tie_at_the_top_identifies_nobody_in_text_csv_and_json(twins):
    gallery, probe = twins
    res = invoked(["identify", probe, "--gallery", gallery, "--open-set", "--top", "1"])
    assert res["exit_code"] == 1, res["output"]  # the unknown answer's status
    line = next(ln for ln in res["stdout"].splitlines() if ln.startswith(probe))
    assert line.startswith(f"{probe}  UNKNOWN (tie between c01 and c02 at +")
    assert line.endswith(": not identified)")
    res = invoked(["identify", probe, "--gallery", gallery, "--open-set", "--csv"])
    assert res["exit_code"] == 1
    header, row = res["stdout"].splitlines()
    row = dict(zip(header.split(","), row.split(",")))
    assert (row["status"], row["identified"], row["tie"]) == ("unknown", "", "c01;c02")
    res = invoked(["identify", probe, "--gallery", gallery, "--open-set", "--json"])
    assert res["exit_code"] == 1
    out = json.loads(res["stdout"])["results"][0]
    assert out["identified"] is None and out["tie"] == ["c01", "c02"]
    # below the operating point a tie is a plain unknown; verify is unaffected
    res = invoked(["identify", probe, "--gallery", gallery, "--threshold", "1e6", "--json"])
    assert json.loads(res["stdout"])["results"][0]["tie"] is None
    for claim in ("c01", "c02"):
        assert invoked(["verify", probe, "--claim", claim, "--gallery", gallery])[
            "exit_code"] == 0


@pytest.mark.parametrize("name", ['a;b', 'x"y;z'])
def test_ids_holding_the_csv_list_separator_read_back_as_one_id(sample_gallery_3, tmp_path,
                                                                 name):
    """A client id may hold ';' (a folder 'a;b' enrolls): identify --csv's candidates and
    tie columns quote it (csv module rules), so they read back as the JSON's ids, not as
    'a', 'b' and c02 (main joined them bare)."""
    gallery = _twins(sample_gallery_3["gallery"], tmp_path / "g.h5", name=name)
    probe = str(PROBES / "c02_genuine_1.png")
    args = ["identify", probe, "--gallery", gallery, "--top", "3"]
    res = invoked(args + ["--json"])
    want = json.loads(res["stdout"])["results"][0]
    assert sorted(want["tie"]) == sorted([name, "c02"]), res["output"]
    res = invoked(args + ["--csv"])
    assert res["exit_code"] == 1, res["output"]  # the tie's unknown
    (row,) = csv.DictReader(res["stdout"].splitlines())
    read = [next(csv.reader([row[k]], delimiter=";")) for k in ("candidates", "tie")]
    assert read == [[c["client"] for c in want["candidates"]], want["tie"]], row


def test_a_tie_identifies_nobody_in_the_closed_set_too(twins):
    """The closed set gave a tie to the first client listed ('IDENTIFIED c01', exit 0),
    while roc's CMC counts it against the mate (`ident.ranks`: rank 2): one rule now."""
    gallery, probe = twins
    res = invoked(["identify", probe, "--gallery", gallery, "--top", "2"])
    assert res["exit_code"] == 1, res["output"]
    line = next(ln for ln in res["stdout"].splitlines() if ln.startswith(probe))
    assert line.startswith(f"{probe}  UNKNOWN (tie between c01 and c02 at +"), line
    assert res["stdout"].splitlines()[1].startswith("closed set: every probe is identified "
                                                    "as its best candidate (unless two or")
    res = invoked(["identify", probe, "--gallery", gallery, "--csv"])
    assert res["exit_code"] == 1
    header, row = res["stdout"].splitlines()
    row = dict(zip(header.split(","), row.split(",")))
    assert (row["status"], row["identified"], row["tie"]) == ("unknown", "", "c01;c02")
    out = json.loads(invoked(["identify", probe, "--gallery", gallery, "--json"])["stdout"])
    assert out["exit_status"] == 1 and not out["all_identified"]
    first = out["results"][0]
    assert first["identified"] is None and first["tie"] == ["c01", "c02"]
    assert [c["client"] for c in first["candidates"][:2]] == ["c01", "c02"]  # still listed
    # a search without a tie still gets its best candidate, even a stranger's
    for other in ("c03_genuine_1.png", "unknown1_1.png"):
        res = invoked(["identify", str(PROBES / other), "--gallery", gallery, "--json"])
        found = json.loads(res["stdout"])["results"][0]
        assert res["exit_code"] == 0 and found["tie"] is None, res["output"]
        assert found["identified"] == found["candidates"][0]["client"]


def test_roc_gallery_counts_a_tied_search_as_identify_answers_it(twins, tmp_path):
    gallery, _ = twins
    probes = tmp_path / "probes"
    for folder, pattern in (("c03", "c03_genuine_*.png"), ("stranger", "c02_genuine_*.png"),
                            ("unknown1", "unknown1_*.png")):
        (probes / folder).mkdir(parents=True)
        for p in sorted(PROBES.glob(pattern)):
            shutil.copy(p, probes / folder / p.name)
    res = invoked(["roc", "--gallery", gallery, "--probes", probes, "-o", tmp_path / "r"])
    assert res["exit_code"] == 0, res["output"]
    figures = json.loads((tmp_path / "r" / "summary.json").read_text())["identification"][0]
    strangers = sorted(str(p) for p in probes.glob("[su]*/*.png"))
    found = json.loads(invoked(["identify", *strangers, "--gallery", gallery, "--open-set",
                                "--json"])["stdout"])["results"]
    tied = [r for r in found if r["probe"].startswith(str(probes / "stranger"))]
    assert tied and all(r["identified"] is None and r["tie"] == ["c01", "c02"] for r in tied)
    fpir = np.mean([r["identified"] is not None for r in found])
    assert figures["fpir_at_stored_threshold"] == pytest.approx(fpir)  # main: tie = alarm
    mated = sorted(str(p) for p in (probes / "c03").glob("*.png"))
    found = json.loads(invoked(["identify", *mated, "--gallery", gallery, "--open-set",
                                "--json"])["stdout"])["results"]
    fnir = np.mean([r["identified"] != "c03" for r in found])
    assert figures["fnir_at_stored_threshold"] == pytest.approx(fnir)


def test_the_tie_rule_counts_scores_within_float_rounding():
    near = 0.7 + 1e-12  # one score computed two ways differs by a few ulps
    S = np.array([[0.9, 0.2, 0.1],      # client 0 first
                  [0.3, 0.7, near],     # clients 1 and 2 tie: nobody, mate 2 missed
                  [0.8, 0.8, 0.0],      # a stranger tied between clients 0 and 1
                  [0.6, 0.1, 0.0],      # a stranger, client 0 first
                  [0.3, 0.7 + 1e-6, 0.7]])  # a real difference: mate 1 first
    true = np.array([0, 2, -1, -1, 1])
    assert ident.fpir_fnir(S, true, 0.5) == (0.5, 1 / 3)  # the tied stranger is no alarm
    assert ident.ranks(S, true).tolist() == [1, 2, 1]
    assert ident.tied_at_top(S).sum(axis=1).tolist() == [1, 2, 2, 1, 1]
    assert ident.search_best(S[2:4]).tolist() == [-np.inf, 0.6]
    fpir, fnir, t = ident.det_curve(S, true)
    assert fpir.max() == 0.5 and t[0] == 0.6 and fnir[0] == 1 / 3


def test_the_open_set_option_s_help_says_a_closed_set_tie_is_no_match():
    """--open-set's help said the closed set gives '(default: closed set, always a best
    match)', false since closed-set ties identify nobody (e49a9d1): it says so now."""
    out = invoked(["identify", "--help"])["stdout"]
    text = " ".join(out.split())
    assert "always a best match" not in text
    assert "(default: closed set, the best match unless two or more clients tie for it)" \
        in text
