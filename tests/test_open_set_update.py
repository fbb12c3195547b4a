"""The 1:N operating point through compress --update: re-derived for the grown gallery
from the kept clients' curve and the new clients' held-out searches, on the gallery's
own scale; a gallery written before the point (no held-out searches) gets one from its
new clients, with a warning, and none when nobody is trained (identify --open-set then
says what to do). The point itself: tests/test_open_set.py."""

import json
import shutil

import h5py
import numpy as np
import pytest
from click.testing import CliRunner

from ssgallery.app.compress import CompressOptions, CompressRun, compress
from ssgallery.app.enroll import enroll
from ssgallery.biometrics import openset
from ssgallery.cli import main


def _identify(*args):
    return CliRunner().invoke(main, ["identify", *map(str, args)])


def test_update_re_derives_the_threshold_for_the_grown_gallery(tmp_path):
    from helpers import growing_faces

    from ssgallery.formats.gallery import read_search
    from ssgallery.formats.store import load_store

    add = growing_faces(str(tmp_path))
    store, gallery = tmp_path / "e.h5", tmp_path / "g.h5"
    enroll(tmp_path / "faces", store)
    opts = CompressOptions(m=1, cv_folds=2, target_fpir=0.2)
    first = compress(store, gallery, opts).open_set
    assert first["clients"] == 6
    add()
    enroll(tmp_path / "faces", store, add=True)
    s = compress(store, gallery, opts, CompressRun(update=True))
    assert s.trained == ["c06", "c07"] and s.open_set["clients"] == 8
    labels = load_store(store, images=False).labels
    assert s.open_set["scale"] == first["scale"]  # the gallery keeps its 1:N scale
    merged = openset.merge_curves([
        dict(first["curve"], clients=6, search_size=first["search_size"],
             searches=first["searches"]),
        openset.search_curve(*_heldout_searches(s, ("c06", "c07"), labels, first["scale"]),
                             2)])
    t, resolved = openset.threshold_at_fpir(merged, 0.2)
    assert s.open_set["threshold"] == t and s.open_set["resolved"] == resolved
    assert s.open_set["searches"] == merged["searches"] and s.open_set["blocks"] == 2
    _, _, header = read_search(gallery)
    assert json.loads(header["open_set"])["threshold"] == t
    # another target on update is allowed: the curve gives T at any FPIR
    again = compress(store, gallery, CompressOptions(m=1, cv_folds=2, target_fpir=0.3),
                     CompressRun(update=True)).open_set
    assert again["target_fpir"] == 0.3 and again["clients"] == 8
    # a gallery without the operating point, updated with no client to train: none
    with h5py.File(gallery, "a") as f:
        del f.attrs["open_set"]
    from helpers import rehash_gallery

    rehash_gallery(gallery)
    s = compress(store, gallery, opts, CompressRun(update=True))
    assert s.trained == [] and len(s.kept) == 8 and s.open_set is None
    assert "open_set" not in read_search(gallery)[2]


def _heldout_searches(s, clients, labels, scale):
    """The held-out searches of ``clients`` in compress summary ``s`` as compress pools
    them: (each impostor score normalised subject-out on ``scale``, its store row)."""
    z, rows = [], []
    for c in clients:
        r = s.heldout[c]["impostor_row"].astype(int)
        z.append(openset.subject_out_normalised(s.heldout[c]["impostor"], labels[r], scale))
        rows.append(r)
    return np.concatenate(z), np.concatenate(rows)


OLD = "4b80f8a"  # main before compress --target-fpir (32631fa)


def test_update_of_a_gallery_written_before_the_operating_point(tmp_path):
    """A gallery written by the code before --target-fpir (its clients carry no held-out
    searches) still takes --update: the new clients' held-out searches set the 1:N point
    for every client, with a warning; an update that trains nobody records none, with a
    warning, and identify --open-set then says how to get one."""
    from helpers import growing_faces, old_tree

    from ssgallery.formats.gallery import read_gallery, read_search
    from ssgallery.formats.store import load_store

    old_cli = old_tree(tmp_path, OLD)
    add = growing_faces(str(tmp_path))
    store, gallery = tmp_path / "e.h5", tmp_path / "g.h5"
    old_cli("enroll", tmp_path / "faces", "--store", store)
    old_cli("compress", "--store", store, "-o", gallery, "--m", "1", "--cv-folds", "2")
    assert "open_set" not in read_search(gallery)[2]  # the old format
    for name in ("e0.h5", "g0.h5", "g1.h5", "g2.h5"):
        shutil.copy(store if name == "e0.h5" else gallery, tmp_path / name)
    add()
    enroll(tmp_path / "faces", store, add=True)
    # the old tree trained with between 0: kept with it; with the default, trained again
    messages = []
    s = compress(store, tmp_path / "g2.h5", CompressOptions(m=1, cv_folds=2, target_fpir=0.2),
                 CompressRun(update=True, warn=messages.append))
    assert s.trained == [f"c0{i}" for i in range(8)] and not s.kept
    assert messages == [(f"{tmp_path / 'g2.h5'}: c00, c01, c02, c03, c04, ... (6 in all): "
                         "trained with other options than this run's: trained again (to keep "
                         "them, give the options they were compressed with; those trained "
                         "with `between` 0 are kept with `between` 0)")]
    opts = CompressOptions(m=1, cv_folds=2, target_fpir=0.2, between=0.0)
    s = compress(store, gallery, opts, CompressRun(update=True))
    assert s.trained == ["c06", "c07"] and len(s.kept) == 6
    rec = s.open_set
    assert rec["clients"] == 8 and rec["measured_clients"] == 2 and rec["blocks"] == 1
    kept, now = read_gallery(tmp_path / "g0.h5").clients, read_gallery(gallery).clients
    assert all(now[c].normalization == kept[c].normalization for c in kept)
    stds = [now[c].normalization["std"] for c in sorted(now)]
    assert rec["scale"] == pytest.approx(openset.pooled_scale(stds), rel=1e-12)
    labels = load_store(store, images=False).labels
    curve = openset.search_curve(*_heldout_searches(s, s.trained, labels, rec["scale"]), 8)
    assert (rec["threshold"], rec["resolved"]) == openset.threshold_at_fpir(curve, 0.2)
    assert json.loads(read_search(gallery)[2]["open_set"]) == rec
    probe = min((tmp_path / "faces" / "c01").iterdir())  # in the old basis
    res = _identify(probe, "--gallery", gallery, "--open-set", "--json")
    assert res.exit_code in (0, 1), res.output
    assert json.loads(res.stdout)["operating_point"]["threshold"] == rec["threshold"]
    # the command line says so in one line; a later update keeps the mark
    res = CliRunner().invoke(main, ["compress", "--store", str(store), "-o",
                                    str(tmp_path / "g1.h5"), "--m", "1", "--cv-folds", "2",
                                    "--target-fpir", "0.2", "--between", "0", "--update"])
    assert res.exit_code == 0, res.output
    warned = [ln for ln in res.stderr.splitlines() if "1:N operating point" in ln]
    assert len(warned) == 1 and "held-out searches of the 2 client(s)" in warned[0]
    assert "measured on 2 of the 8 clients" in res.stdout
    again = compress(store, gallery, opts, CompressRun(update=True)).open_set
    assert again["measured_clients"] == 2 and again["threshold"] == rec["threshold"]
    _nothing_to_train_records_no_point(tmp_path, probe)


def _nothing_to_train_records_no_point(tmp_path, probe):
    """`test_update_of_a_gallery_written_before_the_operating_point`'s last part: the old
    store and gallery (e0.h5, g0.h5) updated with nothing to train record no 1:N point,
    with a warning, and identify --open-set says what to do."""
    from ssgallery.formats.gallery import read_search

    res = CliRunner().invoke(main, ["compress", "--store", str(tmp_path / "e0.h5"), "-o",
                                    str(tmp_path / "g0.h5"), "--m", "1", "--cv-folds", "2",
                                    "--between", "0", "--update"])
    assert res.exit_code == 0, res.output
    warned = [ln for ln in res.stderr.splitlines() if "1:N operating point" in ln]
    assert len(warned) == 1 and "none recorded" in warned[0] and "--update" in warned[0]
    assert "open_set" not in read_search(tmp_path / "g0.h5")[2]
    res = _identify(probe, "--gallery", tmp_path / "g0.h5", "--open-set")
    assert res.exit_code == 2 and "records no 1:N operating point" in res.output
    assert "--threshold" in res.output and "without --update" in res.output
    assert _identify(probe, "--gallery", tmp_path / "g0.h5").exit_code == 0
