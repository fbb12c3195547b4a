"""Score files others read and write: 4-column files bob's loader and pyeer read as they
are, 5-column and bob CSV files read, failures to acquire, duplicates, dev/eval."""

import csv
import json
import os

import numpy as np
import pytest
from click.testing import CliRunner

from ssgallery.biometrics import metrics
from ssgallery.biometrics.evaluation import dev_eval, evaluate
from ssgallery.biometrics.scores import Scores, read_score_files, read_scores, write_scores
from ssgallery.cli import main
from ssgallery.errors import InputError


def _table(seed=0, n_clients=4, n_gen=30, n_imp=300, method="ssvm", m=2, rep=0):
    rng = np.random.default_rng(seed)
    claimed, real, probe, score = [], [], [], []
    for c in range(n_clients):
        cid = f"client {c}"  # a space: percent-encoded in the file
        for i, s in enumerate(rng.normal(2.0, 1.0, n_gen)):
            claimed.append(cid), real.append(cid), probe.append(f"{cid}/{i}.png")
            score.append(s)
        for i, s in enumerate(rng.normal(0.0, 1.0, n_imp)):
            claimed.append(cid), real.append(f"z{i % 7}"), probe.append(f"z/{i}.png")
            score.append(s)
    return Scores(method, m, rep, np.array(claimed), np.array(real), np.array(probe),
                  np.array(score), {f"client {c}": {"matches": 2.0} for c in range(n_clients)})


def _bob_split_four_column(path):
    """bob.bio.base.score.load.split_four_column, as it parses: csv.reader with a single
    space as delimiter, last field a float, claimed_id == real_id is genuine."""
    neg, pos = [], []
    with open(path, newline="") as handle:
        for fields in csv.reader(handle, delimiter=" "):
            (pos if fields[0] == fields[1] else neg).append(float(fields[-1]))
    return np.array(neg), np.array(pos)


def _pyeer_read(path):
    """pyeer's score-file reader (eer_info.__get_score): the last ' '-field of a line."""
    with open(path) as handle:
        return [float(line.strip().split(" ")[-1]) for line in handle]


def test_written_files_read_unchanged_by_bob_and_pyeer(tmp_path):
    pyeer = pytest.importorskip("pyeer.eer_info")
    t = _table()
    path = tmp_path / "ssvm-m2.r0.txt"
    write_scores(path, t)
    text = path.read_text()
    assert "#" not in text and "  " not in text  # no header, one space between fields
    neg, pos = _bob_split_four_column(path)
    assert len(_pyeer_read(path)) == len(t.score)
    np.testing.assert_array_equal(np.sort(np.r_[neg, pos]), np.sort(t.score))
    stats = pyeer.get_eer_stats(pos.tolist(), neg.tolist())
    ours = metrics.eer(neg, pos)
    # pyeer brackets the EER between two ROC points; ours interpolates between them
    assert stats.eer_low - 1e-12 <= ours <= stats.eer_high + 1e-12
    assert stats.fmr100 == pytest.approx(metrics.frr_at_far(neg, pos, 0.01))
    assert stats.fmr1000 == pytest.approx(metrics.frr_at_far(neg, pos, 0.001))
    # the same scores through ssgallery roc --scores: the global-threshold figures
    s = evaluate([read_scores(path)], n_boot=0)[0]
    assert s["eer_global_threshold"] == pytest.approx(ours, abs=1e-12)
    assert s["frr_at_far_1pct_global_threshold"] == pytest.approx(stats.fmr100)
    assert s["frr_at_far_01pct_global_threshold"] == pytest.approx(stats.fmr1000)


def test_five_column_and_bob_csv_read_as_the_four_column_file(tmp_path):
    t = _table(seed=1, n_clients=2, n_gen=5, n_imp=20)
    four = tmp_path / "x.txt"
    write_scores(four, t)
    ref = read_scores(four)
    rows = list(zip(t.claimed, t.real, t.probe, t.score.tolist()))
    enc = lambda v: str(v).replace(" ", "%20")
    five = tmp_path / "five.txt"
    five.write_text("".join(f"{enc(c)} model-{enc(c)} {enc(r)} {enc(p)} {s!r}\n"
                            for c, r, p, s in rows))
    path_csv = tmp_path / "bob.csv"
    with open(path_csv, "w", newline="") as handle:
        w = csv.writer(handle)
        w.writerow(["probe_key", "probe_subject_id", "bio_ref_key", "bio_ref_subject_id",
                    "score"])
        for c, r, p, s in rows:
            w.writerow([p, r, f"ref-{c}", c, repr(s)])
    for path in (five, path_csv):
        got = read_scores(path)
        for name in ("claimed", "real", "probe"):
            assert list(getattr(got, name)) == list(getattr(ref, name)), (path, name)
        np.testing.assert_array_equal(got.score, ref.score)


def test_nan_and_missing_scores_are_failures_to_acquire(tmp_path):
    lines = [f"a a g{i} {s}" for i, s in enumerate([3.0, 2.5, "nan", 2.0])]
    lines += [f"a z i{i} {s}" for i, s in enumerate([0.0, 1.0, "NaN", 0.5, -1.0])]
    path = tmp_path / "fta.txt"
    path.write_text("\n".join(lines) + "\n")
    t = read_scores(path)
    assert np.isnan(t.score).sum() == 2
    s = evaluate([t], n_boot=0)[0]
    assert s["fta_genuine"] == pytest.approx(1 / 4) and s["fta_impostor"] == pytest.approx(1 / 5)
    # bob's convention: a failed genuine attempt is a rejection at every threshold, a
    # failed impostor attempt is never accepted
    r = dev_eval([t], [t], "far", 0.0)[0]["eval"]
    assert r["far"] == 0.0 and r["frr"] == pytest.approx(1 / 4)  # only the FTA rejected
    assert r["fta_genuine"] == pytest.approx(1 / 4)
    # the finite scores separate, but FRR >= 1/4 (the FTA): FAR falls 2/5 -> 1/5 while
    # FRR stays 1/4, so FAR - FRR crosses 0 at FAR = FRR = 0.25 (linear interpolation)
    assert s["eer_global_threshold"] == pytest.approx(0.25)
    # a missing score in bob's CSV format is a failure to acquire too
    path_csv = tmp_path / "missing.csv"
    path_csv.write_text("bio_ref_subject_id,probe_subject_id,probe_key,score\n"
                        "a,a,p1,1.0\na,a,p2,\na,b,p3,0.1\n")
    assert np.isnan(read_scores(path_csv).score).tolist() == [False, True, False]


def test_lines_of_spaces_are_skipped_in_every_format(tmp_path):
    """A line of nothing but spaces and tabs is skipped by the text formats and by bob's
    CSV format alike (bob reads its CSV files with pandas' read_csv, which skips them);
    the CSV reader refused it ('line 3: expected 4 fields (as the header line), got 1'),
    and named the line before the real one after an empty line."""
    claims = [("c1", "c1", "p1", 0.9), ("c1", "c2", "p2", 0.1), ("c2", "c2", "p3", 0.8)]
    blank = ["   ", "\t", " \t "]
    text = [f"{c} {r} {p} {s}" for c, r, p, s in claims]
    table = [f"{c},{r},{p},{s}" for c, r, p, s in claims]
    files = {"s.txt": [text[0], blank[0], text[1], blank[1], text[2], blank[2]],
             "s.csv": ["bio_ref_subject_id,probe_subject_id,probe_key,score", table[0],
                       blank[0], table[1], blank[1], "", table[2], blank[2]]}
    for name, lines in files.items():
        (tmp_path / name).write_text("\n".join(lines) + "\n")
        got = read_scores(tmp_path / name)
        assert list(zip(got.claimed, got.real, got.probe, got.score.tolist())) == claims
    bad = tmp_path / "bad.csv"
    bad.write_text("bio_ref_subject_id,probe_subject_id,probe_key,score\nc1,c1,p1,0.9\n\n"
                   "  \nc1,c2\n")
    with pytest.raises(InputError, match=r"bad.csv: line 5: expected 4 fields \(as the "
                                         r"header line\), got 2$"):
        read_scores(bad)


def test_duplicate_score_files_are_refused(tmp_path):
    write_scores(tmp_path / "s.txt", _table(n_clients=1, n_gen=3, n_imp=5))
    (tmp_path / "copy.txt").write_bytes((tmp_path / "s.txt").read_bytes())
    res = CliRunner().invoke(main, ["roc", "--scores", str(tmp_path / "s.txt"),
                                    str(tmp_path / "s.txt"), "-o", str(tmp_path / "o")])
    assert res.exit_code == 2 and "score file given twice" in res.output
    res = CliRunner().invoke(main, ["roc", "--scores", str(tmp_path / "s.txt"),
                                    str(tmp_path / "copy.txt"), "-o", str(tmp_path / "o")])
    assert res.exit_code == 2 and "has the same content as" in res.output
    # a shell glob also catches the side-car JSON: skipped, not read as scores
    tables = read_score_files([tmp_path / "s.txt", f"{tmp_path / 's.txt'}.json"])
    assert len(tables) == 1 and tables[0].method == "ssvm" and tables[0].m == 2


def test_two_repetitions_of_one_split_are_read_back(tmp_path):
    """A run whose repetitions drew the same split (roc on 4 synth identities of 6
    images, --enrolled 2 --train-images 5 --repetitions 12) writes svm.r7.txt and
    svm.r11.txt with identical scores, their side-cars naming repetitions 7 and 11:
    'roc --scores report/scores/*.txt' refused them ('score file has the same content
    as ...', exit 2). Side-cars naming two repetitions of one method make them two;
    a copy that names none, or the same one, is still refused."""
    (tmp_path / "r").mkdir()
    for rep in (7, 11):
        write_scores(tmp_path / "r" / f"svm.r{rep}.txt",
                     _table(n_clients=2, n_gen=3, n_imp=20, method="svm", m=None, rep=rep))
    files = [str(tmp_path / "r" / n) for n in sorted(os.listdir(tmp_path / "r"))]
    res = CliRunner().invoke(main, ["roc", "--scores", *files, "-o", str(tmp_path / "o"),
                                    "--no-plot", "-q"])
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())["methods"][0]
    assert summary["repetitions"] == 2
    first = tmp_path / "r" / "svm.r7.txt"
    (tmp_path / "copy.txt").write_bytes(first.read_bytes())  # no side-car
    (tmp_path / "both").mkdir()
    for name in ("a.txt", "a.txt.json"):  # the side-car copied too: the same repetition
        (tmp_path / "both" / name).write_bytes((tmp_path / "r" / f"svm.r7.{name[2:]}")
                                               .read_bytes())
    for twin in (tmp_path / "copy.txt", tmp_path / "both" / "a.txt"):
        with pytest.raises(InputError, match="has the same content as"):
            read_score_files([first, twin])


def test_unresolved_operating_points_print_as_a_dash(tmp_path):
    write_scores(tmp_path / "s.txt", _table(n_clients=4, n_gen=10, n_imp=300))
    res = CliRunner().invoke(main, ["roc", "--scores", str(tmp_path / "s.txt"), "-o",
                                    str(tmp_path / "o"), "--no-plot", "--wide"])
    assert res.exit_code == 0, res.output
    s = json.loads((tmp_path / "o" / "summary.json").read_text())["methods"][0]
    # 300 impostor claims per client: FAR 0.1 % is not resolved per client (None),
    # 1200 pooled: it is for the global threshold
    assert s["frr_at_far_01pct_averaged_curve"] is None
    assert "1/300 impostor claims" in s["notes"]["frr_at_far_01pct_averaged_curve"]
    assert s["frr_at_far_01pct_global_threshold"] is not None
    assert "—" in res.output and "below the resolution of a client's curve" in res.output


def test_dev_eval_threshold_on_dev_rates_on_eval(tmp_path):
    dev, ev = _table(seed=2), _table(seed=3)
    write_scores(tmp_path / "dev.txt", dev)
    write_scores(tmp_path / "eval.txt", ev)
    for criterion, extra in (("eer", []), ("min-hter", []), ("far", ["--criterion-far", "0.01"])):
        out = tmp_path / criterion
        res = CliRunner().invoke(main, ["roc", "--dev-scores", str(tmp_path / "dev.txt"),
                                        "--eval-scores", str(tmp_path / "eval.txt"),
                                        "--criterion", criterion, *extra, "-o", str(out)])
        assert res.exit_code == 0, res.output
        assert "eval HTER %" in res.output
        r = json.loads((out / "summary.json").read_text())["methods"][0]
        d_neg, d_pos = dev.score[dev.claimed != dev.real], dev.score[dev.claimed == dev.real]
        e_neg, e_pos = ev.score[ev.claimed != ev.real], ev.score[ev.claimed == ev.real]
        t = r["threshold"]
        assert r["eval"]["far"] == pytest.approx(np.mean(e_neg >= t))
        assert r["eval"]["frr"] == pytest.approx(np.mean(e_pos < t))
        assert r["eval"]["hter"] == pytest.approx(metrics.hter(e_neg, e_pos, t))
        if criterion == "eer":
            assert t == metrics.eer_threshold(d_neg, d_pos)
        elif criterion == "far":
            assert r["dev"]["far"] <= 0.01
        else:  # no dev threshold has a lower HTER
            f, fr, _ = metrics.roc_curve(d_neg, d_pos)
            assert r["dev"]["hter"] == pytest.approx(np.min(f + fr) / 2)
    res = CliRunner().invoke(main, ["roc", "--dev-scores", str(tmp_path / "dev.txt"),
                                    "-o", str(tmp_path / "x")])
    assert res.exit_code == 2 and "--dev-scores and --eval-scores go together" in res.output


def _roc_into(report, faces, limit_bytes=1 << 31):
    """``ssgallery roc FACES --methods svm -o REPORT`` as a process with at most
    ``limit_bytes`` of memory and 60 s (returns the CompletedProcess, or None when it
    was still running after 60 s and was killed)."""
    import resource
    import subprocess
    import sys

    def bounded():
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    try:
        return subprocess.run([sys.executable, "-m", "ssgallery", "roc", str(faces),
                               "--methods", "svm", "--repetitions", "1", "-o", str(report)],
                              capture_output=True, text=True, timeout=60, check=False,
                              preexec_fn=bounded, env=dict(os.environ, OMP_NUM_THREADS="1"))
    except subprocess.TimeoutExpired:
        return None


@pytest.mark.parametrize("side_car", ["fifo", "dev-zero", "nested"])
def test_an_output_s_side_car_is_read_within_bounds_to_tell_its_kind(tmp_path, side_car):
    """roc checks, before it runs, that each score file it will write replaces only a
    score file of ssgallery's: one whose side-car ``<file>.json`` says so. The side-car
    was read whole with json.load from the path, unchecked: a FIFO there hung roc, a
    link to /dev/zero read without end (out of memory), and JSON nested deeper than
    Python's recursion limit ended in 'internal error: RecursionError', exit 4. Now it
    is read through one open, a regular file of at most MAX_TEXT_BYTES (anything else is
    no side-car), and the existing score file is refused as not ssgallery's: one line,
    exit 2, before any work."""
    from helpers import make_faces

    faces = make_faces(str(tmp_path / "faces"), n_clients=4, n_images=7, seed=1)
    report = tmp_path / "report"
    (report / "scores").mkdir(parents=True)
    score_file = report / "scores" / "svm.r0.txt"
    score_file.write_text("c1 c1 a 1.0\n")
    side = report / "scores" / "svm.r0.txt.json"
    if side_car == "fifo":
        os.mkfifo(side)
    elif side_car == "dev-zero":
        side.symlink_to("/dev/zero")
    else:
        side.write_text("[" * 200_000)
    run = _roc_into(report, faces)
    assert run is not None, "roc still running after 60 s"
    assert run.returncode == 2, run.stderr
    assert run.stderr == (f"ssgallery: error: {score_file}: exists and is not an output of "
                          "this kind; refusing to replace it unless forced\n")
    assert score_file.read_text() == "c1 c1 a 1.0\n"
    assert sorted(p.name for p in report.rglob("*")) == ["scores", "svm.r0.txt",
                                                         "svm.r0.txt.json"]


@pytest.mark.parametrize(("version", "refusal"), [
    (3, ("score metadata format version 3 is newer than this ssgallery reads (2); upgrade "
         "ssgallery")),
    ("2", "bad score metadata (format_version must be an integer >= 1, got str '2')")])
def test_a_side_car_of_another_version_is_refused(tmp_path, version, refusal):
    """A side-car's format_version was never read: one of a newer version (whose fields
    may mean something else) or of no version at all was read as this version's, exit 0.
    Now a newer or malformed version is one line naming the side-car, exit 2 (a side-car
    without the field, hand-written, still reads as this version's)."""
    from helpers import invoked

    path = tmp_path / "ssvm-m2.r0.txt"
    write_scores(path, _table())
    side = tmp_path / "ssvm-m2.r0.txt.json"
    meta = json.loads(side.read_text())
    assert meta["format_version"] == 2
    side.write_text(json.dumps(dict(meta, format_version=version)))
    out = invoked(["roc", "--scores", path, "-o", tmp_path / "report", "--no-plot"])
    assert (out["exit_code"], out["stderr"]) == (2, f"ssgallery: error: {side}: {refusal}\n")
    del meta["format_version"]
    side.write_text(json.dumps(meta))
    assert invoked(["roc", "--scores", path, "-o", tmp_path / "report", "--no-plot"])[
        "exit_code"] == 0


def test_a_newer_side_car_is_never_replaced_even_forced(tmp_path):
    """A side-car of a newer format_version was replaced with --force (the documented way,
    exit 0), while a newer store or gallery is refused even forced (3c03fc0): one rule
    now, `writable.refuse_newer` over `kinds.NEWEST_VERSIONS` (the side-car's version is
    in that list): this ssgallery cannot read it, so it cannot tell what replacing it
    loses. The side-car and the score file it describes are kept, forced or not."""
    from ssgallery.biometrics.scores import check_scores_writable
    from ssgallery.errors import FormatError

    path = tmp_path / "ssvm-m2.r0.txt"
    write_scores(path, _table())
    side = tmp_path / "ssvm-m2.r0.txt.json"
    edited = json.dumps(dict(json.loads(side.read_text()), format_version=3))
    side.write_text(edited)
    scores = path.read_text()
    refusal = (f"{os.path.realpath(side)}: an ssgallery score side-car of format version 3, "
               "newer than this ssgallery reads (2); refusing to replace it, even forced "
               "(upgrade ssgallery, or choose another name)")
    for write in (lambda: check_scores_writable(path), lambda: write_scores(path, _table(1)),
                  lambda: check_scores_writable(path, force=True),
                  lambda: write_scores(path, _table(1), force=True)):
        with pytest.raises(FormatError) as raised:
            write()
        assert str(raised.value) == refusal
        assert side.read_text() == edited and path.read_text() == scores


@pytest.mark.parametrize("version", ["2"])
def test_a_side_car_it_would_refuse_is_never_replaced(tmp_path, version):
    """Two recognisers of "our side-car": the writers' took any side-car with the format
    tag as ours, so ``roc`` replaced a malformed one that `read_scores` refuses,
    silently. Now both use `score_meta.sidecar_version`: such a file is refused as not
    an output of this kind, unless forced, and left as it was (a newer one even forced:
    `test_a_newer_side_car_is_never_replaced_even_forced`)."""
    from ssgallery.biometrics.scores import check_scores_writable
    from ssgallery.errors import SsgalleryError

    path = tmp_path / "ssvm-m2.r0.txt"
    write_scores(path, _table())
    side = tmp_path / "ssvm-m2.r0.txt.json"
    meta = json.loads(side.read_text())
    edited = json.dumps(dict(meta, format_version=version))
    side.write_text(edited)
    refusal = f"{path}: exists and is not an output of this kind; refusing to replace " \
              "it unless forced"
    for write in (lambda: check_scores_writable(path), lambda: write_scores(path, _table(1))):
        with pytest.raises(SsgalleryError) as raised:
            write()
        assert str(raised.value) == refusal
        assert side.read_text() == edited
    write_scores(path, _table(1), force=True)  # the documented way to replace it
    assert json.loads(side.read_text())["format_version"] == 2
    write_scores(path, _table(2))  # ours again: replaced without force
