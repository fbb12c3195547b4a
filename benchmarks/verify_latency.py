"""Latency and throughput of ``ssgallery verify``, measured side by side in one run.

1. Start-up latency: wall time of a real ``ssgallery verify PROBE --claim ID`` process
   (one probe) divided by the wall time of ``python -c "import numpy, h5py, PIL.Image"``
   (the floor any Python verifier pays), medians of N alternated runs. Target: <= 1.5x.
   Four verifiers alternate in the same loop: this tree on a 20-client and on a
   10,000-client gallery (format 2: digests, semantic checks), and the baseline tree
   (``--baseline REF``, default the last commit before gallery format 2: no integrity
   checks) on galleries of the same two sizes written by its own code. Targets: this
   tree <= 1.1x the baseline; 10,000 clients as fast as 20 (constant group opens).
   ``ssgallery identify PROBE`` (closed set, top 5) alternates in the same loop, on
   the same four galleries: the same targets.
2. Throughput: one ``ssgallery verify --list FILE`` process scoring 1,000 probes,
   in probes per second (start-up included), and the per-probe cost after start-up.

3. dlib (when the extra is installed, unless --no-dlib): a gallery of the first 10 LFW
   people (``enroll --matcher dlib``, ``compress --m 2``); the cold start of one
   ``ssgallery verify`` with one LFW probe (model load included; median of --dlib-runs)
   and a batch of --dlib-probes LFW images in one process (probes per second after
   start-up). Targets: <= 1.5 s wall cold, >= 8 probes/s on one core.

The 20-client galleries are built from sample_data/ (m = 2) in a temporary folder; the
10,000-client ones repeat client c03's model under 10,000 ids. Both trees are
byte-compiled first (``compileall``), as an installed package is, so that neither pays
for compiling its modules on every start (``PYTHONDONTWRITEBYTECODE`` would make it so).

Wall times depend on the machine's load (printed with the figures); the CPU time of
the child processes (``resource.getrusage(RUSAGE_CHILDREN)``, user + system) depends on
it much less, and is printed beside the start-up and dlib wall times.

    python benchmarks/verify_latency.py [--runs 15] [--probes 1000] [--baseline REF]
        [--no-dlib | --only-dlib] [--dlib-runs 5] [--dlib-probes 100]
"""

import argparse
import importlib.util
import os
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _results import archive_tree, docstring, printed, write_page

REPO = Path(__file__).resolve().parent.parent
BASELINE = "220bbc3"  # main before the gallery format 2 (issue 8)
N_BIG = 10_000

# Run inside a tree (the current one or the baseline's): copy c03 under n ids.
REPLICATE = """
import sys
from ssgallery.formats.gallery import ClientModel, read_client, write_gallery
from ssgallery.formats.hdf5 import read_state
import h5py, json
src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
model = read_client(src, "c03", images=True, matcher=False)
with h5py.File(src) as f:
    state = read_state(f["matcher"])
    state = state[0] if isinstance(state, tuple) else state
    attrs = {k: f.attrs[k] for k in ("target_far",)}
clients = []
for i in range(n):
    m = ClientModel(**{k: getattr(model, k) for k in (
        "prototypes", "beta", "intercept", "threshold", "similarity", "provenance",
        "prototype_images")}, client_id=f"c{i:05d}")
    clients.append(m)
write_gallery(dst, matcher_name=model.header["matcher"],
              matcher_config=json.loads(model.header["matcher_config"]),
              matcher_state=state, image_shape=model.header["image_shape"], clients=clients,
              attrs=attrs)
"""


def _env(pythonpath=None):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    if pythonpath:
        env["PYTHONPATH"] = str(pythonpath)
    return env


def _wall(cmd, env, cwd=None):
    # never the repository: `python -m` puts the working folder first on sys.path, which
    # would run this tree's code where $PYTHONPATH names the baseline's
    cwd = cwd or tempfile.gettempdir()
    t = time.perf_counter()
    out = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - t
    if out.returncode not in (0, 1):
        sys.exit(f"benchmark: {' '.join(map(str, cmd))} failed:\n{out.stderr}")
    return elapsed


def _children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _timed(cmd, env, cwd=None):
    """(wall seconds, CPU seconds of the child) of one run of ``cmd``."""
    c = _children_cpu()
    wall = _wall(cmd, env, cwd)
    return wall, _children_cpu() - c


def _load():
    return "load average {:.1f} {:.1f} {:.1f} on {} CPUs".format(*os.getloadavg(),
                                                                  os.cpu_count())


def _dlib_gallery(work, people=10):
    """A dlib gallery of the first ``people`` LFW people; (gallery, claim, probe paths)."""
    from ssgallery.datasets import lfw_path

    lfw = lfw_path()
    names = sorted(p.name for p in lfw.iterdir() if p.is_dir())
    cli = [sys.executable, "-m", "ssgallery"]
    store, gallery = work / "dlib_store.h5", work / "dlib_gallery.h5"
    for args in (["enroll", str(lfw), "--matcher", "dlib", "--store", str(store),
                  "--clients", ",".join(names[:people])],
                 ["compress", "--store", str(store), "-o", str(gallery), "--m", "2"]):
        subprocess.run(cli + args, cwd=work, check=True, capture_output=True, env=_env())
    probes = sorted(p for name in names[people:] for p in (lfw / name).glob("*.png"))
    return gallery, names[0], probes


def dlib_row(work, runs, n_probes):
    """Cold start and batch throughput of verify with the dlib matcher."""
    if importlib.util.find_spec("dlib") is None:
        print("dlib: extra not installed, row skipped (pip install 'ssgallery[dlib]')")
        return
    t = time.perf_counter()
    gallery, claim, probes = _dlib_gallery(work)
    print(f"built a 10-client dlib gallery from LFW in {time.perf_counter() - t:.1f} s")
    verify = [sys.executable, "-m", "ssgallery", "verify", "--claim", claim,
              "--gallery", str(gallery)]
    _timed(verify + [str(probes[0])], _env())  # warm the file cache (weights) once
    cold = [_timed(verify + [str(probes[1 + i])], _env()) for i in range(runs)]
    wall, cpu = (statistics.median(x) for x in zip(*cold))
    print(f"dlib verify, 1 probe, cold start (model load included), median of {runs}: "
          f"{wall:.2f} s wall, {cpu:.2f} s CPU (target <= 1.5 s); {_load()}")
    listing = work / "dlib_probes.txt"
    listing.write_text("\n".join(map(str, probes[:n_probes])) + "\n")
    bwall, bcpu = _timed(verify + ["--list", str(listing)], _env())
    n = min(n_probes, len(probes))
    print(f"dlib batch of {n} probes in one process: {bwall:.2f} s wall, {bcpu:.2f} s CPU; "
          f"after start-up {(n - 1) / max(bwall - wall, 1e-9):.1f} probes/s wall, "
          f"{(n - 1) / max(bcpu - cpu, 1e-9):.1f} probes/s CPU (target >= 8); {_load()}")


def _build(work, tree, n_big, extra=()):
    """enroll + compress sample_data with the code at ``tree`` (None: this tree), then the
    ``n_big``-client copy; returns (gallery 20, gallery n_big)."""
    work.mkdir(parents=True)
    cli = [sys.executable, "-m", "ssgallery"]
    env = _env(tree)
    for args in (["enroll", str(REPO / "sample_data" / "faces")],
                 ["compress", "--m", "2", *extra]):
        subprocess.run(cli + args, cwd=work, check=True, capture_output=True, env=env)
    big = work / "big.h5"
    subprocess.run([sys.executable, "-c", REPLICATE, str(work / "gallery.h5"), str(big),
                    str(n_big)], check=True, env=env, cwd=work)
    return work / "gallery.h5", big


def _compile(tree):
    """Byte-compile the ``ssgallery`` package of ``tree`` (quietly; errors are fatal)."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "ssgallery")],
                   check=True, stdout=subprocess.DEVNULL)


def _startup(cases, runs, baseline, n_big):
    """Median wall and CPU times of alternated runs of ``cases`` (name -> (command, env));
    prints the table and the ratios; returns the wall medians."""
    for cmd, env in cases.values():
        _wall(cmd, env)  # warm the file cache once
    times = {name: [] for name in cases}
    for _ in range(runs):  # alternate, so load changes hit all alike
        for name, (cmd, env) in cases.items():
            times[name].append(_timed(cmd, env))
    wall = {name: statistics.median(w for w, _ in v) for name, v in times.items()}
    cpu = {name: statistics.median(c for _, c in v) for name, v in times.items()}
    print(f"start-up, median of {runs} alternated runs (1 probe; CPU: user + system of "
          "the process, less sensitive to the load):")
    for name in cases:
        print(f"  {name:<50} {wall[name] * 1000:7.0f} ms  {wall[name] / wall['floor']:5.2f}x "
              f"floor   CPU {cpu[name] * 1000:5.0f} ms  {cpu[name] / cpu['floor']:5.2f}x floor")
    for command in ("verify", "identify"):
        for n in ("20", str(n_big)):
            new, old = f"{command}: this tree, {n} clients", \
                f"{command}: baseline {baseline}, {n} clients"
            print(f"  {command}: this tree / baseline, {n} clients: "
                  f"{wall[new] / wall[old]:.3f} wall, {cpu[new] / cpu[old]:.3f} CPU  "
                  "(target <= 1.1)")
        big, small = f"{command}: this tree, {n_big} clients", \
            f"{command}: this tree, 20 clients"
        print(f"  {command}: this tree, {n_big} / 20 clients: "
              f"{wall[big] / wall[small]:.3f} wall, {cpu[big] / cpu[small]:.3f} CPU")
    return wall


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--probes", type=int, default=1000)
    ap.add_argument("--baseline", default=BASELINE, help="git ref of the baseline tree")
    ap.add_argument("--claim", default="c03")
    ap.add_argument("--no-dlib", action="store_true", help="skip the dlib row")
    ap.add_argument("--only-dlib", action="store_true", help="only the dlib row")
    ap.add_argument("--dlib-runs", type=int, default=5)
    ap.add_argument("--dlib-probes", type=int, default=100)
    ap.add_argument("--big", type=int, default=N_BIG,
                    help="clients of the big galleries (a quick check below the default)")
    ap.add_argument("--compress-options", default="",
                    help="more options of the galleries' compress, e.g. a quick check's "
                         "'--clients c03 --cv-folds 0' (not the figures)")
    args = ap.parse_args()
    extra = shlex.split(args.compress_options)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if args.only_dlib:
            return dlib_row(work, args.dlib_runs, args.dlib_probes)
        t = time.perf_counter()
        new20, new_big = _build(work / "new", None, args.big, extra)
        old_tree = archive_tree(args.baseline, work / "old_tree")
        old20, old_big = _build(work / "old", old_tree, args.big, extra)
        _compile(REPO)
        _compile(old_tree)
        print(f"built 20- and {args.big}-client galleries with this tree and with "
              f"{args.baseline} in {time.perf_counter() - t:.1f} s")
        probes = sorted((REPO / "sample_data" / "probes").glob("*.png"))
        probes += sorted((REPO / "sample_data" / "faces").glob("*/*.png"))
        probe = str(probes[0])
        cli = [sys.executable, "-m", "ssgallery", "verify"]
        big_claim = f"c{min(42, args.big - 1):05d}"
        cases = {"floor": ([sys.executable, "-c", "import numpy, h5py, PIL.Image"], _env())}
        for command in ("verify", "identify"):  # name -> (command, env)
            run = [sys.executable, "-m", "ssgallery", command, probe]
            for n, claim, old, new in (("20", args.claim, old20, new20),
                                       (str(args.big), big_claim, old_big, new_big)):
                claimed = ["--claim", claim] if command == "verify" else []
                cases[f"{command}: baseline {args.baseline}, {n} clients"] = (
                    run + claimed + ["--gallery", str(old)], _env(old_tree))
                cases[f"{command}: this tree, {n} clients"] = (
                    run + claimed + ["--gallery", str(new)], _env())
        med = _startup(cases, args.runs, args.baseline, args.big)

        listing = work / "probes.txt"
        paths = [str(probes[i % len(probes)]) for i in range(args.probes)]
        listing.write_text("\n".join(paths) + "\n")
        v = med["verify: this tree, 20 clients"]
        batch = statistics.median(_wall(cli + ["--claim", args.claim, "--gallery", str(new20),
                                               "--list", str(listing)], _env())
                                  for _ in range(3))
        print(f"batch of {args.probes} probes in one process (median of 3): {batch:.2f} s = "
              f"{args.probes / batch:.0f} probes/s; "
              f"{(batch - v) / (args.probes - 1) * 1000:.2f} ms per extra probe")
        print(_load())
        if not args.no_dlib:
            dlib_row(work, args.dlib_runs, args.dlib_probes)


if __name__ == "__main__":
    with printed() as out:
        main()
    if "--only-dlib" not in sys.argv:  # the page holds the whole benchmark
        write_page("verify_latency", "Latency and throughput of ssgallery verify",
                   notes=docstring(__doc__), output=out.getvalue())
