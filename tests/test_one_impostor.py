"""A gallery compressed with ``--max-impostors 1`` from the sample data: every client is
trained and thresholded on one impostor score, so every held-out 1:N search ties (its
curve has hazard +inf below the tie) and no client measures an impostor-score spread.

What ssgallery writes as JSON stays standard JSON there (``Infinity`` is not JSON: jq
and JavaScript refuse it).
"""

import json

import h5py
import numpy as np
import pytest
from helpers import copied, invoked, rehash_gallery

from ssgallery import jsontext
from ssgallery.datasets import sample_faces_path

FACES = sample_faces_path()
PROBES = FACES.parent / "probes"


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
