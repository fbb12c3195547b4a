"""1:N search over a compressed gallery: the stacked index and `ssgallery identify`."""

import json

import numpy as np
import pytest
from click.testing import CliRunner
from helpers import copied, invoked

from ssgallery.cli import main
from ssgallery.datasets import sample_faces_path
from ssgallery.formats.gallery import read_client, read_gallery, read_search

PROBES = sample_faces_path().parent / "probes"


@pytest.fixture(scope="module")
def gallery(tmp_path_factory, built_once, sample_store):
    """The sample data enrolled and compressed at m = 2 (20 clients; once per run)."""
    folder = tmp_path_factory.mktemp("identify")
    res = sample_store["enrolled"]
    assert res["exit_code"] == 0, res["output"]
    shared, res = built_once("sample-gallery-20", lambda f: invoked(
        ["compress", "--store", sample_store["store"], "-o", f / "g.h5", "--m", "2"]))
    assert res["exit_code"] == 0, res["output"]
    return copied(shared / "g.h5", folder, "g.h5")


def test_index_scores_equal_each_clients_own_model(gallery):
    index, matcher, _ = read_search(gallery)
    clients = sorted(read_gallery(gallery).clients)
    assert list(index.client_ids) == clients and index.normalized
    images = [str(p) for p in sorted(PROBES.iterdir())]
    from ssgallery.images.ingest import load_image_list

    features = matcher.transform(load_image_list(images, size=(92, 112)))
    scores = index.decision_function(features, matcher.similarity())
    assert scores.shape == (len(images), len(clients))
    for k, client in enumerate(clients):
        model = read_client(gallery, client)
        own = model.decision_function(features, model.similarity_function(model.matcher))
        assert np.allclose(scores[:, k], own, rtol=0, atol=1e-10)
        assert index.threshold[k] == model.threshold
        assert np.allclose(index.normalize(scores)[:, k], model.normalize(own))


def test_identify_finds_the_enrolled_and_refuses_strangers(gallery):
    genuine = sorted(PROBES.glob("c0*_genuine_*.png"))
    strangers = sorted(PROBES.glob("unknown*.png"))
    runner = CliRunner()
    res = runner.invoke(main, ["identify", *map(str, genuine), "--gallery", gallery, "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["ranking"] == "znorm" and out["all_identified"]
    for r in out["results"]:
        expected = r["probe"].rsplit("/", 1)[1].split("_")[0]
        assert r["identified"] == expected
        assert [c["rank"] for c in r["candidates"]] == [1, 2, 3, 4, 5]
        ranking_score = [c["ranking_score"] for c in r["candidates"]]
        assert ranking_score == sorted(ranking_score, reverse=True)
    res = runner.invoke(main, ["identify", *map(str, strangers), "--gallery", gallery,
                               "--open-set", "--top", "2", "--json"])
    assert res.exit_code == 1, res.output
    found = json.loads(res.stdout)["results"]
    assert sum(r["identified"] is None for r in found) >= len(strangers) // 2
    for r in found:  # a stranger is reported only when the best client's threshold passes
        best = r["candidates"][0]
        assert (r["identified"] == best["client"]) == best["passes"]
    # closed set: a stranger still gets a best match
    res = runner.invoke(main, ["identify", str(strangers[0]), "--gallery", gallery])
    assert res.exit_code == 0 and "IDENTIFIED" in res.output
    # and the output names no operating point that it did not use (it said "operating
    # point: each client's verification threshold" above a stranger identified below it)
    assert res.stdout.splitlines()[:2] == [
        "ranking: znorm",
        ("closed set: every probe is identified as its best candidate (unless two or more "
         "clients share the best score: a tie, unknown); each candidate is marked against its client's verification threshold (--open-set: 'unknown' below "
         "the gallery's 1:N threshold)")]
    assert "operating point" not in res.stdout


def test_identify_escapes_control_characters_in_probe_names(gallery, tmp_path):
    import shutil

    odd = tmp_path / "x\nc03  IDENTIFIED c03.png"
    shutil.copy(PROBES / "unknown1_1.png", odd)
    res = CliRunner().invoke(main, ["identify", str(odd), "--gallery", gallery, "--open-set"])
    assert res.exit_code == 1
    assert all(not line.startswith("c03") for line in res.output.splitlines())
    assert "\\n" in res.output


def test_identify_usage_errors(gallery, tmp_path):
    runner = CliRunner()
    res = runner.invoke(main, ["identify", "--gallery", gallery])
    assert res.exit_code == 2 and "no probe images" in res.output
    res = runner.invoke(main, ["identify", str(PROBES / "unknown1_1.png"), "--gallery",
                               str(tmp_path / "missing.h5")])
    assert res.exit_code == 2 and "missing.h5" in res.output


def test_identify_refuses_a_tampered_index(gallery, tmp_path):
    import shutil

    import h5py

    edited = tmp_path / "edited.h5"
    shutil.copy(gallery, edited)
    with h5py.File(edited, "r+") as f:  # every client passes: threshold -1e9
        f["index/threshold"][...] = -1e9
    res = CliRunner().invoke(main, ["identify", str(PROBES / "unknown1_1.png"), "--gallery",
                                    str(edited), "--open-set"])
    assert res.exit_code == 2 and "edited.h5" in res.output and "IDENTIFIED" not in res.output


def test_identify_with_a_signing_key(tmp_path):
    key = tmp_path / "key"
    key.write_bytes(b"k" * 32)
    runner = CliRunner()
    store, path = str(tmp_path / "e.h5"), str(tmp_path / "g.h5")
    faces = sample_faces_path()
    for args in (["enroll", str(faces), "--store", store, "--clients", "c01,c02,c03,c04,c05"],
                 ["compress", "--store", store, "-o", path, "--key-file", str(key)]):
        res = runner.invoke(main, args)
        assert res.exit_code == 0, res.output
    probe = str(PROBES / "c03_genuine_1.png")
    res = runner.invoke(main, ["identify", probe, "--gallery", path, "--key-file", str(key)])
    assert res.exit_code == 0 and "IDENTIFIED c03" in res.output
    other = tmp_path / "other"
    other.write_bytes(b"o" * 32)
    res = runner.invoke(main, ["identify", probe, "--gallery", path, "--key-file", str(other)])
    assert res.exit_code == 2 and "IDENTIFIED" not in res.output


def test_identify_never_searches_a_non_face(gallery, tmp_path):
    from helpers import write_non_faces

    non_faces = write_non_faces(str(tmp_path / "nonfaces"))
    genuine = str(PROBES / "c03_genuine_1.png")
    runner = CliRunner()
    for name, path in non_faces.items():
        res = runner.invoke(main, ["identify", genuine, path, "--gallery", gallery, "--json"])
        assert res.exit_code == 3, (name, res.output)  # nobody unknown, one FTA
        first, second = json.loads(res.stdout)["results"]
        assert first["identified"] == "c03" and not first["failed_to_acquire"]
        assert second["failed_to_acquire"] and second["identified"] is None, name
        assert second["candidates"] == [] and second["reason"]
    res = runner.invoke(main, ["identify", non_faces["black"], "--gallery", gallery])
    assert res.exit_code == 3 and "FAILURE-TO-ACQUIRE" in res.output
    # an unknown person in the open set outranks a failure to acquire: exit 1
    res = runner.invoke(main, ["identify", str(PROBES / "unknown1_1.png"), non_faces["white"],
                               "--gallery", gallery, "--open-set", "--json"])
    found = json.loads(res.stdout)["results"]
    assert res.exit_code == (1 if found[0]["identified"] is None else 3)


def test_candidate_normalized_is_a_deprecated_name_of_ranking_score(gallery):
    """Candidate.normalized was renamed ranking_score (e901d2e) with nothing left under the
    old name: a Python caller reading it got AttributeError. It reads ranking_score again,
    read-only, with a DeprecationWarning; --json keeps its 'normalized' key."""
    import dataclasses

    from ssgallery.app.identify import identify

    results, _, _ = identify(gallery, [str(PROBES / "c01_genuine_1.png")], top=3)
    best = results[0].candidates[0]
    with pytest.warns(DeprecationWarning, match=r"Candidate\.normalized is deprecated: "
                      r"read Candidate\.ranking_score"):
        assert best.normalized == best.ranking_score
    with pytest.raises(AttributeError):
        best.normalized = 0.0
    assert "normalized" not in {f.name for f in dataclasses.fields(best)}
    assert best.to_dict()["normalized"] == best.ranking_score


def test_identify_json_says_its_exit_status_and_failures_to_acquire(gallery, tmp_path):
    """verify --json carries exit_status and failures_to_acquire; identify --json had
    neither (a script had to count the results' failed_to_acquire and re-derive the exit
    rule). Now it has both, as verify's."""
    from PIL import Image

    flat = tmp_path / "flat.png"
    Image.fromarray(np.full((112, 92), 128, np.uint8)).save(flat)
    res = CliRunner().invoke(main, ["identify", str(PROBES / "c01_genuine_1.png"), str(flat),
                                    "--gallery", gallery, "--json"])
    out = json.loads(res.stdout)
    assert (res.exit_code, out["exit_status"], out["failures_to_acquire"]) == (3, 3, 1)
    assert [r["failed_to_acquire"] for r in out["results"]] == [False, True]
