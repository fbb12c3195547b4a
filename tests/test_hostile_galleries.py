"""Hand-crafted galleries (their digests and seal made to match, as anybody who can write
the file can) whose header holds values no writer gives: refused in one line naming
the file, exit 2, never an internal error or a value printed as read."""

import h5py
import numpy as np
import pytest
from helpers import copied, invoked, rehash_gallery

CASES = [("target_far", "abc", "target_far must be a number in [0, 1), found str 'abc'"),
         ("target_far", 2.0, "target_far must be a number in [0, 1), found float 2.0"),
         ("threshold_mode", np.array([1, 2]),
          "threshold_mode must be a name, found list [1, 2]"),
         ("calibration", "[" * 100_000, "calibration: maximum recursion depth exceeded"),
         ("open_set", "[" * 100_000, "open_set: maximum recursion depth exceeded")]


@pytest.mark.parametrize(("name", "value", "problem"), CASES,
                         ids=["far-text", "far-2", "mode-list", "calibration-deep",
                              "open-set-deep"])
def test_a_header_value_no_writer_gives_is_one_line(sample_gallery_3, tmp_path, name, value,
                                                    problem):
    """info printed the header's target_far with ':g' ('abc': 'internal error: ValueError:
    Unknown format code', exit 4; 2.0 printed as a target FAR of 2), a threshold_mode
    list was taken as a mode, and a calibration or 1:N record of JSON nested past
    Python's recursion limit ended info and identify in 'internal error:
    RecursionError', exit 4. Now the header's values are checked where it is read
    (open_verified) and a record's JSON failing to parse for any reason is the record's
    refusal: 'corrupt gallery header: ...', exit 2."""
    gallery = copied(sample_gallery_3["gallery"], tmp_path, "g.h5")
    with h5py.File(gallery, "a") as f:
        f.attrs[name] = value
    rehash_gallery(gallery)
    out = invoked(["info", "--gallery", gallery])
    assert out["exit_code"] == 2, out["output"]
    assert out["stdout"] == "", out["output"]
    assert out["stderr"].startswith(f"ssgallery: error: {gallery}: corrupt gallery header: "
                                    f"{problem}"), out["stderr"]
    assert out["stderr"].count("\n") == 1


def test_a_client_s_rbf_gamma_beyond_any_width_is_refused(sample_gallery_3, tmp_path):
    """A client whose similarity records an RBF gamma of 1e308 (finite and > 0) was
    scored: numpy's 'RuntimeWarning: overflow encountered in multiply' and a line of
    ssgallery's source on stderr, then a verdict, exit 1. The gallery's gamma is held to
    the matchers' bound (MAX_GAMMA, 1e100): one line naming the client, exit 2."""
    import json
    import os

    from ssgallery.datasets import sample_faces_path

    gallery = copied(sample_gallery_3["gallery"], tmp_path, "g.h5")
    with h5py.File(gallery, "a") as f:
        group = f["clients/c01"]
        similarity = json.loads(group.attrs["similarity"])
        group.attrs["similarity"] = json.dumps(dict(similarity, gamma=1e308))
    rehash_gallery(gallery)
    folder = os.path.join(sample_faces_path(), "c01")
    probe = os.path.join(folder, min(os.listdir(folder)))
    out = invoked(["verify", "--gallery", gallery, "--claim", "c01", probe])
    assert out["exit_code"] == 2, out["output"]
    assert out["stderr"] == (f"ssgallery: error: {gallery}: refused: client 'c01' has an RBF "
                             "gamma that is not a positive number of at most 1e+100\n")


def test_a_template_protection_record_nested_past_the_stack_is_one_line(sample_gallery_3,
                                                                         tmp_path):
    """show read the header's template_protection record with json.loads catching
    ValueError and its like only: '[' x 100,000 there ended show in 'internal error:
    RecursionError', exit 4 (the other commands' reads said 'corrupt gallery'). Now it
    is a malformed record: one line, exit 2, nothing drawn."""
    gallery = copied(sample_gallery_3["gallery"], tmp_path, "g.h5")
    with h5py.File(gallery, "a") as f:
        f.attrs["template_protection"] = "[" * 100_000
    rehash_gallery(gallery)
    out = invoked(["show", "--gallery", gallery, "--claim", "c01", "-o", tmp_path / "c.png"])
    assert out["exit_code"] == 2, out["output"]
    assert out["stderr"] == (f"ssgallery: error: {gallery}: corrupt gallery header: bad "
                             "template_protection record\n")
    assert not (tmp_path / "c.png").exists()


def _edit_c01_beta(gallery, beta, znorm=True):
    """Client c01's beta set to ``beta`` in its record and its search-index row alike,
    the digests made to match (an unsigned gallery edited by hand); without ``znorm``,
    its Z-norm deleted from both too."""
    with h5py.File(gallery, "a") as f:
        f["clients/c01/beta"][...] = beta
        offsets = f["index/offsets"][()]
        row = list(f["index/client_ids"][()].astype(str)).index("c01")
        stacked = f["index/beta"][()]
        stacked[offsets[row]:offsets[row + 1]] = beta
        f["index/beta"][...] = stacked
        if not znorm:
            del f["clients/c01"].attrs["normalization"]
            for key in ("norm_mean", "norm_std"):
                values = f["index"][key][()]
                values[row] = np.nan
                f["index"][key][...] = values
    rehash_gallery(gallery)


@pytest.mark.parametrize("beta", [[1e308, 1e308], [1e308, -1e308]], ids=["sum", "span"])
@pytest.mark.parametrize("command", ["verify", "identify"])
def test_weights_whose_scores_overflow_are_refused(sample_gallery_3, tmp_path, beta, command):
    """An unsigned gallery edited to give client c01 a beta of 1e308 (record and search
    index alike, digests made to match) was read: verify printed numpy's 'RuntimeWarning:
    overflow encountered in reduce' and a line of numpy's source, then a 309-digit score
    and ACCEPT for every probe, exit 0; identify named c01 with a normalised score of +inf.
    Without a key a crafted model may still accept chosen probes (docs/security.md), but a
    range of scores that is not a float is no model compress writes: one line naming the
    client, exit 2, no warning."""
    import os

    from ssgallery.datasets import sample_faces_path

    gallery = copied(sample_gallery_3["gallery"], tmp_path, "g.h5")
    _edit_c01_beta(gallery, beta)
    folder = os.path.join(sample_faces_path(), "c01")
    probe = os.path.join(folder, min(os.listdir(folder)))
    args = ["--gallery", gallery, probe] + (["--claim", "c01"] if command == "verify" else [])
    out = invoked([command] + args)
    assert out["exit_code"] == 2, out["output"]
    who = "client 'c01'" if command == "verify" else "the search index's row of client 'c01'"
    assert out["stderr"].startswith(f"ssgallery: error: {gallery}: refused: {who} has weights "
                                    "whose scores overflow"), out["stderr"]
    assert out["stderr"].count("\n") == 1 and out["stdout"] == "", out["output"]


@pytest.mark.parametrize("command", ["verify", "info-client"])
def test_weights_far_beyond_the_impostor_spread_are_refused_as_identify_refuses(
        sample_gallery_3, tmp_path, command):
    """Weights of 1e300 (record and index alike, digests made to match: the range of g(x)
    a float, so not the overflow above) were read by verify, a 301-digit score and
    ACCEPT for every probe (exit 0), and by info --client (exit 0), while identify and
    info --gallery refused the same client (its index row's Z-norm std below 1e-6 of its
    score span: check_index). One rule
    now, the floor compress writes (floor_normalization), in check_model too: one line
    naming the client, exit 2."""
    import os

    from ssgallery.datasets import sample_faces_path

    gallery = copied(sample_gallery_3["gallery"], tmp_path, "g.h5")
    beta = [1e300, 1e300]
    _edit_c01_beta(gallery, beta)
    folder = os.path.join(sample_faces_path(), "c05")
    probe = os.path.join(folder, min(os.listdir(folder)))
    args = ["verify", "--gallery", gallery, "--claim", "c01", probe] if command == "verify" \
        else ["info", "--gallery", gallery, "--client", "c01"]
    out = invoked(args)
    assert out["exit_code"] == 2, out["output"]
    assert out["stderr"].startswith(f"ssgallery: error: {gallery}: refused: client 'c01' has "
                                    "a Z-norm std "), out["stderr"]
    assert out["stderr"].endswith(" below 1e-06 of its score span 2e+300: weights far beyond "
                                  "its impostor scores' spread, which compress has not "
                                  "written since 2026-11-26 (2e8eaa3): an edit, or an older "
                                  "gallery; compress again with this version (every client: "
                                  "--update refuses it too)\n"), out["stderr"]
    assert out["stdout"] == "", out["output"]


@pytest.mark.parametrize("command", ["verify", "identify", "info-client"])
def test_weights_beyond_the_training_objective_are_refused_without_a_z_norm(
        sample_gallery_3, tmp_path, command):
    """The Z-norm floor above bounds a client's weights only when its record has a Z-norm:
    with the Z-norm deleted (record and index row) beside weights of 1e300, verify
    printed a 301-digit score and ACCEPT for another person's face (exit 0), identify
    named c01 first (exit 0) and info --client read it (exit 0). The provenance's
    training objective bounds them (Eq. 2: omega >= lambda_abs beta'beta): one line
    naming the client, exit 2."""
    import os

    from ssgallery.datasets import sample_faces_path

    gallery = copied(sample_gallery_3["gallery"], tmp_path, "g.h5")
    _edit_c01_beta(gallery, [1e300, 1e300], znorm=False)
    folder = os.path.join(sample_faces_path(), "c05")
    probe = os.path.join(folder, min(os.listdir(folder)))
    args = {"verify": ["verify", "--gallery", gallery, "--claim", "c01", probe],
            "identify": ["identify", "--gallery", gallery, probe],
            "info-client": ["info", "--gallery", gallery, "--client", "c01"]}[command]
    out = invoked(args)
    assert out["exit_code"] == 2, out["output"]
    assert out["stderr"] == (f"ssgallery: error: {gallery}: refused: client 'c01' has "
                             "weights beyond its training objective: ||beta|| 1.41e+300 > "
                             "sqrt(omega / lambda_abs) 10.3 (Eq. 2), which compress never "
                             "writes\n"), out["stderr"]
    assert out["stdout"] == "", out["output"]


@pytest.mark.parametrize("command", ["verify", "identify"])
def test_a_record_with_nothing_that_bounds_its_weights_is_refused(sample_gallery_3, tmp_path,
                                                                  command):
    """The training-objective bound above needs omega and lambda_abs in the provenance:
    with them deleted too (and the Z-norm, beside weights of 1e300), verify printed a
    301-digit score and ACCEPT for another person's face (exit 0) and identify named c01
    first (exit 0). Every compress since 2026-11-26 writes one or the other: a record
    with neither is refused where it is read, one line naming the client, exit 2."""
    import json
    import os

    from ssgallery.datasets import sample_faces_path

    gallery = copied(sample_gallery_3["gallery"], tmp_path, "g.h5")
    with h5py.File(gallery, "a") as f:
        group = f["clients/c01"]
        provenance = json.loads(group.attrs["provenance"])
        for key in ("omega", "lambda_abs"):
            del provenance[key]
        group.attrs["provenance"] = json.dumps(provenance)
    _edit_c01_beta(gallery, [1e300, 1e300], znorm=False)  # digests made to match
    folder = os.path.join(sample_faces_path(), "c05")
    probe = os.path.join(folder, min(os.listdir(folder)))
    args = ["--gallery", gallery, probe] + (["--claim", "c01"] if command == "verify" else [])
    out = invoked([command] + args)
    assert out["exit_code"] == 2, out["output"]
    assert out["stderr"] == (f"ssgallery: error: {gallery}: refused: client 'c01' has nothing "
                             "that bounds its weights: neither a Z-norm nor its training "
                             "objective (omega, lambda_abs in its provenance), one of which "
                             "every compress since 2026-11-26 writes\n"), out["stderr"]


@pytest.mark.parametrize("kind", ["gallery", "store"])
def test_a_face_limit_above_every_fit_s_cap_is_refused(sample_gallery_3, sample_store,
                                                       tmp_path, kind):
    """The eigenface failure-to-acquire limit max_relative_dffs is capped at 0.95 by every
    fit (RELATIVE_DFFS_CAP, since failure to acquire exists), but a file's was read up
    to any finite number: 1e308 edited into an unsigned gallery (digests made to match)
    made verify score a random-noise image (REJECT, exit 1) that the gallery as written
    refuses as no face (FAILURE-TO-ACQUIRE, exit 3); a store's is copied into every
    gallery compressed from it. Now one line naming the file, exit 2."""
    from helpers import rehash_store
    from PIL import Image

    rng = np.random.default_rng(0)
    noise = tmp_path / "noise.png"
    Image.fromarray((rng.random((112, 92)) * 255).astype(np.uint8)).save(noise)
    src = sample_gallery_3["gallery"] if kind == "gallery" else sample_store["store"]
    path = copied(src, tmp_path, f"{kind}.h5")
    args = ["verify", "--gallery", path, "--claim", "c01", noise] if kind == "gallery" \
        else ["info", "--store", path]
    if kind == "gallery":
        assert invoked(args)["exit_code"] == 3  # as written: no face
    with h5py.File(path, "a") as f:
        f["matcher"].attrs["max_relative_dffs"] = 1e308
    (rehash_gallery if kind == "gallery" else rehash_store)(path)
    out = invoked(args)
    assert out["exit_code"] == 2, out["output"]
    assert out["stderr"] == (f"ssgallery: error: {path}: bad matcher state for 'eigenface': "
                             "eigenface: the failure-to-acquire limit max_relative_dffs "
                             "1e+308 is above 0.95, where every fit caps it (it would "
                             "acquire images that are no face)\n"), out["stderr"]


def _far_in_face_space(matcher, path):
    """An image (saved as ``path``) inside ``matcher``'s face space but beyond its DIFS
    limit: the mean moved along the last component to 1.5 times the limit."""
    from PIL import Image

    var, axis = matcher.explained_variance_[-1], matcher.components_[-1].astype(np.float64)
    t = 1.5 * matcher.max_difs_ * np.sqrt(len(matcher.explained_variance_))
    x = np.round(np.clip(matcher.mean_ + t * np.sqrt(var) * axis, 0, 255))
    Image.fromarray(x.reshape(matcher.image_shape).astype(np.uint8)).save(path)
    return path


@pytest.mark.parametrize("kind", ["gallery", "store"])
def test_a_face_distance_limit_above_any_image_s_is_refused(sample_gallery_3, sample_store,
                                                            tmp_path, kind):
    """max_difs (the eigenface limit on the distance in face space) had no cap, 501bdef
    left it: 1e308 edited into an unsigned gallery made verify score an image far out
    along the last component (REJECT, exit 1) that the gallery
    as written refuses as no face (FAILURE-TO-ACQUIRE, exit 3); in a store (info --store
    exit 0) it is copied into every gallery compressed from it. Every fit caps it at
    difs_ceiling, above which no image of the pixel range is refused for its DIFS."""
    from helpers import rehash_store

    from ssgallery.formats.gallery.read import read_gallery

    src = sample_gallery_3["gallery"] if kind == "gallery" else sample_store["store"]
    path = copied(src, tmp_path, f"{kind}.h5")
    args = ["info", "--store", path]
    if kind == "gallery":
        far = _far_in_face_space(read_gallery(path, matcher=True).matcher, tmp_path / "f.png")
        args = ["verify", "--gallery", path, "--claim", "c01", far]
        assert invoked(args)["exit_code"] == 3  # as written: no face
    with h5py.File(path, "a") as f:
        f["matcher"].attrs["max_difs"] = 1e308
    (rehash_gallery if kind == "gallery" else rehash_store)(path)
    out = invoked(args)
    assert out["exit_code"] == 2, out["output"]
    assert out["stderr"].startswith(
        f"ssgallery: error: {path}: bad matcher state for 'eigenface': eigenface: matcher "
        "state has a failure-to-acquire limit max_difs 1e+308 above "), out["stderr"]
    assert out["stderr"].endswith(", the largest distance in face space of any image, where "
                                  "every fit caps it (it would acquire images far from every "
                                  "face)\n"), out["stderr"]


def test_the_face_distance_ceiling_bounds_every_image_and_every_fit():
    """difs_ceiling is above the DIFS of the pixel box's corners and of random images,
    and a fit's max_difs is at most it (the cap a stored limit is held to)."""
    from ssgallery.matchers.eigenface import EigenfaceMatcher
    from ssgallery.matchers.eigenface_space import difs_ceiling, face_space_distances

    rng = np.random.default_rng(3)
    faces = rng.normal(128, 20, (30, 12, 10)).clip(0, 255)
    m = EigenfaceMatcher().fit(faces, groups=np.repeat(np.arange(6), 5))
    top = difs_ceiling(m.mean_, m.explained_variance_)
    mean = m.mean_.astype(np.float64)
    corners = np.where(mean < 127.5, 255.0, 0.0)[None] * (rng.random((50, mean.size)) < 0.9)
    images = np.concatenate([corners, rng.random((50, mean.size)) * 255])
    difs = face_space_distances(images, mean, m.components_.astype(np.float64),
                                m.explained_variance_)[1]
    assert difs.max() <= top and m.max_difs_ <= top


@pytest.mark.parametrize(("images", "found"), [
    (np.zeros((2, 10, 10), np.uint8), "uint8 (2, 10, 10)"),
    (np.zeros((2, 1, 300_000), np.uint8), "uint8 (2, 1, 300000)"),
    (np.zeros((3, 112, 92), np.uint8), "uint8 (3, 112, 92)"),
    (np.full((2, 112, 92), np.nan), "float64 (2, 112, 92)"),
    (np.array([b"ab", b"cd"]), "|S2 (2,)")], ids=["small", "wide", "m3", "nan", "text"])
def test_rendered_images_that_are_not_the_gallery_s_are_refused(sample_gallery_3, tmp_path,
                                                                 images, found):
    """show drew a client's rendered prototype images as the file held them: 10x10 or
    1x300,000 images in a gallery of 112x92 faces were drawn (a 438 kB montage, exit 0),
    NaN printed numpy's 'RuntimeWarning: invalid value encountered in cast' and drew
    black, three images for two weights said 'montage: 3 images but 2 weights' without
    the file, strings were 'internal error: ValueError', exit 4. Now they are uint8
    (m, H, W) of the header's image_shape or the gallery is refused: one line, exit 2,
    nothing drawn."""
    gallery = copied(sample_gallery_3["gallery"], tmp_path, "g.h5")
    with h5py.File(gallery, "a") as f:
        shape = tuple(f.attrs["image_shape"])
        del f["clients/c01/prototype_images"]
        f["clients/c01"].create_dataset("prototype_images", data=images)
    rehash_gallery(gallery)
    out = invoked(["show", "--gallery", gallery, "--claim", "c01", "-o", tmp_path / "c.png"])
    assert out["exit_code"] == 2, out["output"]
    assert out["stderr"] == (f"ssgallery: error: {gallery}: corrupt gallery: client 'c01' has "
                             f"rendered prototype images of {found}, not uint8 (2, "
                             f"{shape[0]}, {shape[1]}) (one per prototype, of the gallery's "
                             "image_shape)\n")
    assert not (tmp_path / "c.png").exists()


def _negated_first(v):
    return np.where(np.arange(len(v)) == 0, -v, v)


def _zero_last(v):
    return np.where(np.arange(len(v)) == len(v) - 1, 0.0, v)


@pytest.mark.parametrize(("name", "edit", "problem"), [
    ("explained_variance", _negated_first, "explained variances that are not positive"),
    ("explained_variance", _zero_last, "explained variances that are not positive"),
    ("explained_variance_ratio", lambda v: v[:-1],
     "explained variance ratios that are not one share of the variance per component"),
    ("explained_variance_ratio", lambda v: -v,
     "explained variance ratios that are not one share of the variance per component"),
    ("explained_variance_ratio", lambda v: v * np.nan,
     "explained variance ratios that are not one share of the variance per component")],
    ids=["negative", "zero", "ratio-short", "ratio-negative", "ratio-nan"])
def test_explained_variances_a_fit_cannot_give_are_refused(sample_gallery_3, tmp_path, name,
                                                           edit, problem):
    """The eigenface state's explained variances were checked for length and NaN only, and
    the probes' face quality (DIFS) divides by them: one negated changed every probe's
    quality silently (a verdict, exit 1), all negated made it NaN and a zero one made it
    0, so verify said FAILURE-TO-ACQUIRE for every probe (exit 3) instead of refusing the
    file; ratios of the wrong length, negative or NaN were read as they were (a verdict).
    Now the state is refused as a fit cannot make it: one line, exit 2."""
    import os

    from ssgallery.datasets import sample_faces_path

    gallery = copied(sample_gallery_3["gallery"], tmp_path, "g.h5")
    with h5py.File(gallery, "a") as f:
        values = edit(f["matcher"][name][()])
        del f["matcher"][name]
        f["matcher"].create_dataset(name, data=values)
    rehash_gallery(gallery)
    folder = os.path.join(sample_faces_path(), "c01")
    probe = os.path.join(folder, min(os.listdir(folder)))
    out = invoked(["verify", "--gallery", gallery, "--claim", "c01", probe])
    assert out["exit_code"] == 2, out["output"]
    assert out["stderr"].startswith(f"ssgallery: error: {gallery}: bad matcher state for "
                                    f"'eigenface': eigenface: matcher state has {problem}")
    assert out["stderr"].count("\n") == 1 and out["stdout"] == "", out["output"]


def _open_set_edited(src, tmp_path, edit):
    """A copy of ``src`` whose 1:N record ``edit`` changed, digests made to match."""
    import json

    gallery = copied(src, tmp_path, "g.h5")
    with h5py.File(gallery, "a") as f:
        record = json.loads(f.attrs["open_set"])
        edit(record)
        f.attrs["open_set"] = json.dumps(record)
    rehash_gallery(gallery)
    return gallery


OPEN_SET_CASES = {
    "scale-tiny": lambda r: r.update(scale=1e-308),
    "blocks-1e18": lambda r: r.update(blocks=10 ** 18),
    "search-size-1e18": lambda r: r.update(search_size=10 ** 18),
    "search-size-above-clients": lambda r: r.update(search_size=r["clients"] + 1),
    "interval-people-negative": lambda r: r["curve"].update(interval_people=-3),
    "interval-people-text": lambda r: r["curve"].update(interval_people="x"),
}


@pytest.mark.parametrize("case", list(OPEN_SET_CASES))
def test_a_1n_record_compress_cannot_write_is_refused(sample_gallery_3, tmp_path, case):
    """Values of the 1:N record no compress writes were read: a scale of 1e-308 (> 0)
    made identify --open-set print numpy's 'RuntimeWarning: invalid value encountered in
    subtract' from ssgallery/biometrics/ties.py and centred scores of +inf and of 300
    digits (exit 1; roc --gallery warned of overflow too); pooled_scale never writes one
    below 1e-12. Counts of 10**18 (blocks, search_size) were read and printed by info
    ('200 held-out searches of 1000000000000000000 clients', exit 0): a JSON count is
    below 2**53, as everywhere else. The curve's interval_people of -3 or "x" made info
    say the FPIR interval was 'counted as independent' (a malformed record taken as an
    old one). A search_size above the gallery's clients (4 in a 3-client gallery: no
    search covers more clients than there are) was read too ('200 held-out searches of
    4 clients', info exit 0, identify exit 0). Now identify and info refuse the record:
    one line, exit 2."""
    import os

    from ssgallery.datasets import sample_faces_path

    gallery = _open_set_edited(sample_gallery_3["gallery"], tmp_path, OPEN_SET_CASES[case])
    folder = os.path.join(sample_faces_path(), "c01")
    probe = os.path.join(folder, min(os.listdir(folder)))
    for args in (["identify", "--gallery", gallery, "--open-set", probe],
                 ["info", "--gallery", gallery]):
        out = invoked(args)
        assert out["exit_code"] == 2, out["output"]
        assert out["stderr"] == (f"ssgallery: error: {gallery}: corrupt gallery header: "
                                 "open_set: inconsistent curve or values\n"), out["output"]


def test_info_refuses_the_1n_threshold_identify_refuses(sample_gallery_3, tmp_path):
    """A 1:N record whose threshold (-1e308) would identify every probe some client ranks
    first was refused by identify, but info, the check before deploying, printed it
    ('1:N search: threshold -1e+308 on the best centred score ...', exit 0). One check
    now (formats.gallery.checks.check_open_set_threshold), in both: identify's line,
    exit 2."""
    gallery = _open_set_edited(sample_gallery_3["gallery"], tmp_path,
                               lambda r: r.update(threshold=-1e308))
    out = invoked(["info", "--gallery", gallery])
    assert out["exit_code"] == 2, out["output"]
    assert out["stderr"].startswith(f"ssgallery: error: {gallery}: refused: the gallery's 1:N "
                                    "threshold -1e+308 would accept every probe client "), \
        out["stderr"]
    assert out["stderr"].count("\n") == 1 and out["stdout"] == "", out["output"]
