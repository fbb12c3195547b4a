"""compress --update, the incremental run: only the new clients trained, the kept ones
byte for byte, the stale ones named; and the hint its warning gives when options whose
default changed since (between, a black box's max_iter, swap_rounds and m) make it train
the kept clients again (`ssgallery.app.update.warn_retrained`)."""

from dataclasses import replace

import numpy as np
import pytest
from helpers import gallery_arrays

from ssgallery.app.compress import CompressOptions, CompressRun, compress
from ssgallery.app.enroll import enroll
from ssgallery.errors import InputError


def test_update_trains_only_new_clients_and_names_stale_ones(tmp_path):
    from helpers import growing_faces

    from ssgallery.formats.gallery import read_gallery

    add = growing_faces(str(tmp_path))
    faces = tmp_path / "faces"
    store, gallery = tmp_path / "e.h5", tmp_path / "g.h5"
    enroll(faces, store)
    compress(store, gallery, CompressOptions(m=1, cv_folds=2))
    before = gallery_arrays(gallery)
    add()
    enroll(faces, store, add=True)  # the matcher basis is kept
    s = compress(store, gallery, CompressOptions(m=1, cv_folds=2), CompressRun(update=True))
    assert s.trained == ["c06", "c07"] and s.kept == [f"c{c:02d}" for c in range(6)]
    after = gallery_arrays(gallery)
    assert sorted(after) == [f"c{c:02d}" for c in range(8)]
    for cid, arrays in before.items():  # copied, not retrained
        for key, value in arrays.items():
            np.testing.assert_array_equal(after[cid][key], value)
    assert read_gallery(gallery).clients["c07"].provenance["n_impostor"] == 35
    enroll(faces, store)  # refit: a new basis
    with pytest.raises(InputError, match="matcher basis changed.*stale clients: c00, c01"):
        compress(store, gallery, CompressOptions(m=1, cv_folds=2), CompressRun(update=True))



def test_update_without_a_gallery_yet_trains_every_client(tmp_path):
    """``--update`` in a script's first run (no gallery yet): nothing to keep, every
    client trained, the gallery written (not an internal error)."""
    from helpers import make_faces

    enroll(make_faces(str(tmp_path / "faces"), n_clients=3, n_images=4, shape=(16, 12)),
           tmp_path / "e.h5")
    s = compress(tmp_path / "e.h5", tmp_path / "g.h5",
                 CompressOptions(m=1, cv_folds=0, max_iter=3), CompressRun(update=True))
    assert s.trained == ["c00", "c01", "c02"] and s.kept == []
    assert sorted(gallery_arrays(tmp_path / "g.h5")) == ["c00", "c01", "c02"]



def test_update_hints_at_between_0_only_where_it_keeps_the_clients(tmp_path):
    """The clients an update trains again are named; the hint that ``between`` 0 keeps
    them (a gallery made before its default) only when it would: not when they also
    differ in another option."""
    import shutil
    from types import SimpleNamespace

    from helpers import make_faces

    from ssgallery.app.options import resolve_training
    from ssgallery.app.update import warn_retrained

    # a run at between 0 has no such hint (a model without a digest is not one at 0)
    said = []
    warn_retrained({"c9": SimpleNamespace(provenance={})},
                   resolve_training(CompressOptions(between=0.0), black_box=False),
                   "g.h5", said.append)
    assert said == [("g.h5: c9: trained with other options than this run's: trained "
                     "again (to keep them, give the options they were compressed with)")]
    enroll(make_faces(str(tmp_path / "faces"), n_clients=3, n_images=4, shape=(16, 12)),
           tmp_path / "e.h5")
    old = CompressOptions(m=1, cv_folds=0, max_iter=3, between=0.0)
    compress(tmp_path / "e.h5", tmp_path / "old.h5", old)
    hint = "; those trained with `between` 0 are kept with `between` 0"
    named = " (they record `m` 1, this run 2; `between` 0, this run 0.5)"  # no hint: named
    for name, options, hinted in (("m1.h5", replace(old, between=0.5), True),
                                  ("m2.h5", replace(old, m=2, between=0.5), False)):
        shutil.copy(tmp_path / "old.h5", tmp_path / name)
        said = []
        s = compress(tmp_path / "e.h5", tmp_path / name, options,
                     CompressRun(clients="c00,c01", update=True, warn=said.append))
        assert s.trained == ["c00", "c01"] and s.kept == ["c02"]
        assert said == [(f"{tmp_path / name}: c00, c01: trained with other options than "
                         f"this run's{'' if hinted else named}: trained again (to keep them, "
                         f"give the options they were compressed with{hint if hinted else ''})")]



def test_update_hints_at_the_black_box_training_before_auto():
    """A black box's client trained before "auto" (max_iter 200, no swaps) is named with
    the flags that keep it."""
    from types import SimpleNamespace

    from ssgallery.app.options import resolve_training
    from ssgallery.app.parts import options_digest
    from ssgallery.app.update import warn_retrained

    black_box = resolve_training(CompressOptions(m=1), black_box=True)
    before = replace(black_box, max_iter=200, swap_rounds=0)
    models = {"c1": SimpleNamespace(provenance={"options_digest": options_digest(before)})}
    said = []
    warn_retrained(models, black_box, "g.h5", said.append)
    assert said == [("g.h5: c1: trained with other options than this run's: trained again "
                     "(to keep them, give the options they were compressed with; those "
                     "trained with `max_iter` 200 and `swap_rounds` 0 are kept with "
                     "`max_iter` 200 and `swap_rounds` 0)")]


def test_update_hints_at_swap_rounds_0_for_a_black_box_gallery_with_its_own_max_iter():
    """A black box's gallery made before "auto" with its own --max-iter (the old docs'
    `compress --m 5 --cv-folds 0 --max-iter 4`) is kept by that --max-iter and
    --swap-rounds 0: the hint names --swap-rounds 0, the one default that changed."""
    from types import SimpleNamespace

    from ssgallery.app.options import resolve_training
    from ssgallery.app.parts import options_digest
    from ssgallery.app.update import warn_retrained

    now = resolve_training(CompressOptions(m=5, cv_folds=0, max_iter=4), black_box=True)
    before = replace(now, swap_rounds=0)
    models = {"c1": SimpleNamespace(provenance={"options_digest": options_digest(before)})}
    said = []
    warn_retrained(models, now, "g.h5", said.append)
    assert said == [("g.h5: c1: trained with other options than this run's: trained again "
                     "(to keep them, give the options they were compressed with; those "
                     "trained with `swap_rounds` 0 are kept with `swap_rounds` 0)")]


def test_update_hints_at_m_2_for_a_black_box_gallery_made_before_its_default_of_5():
    """A black box's galleries before its default m of 5 were trained at m 2, with the
    current "auto" training or the one before it: the hint names every flag that
    changed, no more."""
    from types import SimpleNamespace

    from ssgallery.app.options import resolve_training
    from ssgallery.app.parts import options_digest
    from ssgallery.app.update import warn_retrained

    now = resolve_training(CompressOptions(), black_box=True)
    assert now.m == 5
    for before, said_flags in (
            (replace(now, m=2), "`m` 2"),
            (replace(now, m=2, max_iter=200, swap_rounds=0),
             "`m` 2 and `max_iter` 200 and `swap_rounds` 0")):
        models = {"c1": SimpleNamespace(provenance={"options_digest": options_digest(before)})}
        said = []
        warn_retrained(models, now, "g.h5", said.append)
        assert said == [("g.h5: c1: trained with other options than this run's: trained "
                         "again (to keep them, give the options they were compressed with; "
                         f"those trained with {said_flags} are kept with {said_flags})")]


# ----------------------------------------------------------------- Dask
