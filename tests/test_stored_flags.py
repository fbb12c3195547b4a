"""Booleans that come in must be booleans: a yes/no option of the Python API
(`ssgallery.checks.flag_bool`) and a yes/no value of a file (`ssgallery.checks.stored_flag`:
an external matcher's state, ``basis_stale`` of a store or gallery). "no", "false", 2 or
an array is refused in one line, never read as true. Real files edited with h5py and
re-hashed (what anybody who can write an unsigned file can do), real processes."""

import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest
from helpers import edit_h5, refused, rehash_gallery, rehash_store

from ssgallery.app.compress import CompressOptions, CompressRun
from ssgallery.app.options import ReportOptions
from ssgallery.biometrics.protocol import ProtocolOptions
from ssgallery.errors import FormatError, InputError
from ssgallery.formats.gallery import gallery_summary, read_gallery
from ssgallery.formats.store import load_store, store_summary

INSANE = "bad matcher state for 'external': external matcher state is incomplete or insane: "


# ------------------------------------------------------------------ options of the API

@pytest.mark.parametrize("cls, field, value", [
    (CompressOptions, "guard", "no"),
    (CompressOptions, "refit_matcher", "false"),
    (CompressOptions, "protect_templates", 1),
    (CompressOptions, "refit_matcher", 0),
    (CompressRun, "force", []),
    (CompressRun, "resume", None),
    (CompressRun, "update", np.int64(1)),
    (ReportOptions, "plot", "false"),
    (ProtocolOptions, "identification", 1),
])
def test_a_flag_option_takes_a_bool_only(cls, field, value):
    with pytest.raises(InputError) as info:
        cls(**{field: value})
    assert str(info.value) == f"`{field}` must be true or false, got {value!r}"


def test_a_flag_option_takes_python_and_numpy_bools():
    options = CompressOptions(guard=np.bool_(True), refit_matcher=False)
    assert options.guard is True and options.refit_matcher is False
    assert ProtocolOptions(identification=np.bool_(False)).identification is False
    assert CompressRun(force=True, resume=np.bool_(False)).resume is False


def test_the_command_line_still_gives_bools(tmp_path):
    """Click's flags are real bools: ``roc --no-identification --no-plot`` runs (on
    score files: no training) and ``compress --guard --force`` gets past its options
    (to the missing store)."""
    from helpers import invoked

    scores = tmp_path / "s.txt"
    rng = np.random.default_rng(0)
    lines = [f"c{i % 3} c{i % 3} p{i} {s:.4f}" for i, s in enumerate(rng.normal(2, 1, 12))]
    lines += [f"c{i % 3} c{(i + 1) % 3} q{i} {s:.4f}" for i, s in enumerate(rng.normal(0, 1, 30))]
    scores.write_text("\n".join(lines) + "\n")
    res = invoked(["roc", "--scores", scores, "--no-identification", "--no-plot",
                   "-o", tmp_path / "report"])
    assert res["exit_code"] == 0, res["output"]
    refused(["compress", "--store", tmp_path / "none.h5", "-o", tmp_path / "g.h5",
             "--guard", "--no-refit-matcher", "--resume", "--force"], "none.h5")


# ------------------------------------------------------------------ flags of the files

def _set(group, key, value):
    """``group``'s ``key`` replaced by ``value``: an attribute, or in a matcher state a
    dataset for an array (how `write_state` stores one); None: removed."""
    if key in group.attrs:
        del group.attrs[key]
    if key in group:
        del group[key]
    if value is None:
        return
    if isinstance(value, np.ndarray) and group.name == "/matcher":
        group.create_dataset(key, data=value)
    else:
        group.attrs[key] = value


def _edited(built, name, tmp_path, where, key, value):
    """``built``'s file ``name`` (`external_built`: ``e.h5`` the store, ``g.h5`` the
    gallery) copied to ``tmp_path``, ``where``'s ``key`` set to ``value`` (`_set`), and
    its digests made consistent again (re-hashed, re-sealed)."""
    src, dst = built[0] / name, tmp_path / name
    rehash = rehash_store if name == "e.h5" else rehash_gallery
    shutil.copy(src, dst)
    with edit_h5(dst) as f:
        _set(f[where], key, value)
    rehash(dst)
    return dst


# what a tampered flag may hold; every one of them read as true or false on main
BAD_FLAGS = [("symmetric", "false"), ("symmetric", 2), ("symmetric", np.array([0, 1])),
             ("symmetric", -1.0), ("quality", 0.0), ("quality", ""),
             ("serve_offered", "0"), ("serve_offered", np.array(1.0))]


@pytest.mark.parametrize("key, value", BAD_FLAGS)
def test_external_state_flag_that_get_state_never_writes_is_refused(external_built, tmp_path,
                                                                    key, value):
    """The state's flags are what `ExternalMatcher.get_state` writes, integers 0 or 1:
    a store or gallery holding anything else there is refused on read, one line naming
    the file, the flag and what it holds."""
    store = _edited(external_built, "e.h5", tmp_path, "matcher", key, value)
    with pytest.raises(FormatError) as info:
        load_store(store).matcher()
    message = str(info.value)
    assert message.startswith(f"{store}: {INSANE}{key} must be 0 or 1 (or a bool), found ")
    gallery = _edited(external_built, "g.h5", tmp_path, "matcher", key, value)
    with pytest.raises(FormatError) as info:
        read_gallery(gallery)
    assert str(info.value) == message.replace(str(store), str(gallery), 1)


def test_external_state_flag_messages_say_what_was_found(external_built, tmp_path):
    for value, shown in (("false", "str 'false'"), (2, "int 2"),
                         (np.array([0, 1]), "an array of shape (2,)"), (0.0, "float 0.0")):
        store = _edited(external_built, "e.h5", tmp_path, "matcher", "symmetric", value)
        with pytest.raises(FormatError) as info:
            load_store(store).matcher()
        assert str(info.value).endswith(f": symmetric must be 0 or 1 (or a bool), found {shown}")


@pytest.mark.parametrize("value", [np.int64(1), np.int8(0), True, np.array(1), np.array(False)])
def test_external_state_flag_as_the_writers_write_it_is_read(external_built, tmp_path, value):
    """An integer 0 or 1 (the writer's), a bool, or a 0-d dataset of one."""
    store = _edited(external_built, "e.h5", tmp_path, "matcher", "symmetric", value)
    assert load_store(store).matcher().describe()["symmetric"] is bool(value)


def test_cli_refuses_an_edited_external_flag_in_one_line(external_built, tmp_path):
    """``info`` and ``verify`` on a store or gallery whose ``symmetric`` says "false":
    exit 2, one line naming the file; ``verify`` refuses before any program runs (no
    ``--matcher-cmd`` is needed to say so)."""
    store = _edited(external_built, "e.h5", tmp_path, "matcher", "symmetric", "false")
    refused(["info", "--store", store],
            f"{store}: {INSANE}symmetric must be 0 or 1 (or a bool), found str 'false'")
    gallery = _edited(external_built, "g.h5", tmp_path, "matcher", "symmetric", "false")
    refused(["info", "--gallery", gallery], f"{gallery}: {INSANE}symmetric must be 0 or 1")
    probe = Path(external_built[1]) / "c00" / "0.png"
    refused(["verify", probe, "--claim", "c00", "--gallery", gallery],
            f"{gallery}: {INSANE}symmetric must be 0 or 1")


STALE_REFUSED = {"e.h5": "corrupt ssgallery enrollment store: basis_stale must be 0 or 1",
                 "g.h5": "corrupt gallery header: basis_stale must be 0 or 1"}


@pytest.mark.parametrize("name", sorted(STALE_REFUSED))
@pytest.mark.parametrize("value", ["false", "", 2, np.array([True, False])])
def test_basis_stale_of_a_store_or_gallery_is_a_flag(external_built, tmp_path, name, value):
    """``basis_stale`` (a bool as written) holding a string, 2 or an array: the store or
    gallery is refused on read, and by ``info``, one line, exit 2."""
    path = _edited(external_built, name, tmp_path, "/", "basis_stale", value)
    summary, flag = (store_summary, "--store") if name == "e.h5" else (gallery_summary,
                                                                        "--gallery")
    with pytest.raises(FormatError) as info:
        summary(path)
    assert str(info.value).startswith(f"{path}: {STALE_REFUSED[name]} (or a bool), found ")
    refused(["info", flag, path], f"{path}: {STALE_REFUSED[name]}")


def test_basis_stale_as_written_or_absent_is_read(external_built, tmp_path):
    with h5py.File(external_built[0] / "e.h5") as f:  # what the writer writes: a bool
        assert isinstance(f.attrs["basis_stale"], np.bool_)
    for value, expected in ((np.bool_(True), True), (np.int64(0), False), (None, False)):
        gallery = _edited(external_built, "g.h5", tmp_path, "/", "basis_stale", value)
        assert gallery_summary(gallery)["basis_stale"] is expected  # None: before it
        if value is not None:
            store = _edited(external_built, "e.h5", tmp_path, "/", "basis_stale", value)
            assert store_summary(store)["basis_stale"] is expected


# ------------------------------------------------------- another bool() of a file's data

def test_a_scale_offset_dataset_is_a_filtered_one(tmp_path):
    """h5py's ``scaleoffset`` is None without the filter and the filter's setting with it,
    0 for automatic (what ``scaleoffset=True`` and ``h5repack -f SOFF=0,IN`` write):
    such a dataset is filtered, allowed up to `MAX_INFLATION`, not refused as sparse."""
    from ssgallery.formats import integrity

    path = tmp_path / "soff.h5"
    data = np.arange(2048 * 1024, dtype=np.int32).reshape(2048, 1024) % 7
    with h5py.File(path, "w") as f:
        f.create_dataset("auto", data=data, chunks=(256, 1024), scaleoffset=True)
        f.create_dataset("sparse", shape=(2048, 1024), dtype=np.int32, chunks=(256, 1024))
    with h5py.File(path) as f:
        assert f["auto"].scaleoffset == 0 and f["auto"].compression is None
        assert f["auto"].id.get_storage_size() * 2 < data.nbytes  # compressed
        np.testing.assert_array_equal(integrity.check_node(f, "auto", path)[()], data)
        with pytest.raises(FormatError, match="refused: /sparse claims 8388608 bytes"):
            integrity.check_node(f, "sparse", path)
