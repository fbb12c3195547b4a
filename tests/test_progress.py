"""The one progress reporter: a bar with rate and ETA on a terminal, periodic plain lines
on a pipe, nothing when quiet or when a phase is short."""

import io
import re

import numpy as np

from ssgallery.cli.progress import Reporter, _clock, _rate
from ssgallery.progress import NO_PROGRESS, Progress, as_progress


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def _run(reporter, total=5, phases=("reading images",)):
    for label in phases:
        with reporter.phase(label, total, "images"):
            for _ in range(total):
                reporter.advance()


def test_pipe_prints_plain_lines_with_rate_and_eta():
    out = io.StringIO()
    _run(Reporter("enroll", file=out, interval=0, delay=0), total=4)
    lines = out.getvalue().splitlines()
    assert len(lines) == 5  # one per step, then the closing line
    assert re.fullmatch(r"ssgallery: enroll: reading images 1/4 \(25%\), [0-9.,e+]+ "
                        r"images/s, ETA \d+:\d\d:\d\d", lines[0]), lines[0]
    assert lines[3].startswith("ssgallery: enroll: reading images 4/4 (100%), ")
    assert "ETA" not in lines[3]
    assert re.fullmatch(r"ssgallery: enroll: reading images 4/4 in \d+:\d\d:\d\d",
                        lines[4])
    assert "\r" not in out.getvalue() and "\x1b" not in out.getvalue()


def test_pipe_is_silent_for_a_phase_shorter_than_the_interval():
    out = io.StringIO()
    _run(Reporter("enroll", file=out, interval=3600, delay=0), total=50)
    assert out.getvalue() == ""


def test_terminal_draws_a_bar_per_phase_after_the_delay():
    out = _Terminal()
    reporter = Reporter("roc", file=out, interval=0, delay=0)
    _run(reporter, total=3, phases=("fitting", "searching"))
    text = out.getvalue()
    assert "fitting" in text and "searching" in text and "3/3" in text
    assert "images/s" in text and "\r" in text  # redrawn in place
    assert text.count("\n") == 2  # each bar ends its own line
    quiet = _Terminal()
    _run(Reporter("roc", file=quiet, delay=3600), total=3)
    assert quiet.getvalue() == ""  # a short phase leaves nothing on screen


def test_a_new_phase_ends_the_previous_one_and_base_class_is_silent():
    out = io.StringIO()
    reporter = Reporter("x", file=out, interval=0, delay=0)
    reporter.start("one", 2, "clients")
    reporter.advance()
    reporter.start("two", 1, "clients")  # closes "one" with its own line
    reporter.advance()
    reporter.end()
    lines = out.getvalue().splitlines()
    assert lines[1] == "ssgallery: x: one 1/2 clients in 0:00:00"
    assert lines[-1] == "ssgallery: x: two 1/1 clients in 0:00:00"
    assert as_progress(None) is NO_PROGRESS and isinstance(NO_PROGRESS, Progress)
    with NO_PROGRESS.phase("nothing", 3) as p:  # the library's default prints nothing
        p.advance(3)


def test_rate_and_clock_formats():
    assert _rate(10, 4.0, "images") == "2.5 images/s"
    assert _rate(3, 12.0, "clients") == "0.25 clients/s"
    assert _rate(123456, 2.0, "claims") == "61,728 claims/s"
    assert _rate(0, 1.0, "x") == ""
    assert _clock(3725.4) == "1:02:05"


def test_enroll_and_compress_report_each_phase_on_a_pipe_and_nothing_when_quiet(faces_factory, tmp_path):
    from click.testing import CliRunner

    from ssgallery.cli import main

    faces = faces_factory(n_clients=4, n_images=5)
    env = {"SSGALLERY_PROGRESS_INTERVAL": "0"}
    res = CliRunner().invoke(main, ["enroll", faces, "--store", str(tmp_path / "e.h5")],
                             env=env)
    assert res.exit_code == 0, res.output
    err = res.stderr.splitlines()
    assert "ssgallery: enroll: reading images 1/20 (5%)" in err[0]
    assert "ssgallery: enroll: reading images 20/20 in 0:00:" in res.stderr
    assert "ssgallery: enroll: fitting the eigenface matcher 1/1 fits in" in res.stderr
    assert res.stdout.startswith(f"{tmp_path / 'e.h5'}: enrolled 4 clients")  # unchanged
    res = CliRunner().invoke(main, ["enroll", faces, "--store", str(tmp_path / "q.h5"), "-q"],
                             env=env)
    assert res.exit_code == 0 and res.stderr == ""
    res = CliRunner().invoke(main, ["enroll", faces, "--store", str(tmp_path / "x.h5")],
                             env={"SSGALLERY_PROGRESS_INTERVAL": "soon"})
    assert res.exit_code == 2 and "SSGALLERY_PROGRESS_INTERVAL must be a number" in res.stderr
    # compress: the shared similarities, then one step per client
    res = CliRunner().invoke(main, ["compress", "--store", str(tmp_path / "e.h5"), "-o",
                                    str(tmp_path / "g.h5"), "--clients", "c00,c01,c02",
                                    "--cv-folds", "2"], env=env)
    assert res.exit_code == 0, res.output
    err = res.stderr.splitlines()
    assert err[0].startswith("ssgallery: compress: similarities of all images 1/1 (100%)")
    assert [line.split()[4] for line in err if "training clients" in line] == [
        "1/3", "2/3", "3/3", "3/3"]
    progress = [line for line in err if not line.startswith("ssgallery: warning:")]
    assert progress[-1].startswith("ssgallery: compress: training clients 3/3 in ")


def test_features_in_chunks_report_per_image_and_equal_one_batch():
    import numpy as np

    from ssgallery.matchers.base import transform_in_chunks
    from ssgallery.matchers.eigenface import EigenfaceMatcher

    rng = np.random.default_rng(0)
    images = rng.uniform(0, 255, (150, 12, 10)).astype(np.float32)
    matcher = EigenfaceMatcher().fit(images)
    out = io.StringIO()
    reporter = Reporter("t", file=out, interval=0, delay=0)
    features = transform_in_chunks(matcher, images, chunk=64, progress=reporter)
    np.testing.assert_allclose(features, matcher.transform(images), rtol=1e-12, atol=1e-12)
    lines = out.getvalue().splitlines()
    assert [line.split()[4] for line in lines[:3]] == ["64/150", "128/150", "150/150"]


def test_verify_and_identify_report_reading_and_features_of_a_batch(faces_factory, tmp_path):
    from pathlib import Path

    from click.testing import CliRunner

    from ssgallery.cli import main

    faces = faces_factory(n_clients=3, n_images=40)
    store, gallery = str(tmp_path / "e.h5"), str(tmp_path / "g.h5")
    for args in (["enroll", faces, "--store", store, "-q"],
                 ["compress", "--store", store, "-o", gallery, "--clients", "c00",
                  "--cv-folds", "0", "-q"]):
        assert CliRunner().invoke(main, args).exit_code == 0
    probes = sorted(str(p) for p in Path(faces).glob("c0[12]/*.png"))  # 80 probes
    env = {"SSGALLERY_PROGRESS_INTERVAL": "0"}
    for args in (["verify", "--claim", "c00"], ["identify"]):
        res = CliRunner().invoke(main, [*args, *probes, "--gallery", gallery, "--csv"], env=env)
        assert res.exit_code in (0, 1), res.output
        name = args[0]
        assert f"ssgallery: {name}: reading probes 80/80 images in " in res.stderr
        assert f"ssgallery: {name}: computing features 80/80 images in " in res.stderr
        assert len(res.stdout.splitlines()) == 81  # the CSV on stdout, untouched
        quiet = CliRunner().invoke(main, [*args, *probes, "--gallery", gallery, "-q"], env=env)
        assert quiet.stderr == ""


def test_roc_reports_every_phase_from_the_first(faces_factory, tmp_path):
    from click.testing import CliRunner

    from ssgallery.cli import main

    faces = faces_factory(n_clients=6, n_images=6)
    res = CliRunner().invoke(main, ["roc", faces, "--repetitions", "2", "--methods", "svm,ssvm",
                                    "--no-plot", "-o", str(tmp_path / "r")],
                             env={"SSGALLERY_PROGRESS_INTERVAL": "0"})
    assert res.exit_code == 0, res.output
    closing = [line.split(": ", 2)[2].rsplit(" ", 2)[0] for line in res.stderr.splitlines()
               if re.search(r" in \d+:\d\d:\d\d$", line)]
    assert closing == [
        "reading images 36/36",
        "repetition 1/2: fitting the eigenface matcher 1/1 fits",
        "repetition 1/2: training clients 3/3",
        "repetition 2/2: fitting the eigenface matcher 1/1 fits",
        "repetition 2/2: training clients 3/3",
        "evaluating svm: client curves 6/6 clients",
        "evaluating svm: figures, bootstrap over clients 205/205 steps",
        "evaluating ssvm m=2: client curves 6/6 clients",
        "evaluating ssvm m=2: figures, bootstrap over clients 205/205 steps",
        "evaluating: client models against svm's 2/2 methods",
        "evaluating identification 1/1 steps",
        "writing the report 10/10 files"]  # 4 score files, summary, curves, 4 searches
    assert "EER % [95% CI]" in res.stdout and "ssgallery:" not in res.stdout
    assert max(len(line) for line in res.stdout.splitlines()) <= 100  # both tables, notes


def test_roc_reports_every_file_of_the_report_it_writes(faces_factory, tmp_path):
    """roc's 'writing the report' was one step (5.7 s on LFW under load, the plots among
    it: only the heartbeat spoke). It is a step per file now, each plot a file: on a pipe
    a line per step, in the order the files are written, and the files are there."""
    from click.testing import CliRunner

    from ssgallery.cli import main

    faces = faces_factory(n_clients=6, n_images=6)
    out = tmp_path / "r"
    res = CliRunner().invoke(main, ["roc", faces, "--repetitions", "1", "--methods", "svm",
                                    "-o", str(out)],
                             env={"SSGALLERY_PROGRESS_INTERVAL": "0"})
    assert res.exit_code == 0, res.output
    steps = [line.split(": ", 2)[2].split(" (")[0] for line in res.stderr.splitlines()
             if "writing the report" in line]
    # svm's score file, summary.json, curves.csv, its search file, cmc, det of the
    # searches, roc, det, scores
    assert steps == [f"writing the report {i}/9" for i in range(1, 10)] + [
        steps[-1]], steps
    assert steps[-1].startswith("writing the report 9/9 files in ")
    for name in ("summary.json", "curves.csv", "roc.png", "det.png", "scores.png",
                 "cmc.png", "det_identification.png"):
        assert (out / name).is_file(), name


def test_roc_scores_reports_reading_and_every_bootstrap_draw(tmp_path):
    """roc --scores of a file of 20,000 clients (500,000 claims: about a minute) said
    nothing until 'evaluating (curves, bootstrap over clients) 1/1 methods', its one
    step: reading the file, every client's curve and the 200 bootstrap draws were one
    silent stretch. Now each has its steps: lines read, clients, repetitions and draws."""
    from click.testing import CliRunner

    from ssgallery.cli import main

    rng = np.random.default_rng(0)
    lines = [f"c{c} c{c if k < 2 else (c + k) % 30} p{c}_{k} {rng.normal():.4f}"
             for c in range(30) for k in range(12)]
    (tmp_path / "s.txt").write_text("\n".join(lines) + "\n")
    res = CliRunner().invoke(main, ["roc", "--scores", str(tmp_path / "s.txt"), "--no-plot",
                                    "-o", str(tmp_path / "r")],
                             env={"SSGALLERY_PROGRESS_INTERVAL": "0"})
    assert res.exit_code == 0, res.output
    steps = [line.split(": ", 2)[2].split(" (")[0] for line in res.stderr.splitlines()
             if "%)" in line]
    assert steps[0] == "reading s.txt 360/360"  # one step per 10,000 lines, and the rest
    curves = [s for s in steps if s.startswith("evaluating s: client curves ")]
    assert curves == [f"evaluating s: client curves {i}/30" for i in range(1, 31)]
    figures = [s for s in steps if s.startswith("evaluating s: figures, bootstrap ")]
    assert figures == [f"evaluating s: figures, bootstrap over clients {i}/203"
                       for i in range(1, 204)]  # 1 repetition (2), the averaged curve, 200 draws


def test_a_run_of_several_batches_names_the_batch_of_each_phase(sample_gallery_3, tmp_path):
    """identify (and verify) on 783 probes printed 'reading probes 1/256', 'computing
    features 64/251', then again '1/256', '64/255': each batch of 256 probes starts its
    phases from 0 and no line said there were 783. With more than one batch, each
    phase's label names its batch's probes and the total."""
    from click.testing import CliRunner

    from ssgallery.cli import main
    from ssgallery.datasets import sample_faces_path

    faces = sorted(str(p) for p in sample_faces_path().glob("*/*.png"))
    listing = tmp_path / "probes.txt"
    listing.write_text("\n".join((faces * 2)[:300]) + "\n")
    for command in (["verify", "--claim", "c01"], ["identify"]):
        res = CliRunner().invoke(main, [*command, "--list", str(listing), "--gallery",
                                        sample_gallery_3["gallery"], "--json"],
                                 env={"SSGALLERY_PROGRESS_INTERVAL": "0"})
        assert res.exit_code in (0, 1), res.output
        closing = [line.split(": ", 2)[2].rsplit(" ", 2)[0] for line in res.stderr.splitlines()
                   if re.search(r" in \d+:\d\d:\d\d$", line)]
        assert closing == ["probes 1-256 of 300: reading probes 256/256 images",
                           "probes 1-256 of 300: computing features 256/256 images",
                           "probes 257-300 of 300: reading probes 44/44 images"], command


def test_a_long_step_in_compiled_code_still_prints_a_line():
    """enroll on LFW (2,169 images, eigenface) printed 'reading images 2169/2169', then
    nothing for 32 s: the PCA's SVD and the failure-to-acquire folds are one step, in
    LAPACK. A step that advances nothing still shows its phase: a heartbeat prints the
    phase's line on a pipe every interval (and draws the bar on a terminal)."""
    import time

    out = io.StringIO()
    reporter = Reporter("enroll", file=out, terminal=False, interval=0.05, delay=0.05)
    reporter.start("fitting the eigenface matcher", 1, "fits")
    deadline = time.monotonic() + 10
    while not out.getvalue() and time.monotonic() < deadline:
        time.sleep(0.01)  # the step runs: no advance
    assert out.getvalue().splitlines()[:1] == [
        "ssgallery: enroll: fitting the eigenface matcher 0/1 (0%)"]
    reporter.advance()
    reporter.end()
    reporter.close()
    assert out.getvalue().splitlines()[-1].startswith(
        "ssgallery: enroll: fitting the eigenface matcher 1/1 fits in")


def test_a_run_of_short_phases_prints_a_line_every_interval_on_a_pipe(monkeypatch):
    """roc on sample_data ran 20 s in phases of about 4 s (one per repetition) and printed
    nothing on a pipe, each phase shorter than the 10 s between lines: the interval now
    counts from the command's last line, across phases."""
    clock = [0.0]
    monkeypatch.setattr("ssgallery.cli.progress.time.monotonic", lambda: clock[0])
    out = io.StringIO()
    reporter = Reporter("roc", file=out, terminal=False, interval=10, delay=1)
    for k in range(5):  # 5 phases of 4 s: 20 s
        reporter.start(f"r{k + 1}/5: training clients", 4, "clients")
        for _ in range(4):
            clock[0] += 1.0
            reporter.advance()
    reporter.end()
    reporter.close()
    assert out.getvalue().splitlines() == [
        "ssgallery: roc: r3/5: training clients 2/4 (50%), 1 clients/s, ETA 0:00:02",
        "ssgallery: roc: r3/5: training clients 4/4 in 0:00:04"]  # r5 ends 8 s after it
