"""benchmarks/template_privacy.py's linkability (its docstring says what it measures):
the attacker's view of a gallery's prototypes (`render`: stored coefficients drawn
through the stored basis), the four attacks' linkage scores between two galleries
(`link_scores`, one set per arm of `ARMS`), a keyed map under a random key (`isometry`:
a wrong key, or another deployment's), D<->sys with its floor (`d_sys`) and the rows of
every scheme and key (`linkability_rows`)."""

import os

import numpy as np


def render(matcher, Z):
    """What an attacker draws from stored coefficients through the stored basis."""
    return np.clip(matcher.render(Z), 0, 255)


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


def _space(gal, Z, kind):
    """Vectors an attacker compares: rendered pixels (eigenface) or Z itself."""
    if kind == "eigenface":
        return render(gal.plain, Z).reshape(len(Z), -1)
    return np.asarray(Z)


def isometry(gal, version=2, key=None):
    """A keyed map z -> stored under a random key (a wrong key, or another deployment's):
    per-client isometries (version 2) or one for the gallery (version 1, the first
    scheme). ``map(Z, offsets, inverse=False)`` over the gallery's clients in id order."""
    from ssgallery.formats.protect import TemplateMap, new_protection

    Z, _ = gal.stacked(system=True)
    record, tmap = new_protection(gal.plain, os.urandom(32) if key is None else key, Z)
    if version == 1:
        tmap = TemplateMap(dict(record, version=1), tmap._seed)
    return lambda Z, offsets, inverse=False: tmap._apply(gal.ids, Z, offsets, inverse)


def _arms(gal, Z, offsets, kind):
    """Per client, what each attack compares (see the module docstring): positive
    prototypes in the attacker's space, their norms' source, their offsets from the
    gallery's centroid, and the client's own prototypes (for their distance)."""
    centroid = Z.mean(0)
    own = {c: Z[offsets[k]:offsets[k + 1]] for k, c in enumerate(gal.ids)}
    return {"distance": {c: _space(gal, gal.positive(c, own[c]), kind) for c in gal.ids},
            "norms": {c: gal.positive(c, own[c]) for c in gal.ids},
            "centroid": {c: gal.positive(c, own[c]) - centroid for c in gal.ids},
            "intra": {c: np.linalg.norm(own[c][:1] - own[c][1:2], axis=1)[:, None]
                      for c in gal.ids}}


ARMS = ("distance", "norms", "centroid", "intra")
# per scheme version, arms whose scores are the same under every key (what its isometries
# keep: the client's own distances; with one isometry per gallery also the distances
# from the centroid): pooling copies of one run only sharpens the estimator's bins
# (min(n / 10, 100)) on the same N mated scores, which inflates D<->sys; one run it is
KEY_INVARIANT = {2: ("intra",), 1: ("centroid", "intra")}


def _link(left, right, ids):
    """{arm: (mated, non-mated)} between the `_arms` of two galleries."""
    return {arm: link_scores(left[arm], right[arm], ids, norms=arm != "distance")
            for arm in ARMS}


def linkability_rows(A, B, Ap, Bp, Bp1, kind, key_pairs):
    """D<->sys per arm: plain, protected under one key, under two keys (pooled over
    ``key_pairs``), and the first scheme under two keys; the floor; mated scores."""
    ids = A.ids
    za, oa = A.stacked(system=True)
    zb, ob = B.stacked(system=True)
    stored = lambda g: _arms(g, *g.stacked(), kind)
    out = {"plain": _link(_arms(A, za, oa, kind), _arms(B, zb, ob, kind), ids),
           "same key": _link(stored(Ap), stored(Bp1), ids)}
    pooled = {2: [_link(stored(Ap), stored(Bp), ids)], 1: []}
    for i in range(key_pairs):
        for version in (2, 1) if i else (1,):
            ma, mb = isometry(A, version), isometry(B, version)
            pooled[version].append(_link(_arms(A, ma(za, oa), oa, kind),
                                         _arms(B, mb(zb, ob), ob, kind), ids))
    row = {k: {arm: d_sys([v[arm]]) for arm in ARMS} for k, v in out.items()}
    for version, runs in pooled.items():
        row[f"two keys v{version}"] = {
            arm: d_sys([r[arm] for r in (runs[:1] if arm in KEY_INVARIANT[version] else runs)])
            for arm in ARMS}
    row["mated"] = sum(len(r["distance"][0]) for r in pooled[2])
    return row
