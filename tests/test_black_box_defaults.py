"""What compress and roc do for a black-box matcher by default (issue 21; the training
itself: tests/test_robust_training.py): the resolved m, max_iter and swap_rounds recorded
in the provenance, one answer to "is it a black box" for both commands, a default m
capped at the training images (and m auto's grid), each row kept once, and no swap where
a client's impostors are one person. On the L1 example program (a real process)."""

import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import l1_matcher, smooth_images

HERE = Path(__file__).resolve().parent / "matchers"


@pytest.fixture(scope="module")
def l1():
    with l1_matcher() as fitted:
        yield fitted


def test_compress_resolves_auto_training_per_matcher_in_the_provenance(tmp_path):
    """compress digests and records the resolved values: a black box (the example
    program) m 5, max_iter 0 and swap_rounds 3; eigenface m 2, 200 iterations and no
    swaps (as every gallery made before "auto"); explicit values pass through."""
    from click.testing import CliRunner
    from helpers import make_faces

    from ssgallery.app.enroll import enroll
    from ssgallery.cli import main
    from ssgallery.formats.gallery import read_gallery

    program = [sys.executable, str(HERE / "example_mad.py")]
    faces_dir = make_faces(str(tmp_path / "faces"), n_clients=3, n_images=4, shape=(16, 12))
    enroll(faces_dir, tmp_path / "bb.h5", matcher="external",
           matcher_options={"command": program})
    enroll(faces_dir, tmp_path / "eig.h5")
    env = {"SSGALLERY_MATCHER_CMD": " ".join(program)}
    found = {}
    for store, extra in (("bb.h5", []), ("eig.h5", []),
                         ("bb.h5", ["--max-iter", "2", "--swap-rounds", "0", "--m", "2"])):
        out = tmp_path / f"g{len(found)}.h5"
        res = CliRunner().invoke(main, ["compress", "--store", str(tmp_path / store), "-o",
                                        str(out), "--cv-folds", "0", "--clients", "c00",
                                        "--quiet", *extra], env=env)
        assert res.exit_code == 0, res.output
        model = read_gallery(out, arrays=True).clients["c00"]
        found[len(found)] = (len(model.beta), model.provenance["max_iter"],
                             model.provenance.get("swap_rounds"))
    assert found == {0: (5, 0, 3), 1: (2, 200, None), 2: (2, 2, None)}
    res = CliRunner().invoke(main, ["compress", "--store", str(tmp_path / "bb.h5"),
                                    "--max-iter", "some"], env=env)
    assert res.exit_code == 2 and "expected a non-negative integer or 'auto'" in res.output


def test_compress_and_roc_call_the_same_matchers_black_boxes(l1):
    """roc reads `Matcher.black_box` from the store's matcher class, compress from the
    matcher it built, checked against its similarity's gradient: the shipped matchers
    agree, and a plugin whose declaration and similarity disagree is refused by name."""
    from ssgallery.app.compress_plan import plan_black_box
    from ssgallery.errors import SsgalleryError
    from ssgallery.matchers import get_matcher_class
    from ssgallery.matchers.eigenface import EigenfaceMatcher

    assert {n: get_matcher_class(n).black_box for n in ("eigenface", "dlib", "external")} \
        == {"eigenface": False, "dlib": False, "external": True}
    matcher, sim, _ = l1
    assert plan_black_box(matcher, sim, "s.h5") is True
    eigenface = EigenfaceMatcher(n_components=3).fit(smooth_images(8, seed=1))
    assert plan_black_box(eigenface, eigenface.similarity(), "s.h5") is False

    class Mislabelled(EigenfaceMatcher):
        name = "mislabelled"
        black_box = True

    wrong = Mislabelled(n_components=3).fit(smooth_images(8, seed=1))
    with pytest.raises(SsgalleryError, match="the mislabelled matcher declares black_box = "
                       "True but its similarity has an analytic gradient: fix the matcher "
                       "plugin"):
        plan_black_box(wrong, wrong.similarity(), "s.h5")


def test_a_black_box_default_m_never_exceeds_the_store(tmp_path):
    """The black box's default m (5) is a default, not a request: a store of 4 images
    trains 4 prototypes; an explicit --m 5 is refused with one line; once the store has
    grown, an update names the --m that keeps those clients."""
    import shutil

    from click.testing import CliRunner
    from helpers import make_faces

    from ssgallery.app.enroll import enroll
    from ssgallery.cli import main
    from ssgallery.formats.gallery import read_gallery

    program = [sys.executable, str(HERE / "example_mad.py")]
    faces_dir = make_faces(str(tmp_path / "faces"), n_clients=2, n_images=2, shape=(16, 12))
    enroll(faces_dir, tmp_path / "bb.h5", matcher="external",
           matcher_options={"command": program})
    env = {"SSGALLERY_MATCHER_CMD": " ".join(program)}
    args = ["compress", "--store", str(tmp_path / "bb.h5"), "--cv-folds", "0", "--quiet"]
    res = CliRunner().invoke(main, [*args, "-o", str(tmp_path / "g.h5")], env=env)
    assert res.exit_code == 0, res.output
    assert len(read_gallery(tmp_path / "g.h5", arrays=True).clients["c00"].beta) == 4
    res = CliRunner().invoke(main, [*args, "-o", str(tmp_path / "h.h5"), "--m", "5"], env=env)
    assert res.exit_code != 0 and "--m = 5 is more prototypes than the store has images (4)" \
        in res.output
    assert not (tmp_path / "h.h5").exists()
    # the store grows past 5 images: the default is 5 now, and the update names the
    # --m that keeps the clients trained at 4
    make_faces(str(tmp_path / "more"), n_clients=3, n_images=2, shape=(16, 12), seed=1)
    shutil.copytree(tmp_path / "more" / "c02", faces_dir + "/c02")
    enroll(faces_dir, tmp_path / "bb.h5", add=True)
    update = [*args, "-o", str(tmp_path / "g.h5"), "--update"]
    res = CliRunner().invoke(main, update, env=env)
    assert res.exit_code == 0, res.output
    assert ("c00, c01: trained with other options than this run's: trained again (to keep "
            "them, give the options they were compressed with; those trained with --m 4 "
            "are kept with --m 4)") in res.output
    assert len(read_gallery(tmp_path / "g.h5", arrays=True).clients["c00"].beta) == 5


def test_train_client_caps_a_black_box_default_m_at_its_training_images(l1):
    """A library caller's default m is capped as compress caps it: 4 training images give
    4 prototypes, each a training image (not 5 with a jittered copy); 10 give 5."""
    from ssgallery.app.client_fit import train_client
    from ssgallery.app.options import CompressOptions

    matcher, sim, X = l1
    for n, m in ((4, 4), (10, 5)):
        Xn = X[:n]
        y = np.where(np.arange(n) < 2, 1, -1)
        fit = train_client(Xn, y, sim, CompressOptions(cv_folds=0), groups=np.arange(n),
                           bounds=matcher.bounds(), gram=sim(Xn, Xn))
        Z = fit.distiller.prototypes_
        assert len(Z) == m
        assert all((np.abs(Xn - z).max(axis=1) == 0).any() for z in Z)


def test_m_auto_never_picks_more_prototypes_than_images(tmp_path):
    """--m auto's grid (Eq. 8 (eq:xval-m)) is cut at the images trained on, as an
    explicit m is refused above them: a black box's store of 9 images picked m = 10."""
    from click.testing import CliRunner
    from helpers import make_faces

    from ssgallery.app.client_fit import AUTO_M_GRID
    from ssgallery.app.enroll import enroll
    from ssgallery.cli import main
    from ssgallery.formats.gallery import read_gallery

    program = [sys.executable, str(HERE / "example_mad.py")]
    faces_dir = make_faces(str(tmp_path / "faces"), n_clients=3, n_images=3, shape=(16, 12))
    enroll(faces_dir, tmp_path / "bb.h5", matcher="external",
           matcher_options={"command": program})
    assert max(AUTO_M_GRID) > 9
    res = CliRunner().invoke(main, ["compress", "--store", str(tmp_path / "bb.h5"), "-o",
                                    str(tmp_path / "g.h5"), "--m", "auto", "--quiet"],
                             env={"SSGALLERY_MATCHER_CMD": " ".join(program)})
    assert res.exit_code == 0, res.output
    kept = [len(c.beta) for c in read_gallery(tmp_path / "g.h5", arrays=True).clients.values()]
    assert len(kept) == 3 and max(kept) <= 9, kept


def test_a_client_with_fewer_training_rows_than_m_keeps_each_row_once():
    """A client capped to fewer rows than m (--max-impostors) trains one prototype per
    row: a black box's prototypes stay real images, never jittered copies of one."""
    from ssgallery.app.client_fit import train_client
    from ssgallery.app.options import CompressOptions
    from ssgallery.learn.similarity import HeuristicGradient

    rng = np.random.default_rng(0)
    X = rng.normal(size=(4, 6))
    y = np.array([1, 1, -1, -1])
    sim = HeuristicGradient(lambda A, B: np.exp(-((A[:, None] - B[None]) ** 2).sum(-1) / 6))
    fit = train_client(X, y, sim, CompressOptions(m=5, cv_folds=0),
                       groups=np.array([0, 0, 1, 2]))
    P = fit.distiller.prototypes_
    assert len(P) == 4
    assert all(np.any(np.all(p == X, axis=1)) for p in P)  # each a training row


def test_no_swap_when_a_clients_impostors_are_one_person(l1):
    """Swaps need impostors of two people or more (`swap_rounds_for`): with one, they fit
    that person. train_client then trains the start rule's images, as --swap-rounds 0
    does, and says so in the options it returns; with two impostor people it swaps."""
    from ssgallery.app.client_fit import train_client
    from ssgallery.app.options import CompressOptions

    matcher, sim, X = l1
    y = np.where(np.arange(len(X)) < 6, 1, -1)
    gram = sim(X, X)
    fits = {}
    for people in (1, 2):
        groups = np.where(y > 0, 0, 1 + np.arange(len(X)) % people)
        for rounds in ("auto", 0):
            fit = train_client(X, y, sim, CompressOptions(m=3, swap_rounds=rounds),
                               groups=groups, bounds=matcher.bounds(), gram=gram)
            fits[people, rounds] = fit
    assert fits[1, "auto"].distiller.swap_rounds == 0
    assert fits[1, "auto"].options.swap_rounds == 0
    assert np.array_equal(fits[1, "auto"].distiller.prototypes_,
                          fits[1, 0].distiller.prototypes_)
    assert fits[2, "auto"].options.swap_rounds == 3
    assert not np.array_equal(fits[2, "auto"].distiller.prototypes_,
                              fits[2, 0].distiller.prototypes_)


def test_compress_and_roc_make_no_swap_in_a_gallery_of_two_people(tmp_path):
    """A black-box store of two people: compress records no swap in each client's
    provenance (three people: 3 swaps), and roc's ssvm, trained as compress trains it,
    makes none when a split enrols two people."""
    from click.testing import CliRunner
    from helpers import make_faces

    from ssgallery.app.enroll import enroll
    from ssgallery.biometrics.protocol import _make
    from ssgallery.biometrics.protocol_options import ProtocolOptions
    from ssgallery.cli import main
    from ssgallery.formats.gallery import read_gallery

    program = [sys.executable, str(HERE / "example_mad.py")]
    env = {"SSGALLERY_MATCHER_CMD": " ".join(program)}
    recorded = {}
    for people in (2, 3):
        faces_dir = make_faces(str(tmp_path / f"f{people}"), n_clients=people, n_images=4,
                               shape=(16, 12))
        store, out = tmp_path / f"bb{people}.h5", tmp_path / f"g{people}.h5"
        enroll(faces_dir, store, matcher="external", matcher_options={"command": program})
        res = CliRunner().invoke(main, ["compress", "--store", str(store), "-o", str(out),
                                        "--cv-folds", "0", "--quiet"], env=env)
        assert res.exit_code == 0, res.output
        clients = read_gallery(out, arrays=True).clients
        recorded[people] = {c: m.provenance.get("swap_rounds") for c, m in clients.items()}
    assert recorded == {2: {"c00": None, "c01": None},
                        3: dict.fromkeys(("c00", "c01", "c02"), 3)}
    options = ProtocolOptions(methods=("ssvm",), method_options={"ssvm": {"swap_rounds": 3}})
    y = np.array([1, 1, -1, -1, -1, -1])
    for impostors, rounds in (([1, 1, 1, 1], 0), ([1, 1, 2, 2], 3)):
        made = _make("ssvm", 2, 0, options, y, np.array([0, 0, *impostors]))
        assert made.options["swap_rounds"] == rounds
