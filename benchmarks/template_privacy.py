"""What a stolen gallery reveals, plain vs protected templates, per matcher (issue 23).

For each set (eigenface on AT&T and LFW, dlib on LFW) every person's images are split
in two disjoint halves (even / odd positions in the sorted file list); each half is
enrolled and compressed into its own gallery (A, B) of the same people, with the real
``enroll`` and ``compress``. A is then protected with a key (``protect_gallery``: the
same models, prototypes Q(z - c)); B with another key, and once more with A's key.

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
  mated = the same person; linkage score = minus the smallest distance between the two
  clients' positive prototypes (eigenface: rendered to pixels, so that two bases can
  be compared; dlib: descriptors), and for protected galleries also minus the
  difference of their norms (what a rotation about the origin would leak); the larger
  is reported. Two keys: pooled over --key-pairs random key pairs (the estimator's
  floor falls with more scores); "null" = D<->sys of two random halves of the non-mated
  scores, the estimator's floor at that size.
- **accuracy**: gallery A's scores on the photos of half B (genuine: the client's,
  impostor: everybody else's), plain vs protected: largest score difference, identical
  verdicts, mean client EER.
- **verify start-up** (first set only): real ``ssgallery verify`` processes, one probe,
  alternated, median of --startup-runs: plain, encrypted, protected and encrypted +
  protected (+ signed) gallery A; ratios to plain (target <= 1.15).

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
from _results import OUT, docstring, markdown_table, printed, write_page


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


def _clopper_pearson(k, n):
    from scipy.stats import beta

    lo = beta.ppf(0.025, k, n - k + 1) if k > 0 else 0.0
    hi = beta.ppf(0.975, k + 1, n - k) if k < n else 1.0
    return float(lo), float(hi)


class Loaded:
    """A gallery read whole: models, the (keyed) matcher, the plain matcher."""

    def __init__(self, path, privacy_key=None):
        from ssgallery.formats.gallery import read_gallery

        g = read_gallery(path, arrays=True, matcher=True, privacy_key=privacy_key)
        self.models = g.clients
        self.matcher = g.matcher
        self.plain = getattr(g.matcher, "inner", g.matcher)
        self.ids = sorted(g.clients)

    def positive(self, cid):
        model = self.models[cid]
        keep = model.beta > 0
        return model.prototypes[keep if keep.any() else slice(None)]


def _render(matcher, Z):
    """What an attacker draws from stored coefficients through the stored basis."""
    return np.clip(matcher.render(Z), 0, 255)


def _decisions(model, matcher, features):
    return model.decision_function(features, model.similarity_function(matcher))


def replay(gal, renders, injected):
    """(client acceptance, prototype acceptance) of positive prototypes as probes.

    ``renders[cid]``: images (k, H, W) the attacker submits (eigenface), or None;
    ``injected[cid]``: descriptors (k, d) injected after the extractor (dlib)."""
    from ssgallery.matchers.base import face_check

    clients, protos = [], []
    for cid in gal.ids:
        model = gal.models[cid]
        if renders is not None:
            images = renders[cid]
            ok, _ = face_check(gal.matcher, images)
            scores = np.full(len(images), -np.inf)
            if ok.any():
                scores[ok] = _decisions(model, gal.matcher, gal.matcher.transform(images[ok]))
        else:
            feats = injected[cid]
            if hasattr(gal.matcher, "rotate"):  # the system maps what it is given
                feats = gal.matcher.rotate(feats)
            scores = _decisions(model, gal.matcher, feats)
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


def link_scores(left, right, ids, norms=False):
    """Mated and non-mated linkage scores between two dicts id -> vectors (k, p)."""
    mated, non = [], []
    for i in ids:
        for j in ids:
            a, b = left[i], right[j]
            if norms:
                s = -np.abs(np.linalg.norm(a, axis=1)[:, None]
                            - np.linalg.norm(b, axis=1)[None]).min()
            else:
                s = -np.sqrt(np.maximum((a * a).sum(1)[:, None] + (b * b).sum(1)
                                        - 2 * a @ b.T, 0)).min()
            (mated if i == j else non).append(s)
    return np.array(mated), np.array(non)


def d_sys(pairs):
    """D<->sys of pooled (mated, non-mated) score lists, and the estimator's floor."""
    from ssgallery.biometrics.metrics import linkability

    mated = np.concatenate([m for m, _ in pairs])
    non = np.concatenate([n for _, n in pairs])
    rng = np.random.default_rng(0)
    half = rng.permutation(non)
    null = linkability(half[:len(mated)], half[len(mated):])
    return linkability(mated, non), null


def _dlib():
    from ssgallery.matchers.deep import DlibMatcher

    return DlibMatcher()


def _descriptors(dlib, images):
    return dlib.transform(np.asarray(images, dtype=np.float32))


def _space(gal, Z, kind):
    """Vectors an attacker compares: rendered pixels (eigenface) or Z itself."""
    if kind == "eigenface":
        return _render(gal.plain, Z).reshape(len(Z), -1)
    return np.asarray(Z)


def _random_isometry(gal, seed):
    """A keyed isometry under a random key (the attacker's wrong key, or another
    deployment's key)."""
    from ssgallery.formats.protect import new_protection

    allz = np.concatenate([gal.models[c].prototypes for c in gal.ids])
    _, rotated = new_protection(gal.plain, os.urandom(32) if seed is None else seed, allz)
    return rotated


def accuracy(plain, prot, photos, labels):
    """(max |score difference|, verdicts identical, mean client EER plain, protected)."""
    from ssgallery.biometrics.metrics import eer

    diff, same, eers = 0.0, True, ([], [])
    fp = plain.matcher.transform(photos)
    fq = prot.matcher.transform(photos)
    for cid in plain.ids:
        a = _decisions(plain.models[cid], plain.matcher, fp)
        b = _decisions(prot.models[cid], prot.matcher, fq)
        diff = max(diff, float(np.abs(a - b).max()))
        same &= bool(np.array_equal(a >= plain.models[cid].threshold,
                                    b >= prot.models[cid].threshold))
        genuine = np.asarray(labels) == cid
        eers[0].append(eer(a[~genuine], a[genuine]))
        eers[1].append(eer(b[~genuine], b[genuine]))
    return diff, same, float(np.mean(eers[0])), float(np.mean(eers[1]))


def run_set(name, kind, args, work):
    from ssgallery.datasets import att_faces_path, lfw_path
    from ssgallery.images.ingest import load_faces

    t0 = time.perf_counter()
    root = att_faces_path() if name == "att" else lfw_path()
    people = _people(root, args.people)
    half_a, half_b = _halves(people, work)
    ga = _gallery(half_a, work, "A", kind, args.seed)
    gb = _gallery(half_b, work, "B", kind, args.seed)
    k1, k2 = _key(work, "k1.key"), _key(work, "k2.key")
    from ssgallery.formats.gallery.protected import protect_gallery

    protect_gallery(ga, work / "A-prot.h5", k1.read_bytes())
    protect_gallery(gb, work / "B-prot.h5", k2.read_bytes())
    protect_gallery(gb, work / "B-prot-k1.h5", k1.read_bytes())
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
        plain_r = {c: _render(A.plain, A.positive(c)) for c in ids}
        prot_r = {c: _render(Ap.plain, Ap.positive(c)) for c in ids}  # no key: as stored
        row["replay plain"] = replay(A, plain_r, None)
        row["replay protected"] = replay(Ap, prot_r, None)
    else:
        row["replay plain"] = replay(A, None, {c: A.positive(c) for c in ids})
        row["replay protected"] = replay(Ap, None, {c: Ap.positive(c) for c in ids})

    # re-identification
    wrong = _random_isometry(Ap, None)
    queries = {}
    for label, gal, undo in (("plain", A, None), ("protected, no key", Ap, None),
                             ("protected, wrong key", Ap, wrong)):
        q = {}
        for c in ids:
            Z = gal.positive(c) if undo is None else undo.unrotate(gal.positive(c))
            q[c] = _descriptors(dlib, _render(gal.plain, Z)) if kind == "eigenface" else Z
        queries[label] = rank1(q, photo_desc, labels, ids)
    row["reid"] = queries

    # linkability
    space = lambda gal, c, Z=None: _space(gal, gal.positive(c) if Z is None else Z, kind)
    plain_pair = link_scores({c: space(A, c) for c in ids}, {c: space(B, c) for c in ids}, ids)
    same_key = link_scores({c: space(Ap, c) for c in ids}, {c: space(Bp1, c) for c in ids}, ids)
    pooled, pooled_norm = [link_scores({c: space(Ap, c) for c in ids},
                                       {c: space(Bp, c) for c in ids}, ids)], []
    pooled_norm.append(link_scores({c: Ap.positive(c) for c in ids},
                                   {c: Bp.positive(c) for c in ids}, ids, norms=True))
    for _ in range(args.key_pairs - 1):
        ra, rb = _random_isometry(A, None), _random_isometry(B, None)
        left = {c: ra.rotate(A.positive(c)) for c in ids}
        right = {c: rb.rotate(B.positive(c)) for c in ids}
        pooled.append(link_scores({c: _space(A, left[c], kind) for c in ids},
                                  {c: _space(B, right[c], kind) for c in ids}, ids))
        pooled_norm.append(link_scores(left, right, ids, norms=True))
    row["link plain"] = d_sys([plain_pair])
    row["link same key"] = d_sys([same_key])
    row["link two keys"] = d_sys(pooled)
    row["link two keys, norms"] = d_sys(pooled_norm)
    row["link mated"] = sum(len(m) for m, _ in pooled)

    # accuracy
    row["accuracy"] = accuracy(A, Ap, photos, labels)
    row["galleries"] = (ga, work / "A-prot.h5", k1, ids[0], faces_b.paths)
    print(f"{name}/{kind}: done in {time.perf_counter() - t0:.0f} s")
    return row


def startup(row, work, runs):
    """Median wall / CPU of real verify processes on plain, encrypted, protected and
    encrypted + protected + signed gallery A, alternated."""
    import resource

    from ssgallery.formats.gallery.protected import protect_gallery

    plain, _, key, claim, paths = row["galleries"]
    sign = _key(work, "sign.key")
    enc, both = work / "A-enc.h5", work / "A-enc-prot.h5"
    _encrypt_copy(plain, enc, key.read_bytes())
    protect_gallery(plain, both, key.read_bytes(), key=sign.read_bytes(), encrypt=True)
    probe = str((work / "half1" / paths[0]).resolve())
    base = [sys.executable, "-m", "ssgallery", "verify", probe, "--claim", claim, "--gallery"]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    cases = {"plain": base + [str(plain)],
             "encrypted": base + [str(enc), "--privacy-key-file", str(key)],
             "protected": base + [str(work / "A-prot.h5"), "--privacy-key-file", str(key)],
             "encrypted + protected + signed": base + [str(both), "--privacy-key-file",
                                                       str(key), "--key-file", str(sign)]}
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


def _encrypt_copy(src, dst, privacy_key):
    """``src`` written again, encrypted (the same models, plain templates)."""
    import h5py

    from ssgallery.formats.gallery import read_client, read_gallery, write_gallery
    from ssgallery.formats.hdf5 import read_state

    g = read_gallery(src, arrays=True)
    with h5py.File(src, "r") as f:
        state = read_state(f["matcher"])[0]
    skip = {"format", "format_version", "tool_version", "created", "matcher",
            "matcher_config", "image_shape", "section_digests", "digest", "hmac"}
    models = list(g.clients.values())
    for m in models:
        m.prototype_images = read_client(src, m.client_id, images=True,
                                         matcher=False).prototype_images
    write_gallery(dst, matcher_name=g.matcher_name, matcher_config=g.matcher_config,
                  matcher_state=state, image_shape=g.header["image_shape"], clients=models,
                  attrs={k: v for k, v in g.header.items() if k not in skip},
                  privacy_key=privacy_key)


def _fmt_pair(pair):
    return f"{100 * pair[0]:.1f} / {100 * pair[1]:.1f}"


def _fmt_rank(hits_n):
    hits, n = hits_n
    lo, hi = _clopper_pearson(hits, n)
    return f"{100 * hits / n:.1f} ({100 * lo:.1f}-{100 * hi:.1f})"


def report(rows, med):
    head = ["set", "N", "replay plain % (clients / prototypes)", "replay protected %",
            "rank-1 plain % (95 % CI)", "rank-1 protected, no key %",
            "rank-1 protected, wrong key %", "chance %"]
    table1 = [[r["set"], r["N"], _fmt_pair(r["replay plain"]), _fmt_pair(r["replay protected"]),
               _fmt_rank(r["reid"]["plain"]), _fmt_rank(r["reid"]["protected, no key"]),
               _fmt_rank(r["reid"]["protected, wrong key"]), f"{100 / r['N']:.1f}"]
              for r in rows]
    head2 = ["set", "D<->sys plain", "D<->sys protected, same key",
             "D<->sys protected, two keys (distance / norms)", "null floor (two keys)",
             "mated scores pooled", "max |score diff|", "identical verdicts",
             "mean client EER plain / protected %"]
    table2 = []
    for r in rows:
        diff, same, e0, e1 = r["accuracy"]
        table2.append([r["set"], f"{r['link plain'][0]:.3f}", f"{r['link same key'][0]:.3f}",
                       f"{r['link two keys'][0]:.3f} / {r['link two keys, norms'][0]:.3f}",
                       f"{r['link two keys'][1]:.3f}", r["link mated"], f"{diff:.1e}",
                       str(same), f"{100 * e0:.2f} / {100 * e1:.2f}"])
    text = markdown_table(head, table1) + "\n\n" + markdown_table(head2, table2)
    if med:
        plain = med["plain"]
        rows3 = [[k, f"{w * 1000:.0f}", f"{w / plain[0]:.3f}", f"{c * 1000:.0f}",
                  f"{c / plain[1]:.3f}"] for k, (w, c) in med.items()]
        text += "\n\n" + markdown_table(["verify start-up (" + rows[0]["set"] + ")",
                                         "wall ms", "x plain", "CPU ms", "x plain"], rows3)
    print(text)
    return text


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
    rows, med = [], None
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
                med = startup(rows[0], work, args.startup_runs)
        print(f"load average {os.getloadavg()[0]:.1f} {os.getloadavg()[1]:.1f} "
              f"{os.getloadavg()[2]:.1f} on {os.cpu_count()} CPUs")
        return report(rows, med)


if __name__ == "__main__":
    with printed() as out:
        table = main()
    write_page(sys.argv[sys.argv.index("--page") + 1] if "--page" in sys.argv
               else "template_privacy",
               "What a stolen gallery reveals: plain vs protected templates",
               table, notes=docstring(__doc__), output=out.getvalue())
