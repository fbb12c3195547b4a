"""What a stolen gallery reveals, plain vs protected templates, per matcher (issue 23).

For each set (eigenface on AT&T and LFW, dlib on LFW) every person's images are split
in two disjoint halves (even / odd positions in the sorted file list); each half is
enrolled and compressed into its own gallery (A, B) of the same people, with the real
``enroll`` and ``compress``. A is then protected with a key (``rewrite_gallery``: the
same models, each client's prototypes through its own isometry Q_k(z - c_k)); B with
another key, and once more with A's key.

- **replay**: each client's positive-beta prototypes submitted as a probe for that
  client to gallery A's own verifier: for eigenface the stored rendered images (plain)
  or, for protected A, the attacker's rendering of the stored coefficients through the
  stored basis (he has no key); for dlib the descriptor itself injected after the
  descriptor extractor. Failures to acquire count as rejections. Acceptance rate over
  clients (any prototype accepted) and over prototypes.
- **re-identification**: each client's positive prototypes searched among the photos of
  half B of every enrolled person with an independent matcher: dlib descriptors of the
  rendered prototypes (eigenface galleries), or the prototypes themselves in descriptor
  space (dlib galleries); rank-1 rate against chance 1/N, with the Clopper-Pearson 95 %
  interval of the measured rate. Protected: the attacker without the key, and with a
  wrong key (undoing a random isometry).
- **linkability**: D<->sys (ISO/IEC 30136, Gomez-Barrero et al. 2018) between A and B,
  mated = the same person, for four attacks without key or names, each a linkage score:
  *distance*, minus the smallest distance between the two clients' positive prototypes
  (eigenface: rendered to pixels, so that two bases can be compared; dlib:
  descriptors); *norms*, minus the smallest difference of their norms (what a rotation
  about the origin would leak); *centroid*, the same on the prototypes' distances from
  their own gallery's centroid (what one isometry for the whole gallery keeps);
  *intra*, minus the difference of the distances between the client's own two
  prototypes (what every per-client isometry keeps, m = 2). Two keys: pooled over
  --key-pairs random key pairs (the estimator's floor falls with more scores), also for
  the first scheme (one isometry per gallery, version 1, no longer written), except the
  arms whose scores are the same under every key (*intra*; for the first scheme also
  *centroid*): they are estimated from one pair (N mated scores; pooled copies of them
  would only make the histogram's bins finer and inflate D<->sys, 0.18-0.30 instead of
  the plain galleries' value for intra); "null" = D<->sys of two random halves of the
  non-mated scores, the estimator's floor at that size.
- **accuracy**: gallery A's scores on the photos of half B (genuine: the client's,
  impostor: everybody else's), plain vs protected: largest score difference, identical
  verdicts, mean client EER.
- **start-up** (first set only): real ``ssgallery verify`` and ``ssgallery identify``
  processes, one probe, all alternated, median of --startup-runs: plain, encrypted,
  protected and encrypted + protected (+ signed) gallery A; ratios to the same command
  on the plain gallery (target for verify <= 1.15).

    OMP_NUM_THREADS=1 python benchmarks/template_privacy.py [--sets att:eigenface,
        lfw:eigenface,lfw:dlib] [--people N] [--key-pairs 20] [--startup-runs 15]
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _privacy_linkability import isometry, linkability_rows, render
from _privacy_report import report
from _results import OUT, docstring, printed, write_page


def _people(root, people):
    """(name, sorted image paths) of people with at least 4 images, the first ``people``."""
    out = []
    for folder in sorted(p for p in Path(root).iterdir() if p.is_dir()):
        files = sorted(f for f in folder.iterdir() if f.suffix.lower() in (".pgm", ".png"))
        if len(files) >= 4:
            out.append((folder.name, files))
    return out[:people] if people else out


def _halves(people, work):
    """Two face folders of symlinks (even / odd images of every person)."""
    for half in (0, 1):
        for name, files in people:
            folder = work / f"half{half}" / name
            folder.mkdir(parents=True)
            for f in files[half::2]:
                (folder / f.name).symlink_to(f)
    return work / "half0", work / "half1"


def _gallery(faces, work, tag, matcher, seed):
    from ssgallery.app.compress import compress
    from ssgallery.app.enroll import enroll
    from ssgallery.app.options import CompressOptions

    store, gallery = work / f"{tag}.store.h5", work / f"{tag}.h5"
    enroll(faces, store, matcher=matcher, min_images=2)
    compress(store, gallery, CompressOptions(m=2, seed=seed))
    return gallery


def _key(work, name):
    path = work / name
    path.write_bytes(os.urandom(32))
    return path


class Loaded:
    """A gallery as an attacker without the key reads it (``models``: the prototypes as
    stored; ``plain``: the matcher) and as its verifier does (``system``: the models
    with the key, prototypes put back)."""

    def __init__(self, path, privacy_key=None):
        from ssgallery.formats.gallery import read_gallery

        self.models = read_gallery(path, arrays=True).clients
        g = read_gallery(path, arrays=True, matcher=True, privacy_key=privacy_key)
        self.system, self.plain = g.clients, g.matcher
        self.ids = sorted(g.clients)

    def positive(self, cid, Z=None):
        model = self.models[cid]
        keep = model.beta > 0
        Z = model.prototypes if Z is None else Z
        return Z[keep if keep.any() else slice(None)]

    def stacked(self, system=False):
        """(every stored prototype (P, d), offsets (N + 1,)) in id order."""
        models = self.system if system else self.models
        blocks = [models[c].prototypes for c in self.ids]
        return np.concatenate(blocks), np.concatenate([[0], np.cumsum([len(b) for b in blocks])])


def _decisions(model, matcher, features):
    return model.decision_function(features, model.similarity_function(matcher))


def replay(gal, renders, injected):
    """(client acceptance, prototype acceptance) of positive prototypes as probes to the
    gallery's verifier.

    ``renders[cid]``: images (k, H, W) the attacker submits (eigenface), or None;
    ``injected[cid]``: descriptors (k, d) injected after the extractor (dlib)."""
    from ssgallery.matchers.base import face_check

    clients, protos = [], []
    for cid in gal.ids:
        model = gal.system[cid]
        if renders is not None:
            images = renders[cid]
            ok, _ = face_check(gal.plain, images)
            scores = np.full(len(images), -np.inf)
            if ok.any():
                scores[ok] = _decisions(model, gal.plain, gal.plain.transform(images[ok]))
        else:
            scores = _decisions(model, gal.plain, injected[cid])
        accepted = scores >= model.threshold
        clients.append(accepted.any())
        protos.extend(accepted)
    return float(np.mean(clients)), float(np.mean(protos))


def rank1(queries, photo_desc, photo_labels, ids):
    """Rank-1 rate of searching each client's query descriptors among the photos: the
    identity with the nearest photo to any of the client's queries wins."""
    hits = 0
    labels = np.asarray(photo_labels)
    for cid in ids:
        q = queries[cid]
        d = np.sqrt(np.maximum((q * q).sum(1)[:, None] + (photo_desc ** 2).sum(1)
                               - 2 * q @ photo_desc.T, 0)).min(0)
        best = {}
        for label, dist in zip(labels, d):
            best[label] = min(best.get(label, np.inf), dist)
        hits += min(best, key=best.get) == cid
    return hits, len(ids)


def _dlib():
    from ssgallery.matchers.deep import DlibMatcher

    return DlibMatcher()


def _descriptors(dlib, images):
    return dlib.transform(np.asarray(images, dtype=np.float32))


def accuracy(plain, prot, photos, labels):
    """(max |score difference|, verdicts identical, mean client EER plain, protected):
    the verifier of each gallery (``prot`` read with its key)."""
    from ssgallery.biometrics.metrics import eer

    diff, same, eers = 0.0, True, ([], [])
    fp = plain.plain.transform(photos)
    fq = prot.plain.transform(photos)
    for cid in plain.ids:
        a = _decisions(plain.system[cid], plain.plain, fp)
        b = _decisions(prot.system[cid], prot.plain, fq)
        diff = max(diff, float(np.abs(a - b).max()))
        same &= bool(np.array_equal(a >= plain.system[cid].threshold,
                                    b >= prot.system[cid].threshold))
        genuine = np.asarray(labels) == cid
        eers[0].append(eer(a[~genuine], a[genuine]))
        eers[1].append(eer(b[~genuine], b[genuine]))
    return diff, same, float(np.mean(eers[0])), float(np.mean(eers[1]))


def run_set(name, kind, args, work):
    from ssgallery.datasets import att_faces_path, lfw_path
    from ssgallery.formats.gallery.protected import rewrite_gallery
    from ssgallery.images.ingest import load_faces

    t0 = time.perf_counter()
    root = att_faces_path() if name == "att" else lfw_path()
    people = _people(root, args.people)
    half_a, half_b = _halves(people, work)
    ga = _gallery(half_a, work, "A", kind, args.seed)
    gb = _gallery(half_b, work, "B", kind, args.seed)
    k1, k2 = _key(work, "k1.key"), _key(work, "k2.key")
    rewrite_gallery(ga, work / "A-prot.h5", protect=k1.read_bytes())
    rewrite_gallery(gb, work / "B-prot.h5", protect=k2.read_bytes())
    rewrite_gallery(gb, work / "B-prot-k1.h5", protect=k1.read_bytes())
    A, B = Loaded(ga), Loaded(gb)
    Ap = Loaded(work / "A-prot.h5", k1.read_bytes())
    Bp = Loaded(work / "B-prot.h5", k2.read_bytes())
    Bp1 = Loaded(work / "B-prot-k1.h5", k1.read_bytes())
    faces_b = load_faces(half_b, size=None)
    photos, labels = faces_b.images, list(map(str, faces_b.labels))
    dlib = _dlib().fit(photos)  # the independent matcher of re-identification
    photo_desc = _descriptors(dlib, photos)
    ids = A.ids
    print(f"{name}/{kind}: {len(ids)} people, galleries built in "
          f"{time.perf_counter() - t0:.0f} s")
    row = {"set": f"{name} / {kind}", "N": len(ids)}

    # replay
    if kind == "eigenface":
        plain_r = {c: render(A.plain, A.positive(c)) for c in ids}
        prot_r = {c: render(Ap.plain, Ap.positive(c)) for c in ids}  # no key: as stored
        row["replay plain"] = replay(A, plain_r, None)
        row["replay protected"] = replay(Ap, prot_r, None)
    else:
        row["replay plain"] = replay(A, None, {c: A.positive(c) for c in ids})
        row["replay protected"] = replay(Ap, None, {c: Ap.positive(c) for c in ids})

    # re-identification
    stored, offsets = Ap.stacked()
    wrong = isometry(Ap)(stored, offsets, inverse=True)  # undone with a wrong key
    guessed = {c: wrong[offsets[k]:offsets[k + 1]] for k, c in enumerate(ids)}
    queries = {}
    for label, Zs in (("plain", None), ("protected, no key", {}),
                      ("protected, wrong key", guessed)):
        q = {}
        for c in ids:
            gal = A if Zs is None else Ap
            Z = gal.positive(c, Zs.get(c) if Zs else None)
            q[c] = _descriptors(dlib, render(gal.plain, Z)) if kind == "eigenface" else Z
        queries[label] = rank1(q, photo_desc, labels, ids)
    row["reid"] = queries

    row["link"] = linkability_rows(A, B, Ap, Bp, Bp1, kind, args.key_pairs)
    row["accuracy"] = accuracy(A, Ap, photos, labels)
    row["galleries"] = (ga, work / "A-prot.h5", k1, ids[0], faces_b.paths)
    row["seed"] = args.seed
    print(f"{name}/{kind}: done in {time.perf_counter() - t0:.0f} s")
    return row


def startup(row, work, runs):
    """Median wall / CPU of real ``verify`` and ``identify`` processes (one probe) on
    plain, encrypted, protected and encrypted + protected + signed gallery A, all
    alternated; {(command, gallery): (wall, cpu)}."""
    import resource

    from ssgallery.app.compress import compress
    from ssgallery.app.options import CompressOptions, CompressRun
    from ssgallery.formats.gallery.protected import rewrite_gallery

    plain, _, key, claim, paths = row["galleries"]
    sign = _key(work, "sign.key")
    enc, both, signed = work / "A-enc.h5", work / "A-enc-prot.h5", work / "A-signed.h5"
    rewrite_gallery(plain, enc, privacy_key=key.read_bytes())
    # only compress signs (rewrite_gallery copies a signature it has checked): gallery A
    # trained again, as _gallery trains it, with the signing key
    compress(Path(plain).with_suffix(".store.h5"), signed,
             CompressOptions(m=2, seed=row["seed"]), CompressRun(key_file=str(sign)))
    rewrite_gallery(signed, both, protect=key.read_bytes(), key=sign.read_bytes(),
                    privacy_key=key.read_bytes())
    probe = str((work / "half1" / paths[0]).resolve())
    galleries = {"plain": [str(plain)],
                 "encrypted": [str(enc), "--privacy-key-file", str(key)],
                 "protected": [str(work / "A-prot.h5"), "--privacy-key-file", str(key)],
                 "encrypted + protected + signed": [str(both), "--privacy-key-file",
                                                    str(key), "--key-file", str(sign)]}
    verbs = {"verify": ["verify", probe, "--claim", claim, "--gallery"],
             "identify": ["identify", probe, "--gallery"]}
    cases = {(verb, name): [sys.executable, "-m", "ssgallery", *args, *gallery]
             for verb, args in verbs.items() for name, gallery in galleries.items()}
    env = dict(os.environ, OMP_NUM_THREADS="1")
    subprocess.run([sys.executable, "-m", "compileall", "-q",
                    str(Path(__file__).resolve().parents[1] / "ssgallery")], check=True)
    times = {k: [] for k in cases}
    for cmd in cases.values():
        subprocess.run(cmd, cwd=work, env=env, capture_output=True, check=False)
    for _ in range(runs):
        for name, cmd in cases.items():
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t = time.perf_counter()
            out = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True,
                                 check=False)
            wall = time.perf_counter() - t
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            if out.returncode not in (0, 1, 3):
                sys.exit(f"template_privacy: {name}: {out.stderr}")
            times[name].append((wall, r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime))
    med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
           for k, v in times.items()}
    return med


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="att:eigenface,lfw:eigenface,lfw:dlib")
    ap.add_argument("--people", type=int, default=0, help="first N people of each set (0: all)")
    ap.add_argument("--key-pairs", type=int, default=20)
    ap.add_argument("--startup-runs", type=int, default=15)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cache", default=str(OUT / "privacy_dlib.npz"),
                    help="dlib descriptor cache ('' for none)")
    ap.add_argument("--page", default="template_privacy")
    args = ap.parse_args()
    from ssgallery.matchers import deep

    if args.cache and Path(args.cache).exists():
        print(f"dlib: {deep.load_cache(args.cache)} cached descriptors")
    rows, med, load = [], None, None
    with tempfile.TemporaryDirectory() as tmp:
        for i, spec in enumerate(args.sets.split(",")):
            name, kind = spec.split(":")
            work = Path(tmp) / f"{name}-{kind}"
            work.mkdir()
            rows.append(run_set(name, kind, args, work))
            if args.cache:
                Path(args.cache).parent.mkdir(parents=True, exist_ok=True)
                deep.save_cache(args.cache)
            if i == 0 and args.startup_runs:
                before = os.getloadavg()[0]
                med = startup(rows[0], work, args.startup_runs)
                load = f"{before:.1f}-{os.getloadavg()[0]:.1f}"
        print(f"load average {os.getloadavg()[0]:.1f} {os.getloadavg()[1]:.1f} "
              f"{os.getloadavg()[2]:.1f} on {os.cpu_count()} CPUs")
        return report(rows, med, load)


if __name__ == "__main__":
    with printed() as out:
        table = main()
    write_page(sys.argv[sys.argv.index("--page") + 1] if "--page" in sys.argv
               else "template_privacy",
               "What a stolen gallery reveals: plain vs protected templates",
               table, notes=docstring(__doc__), output=out.getvalue())
