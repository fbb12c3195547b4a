"""The compress options objects: checked once, one definition for the digest that
``--resume``/``--update`` compare, and a new field that leaves old digests alone."""

from dataclasses import dataclass, replace

import numpy as np
import pytest

from ssgallery.app.options import (
    CompressOptions,
    CompressRun,
    option_field,
    positive_int,
    resolve_training,
    split_options,
)
from ssgallery.app.parts import options_digest, run_key
from ssgallery.errors import InputError

# Computed on main at 4b80f8a (before the options objects) from the dict compress built
# for its defaults, init resolved for eigenface:
#   {"m": 2, "rho": 0.01, "target_far": 0.01, "lam": 0.002, "solver": "varpro",
#    "init": "class", "cv_folds": 5, "seed": 0, "max_iter": 200, "max_impostors": 600,
#    "impostors": "sample", "refit_matcher": True}
# Galleries and parts written before must keep these digests (--update, --resume). Since
# issue 24 the default distils between the classes too (between=0.5): these are the
# digests of between=0, which galleries made before it were trained with.
DEFAULT_DIGEST = "b6773249d7cbc1468fb60ab92a95566184cb0dd2a05d660c6d9eca867591339f"
DEFAULT_RUN_KEY = "d29dcf6e6fd7c28c120c22e1bfd7123eca8813e04c88503a7948ab254d07892c"  # c01, f*64
# ... and of today's defaults (between=0.5 in the digest)
BETWEEN_DIGEST = "da0db733536175d32923cf953a7414b3e18957a12973faaa0a467581e00fffe3"
BETWEEN_RUN_KEY = "1cbe91dc0ebe37421b80d55692a60be6f0efbc7d3ed4023b512cadca6037749d"
OTHER = {"m": "auto", "rho": 0.005, "target_far": 0.001, "lam": 0.5, "solver": "paper",
         "init": "genuine", "cv_folds": 0, "seed": 3, "max_iter": 4, "max_impostors": 0,
         "impostors": "cohort", "refit_matcher": False, "between": 0.0}
OTHER_DIGEST = "7ae3e75c599d65417c0beaa27096de327da0f92d85d1d0694d2c82bdf6de4707"
OTHER_RUN_KEY = "c00b4cd49ea74d8dd20482cf1ab0e190e01525a25cc4de4a08249623cfdd3366"  # "c 02", 0*64


def analytic(cls=CompressOptions, **values):
    """The options as compress digests them for eigenface: "auto" resolved."""
    return resolve_training(cls(**values), black_box=False)


def test_digests_are_the_ones_main_wrote():
    options = analytic(init="class", between=0.0)
    assert options_digest(options) == DEFAULT_DIGEST
    assert run_key("c01", "f" * 64, options) == DEFAULT_RUN_KEY
    assert options_digest(analytic(init="class")) == BETWEEN_DIGEST
    assert run_key("c01", "f" * 64, analytic(init="class")) == BETWEEN_RUN_KEY
    other = analytic(**OTHER)
    assert options_digest(other) == OTHER_DIGEST
    assert run_key("c 02", "0" * 64, other) == OTHER_RUN_KEY
    # threshold_mode is applied after training and checked on its own: not digested
    assert options_digest(replace(options, threshold_mode="client")) == DEFAULT_DIGEST
    # numpy integers and None (no cap) give the same values as Python ones
    import numpy as np

    assert options_digest(analytic(init="class", m=np.int64(2), max_iter=np.int32(200),
                                   lam=np.float64(0.002), between=np.float64(0))
                          ) == DEFAULT_DIGEST
    assert CompressOptions(max_impostors=None).max_impostors == 0


def test_a_gallery_compressed_with_the_defaults_carries_main_s_digest(faces_factory, tmp_path):
    """between=0 gives the digest galleries had before between's default; the default
    gives its own, with between in the provenance."""
    from ssgallery.app.compress import compress
    from ssgallery.app.enroll import enroll
    from ssgallery.formats.gallery import read_gallery

    enroll(faces_factory(n_clients=4, n_images=6), tmp_path / "e.h5")
    compress(tmp_path / "e.h5", tmp_path / "d.h5", run=CompressRun(clients="c01"))
    default = read_gallery(tmp_path / "d.h5").clients["c01"].provenance
    assert default["options_digest"] == BETWEEN_DIGEST and default["between"] == 0.5
    compress(tmp_path / "e.h5", tmp_path / "g.h5", CompressOptions(between=0.0),
             CompressRun(clients="c01"))
    prov = read_gallery(tmp_path / "g.h5").clients["c01"].provenance
    assert prov["options_digest"] == DEFAULT_DIGEST and "between" not in prov
    # the options' provenance entries, as main wrote them
    assert {k: prov[k] for k in ("lambda", "solver", "init", "max_iter", "target_far",
                                 "m_selection", "rho", "impostors", "max_impostors")} == {
        "lambda": 0.002, "solver": "varpro", "init": "class", "max_iter": 200,
        "target_far": 0.01, "m_selection": "fixed", "rho": None, "impostors": "sample",
        "max_impostors": 600}


@dataclass(frozen=True, kw_only=True)
class _Later(CompressOptions):
    """CompressOptions with a field added later, as the recipe in contributing.md says."""

    restarts: int = option_field(1, positive_int)


def test_a_new_field_at_its_default_keeps_every_digest_and_provenance():
    old, new = analytic(init="class", between=0.0), analytic(_Later, init="class", between=0.0)
    assert options_digest(new) == DEFAULT_DIGEST
    assert run_key("c01", "f" * 64, new) == DEFAULT_RUN_KEY
    assert new.provenance() == old.provenance()
    changed = analytic(_Later, init="class", between=0.0, restarts=3)
    assert options_digest(changed) != DEFAULT_DIGEST
    assert changed.digest_dict() == dict(old.digest_dict(), restarts=3)
    assert changed.provenance() == dict(old.provenance(), restarts=3)
    with pytest.raises(InputError, match="^`restarts` must be a positive integer, got 0$"):
        _Later(restarts=0)


@pytest.mark.parametrize("changes, message", [
    ({"m": 0}, "`m` must be a positive integer or 'auto', got 0"),
    ({"m": True}, "`m` must be a positive integer or 'auto', got True"),
    ({"m": "3"}, "`m` must be a positive integer or 'auto', got '3'"),
    ({"target_far": 1.0}, ("`target_far` must be a fraction in [0, 1), got 1 (a rate is a "
                          "fraction, not a percentage: 0.01 for 1 %)")),
    ({"lam": -1}, "`lam` must be >= 0 and finite, got -1"),
    ({"rho": -0.5}, "`rho` must be >= 0 and finite, got -0.5"),
    # NaN passed '< 0' (--lam nan: an internal error after loading the store; --rho nan
    # with --m auto: a gallery written, m picked from NaN losses); bools are not numbers
    ({"lam": float("nan")}, "`lam` must be >= 0 and finite, got nan"),
    ({"lam": float("inf")}, "`lam` must be >= 0 and finite, got inf"),
    ({"rho": float("nan")}, "`rho` must be >= 0 and finite, got nan"),
    ({"lam": True}, "`lam` must be a number, got True"),
    ({"lam": "0.1x"}, "`lam` must be a number, got '0.1x'"),
    ({"target_far": False}, "`target_far` must be a number, got False"),
    ({"target_fpir": float("nan")}, "`target_fpir` must be a fraction in (0, 1), got nan"),
    # int() took -3, True and 2.7 (as 2); --seed -1 was an internal error in training
    ({"cv_folds": -3}, "`cv_folds` must be a non-negative integer, got -3"),
    ({"cv_folds": True}, "`cv_folds` must be a non-negative integer, got True"),
    ({"cv_folds": 2.7}, "`cv_folds` must be a non-negative integer, got 2.7"),
    ({"seed": -1}, "`seed` must be an integer from 0 to 2**32 - 1, got -1"),
    ({"seed": 2 ** 32}, "`seed` must be an integer from 0 to 2**32 - 1, got 4294967296"),
    ({"seed": float("nan")}, "`seed` must be an integer from 0 to 2**32 - 1, got nan"),
    ({"solver": "sgd"}, "`solver` must be 'varpro' or 'paper', got 'sgd'"),
    ({"init": "pca"}, ("`init` must be one of auto, class, genuine, kmeans, random, "
                       "got 'pca'")),
    ({"max_iter": -1}, "`max_iter` must be a non-negative integer or 'auto', got -1"),
    ({"max_iter": "none"}, "`max_iter` must be a non-negative integer or 'auto', got 'none'"),
    ({"refresh_every": 0}, "`refresh_every` must be a positive integer, got 0"),
    ({"swap_rounds": -1}, "`swap_rounds` must be a non-negative integer or 'auto', got -1"),
    ({"max_impostors": -1}, "max_impostors must be a non-negative integer, got -1"),
    ({"impostors": "nearest"}, "impostors must be one of sample, cohort, got 'nearest'"),
    ({"threshold_mode": "x"}, ("`threshold_mode` must be one of client, znorm-global, "
                               "shrink, got 'x'")),
])
def test_every_option_is_checked_when_the_object_is_built(changes, message):
    with pytest.raises(InputError) as info:
        CompressOptions(**changes)
    assert str(info.value) == message


def test_run_options_checked_and_clients_parsed():
    assert CompressRun(clients=" a, b ,,c").clients == ["a", "b", "c"]
    assert CompressRun().clients is None
    with pytest.raises(InputError, match=r"^`jobs` must be a positive integer or -1 \(one "
                       r"per core\), got 0$"):
        CompressRun(jobs=0)
    with pytest.raises(InputError, match="not both"):
        CompressRun(jobs=2, scheduler="tcp://127.0.0.1:8786")
    assert CompressRun().job_timeout == 3600.0 and CompressRun(job_timeout=0).job_timeout == 0
    with pytest.raises(InputError, match="`job_timeout` must be >= 0 and finite, got inf"):
        CompressRun(job_timeout=float("inf"))
    with pytest.raises(TypeError):
        CompressOptions(2)  # keyword-only: no option is passed by position


def test_to_dict_from_dict_and_split():
    options = CompressOptions(**OTHER)
    assert CompressOptions.from_dict(options.to_dict()) == options
    assert CompressOptions.from_dict({}) == CompressOptions()
    with pytest.raises(InputError, match="unknown CompressOptions option"):
        CompressOptions.from_dict({"mm": 2})
    training, run = split_options({"m": 3, "jobs": 2, "seed": 1}, CompressOptions, CompressRun)
    assert (training.m, training.seed, run.jobs) == (3, 1, 2)
    with pytest.raises(TypeError, match="no options object takes verbose"):
        split_options({"verbose": True}, CompressOptions, CompressRun)
    with pytest.raises(AttributeError):
        options.m = 3  # frozen


def test_options_travel_to_worker_processes_unchanged():
    import pickle

    options = analytic(**OTHER)
    again = pickle.loads(pickle.dumps(options))
    assert again == options and options_digest(again) == OTHER_DIGEST


def test_protocol_options_checked_and_normalised():
    import numpy as np

    from ssgallery.biometrics.protocol import DEFAULT_METHODS, ProtocolOptions

    p = ProtocolOptions(m=[1, np.int64(5)], methods=["svm", ("ssvm", 3)])
    assert p.m == (1, 5) and p.methods == ("svm", ("ssvm", 3)) and p.method_options == {}
    assert ProtocolOptions(m=3).m == (3,) and ProtocolOptions().methods == DEFAULT_METHODS
    with pytest.raises(InputError) as info:
        ProtocolOptions(m=[2, 0])
    assert str(info.value) == "the number of prototypes m must be at least 1, got [2, 0]"
    with pytest.raises(InputError, match="^no methods to compare$"):
        ProtocolOptions(methods=[])


PAIRS = "`methods` takes method names and (name, m) pairs with m a positive integer, got "
DICTS = "`method_options` must map method names to dicts of options, got "


@pytest.mark.parametrize("field, value, message", [
    ("m", 2.7, "`m` must be one or more positive integers, got 2.7"),
    ("m", True, "`m` must be one or more positive integers, got True"),
    ("m", [2, 2.0], "`m` must be one or more positive integers, got [2, 2.0]"),
    ("m", (), "`m` must be one or more positive integers, got ()"),
    ("m", "2", "`m` must be one or more positive integers, got '2'"),
    ("methods", ["svm", 3], f"{PAIRS}3"),
    ("methods", [("ssvm", 0)], f"{PAIRS}('ssvm', 0)"),
    ("methods", [("ssvm", True)], f"{PAIRS}('ssvm', True)"),
    ("methods", [""], f"{PAIRS}''"),
    # one method or m twice: trained twice, counted as two repetitions of one row
    ("methods", ["svm", "ssvm", "svm"], "`methods` lists 'svm' twice"),
    ("methods", [("ssvm", 2), ["ssvm", 2]], "`methods` lists ('ssvm', 2) twice"),
    ("m", [2, 3, 2], "`m` lists 2 twice"),
    ("n_enrolled", 0, "`n_enrolled` must be a positive integer, got 0"),
    ("n_enrolled", True, "`n_enrolled` must be a positive integer, got True"),
    ("n_train", 2.5, "`n_train` must be a positive integer, got 2.5"),
    ("repetitions", 0, "`repetitions` must be a positive integer, got 0"),
    ("repetitions", "5", "`repetitions` must be a positive integer, got '5'"),
    ("n_jobs", 0, "`n_jobs` must be a positive integer or -1 (one per core), got 0"),
    ("n_jobs", -2, "`n_jobs` must be a positive integer or -1 (one per core), got -2"),
    ("n_jobs", True, "`n_jobs` must be a positive integer or -1 (one per core), got True"),
    ("seed", -1, "`seed` must be an integer from 0 to 2**32 - 1, got -1"),
    ("seed", 2 ** 32, "`seed` must be an integer from 0 to 2**32 - 1, got 4294967296"),
    ("seed", 1.0, "`seed` must be an integer from 0 to 2**32 - 1, got 1.0"),
    ("norm_folds", 1, "the normalisation folds must be 0 (none) or at least 2, got 1"),
    ("norm_folds", True, "the normalisation folds must be 0 (none) or at least 2, got True"),
    ("method_options", {"ssvm": 3}, f"{DICTS}{{'ssvm': 3}}"),
    ("method_options", [("ssvm", {})], f"{DICTS}[('ssvm', {{}})]"),
    ("between", -0.5, "`between` must be >= 0 and finite, got -0.5"),
    ("between", float("nan"), "`between` must be >= 0 and finite, got nan"),
    ("between", float("inf"), "`between` must be >= 0 and finite, got inf"),
    ("between", True, "`between` must be a number, got True"),
])
def test_protocol_options_refuse_what_the_protocol_cannot_run(field, value, message):
    from ssgallery.biometrics.protocol import ProtocolOptions

    with pytest.raises(InputError) as info:
        ProtocolOptions(**{field: value})
    assert str(info.value) == message


def test_protocol_options_normalise_one_value_and_round_trip():
    import numpy as np

    from ssgallery.biometrics.protocol import ProtocolOptions

    one = ProtocolOptions(methods="svm", m=np.int64(3), n_enrolled=np.int32(4), seed=2 ** 32 - 1,
                          n_jobs=2, identification=np.bool_(True), norm_folds=0,
                          method_options={"ssvm-lam6": {"method": "ssvm", "lam": 1e-6}})
    assert one.methods == ("svm",) and one.m == (3,) and one.n_enrolled == 4
    assert type(one.n_enrolled) is int and one.identification is True and one.norm_folds == 0
    assert ProtocolOptions(methods=[["ssvm", np.int64(3)]]).methods == (("ssvm", 3),)
    assert ProtocolOptions.from_dict(one.to_dict()) == one
    with pytest.raises(InputError, match="^unknown ProtocolOptions option"):
        ProtocolOptions.from_dict({"repetition": 3})


def test_roc_refuses_a_bad_protocol_option_in_one_line(tmp_path):
    from click.testing import CliRunner

    from ssgallery.cli import main

    res = CliRunner().invoke(main, ["roc", str(tmp_path), "--seed", "-1", "-o",
                                    str(tmp_path / "report")])
    assert res.exit_code == 2, res.output
    assert res.stderr.strip().splitlines() == [
        "ssgallery: error: --seed must be an integer from 0 to 2**32 - 1, got -1"]
    assert not (tmp_path / "report").exists()


def test_roc_refuses_a_method_listed_twice_in_one_line(tmp_path):
    # it ran the SVM twice and reported it as 2 repetitions of 20 clients (one score file)
    from helpers import refused

    refused(["roc", tmp_path, "--methods", "svm,ssvm,SVM", "-o", tmp_path / "report"],
            "ssgallery: error: --methods lists 'svm' twice")
    refused(["roc", tmp_path, "--m", "2,3,2", "-o", tmp_path / "report"],
            "ssgallery: error: --m lists 2 twice")
    assert not (tmp_path / "report").exists()


@pytest.mark.parametrize(("value", "shown"), [("-1", "-1.0"), ("nan", "nan")])
def test_roc_refuses_a_negative_or_nan_between_in_one_line(tmp_path, value, shown):
    from click.testing import CliRunner

    from ssgallery.cli import main

    res = CliRunner().invoke(main, ["roc", str(tmp_path), "--between", value, "-o",
                                    str(tmp_path / "report")])
    assert res.exit_code == 2, res.output
    assert res.stderr.strip().splitlines() == [
        f"ssgallery: error: --between must be >= 0 and finite, got {shown}"]
    assert not (tmp_path / "report").exists()


def test_roc_command_line_splits_into_its_three_objects():
    from ssgallery.app.options import ReportOptions, RocInputs
    from ssgallery.app.roc import ROC_PROTOCOL
    from ssgallery.biometrics.protocol import ProtocolOptions
    from ssgallery.cli.roc import command

    values = command.make_context("roc", []).params  # an empty command line, parsed
    for name in ("paths", "scores", "no_plot", "as_json", "wide", "quiet"):  # printing only
        values.pop(name)
    inputs, protocol, report = split_options(values, RocInputs, ProtocolOptions,
                                             ReportOptions)
    assert inputs == RocInputs() and report == ReportOptions()
    assert protocol == ROC_PROTOCOL  # the command line's defaults are roc's library ones


def test_robust_training_fields_enter_the_digest_only_when_set():
    base = analytic()
    assert "refresh_every" not in base.digest_dict() and "guard" not in base.digest_dict()
    set_ = analytic(refresh_every=5, guard=True)
    assert set_.digest_dict()["refresh_every"] == 5 and set_.digest_dict()["guard"] is True
    assert set_.provenance()["refresh_every"] == 5 and set_.provenance()["guard"] is True
    assert "swap_rounds" not in base.digest_dict() and "swap_rounds" not in base.provenance()
    swapped = analytic(swap_rounds=np.int64(3))
    assert swapped.digest_dict()["swap_rounds"] == 3 and swapped.provenance()["swap_rounds"] == 3
    assert type(swapped.swap_rounds) is int


def test_options_unresolved_for_a_matcher_have_no_digest():
    """m None, max_iter and swap_rounds "auto" train another model on a black box than
    on eigenface: a digest of them would keep one matcher's clients for the other's."""
    for unresolved, names in ((CompressOptions(), "m, max_iter, swap_rounds"),
                              (replace(analytic(), max_iter="auto"), "max_iter"),
                              (replace(analytic(), m=None), "m")):
        with pytest.raises(ValueError, match=f"unresolved options have no digest: {names}$"):
            options_digest(unresolved)
        with pytest.raises(ValueError, match="unresolved"):
            run_key("c01", "f" * 64, unresolved)
    assert analytic(m="auto").digest_dict()["m"] == "auto"  # Eq. 8, chosen per client


def test_auto_training_resolves_per_matcher_and_passes_set_values_through():
    auto = CompressOptions()
    assert (auto.m, auto.max_iter, auto.swap_rounds) == (None, "auto", "auto")
    pick = lambda o: (o.m, o.max_iter, o.swap_rounds)
    assert pick(resolve_training(auto, black_box=True)) == (5, 0, 3)
    assert pick(resolve_training(auto, black_box=False)) == (2, 200, 0)
    assert pick(resolve_training(CompressOptions(max_iter=4), black_box=True)) == (5, 4, 3)
    assert pick(resolve_training(CompressOptions(swap_rounds=1, m=3), black_box=False)) \
        == (3, 200, 1)
    assert pick(resolve_training(CompressOptions(m="auto"), black_box=True)) == ("auto", 0, 3)
    # the default m never exceeds the images trained on; a given m is the caller's
    assert resolve_training(auto, black_box=True, n_images=4).m == 4
    assert resolve_training(auto, black_box=False, n_images=4).m == 2
    assert resolve_training(CompressOptions(m=7), black_box=True, n_images=4).m == 7
    once = resolve_training(auto, black_box=True)
    assert resolve_training(once, black_box=False) == once  # resolved values stay


def test_between_enters_the_digest_and_provenance_unless_0(faces_factory, tmp_path):
    """0 is what every gallery before the option was trained with: not in the digest,
    whatever the default; the default (0.5) and any other value are."""
    from click.testing import CliRunner

    from ssgallery.app.compress import compress
    from ssgallery.app.enroll import enroll
    from ssgallery.cli import main
    from ssgallery.formats.gallery import read_gallery

    assert CompressOptions().between == 0.5
    assert "between" not in analytic(between=0.0).digest_dict()
    assert options_digest(analytic(init="class", between=0.0)) == DEFAULT_DIGEST
    assert analytic().digest_dict()["between"] == 0.5
    assert CompressOptions(between=2.0).provenance()["between"] == 2.0
    enroll(faces_factory(n_clients=4, n_images=6), tmp_path / "e.h5")
    run = CompressRun(clients="c01")
    compress(tmp_path / "e.h5", tmp_path / "plain.h5", CompressOptions(between=0.0), run)
    compress(tmp_path / "e.h5", tmp_path / "b.h5", run=run)
    plain, between = (read_gallery(tmp_path / f).clients["c01"] for f in ("plain.h5", "b.h5"))
    assert "between" not in plain.provenance and between.provenance["between"] == 0.5
    # compress() itself, options left at "auto", digests as every eigenface gallery before
    assert plain.provenance["options_digest"] == DEFAULT_DIGEST
    assert between.provenance["options_digest"] == BETWEEN_DIGEST
    assert plain.normalization["mean"] != between.normalization["mean"]  # a new fit
    r = CliRunner().invoke(main, ["compress", "--store", str(tmp_path / "e.h5"), "-o",
                                  str(tmp_path / "bad.h5"), "--between", "-1"])
    assert r.exit_code == 2 and "--between" in r.output, r.output


def test_compress_command_refuses_non_finite_and_out_of_range_options_as_input_errors(tmp_path):
    """Checked before the store is read: exit 2, one line, never an internal error."""
    from click.testing import CliRunner

    from ssgallery.cli import main

    for args, message in ((["--lam", "nan"], "--lam must be >= 0 and finite, got nan"),
                          (["--rho", "inf"], "--rho must be >= 0 and finite, got inf"),
                          (["--seed", "-1"], ("--seed must be an integer from 0 to 2**32 - 1, "
                                              "got -1")),
                          (["--job-timeout", "-1"],
                           "--job-timeout must be >= 0 and finite, got -1.0"),
                          (["--job-timeout", "nan"],
                           "--job-timeout must be >= 0 and finite, got nan")):
        result = CliRunner().invoke(main, ["compress", "--store", str(tmp_path / "none.h5"),
                                           "-o", str(tmp_path / "g.h5"), *args])
        assert result.exit_code == 2, result.output
        assert result.output.splitlines() == [f"ssgallery: error: {message}"]


def test_between_with_a_black_box_matcher_is_named_as_ignored(tmp_path):
    """A black box's inputs are not vectors to average: compress --between fits its
    clients on the training images only, and says so on stderr (exit 0); an analytic
    matcher takes it without a word. At the default nothing is said: a black box's
    gallery is trained and digested as with --between 0."""
    import json
    import sys
    from pathlib import Path

    from click.testing import CliRunner
    from helpers import make_faces

    from ssgallery.app.enroll import enroll
    from ssgallery.cli import main

    program = [sys.executable, str(Path(__file__).resolve().parent / "matchers" /
                                   "example_mad.py")]
    faces = make_faces(str(tmp_path / "faces"), n_clients=3, n_images=4, shape=(16, 12))
    enroll(faces, tmp_path / "bb.h5", matcher="external", matcher_options={"command": program})
    enroll(faces, tmp_path / "eig.h5")
    runner = CliRunner()
    env = {"SSGALLERY_MATCHER_CMD": " ".join(program)}
    for store, told in (("bb.h5", True), ("eig.h5", False)):
        res = runner.invoke(main, ["compress", "--store", str(tmp_path / store), "-o",
                                   str(tmp_path / f"g-{store}"), "--between", "1",
                                   "--cv-folds", "0", "--max-iter", "3", "--quiet"], env=env)
        assert res.exit_code == 0, res.output
        line = "--between 1 is ignored: the external matcher is a black box"
        assert (line in res.stderr) == told, res.stderr
        assert line not in res.stdout
        # roc --between on the same store: the protocol's ssvm ignores it alike, and says so
        res = runner.invoke(main, ["roc", "--store", str(tmp_path / store), "--between", "1",
                                   "--methods", "svm,ssvm", "--enrolled", "2",
                                   "--train-images", "2", "--repetitions", "1", "--no-plot",
                                   "-o", str(tmp_path / f"r-{store}"), "--quiet"], env=env)
        assert res.exit_code == 0, res.output
        assert (line in res.stderr) == told, res.stderr
        # its report records the weight its ssvm was distilled with: none for the black box
        config = json.loads((tmp_path / f"r-{store}" / "summary.json").read_text())["config"]
        assert config.get("between") == (None if told else 1.0), config
        # and its ssvm trained as compress trains a black box: swaps, no move
        assert config.get("method_options") == (
            {"ssvm": {"max_iter": 0, "swap_rounds": 3}} if told else None), config
        # compress's default m (5 on a black box), capped at a split's 4 training images
        assert config["m"] == ([4] if told else [2]), config
    # the default on a black box: silent, trained and digested as --between 0
    res = runner.invoke(main, ["compress", "--store", str(tmp_path / "bb.h5"), "-o",
                               str(tmp_path / "g-default.h5"), "--cv-folds", "0",
                               "--max-iter", "3", "--quiet"], env=env)
    assert res.exit_code == 0 and "between" not in res.stderr, res.output
    from ssgallery.formats.gallery import read_gallery

    digests = {f: {c.provenance["options_digest"] for c in read_gallery(
        tmp_path / f).clients.values()} for f in ("g-bb.h5", "g-default.h5")}
    assert digests["g-bb.h5"] == digests["g-default.h5"] and len(digests["g-bb.h5"]) == 1
    assert all("between" not in c.provenance
               for c in read_gallery(tmp_path / "g-default.h5").clients.values())


def test_swap_rounds_reach_the_learner_and_the_provenance(faces_factory, tmp_path):
    """compress --swap-rounds N: the client's distiller swaps (its start holds a
    training image the rule's start does not), the provenance says N, and a negative
    N is refused as a usage error."""
    from click.testing import CliRunner

    from ssgallery.app.compress import compress
    from ssgallery.app.enroll import enroll
    from ssgallery.cli import main
    from ssgallery.formats.gallery import read_gallery

    enroll(faces_factory(n_clients=4, n_images=6), tmp_path / "e.h5")
    run = CompressRun(clients="c01")
    compress(tmp_path / "e.h5", tmp_path / "plain.h5", run=run)
    r = CliRunner().invoke(main, ["compress", "--store", str(tmp_path / "e.h5"), "-o",
                                  str(tmp_path / "s.h5"), "--clients", "c01",
                                  "--swap-rounds", "2", "--json"])
    assert r.exit_code == 0, r.output
    plain, swapped = (read_gallery(tmp_path / f, arrays=True).clients["c01"]
                      for f in ("plain.h5", "s.h5"))
    assert "swap_rounds" not in plain.provenance and swapped.provenance["swap_rounds"] == 2
    assert plain.provenance["options_digest"] != swapped.provenance["options_digest"]
    assert not np.allclose(plain.prototypes, swapped.prototypes)  # another start, moved
    r = CliRunner().invoke(main, ["compress", "--store", str(tmp_path / "e.h5"), "-o",
                                  str(tmp_path / "bad.h5"), "--swap-rounds", "-1"])
    assert r.exit_code == 2 and "--swap-rounds" in r.output, r.output
