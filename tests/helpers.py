"""Small data builders shared by several test modules."""

import contextlib
import os
import stat
from pathlib import Path

import numpy as np
from audit_hooks import opens_of, run_at_rename  # noqa: F401  (used through helpers)
from PIL import Image

from ssgallery.progress import Progress

# the example matcher program of the docs (mean absolute difference), a Python script
EXAMPLE_MAD = Path(__file__).resolve().parent / "matchers" / "example_mad.py"


def old_tree(where, commit):
    """The ``ssgallery`` package of ``commit`` (``git archive``, as
    benchmarks/_results.archive_tree) in ``where``/old_tree, and a runner of its command
    line in ``where`` (``run(*args)``: asserts exit 0, returns the completed process):
    files written by the code of another time."""
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    tree = Path(where) / "old_tree"
    tree.mkdir()
    archive = subprocess.run(["git", "-C", str(repo), "archive", commit, "ssgallery"],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)

    def run(*args):
        res = subprocess.run([sys.executable, "-m", "ssgallery", *map(str, args)],
                             env=dict(os.environ, PYTHONPATH=str(tree)), cwd=where,
                             capture_output=True, text=True, timeout=600, check=False)
        assert res.returncode == 0, res.stderr
        return res
    return run


def in_ci():
    """True when running in CI (``CI`` set to anything but empty/"0"/"false"/"no")."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def synthetic_images(n_subjects=8, per=7, shape=(12, 10), noise=30.0, seed=0):
    """Identities = blocky random patterns; images = pattern + brightness shift + noise.

    Returns images (n_subjects * per, H, W) float32 on [0, 255] and labels ``id<s>``.
    """
    rng = np.random.default_rng(seed)
    h, w = shape
    base = rng.uniform(60, 200, size=(n_subjects, 3, 3))
    images, labels = [], []
    for s in range(n_subjects):
        big = np.kron(base[s], np.ones((h // 3 + 1, w // 3 + 1)))[:h, :w]
        for _ in range(per):
            images.append(np.clip(big + rng.normal(0, noise, (h, w)) + rng.normal(0, 10), 0, 255))
            labels.append(f"id{s}")
    return np.array(images, dtype=np.float32), np.array(labels)


def smooth_images(n=6, shape=(16, 12), seed=0):
    """Smooth random 8-bit images (integers on [0, 255]), shape (n, H, W)."""
    rng = np.random.default_rng(seed)
    base = rng.normal(size=(n, shape[0] // 4, shape[1] // 4))
    imgs = np.kron(base, np.ones((4, 4))) + 0.3 * rng.normal(size=(n,) + shape)
    imgs = (imgs - imgs.min()) / (imgs.max() - imgs.min()) * 255
    return np.round(imgs)


@contextlib.contextmanager
def l1_matcher(n=30, seed=1):
    """The L1 example program (tests/matchers/serve_mad.py, a real process) through the
    external contract, fitted on ``smooth_images(n, seed=seed)``: ``(matcher, its
    similarity, the images' features)``; closed on leaving."""
    import sys

    from ssgallery.matchers.external import ExternalMatcher

    imgs = smooth_images(n, seed=seed)
    program = [sys.executable, os.path.join(os.path.dirname(__file__), "matchers",
                                            "serve_mad.py")]
    matcher = ExternalMatcher(program).fit(imgs)
    try:
        yield matcher, matcher.similarity(), matcher.transform(imgs)
    finally:
        matcher.close()


def learner_problem(seed, n=40, d=4, m=3):
    """A smooth regression problem for Eqs. 2-6: ``X`` (n, d), targets ``y``, weights
    ``u`` summing to 1 and prototypes ``Z`` (m, d) near m of the rows."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.sin(X[:, 0]) + 0.5 * X[:, 1] ** 2 - 0.3
    u = rng.uniform(0.5, 2.0, size=n)
    u /= u.sum()
    Z = X[rng.choice(n, m, replace=False)] + 0.3 * rng.normal(size=(m, d))
    return X, y, u, Z


def make_faces(root, n_clients=5, n_images=6, seed=0, shape=(32, 24), prefix="c"):
    """Tiny synthetic face folders ROOT/<prefix>NN/*.png: each identity is a fixed 8x6
    block pattern, each image adds pixel noise. Separable, deterministic."""
    rng = np.random.default_rng(seed)
    h, w = shape
    for c in range(n_clients):
        base = rng.uniform(40, 200, size=(8, 6))
        folder = os.path.join(root, f"{prefix}{c:02d}")
        os.makedirs(folder, exist_ok=True)
        for i in range(n_images):
            img = np.kron(base, np.ones((h // 8, w // 6))) + rng.normal(0, 25, size=(h, w))
            Image.fromarray(np.clip(img, 0, 255).astype(np.uint8)).save(
                os.path.join(folder, f"{i}.png"))
    return root


def write_program(path, text, executable=True):
    """A matcher program at ``path`` (a pathlib.Path): ``text`` (its first line is the #!
    line, if any), executable by its owner unless ``executable`` is false."""
    path.write_text(text, encoding="utf-8")
    if executable:
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def heavy_imports(code):
    """Run ``code`` in a fresh interpreter; return the sorted list of the heavy packages
    (scikit-learn, scipy, matplotlib) it imported: what the verify path must not load."""
    import subprocess
    import sys

    probe = (code + "\nimport sys\nprint(sorted({m.split('.')[0] for m in sys.modules}"
             " & {'sklearn', 'scipy', 'matplotlib'}))\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True)
    return out.stdout.strip().splitlines()[-1]


def rehash_gallery(path, limit=None):
    """Make an edited gallery's digests consistent again (what anybody who can write the
    file but has no signing key can do): the semantic checks must still refuse it.
    ``limit``: the clients' attribute reads' (`ssgallery.formats.integrity.node_digest`;
    False: none, for an attribute larger or of another type than readers take)."""
    import json

    import h5py

    from ssgallery.formats import integrity

    with h5py.File(path, "a") as f:
        sections = json.loads(f.attrs["section_digests"])
        sections["matcher"] = integrity.read_group(f["matcher"])[2]
        if "index" in f:
            sections["index"] = integrity.node_digest(f["index"])
        f.attrs["section_digests"] = json.dumps(sections, sort_keys=True)
        rows = sorted((c.encode(), integrity.node_digest(f["clients"][c], limit=limit))
                      for c in f["clients"])
        width = max(len(r[0]) for r in rows)
        del f["client_index"]
        f.create_dataset("client_index",
                         data=np.array(rows, dtype=[("id", f"S{width}"), ("digest", "S64")]))
        f.attrs["digest"] = integrity.root_digest(dict(f.attrs.items()), f["client_index"][()])
    reseal(path)


def rehash_store(path):
    """Make an edited enrollment store's digest consistent again (see rehash_gallery)."""
    import h5py

    from ssgallery.formats import integrity

    with h5py.File(path, "a") as f:
        f.attrs["digest"] = integrity.node_digest(f, exclude=integrity.ROOT_EXCLUDED)
    reseal(path)


def reseal(path):
    """Re-seal a store or gallery edited with h5py (what anybody who can write the file
    can do): the raw-bytes seal passes, the checks inside the file must refuse the edit."""
    from ssgallery.formats.seal import seal_file

    seal_file(path)


def write_non_faces(folder, shape=(112, 92), seed=0):
    """Images that are not faces, as files: all black, all white, uniform greys, uniform
    and Gaussian noise, 2x2 ASCII PGMs and a 6000x6000 blank PNG (36 Mpx: the issue's
    12000x12000 one is over the documented pixel limit, an input error, see
    test_error_contract.py). Returns {name: path}; ``shape`` (H, W) is the size of the
    array-made ones."""
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(seed)
    arrays = {"black": np.zeros(shape), "white": np.full(shape, 255.0),
              "grey64": np.full(shape, 64.0), "grey128": np.full(shape, 128.0),
              "grey200": np.full(shape, 200.0), "noise": rng.uniform(0, 255, shape),
              "gauss_noise": np.clip(rng.normal(110, 25, shape), 0, 255)}
    paths = {}
    for name, array in arrays.items():
        paths[name] = os.path.join(folder, f"{name}.png")
        Image.fromarray(array.astype(np.uint8)).save(paths[name])
    for i, values in enumerate(["0 255 255 0", "10 200 30 90", "128 128 128 128"]):
        paths[f"pgm2x2_{i}"] = os.path.join(folder, f"pgm2x2_{i}.pgm")
        with open(paths[f"pgm2x2_{i}"], "w") as handle:
            handle.write(f"P2\n2 2\n255\n{values}\n")
    paths["blank6000"] = os.path.join(folder, "blank6000.png")
    Image.new("L", (6000, 6000), 0).save(paths["blank6000"])
    return paths


@contextlib.contextmanager
def edit_h5(path):
    """Edit a store or gallery with h5py, then re-seal it (see :func:`reseal`)."""
    import h5py

    with h5py.File(path, "a") as f:
        yield f
    reseal(path)


def growing_faces(root, n_first=6, n_total=8, seed=9):
    """``root/faces`` with the first ``n_first`` of ``n_total`` synthetic clients (5
    images each); returns ``add()``, which copies the others in (enroll --add, update)."""
    import shutil

    make_faces(os.path.join(root, "all"), n_clients=n_total, n_images=5, seed=seed)
    faces = os.path.join(root, "faces")
    os.makedirs(faces)

    def copy(clients):
        for c in clients:
            shutil.copytree(os.path.join(root, "all", f"c{c:02d}"),
                            os.path.join(faces, f"c{c:02d}"))

    copy(range(n_first))
    return lambda: copy(range(n_first, n_total))


def gallery_arrays(path):
    """Every client's arrays and numeric attrs of a gallery, for exact comparison."""
    import h5py

    out = {}
    with h5py.File(path, "r") as f:
        for cid, g in f["clients"].items():
            out[cid] = {k: g[k][()] for k in g} | {
                k: g.attrs[k] for k in ("intercept", "threshold")}
    return out


def assert_rounding_equal(actual, desired, tol=1e-9, err_msg=""):
    """Equal but for floating-point rounding: |a - d| <= tol * max|d| elementwise.

    OpenBLAS's vector kernels sum in an order that depends on the arrays' memory alignment
    and on the shape of a product, so the same model computed in another process (a Dask
    worker) or through features mapped in another batch can differ in its last bits, and
    the learner's L-BFGS-B run carries such a difference up to its convergence tolerance
    (``tol`` 1e-4 for trained models; 1e-14 for a plain product).
    """
    desired = np.asarray(desired, dtype=float)
    scale = float(np.max(np.abs(desired))) if desired.size else 0.0
    np.testing.assert_allclose(actual, desired, rtol=0, atol=tol * max(scale, 1e-300),
                               err_msg=err_msg)


class RecordProgress(Progress):
    """A `ssgallery.progress.Progress` that records what a library function reports:
    ``events`` holds ("start", label, total, unit), ("advance", label, n) and ("end", label);
    ``stop_at``: raise KeyboardInterrupt (Ctrl-C) when the phase ``stop_at[0]`` reaches
    ``stop_at[1]`` steps."""

    def __init__(self, stop_at=None):
        self.events, self.stop_at, self.label, self.done = [], stop_at, None, 0

    def start(self, label, total, unit=""):
        self.end()
        self.label, self.done = label, 0
        self.events.append(("start", label, total, unit))

    def advance(self, n=1):
        self.done += n
        self.events.append(("advance", self.label, n))
        if self.stop_at is not None and (self.label, self.done) == tuple(self.stop_at):
            raise KeyboardInterrupt

    def end(self):
        if self.label is not None:
            self.events.append(("end", self.label))
        self.label = None

    def steps(self, label):
        """Steps reported in the phase ``label`` (all its runs)."""
        return sum(e[2] for e in self.events if e[0] == "advance" and e[1] == label)


def unsalted(record):
    """A gallery's calibration record (JSON text) as two galleries of the same training
    from two stores share it: far_by_person's salt (a digest of the store's fingerprint,
    9cd665d) dropped and its people's salted ids left out, their (accepted, claims)
    counts sorted."""
    import json

    rec = json.loads(record)
    people = rec.get("far_by_person")
    if isinstance(people, dict):
        people.pop("salt", None)
        people["people"] = sorted([k, n] for _, k, n in people.get("people", []))
    return rec


def assert_same_gallery(a, b, rounding=False, same_store=True):
    """Same clients, calibration and arrays: identical, or with ``rounding`` equal but for
    floating-point rounding (`assert_rounding_equal`). The calibration record is compared
    whole for galleries of one store; of two stores (``same_store=False``) but for the
    salt of its people's ids, which each store's fingerprint sets (`unsalted`)."""
    import h5py

    A, B = gallery_arrays(a), gallery_arrays(b)
    assert sorted(A) == sorted(B)
    with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:  # one calibration over all clients
        assert fa.attrs["threshold_mode"] == fb.attrs["threshold_mode"]
        cal_a, cal_b = fa.attrs["calibration"], fb.attrs["calibration"]
        assert cal_a == cal_b if same_store else unsalted(cal_a) == unsalted(cal_b)
    for cid in A:
        for key in A[cid]:
            if rounding:
                assert_rounding_equal(A[cid][key], B[cid][key], tol=1e-4, err_msg=f"{cid}/{key}")
            else:
                np.testing.assert_array_equal(A[cid][key], B[cid][key], err_msg=f"{cid}/{key}")


def copied(src, dst_folder, name):
    """``src`` copied to ``dst_folder / name`` (a path string); nothing when ``src`` is
    missing (a failed build: the test then reports the command's error)."""
    import os
    import shutil

    dst = os.path.join(dst_folder, name)
    if os.path.exists(src):
        shutil.copyfile(src, dst)
    return dst


def invoked(args):
    """``ssgallery ARGS`` through click's CliRunner, as a JSON-able dict of what the tests
    read of a result: exit_code, output, stdout, stderr."""
    from click.testing import CliRunner

    from ssgallery.cli import main

    r = CliRunner().invoke(main, [str(a) for a in args])
    return {"exit_code": r.exit_code, "output": r.output, "stdout": r.stdout,
            "stderr": r.stderr}


def refused(args, what):
    """``ssgallery ARGS`` (`invoked`) refused as bad input: exit 2 and one error line on
    stderr (warnings aside) that contains ``what``; returns the result."""
    res = invoked(args)
    errors = [ln for ln in res["stderr"].splitlines() if "warning" not in ln]
    assert res["exit_code"] == 2, (args, res["output"])
    assert len(errors) == 1 and what in errors[0], (args, res["output"])
    return res
