"""A gallery compressed with ``--max-impostors 1`` from the sample data: every client is
trained and thresholded on one impostor score, so every held-out 1:N search ties (its
curve has hazard +inf below the tie) and no client measures an impostor-score spread.

What ssgallery writes as JSON stays standard JSON there (``Infinity`` is not JSON: jq
and JavaScript refuse it), and identify's normalised scores stay of the order of a
gallery with measured spreads (before: about 2e12, each std at its 1e-12 floor).
"""

import json

import h5py
import numpy as np
import pytest
from click.testing import CliRunner
from helpers import copied, invoked, rehash_gallery

from ssgallery import jsontext
from ssgallery.app.enroll import enroll
from ssgallery.biometrics import openset
from ssgallery.cli import main
from ssgallery.datasets import sample_faces_path

FACES = sample_faces_path()
PROBES = FACES.parent / "probes"


def _identify(*args):
    return CliRunner().invoke(main, ["identify", *map(str, args)])


def strict(text):
    """``text`` parsed as standard JSON: NaN, Infinity and -Infinity are refused."""
    def refuse(name):
        raise ValueError(f"not standard JSON: {name}")

    return json.loads(text, parse_constant=refuse)


def run(*args):
    """``ssgallery ARGS`` (the click command, in process): the result, exit status
    checked against the batch rule (0 or 1)."""
    r = invoked(args)
    assert r["exit_code"] in (0, 1), r["output"]
    return r


@pytest.fixture(scope="module")
def tied(tmp_path_factory, sample_store):
    """The sample store compressed with --max-impostors 1 --json: {"gallery", "folder",
    "compressed" (the CLI result)}."""
    folder = tmp_path_factory.mktemp("tied")
    gallery = folder / "gallery.h5"
    r = invoked(["compress", "--store", sample_store["store"], "-o", gallery,
                 "--max-impostors", "1", "--json"])
    assert r["exit_code"] == 0, r["output"]
    return {"gallery": str(gallery), "folder": folder, "compressed": r}


def _json_attrs(path):
    """Every attribute of an HDF5 file that holds JSON text (an object or a list)."""
    found = {}

    def visit(name, node):
        for key, value in node.attrs.items():
            text = value.decode() if isinstance(value, bytes) else value
            if isinstance(text, str) and text[:1] in "{[":
                found[f"{name}:{key}"] = text

    with h5py.File(path, "r") as f:
        visit("/", f)
        f.visititems(visit)
    return found


def test_every_json_output_is_standard_json_when_every_search_ties(tied, sample_store,
                                                                   tmp_path):
    """Every command's --json, roc's summary.json and score side-cars, and the gallery's
    JSON records parse with a strict parser; the tied 1:N curve's +inf hazard is
    written as null (before: Infinity in compress --json, info --json and the gallery's
    open_set record)."""
    gallery, store = tied["gallery"], sample_store["store"]
    compressed = strict(tied["compressed"]["stdout"])
    curve = compressed["open_set"]["curve"]
    assert curve["hazard"] == [None, 0.0] and curve["hazard_high"][0] is None
    probes = sorted(str(p) for p in PROBES.glob("*.png"))
    claims = tmp_path / "claims.txt"
    claims.write_text("".join(f"{p} c01\n" for p in probes))
    report = tmp_path / "report"
    outputs = {
        "enroll": sample_store["enrolled"]["stdout"],
        "compress": tied["compressed"]["stdout"],
        "verify": run("verify", *probes, "--claim", "c01", "--gallery", gallery,
                      "--json")["stdout"],
        "verify --claims": run("verify", "--claims", claims, "--gallery", gallery,
                               "--json")["stdout"],
        "identify": run("identify", *probes, "--gallery", gallery, "--json")["stdout"],
        "identify --open-set": run("identify", *probes, "--gallery", gallery, "--open-set",
                                   "--json")["stdout"],
        "info": run("info", "--gallery", gallery, "--json")["stdout"],
        "info --client": run("info", "--gallery", gallery, "--client", "c01",
                             "--json")["stdout"],
        "info --store": run("info", "--store", store, "--json")["stdout"],
        "show": run("show", "--claim", "c01", "--gallery", gallery, "-o",
                    tmp_path / "c01.png", "--json")["stdout"],
        "roc --gallery": run("roc", "--gallery", gallery, "--probes", FACES, "-o", report,
                             "--no-plot", "--json")["stdout"],
    }
    scores = sorted(str(p) for p in (report / "scores").glob("*.txt"))
    outputs["roc --scores"] = run("roc", "--scores", *scores, "-o", tmp_path / "again",
                                  "--no-plot", "--json")["stdout"]
    for name, path in [("summary.json", report / "summary.json"),
                       *((p.name, p) for p in (report / "scores").glob("*.json"))]:
        outputs[name] = path.read_text()
    outputs.update(_json_attrs(gallery))
    assert "/:open_set" in outputs and "/:calibration" in outputs
    parsed = {}
    for name, text in outputs.items():
        try:
            parsed[name] = strict(text)
        except ValueError as exc:
            pytest.fail(f"{name}: {exc}")
    assert parsed["info"]["gallery"]["open_set"]["curve"]["hazard"] == [None, 0.0]
    assert parsed["/:open_set"]["curve"]["hazard"] == [None, 0.0]
    # the record is read back as the curve it is: every search passes below the tie
    point = parsed["identify --open-set"]["operating_point"]
    assert point["kind"] == "fpir" and point["threshold"] == pytest.approx(1e-9)
    assert not point["resolved"] and point["expected_fpir"] == 0.0


def test_a_gallery_holding_infinity_from_before_is_still_read(tied, tmp_path):
    """A gallery written before standard JSON holds ``Infinity`` in its open_set record:
    identify and info read it as the same +inf hazard the null of a new one reads as."""
    old = copied(tied["gallery"], tmp_path, "old.h5")
    with h5py.File(old, "a") as f:
        record = json.loads(f.attrs["open_set"])
        record["curve"] = {k: [np.inf if v is None else v for v in values]
                           if k.startswith("hazard") else values
                           for k, values in record["curve"].items()}
        f.attrs["open_set"] = json.dumps(record, sort_keys=True)  # as ssgallery wrote it
        assert "Infinity" in f.attrs["open_set"]
    rehash_gallery(old)
    probe = str(PROBES / "c01_genuine_1.png")
    points = [strict(run("identify", probe, "--gallery", g, "--open-set", "--json")["stdout"])
              ["operating_point"] for g in (tied["gallery"], old)]
    assert points[0] == points[1]
    info = strict(run("info", "--gallery", old, "--json")["stdout"])
    assert info["gallery"]["open_set"]["curve"]["hazard"] == [None, 0.0]
    # --fpir reads T from the stored curve: the same on both
    again = [strict(run("identify", probe, "--gallery", g, "--fpir", "0.5", "--json")
                    ["stdout"])["operating_point"] for g in (tied["gallery"], old)]
    assert again[0] == again[1]


def test_jsontext_writes_null_for_every_non_finite_float():
    """`jsontext.dumps`: NaN, +inf and -inf at any depth become null; the rest is
    json.dumps's text; a value it cannot map is refused, never written as Infinity."""
    value = {"a": [1.5, float("nan"), (float("inf"), {"b": -np.inf})], "c": np.float64(2.0),
             "d": "Infinity", "e": None, "f": True, "g": 3}
    text = jsontext.dumps(value, sort_keys=True)
    assert strict(text) == {"a": [1.5, None, [None, {"b": None}]], "c": 2.0,
                            "d": "Infinity", "e": None, "f": True, "g": 3}
    assert jsontext.dumps({"x": 0.1}, indent=2) == json.dumps({"x": 0.1}, indent=2)
    with pytest.raises(ValueError, match="not JSON compliant"):
        jsontext.dumps([object()], default=lambda o: float("inf"))


def test_one_impostor_clients_borrow_a_spread_and_identify_scores_stay_in_scale(
        tied, sample_store, sample_gallery_3, tmp_path):
    """--max-impostors 1: no client measures an impostor-score spread, so each takes the
    models' margin as unit (std 1, named in compress's warning) instead of the 1e-12
    floor; identify's normalised and centred scores are then of the order of those of a
    gallery with measured spreads (before: about 2e12 on the 1:N score, 8e5 on the
    Z-norm), and the gallery still verifies and identifies."""
    probes = sorted(str(p) for p in PROBES.glob("*.png"))
    found = {}
    for name, gallery in (("tied", tied["gallery"]), ("measured", sample_gallery_3["gallery"])):
        for mode in ([], ["--open-set"]):
            r = strict(run("identify", *probes, "--gallery", gallery, *mode,
                           "--json")["stdout"])
            found[name, bool(mode)] = np.array([c["ranking_score"] for p in r["results"]
                                                for c in p["candidates"]])
            assert r["ranking"] == ("centred" if mode else "znorm")
    for mode in (False, True):
        tied_top = np.abs(found["tied", mode]).max()
        measured_top = np.abs(found["measured", mode]).max()
        assert measured_top / 10 < tied_top < 10 * measured_top, (tied_top, measured_top)
    compressed = strict(tied["compressed"]["stdout"])
    norms = [c["normalization"] for c in compressed["clients"]]
    assert {(n["n"], n["std"], n["std_source"]) for n in norms} == {(1, 1.0, "margin")}
    assert compressed["spread_borrowed"] == [c["client"] for c in compressed["clients"]]
    assert compressed["open_set"]["scale"] == 1.0
    quiet = invoked(["compress", "--store", sample_store["store"], "-o", tmp_path / "g.h5",
                     "--max-impostors", "1", "-q"])
    assert quiet["exit_code"] == 0, quiet["output"]
    assert ("warning: 20 client(s) have no impostor-score spread of their own (one impostor "
            "score, or all equal): their normalised scores use the models' margin as unit "
            "(1: no client measured a spread): c01, c02") in quiet["stderr"]
    genuine = sorted(str(p) for p in PROBES.glob("c01_genuine_*.png"))
    verified = run("verify", *genuine, "--claim", "c01", "--gallery", tied["gallery"],
                   "--json")
    assert verified["exit_code"] == 0 and strict(verified["stdout"])["all_accepted"]
    # every search passes the tied 1:N threshold (its held-out searches all tie: the
    # gallery cannot tell strangers, as compress warns); each genuine probe's client is
    # among its 5 candidates
    r = invoked(["identify", *probes, "--gallery", tied["gallery"], "--open-set", "--json"])
    assert r["exit_code"] == 0, r["output"]
    for result in strict(r["stdout"])["results"]:
        name = result["probe"].rsplit("/", 1)[-1]
        assert result["identified"] is not None
        if "_genuine_" in name:
            assert name[:3] in [c["client"] for c in result["candidates"]], result


def test_a_client_without_a_spread_takes_the_pooled_spread_of_the_others():
    """`openset.pooled_spreads`: a client with one impostor score, or scores that are
    all equal (std at the 1e-12 floor), takes the root mean of the measured clients'
    variances, named ``std_source`` "pooled"; when no client measured one, the margin's
    unit (1, "margin"); other clients and a client without a Z-norm are left as they
    are, and a borrowed spread is never pooled from (an update's kept clients)."""
    norms = [{"kind": "znorm", "mean": -1.0, "std": 0.3, "n": 20},
             {"kind": "znorm", "mean": -0.8, "std": 0.4, "n": 20},
             {"kind": "znorm", "mean": -0.9, "std": 1e-12, "n": 1},  # one impostor score
             {"kind": "znorm", "mean": 2.0, "std": 1e-12, "n": 5},  # five equal scores
             None]
    out, filled = openset.pooled_spreads(norms)
    assert filled == [2, 3]
    assert out[2] == {"kind": "znorm", "mean": -0.9, "std": pytest.approx(np.sqrt(0.125)),
                      "n": 1, "std_source": "pooled"}
    assert out[3]["std"] == out[2]["std"] and out[3]["mean"] == 2.0
    assert out[0] is norms[0] and out[1] is norms[1] and out[4] is None
    assert norms[2]["std"] == 1e-12  # the caller's dicts are not changed
    alone, filled = openset.pooled_spreads(norms[2:4])
    assert filled == [0, 1]
    assert [(n["std"], n["std_source"]) for n in alone] == [(1.0, "margin")] * 2
    assert not any(openset.spread_measured(n) for n in out[2:4] + alone)
    again, filled = openset.pooled_spreads([out[2], {**norms[0], "std": 0.5}])
    assert filled == [0] and again[0]["std"] == 0.5  # pooled from the measured one only


def test_an_update_of_a_tied_gallery_can_be_read(sample_store, tmp_path):
    """``compress --update`` merges the kept clients' tied curve (hazard +inf below the
    tie, then 0) with the new clients' (`openset.merge_curves`): the merged curve keeps
    its +inf point where its finite part starts, so that the gallery it writes reads
    (before: the +inf points were dropped, leaving a curve of hazard 0 only, and every
    reader refused the gallery compress had just written: 'corrupt gallery header:
    open_set'). The update adds c19 and c20 to a tied gallery of the 18 others (one that
    trains kept clients again does not merge: `tests/test_update_counts.py`)."""
    gallery = str(tmp_path / "updated.h5")
    args = ["compress", "--store", sample_store["store"], "-o", gallery, "--max-impostors", "1"]
    first = invoked([*args, "--clients", ",".join(f"c{i:02d}" for i in range(1, 19))])
    assert first["exit_code"] == 0, first["output"]
    r = invoked([*args, "--update", "--json"])
    assert r["exit_code"] == 0, r["output"]
    written = strict(r["stdout"])
    assert written["trained"] == ["c19", "c20"] and len(written["kept"]) == 18
    curve = written["open_set"]["curve"]
    assert written["open_set"]["blocks"] == 2 and curve["hazard"][0] is None and curve["hazard"][-1] == 0
    info = run("info", "--gallery", gallery, "--json")
    assert info["exit_code"] == 0
    stored = strict(info["stdout"])["gallery"]["open_set"]["curve"]
    assert stored["thresholds"] == curve["thresholds"]
    probes = sorted(str(p) for p in PROBES.glob("*.png"))
    assert run("identify", *probes, "--gallery", gallery, "--open-set")["exit_code"] == 0


def test_one_impostor_per_client_sets_a_readable_point_without_a_warning(tmp_path):
    """compress --max-impostors 1: each client's threshold comes from its one training
    impostor score (no threshold CV with one impostor subject), centred on itself: every
    1:N search scores 0. The curve is +inf at and below 0 and 0 above (before: a numpy
    RuntimeWarning, np.geomspace from +inf); T sits above every search, unresolved, and
    identify reads the record."""
    import warnings

    from helpers import make_faces

    faces = make_faces(str(tmp_path / "faces"), n_clients=4, n_images=5)
    enroll(faces, tmp_path / "e.h5")
    args = ["compress", "--store", str(tmp_path / "e.h5"), "-o", str(tmp_path / "g.h5"),
            "--max-impostors", "1"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        res = CliRunner().invoke(main, [*args, "--json"])
    assert res.exit_code == 0, res.output
    point = json.loads(res.stdout)["open_set"]
    # +inf where every search passes, written as null (standard JSON has no Infinity)
    assert point["curve"]["hazard"] == [None, 0.0] and point["search_size"] == 1
    assert point["threshold"] == pytest.approx(1e-9) and not point["resolved"]
    assert point["expected_fpir"] == 0.0
    # no search passes: the spread between the probes' people cannot be seen, and the
    # interval takes the people as the trials (0 of them pass, 4 clients)
    people = point["curve"]["interval_people"]
    assert people < point["searches"]
    assert point["expected_fpir_ci"][1] == pytest.approx(1 - 0.025 ** (4 / people))
    res = _identify(tmp_path / "faces" / "c01" / "0.png", "--gallery", tmp_path / "g.h5",
                    "--open-set", "--json")
    assert res.exit_code in (0, 1), res.output  # the record is read (not corrupt)
    assert json.loads(res.stdout)["operating_point"]["threshold"] == pytest.approx(1e-9)
