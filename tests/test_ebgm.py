"""ssgallery-ebgm: the reference Elastic Bunch Graph Matching executable."""

import json
import os
import shlex
import shutil
import subprocess
import sys

import numpy as np
import pytest

from ssgallery.matchers.external import ExternalMatcher, write_pgm
from ssgallery_ebgm import main, score_files
from ssgallery_ebgm.gabor import bank, responses, wave_vectors
from ssgallery_ebgm.graph import grid_nodes

EBGM = shutil.which("ssgallery-ebgm") or os.path.join(os.path.dirname(sys.executable),
                                                      "ssgallery-ebgm")


def face_like(seed, shape=(112, 92)):
    """A smooth random 8-bit image (blobs), integer valued."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[: shape[0], : shape[1]]
    img = np.zeros(shape)
    for _ in range(25):
        cy, cx = rng.uniform(0, shape[0]), rng.uniform(0, shape[1])
        r = rng.uniform(3, 12)
        img += rng.uniform(-1, 1) * np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / (2 * r * r))
    img = (img - img.min()) / (img.max() - img.min())
    return np.round(40 + 180 * img)


def write_list(path, paths):
    path.write_text("".join(f"{p}\n" for p in paths), encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ebgm imgs")
    paths = []
    for i in range(4):
        paths.append(folder / f"face {i}.pgm")
        write_pgm(paths[-1], face_like(i))
    shifted = np.roll(face_like(0), (2, -1), axis=(0, 1))
    paths.append(folder / "face 0 shifted.pgm")
    write_pgm(paths[-1], shifted)
    return [str(p) for p in paths]


def test_gabor_bank_is_dc_free_with_40_kernels():
    G = bank((112, 92))
    assert G.shape[0] == 40 and len(wave_vectors()) == 40
    np.testing.assert_allclose(np.abs(G[:, 0, 0]), 0.0, atol=1e-6)  # no DC response
    k = np.hypot(*wave_vectors().T)
    np.testing.assert_allclose(2 * np.pi / k[::8], 4 * np.sqrt(2) ** np.arange(5))
    R = responses(np.full((112, 92), 200.0))
    assert np.abs(R).max() < 1e-3  # a flat image has no response


def test_grid_has_80_nodes_inside_the_face():
    nodes = grid_nodes((112, 92))
    assert nodes.shape == (80, 2)
    assert nodes[:, 0].min() >= 6 and nodes[:, 0].max() <= 105
    assert nodes[:, 1].min() >= 6 and nodes[:, 1].max() <= 85


def test_scores_self_one_shift_tolerant_and_asymmetric(images):
    S = score_files(images, images)
    assert S.shape == (5, 5)
    np.testing.assert_allclose(np.diag(S), 1.0, atol=1e-5)
    # a shifted copy of face 0 matches face 0 far better than any other face
    assert S[4, 0] > 0.9 and S[4, 0] > S[4, 1:4].max() + 0.3
    assert np.abs(S - S.T).max() > 1e-4  # the probe graph is searched, not the gallery's


def test_float_npy_equals_pgm_and_other_sizes_are_resampled(images, tmp_path):
    img = face_like(1)
    np.save(tmp_path / "p.npy", img.astype(np.float32))
    small = tmp_path / "small.pgm"
    write_pgm(small, img[::2, ::2])
    S = score_files([str(tmp_path / "p.npy"), images[1], str(small)], [images[1], images[0]])
    np.testing.assert_allclose(S[0], S[1], atol=1e-6)
    assert S[2, 0] > S[2, 1]  # the half-size copy still matches its original best


def test_cli_contract_with_out_and_stdout(images, tmp_path, capsys):
    lst = write_list(tmp_path / "a list.txt", images[:3])
    assert main(["--describe"]) == 0
    desc = json.loads(capsys.readouterr().out)
    assert desc == {"kind": "similarity", "symmetric": False, "range": [-1.0, 1.0],
                    "serve": True, "quality": True}
    assert main(["--probe-list", lst, "--gallery-list", lst]) == 0
    printed = np.loadtxt(capsys.readouterr().out.splitlines())
    out = tmp_path / "S.txt"
    assert main(["--probe-list", lst, "--gallery-list", lst, "--out", str(out)]) == 0
    np.testing.assert_array_equal(np.loadtxt(out), printed)


def test_jet_cache_dir_gives_identical_scores(images, tmp_path):
    plain = score_files(images[:3], images[3:])
    cached1 = score_files(images[:3], images[3:], cache_dir=str(tmp_path / "jets"))
    cached2 = score_files(images[:3], images[3:], cache_dir=str(tmp_path / "jets"))
    assert len(os.listdir(tmp_path / "jets")) == 5
    np.testing.assert_array_equal(plain, cached1)
    np.testing.assert_array_equal(plain, cached2)


def test_bad_input_is_one_line_exit_2(images, tmp_path, capsys):
    bad = tmp_path / "bad.pgm"
    bad.write_bytes(b"not an image")
    lst = write_list(tmp_path / "l.txt", [images[0], str(bad)])
    assert main(["--probe-list", lst, "--gallery-list", lst]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("ssgallery-ebgm: error: cannot read image") and "bad.pgm" in err
    assert "\n" not in err
    missing = write_list(tmp_path / "m.txt", [str(tmp_path / "gone.png")])
    assert main(["--probe-list", missing, "--gallery-list", lst]) == 2
    assert "no such image file" in capsys.readouterr().err


def test_real_process_through_the_external_client(images):
    """ssgallery reaches ssgallery-ebgm only through the contract, like any program."""
    m = ExternalMatcher([EBGM]).fit(np.stack([face_like(i) for i in range(3)]))
    assert m.get_state()["conversion"] == "identity"
    S = m.score_paths(images[:2], images[:2])
    np.testing.assert_allclose(np.diag(S), 1.0, atol=1e-5)
    proc = subprocess.run([EBGM, "--probe-list"], check=False, capture_output=True, text=True)
    assert proc.returncode == 2 and "ssgallery-ebgm" in proc.stderr


# --------------------------------------------------------------------------- AT&T (slow)

def att_paths(root, subjects, shots):
    return [str(root / f"s{s}" / f"{k}.pgm") for s in subjects for k in shots]


@pytest.mark.slow
def test_att_deterministic_discriminative_and_not_psd(tmp_path, att_faces):
    paths = att_paths(att_faces, range(1, 11), (1, 2, 3, 4))
    lst = write_list(tmp_path / "att.txt", paths)
    runs = []
    for i in range(2):
        out = tmp_path / f"S{i}.txt"
        subprocess.run([EBGM, "--probe-list", lst, "--gallery-list", lst, "--out", str(out)],
                       check=True, env=dict(os.environ, OMP_NUM_THREADS="1"))
        runs.append(out.read_text())
    assert runs[0] == runs[1]  # deterministic, to the printed digit
    S = np.loadtxt(runs[0].splitlines())
    n = len(paths)
    assert S.shape == (n, n)
    assert np.all(S.argmax(1) == np.arange(n))  # self-similarity is the highest
    labels = np.repeat(np.arange(10), 4)
    same = labels[:, None] == labels[None, :]
    off = ~np.eye(n, dtype=bool)
    genuine, impostor = S[same & off].mean(), S[~same].mean()
    assert genuine > impostor + 0.2
    # not a kernel: the symmetric part has a negative eigenvalue
    assert np.linalg.eigvalsh((S + S.T) / 2).min() < -1e-3


@pytest.mark.slow
def test_att_enroll_compress_verify_with_the_ebgm_program(tmp_path, att_faces):
    """End to end through the CLI: the host names the program ($SSGALLERY_MATCHER_CMD; the
    store and gallery hold only its contract digest), compress trains
    pixel-space prototypes with the real program, verify sends each probe batch and
    the client's m prototypes in one run."""
    paths = att_paths(att_faces, range(1, 8), range(1, 11))
    root = tmp_path / "faces"  # client s1 (8 images), background s2 and s3 (5 each)
    for subject, shots in (("s1", range(1, 9)), ("s2", range(1, 6)), ("s3", range(1, 6))):
        (root / subject).mkdir(parents=True)
        for k in shots:
            (root / subject / f"{k}.pgm").symlink_to(att_faces / subject / f"{k}.pgm")
    log = tmp_path / "calls.log"
    wrapper = os.path.join(os.path.dirname(__file__), "matchers", "log_calls.py")
    command = shlex.join([sys.executable, wrapper, EBGM])
    env = dict(os.environ, OMP_NUM_THREADS="1", MATCHER_LOG=str(log),
               SSGALLERY_MATCHER_CMD=command)
    ssg = os.path.join(os.path.dirname(EBGM), "ssgallery")

    def cli(*args):
        return subprocess.run([ssg, *args], cwd=tmp_path, env=env, capture_output=True,
                              text=True, check=False)

    run = cli("enroll", str(root), "--clients", "s1", "--background", "s2,s3", "--size", "46x56",
              "--matcher", "external")
    assert run.returncode == 0, run.stderr
    run = cli("compress", "--m", "2", "--cv-folds", "0")
    assert run.returncode == 0, run.stderr
    log.write_text("")
    # unseen: s1/9.pgm and s1/10.pgm (genuine), s4/1.pgm .. s7/1.pgm (impostors)
    probes = [paths[8], paths[9]] + [paths[10 * s] for s in range(3, 7)]
    run = cli("verify", *probes, "--claim", "s1", "--json")
    assert run.returncode in (0, 1), run.stderr
    scores = [r["score"] for r in json.loads(run.stdout)["results"]]
    assert np.mean(scores[:2]) > np.mean(scores[2:])  # genuine above impostors
    # the host's program first proves its contract (--describe), then one quality run
    # (failure to acquire) and one scoring run: 6 probes x m = 2
    assert log.read_text().split("\n")[:-1] == ["describe", "quality 6", "6 2"]
    assert {r["status"] for r in json.loads(run.stdout)["results"]} <= {"accept", "reject"}
    run = cli("verify", probes[0], "--claim", "nobody")
    assert run.returncode == 2 and "\n" not in run.stderr.strip()


def test_serve_answers_requests_until_end_of_input(images, tmp_path):
    import io

    from ssgallery_ebgm import serve

    lst = write_list(tmp_path / "a.txt", images[:3])
    requests = [{"probe_list": lst, "gallery_list": lst, "out": str(tmp_path / "S1.txt")},
                {"probe_list": str(tmp_path / "none.txt"), "gallery_list": lst,
                 "out": str(tmp_path / "S2.txt")}, "not json"]
    stdin = io.StringIO("".join((r if isinstance(r, str) else json.dumps(r)) + "\n"
                                for r in requests))
    stdout = io.StringIO()
    assert serve(stdin, stdout) == 0
    replies = [json.loads(line) for line in stdout.getvalue().splitlines()]
    assert replies[0] == {"ok": True} and "cannot read list" in replies[1]["error"]
    assert "error" in replies[2] and len(replies) == 3
    assert main(["--probe-list", lst, "--gallery-list", lst, "--out",
                 str(tmp_path / "S0.txt")]) == 0
    np.testing.assert_array_equal(np.loadtxt(tmp_path / "S1.txt"), np.loadtxt(tmp_path / "S0.txt"))


def test_quality_is_the_graph_match_with_the_mirror_image(tmp_path, att_faces):
    """--quality-list (and the quality_list request of --serve), a real process: AT&T
    faces score above uniform and noise images; a uniform image scores 0; a mirror-
    symmetric image matches its mirror exactly (1)."""
    import io

    from ssgallery_ebgm import serve

    faces = [str(att_faces / f"s{s}" / "1.pgm") for s in range(1, 6)]
    rng = np.random.default_rng(0)
    others = {"grey": np.full((112, 92), 128.0), "noise": rng.uniform(0, 255, (112, 92)),
              "mirror-symmetric": np.tile(np.linspace(0, 255, 112)[:, None], (1, 92))}
    for name, arr in others.items():
        write_pgm(tmp_path / f"{name}.pgm", arr)
    lst = write_list(tmp_path / "q.txt", faces + [tmp_path / f"{n}.pgm" for n in others])
    out = subprocess.run([EBGM, "--quality-list", lst], capture_output=True, text=True,
                         check=True, env=dict(os.environ, OMP_NUM_THREADS="1")).stdout
    q = np.loadtxt(out.splitlines())
    assert q.shape == (8,) and np.isfinite(q).all()
    assert q[:5].min() > q[6] and q[5] == 0.0 and q[7] == pytest.approx(1.0, abs=1e-6)
    stdout = io.StringIO()
    request = {"quality_list": lst, "out": str(tmp_path / "Q.txt")}
    assert serve(io.StringIO(json.dumps(request) + "\n"), stdout) == 0
    assert json.loads(stdout.getvalue()) == {"ok": True}
    np.testing.assert_allclose(np.loadtxt(tmp_path / "Q.txt"), q, rtol=1e-8)


def test_an_unwritable_cache_dir_is_one_warning_line(images, tmp_path):
    """--cache-dir naming a folder that cannot be written (here a regular file: root
    writes any folder) ran without a cache and said nothing; now one warning line on
    stderr, the same scores, exit 0; in the served mode once for every request."""
    blocked = tmp_path / "cache"
    blocked.write_text("not a folder\n", encoding="utf-8")
    probes = write_list(tmp_path / "p.txt", images[:2])
    gallery = write_list(tmp_path / "g.txt", images[2:])
    run = subprocess.run([EBGM, "--probe-list", probes, "--gallery-list", gallery,
                          "--cache-dir", str(blocked)], capture_output=True, text=True,
                         timeout=120, check=False)
    assert run.returncode == 0, run.stderr
    assert run.stderr.splitlines() == [(
        f"ssgallery-ebgm: warning: --cache-dir {blocked}: cannot write there (not a "
        "folder); running without a cache (every image is transformed again on each "
        "call)")]
    np.testing.assert_allclose(np.loadtxt(run.stdout.splitlines()),
                               score_files(images[:2], images[2:]), rtol=0, atol=1e-6)
    requests = "".join(json.dumps({"probe_list": probes, "gallery_list": gallery,
                                   "out": str(tmp_path / f"s{i}.txt")}) + "\n"
                       for i in range(2))
    served = subprocess.run([EBGM, "--serve", "--cache-dir", str(blocked)], input=requests,
                            capture_output=True, text=True, timeout=120, check=False)
    assert served.returncode == 0 and served.stdout.count('{"ok": true}') == 2, served
    assert served.stderr.splitlines() == run.stderr.splitlines()
