"""Many clients' curves at once, without a Python loop per client.

`roc --scores` on 50,000 clients averages 50,000 curves and, for each of the 200
bootstrap draws over clients, averages them again and pools their claims again. Done
one curve at a time that is millions of small numpy calls; here each is a few array
operations over every client:

`Staircases`
    The step functions of `ssgallery.biometrics.metrics.frr_on_grid` of many curves,
    their corners computed once: the FRR of any rows (a bootstrap draw repeats some) on
    a FAR grid, their mean (vertical averaging) and its staircase (for its EER).
`PooledClaims`
    Every client's impostor and genuine scores sorted once: the pooled ROC of any
    multiset of clients (a draw) from weighted counts, without concatenating or sorting.

Both give the per-curve functions' results bit for bit (`metrics.average_curves`,
`metrics.average_eer`, `ssgallery.biometrics.evaluation.fta_curve` of the
concatenated scores): the same values are summed in the same order.
"""

import numpy as np

MAX_CELLS = 1 << 22  # entries of one (rows, grid) block built at a time


def step_corners(far, frr):
    """Distinct FARs of a curve (ascending) and the lowest FRR reachable at FAR <= each:
    the corners of its step function (`ssgallery.biometrics.metrics.frr_on_grid`)."""
    far = np.asarray(far, dtype=float)
    frr = np.asarray(frr, dtype=float)
    ufar, inv = np.unique(far, return_inverse=True)
    best = np.full(ufar.shape, np.inf)
    np.minimum.at(best, inv, frr)
    return ufar, np.minimum.accumulate(best)


class Staircases:
    """The FRR step functions of several (far, frr) curves.

    Parameters
    ----------
    curves : list of (far, frr)
        E.g. one `metrics.roc_curve` per client (thresholds dropped); at least one.
    """

    def __init__(self, curves):
        if len(curves) == 0:
            raise ValueError("no curves to average")
        corners = [step_corners(far, frr) for far, frr in curves]
        self.length = np.array([len(f) for f, _ in corners], dtype=np.intp)
        self.start = np.cumsum(self.length) - self.length
        self.far = np.concatenate([f for f, _ in corners])
        self.best = np.concatenate([b for _, b in corners])
        self.values, self.code = np.unique(self.far, return_inverse=True)

    def __len__(self):
        return len(self.length)

    def _rows(self, rows):
        return np.arange(len(self)) if rows is None else np.asarray(rows, dtype=np.intp)

    def _corners_of(self, rows):
        """Flat indices of the corners of ``rows``, row after row, and each one's row
        position in ``rows``."""
        length = self.length[rows]
        which = np.repeat(np.arange(len(rows)), length)
        first = np.cumsum(length) - length
        return self.start[rows][which] + np.arange(int(length.sum())) - first[which], which

    def breakpoints(self, rows=None):
        """The distinct FARs of the curves of ``rows`` (all: None), ascending."""
        present = np.zeros(len(self.values), dtype=bool)
        present[self.code[self._corners_of(self._rows(rows))[0]]] = True
        return self.values[present]

    def on_grid(self, grid, rows=None):
        """FRR of each curve of ``rows`` at each FAR of ``grid``, shape
        (len(rows), len(grid)): `metrics.frr_on_grid` of each."""
        rows = self._rows(rows)
        grid = np.asarray(grid, dtype=float)
        order = np.argsort(grid, kind="stable")
        edge = grid[order] + 1e-12  # the tolerance of frr_on_grid
        flat, which = self._corners_of(rows)
        # a corner is at or below edge[j] exactly when j >= its insertion point
        cell = which * (len(edge) + 1) + np.searchsorted(edge, self.far[flat], side="left")
        count = np.bincount(cell, minlength=len(rows) * (len(edge) + 1))
        idx = np.cumsum(count.reshape(len(rows), -1), axis=1)[:, :-1] - 1
        at = np.minimum(self.start[rows][:, None] + np.maximum(idx, 0), len(self.best) - 1)
        frr = np.where(idx >= 0, self.best[at], 1.0)
        out = np.empty_like(frr)
        out[:, order] = frr
        return out

    def mean(self, grid, rows=None):
        """Mean FRR of the curves of ``rows`` at each FAR of ``grid`` (rows summed in
        order, as ``numpy.mean(axis=0)`` sums them), built in blocks of `MAX_CELLS`."""
        rows = self._rows(rows)
        grid = np.asarray(grid, dtype=float)
        step = max(1, MAX_CELLS // max(1, len(grid)))
        if len(grid) < 2 or len(rows) <= step:  # one column: numpy sums pairwise
            return self.on_grid(grid, rows).mean(axis=0)
        total = None
        for s in range(0, len(rows), step):
            block = self.on_grid(grid, rows[s:s + step])
            total = np.add.reduce(block if total is None else np.vstack([total[None], block]),
                                  axis=0)
        return total / len(rows)

    def staircase(self, rows=None):
        """The vertically averaged curve of ``rows`` as points (far, frr) in order of
        decreasing FAR: the staircase of `mean` with breakpoints at the curves' distinct
        FARs, (B[k], V[k]) then up to (B[k], V[k-1]); `metrics.curve_eer` of it is the
        exact EER (`metrics.average_eer`)."""
        rows = self._rows(rows)
        B = self.breakpoints(rows)
        V = self.mean(B, rows)
        far = np.empty(2 * len(B) - 1)
        frr = np.empty_like(far)
        far[0::2], frr[0::2] = B[::-1], V[::-1]
        far[1::2], frr[1::2] = B[:0:-1], V[-2::-1]
        return far, frr


class PooledClaims:
    """The impostor and genuine scores of several clients (NaN: failures to acquire),
    sorted once, for the pooled ROC of any multiset of them.

    Parameters
    ----------
    negs, poss : list of ndarray
        Per client, its impostor and its genuine scores.
    """

    def __init__(self, negs, poss):
        sides = []
        for arrays in (negs, poss):
            scores = np.concatenate(arrays) if arrays else np.empty(0)
            client = np.repeat(np.arange(len(arrays)), [len(a) for a in arrays])
            sides.append((scores, client, np.array([len(a) for a in arrays], dtype=float)))
        kept = [~np.isnan(s) for s, _, _ in sides]
        self.values, code = np.unique(np.concatenate([s[k] for (s, _, _), k in
                                                      zip(sides, kept)]), return_inverse=True)
        n_neg = int(kept[0].sum())
        self.neg = (code[:n_neg], sides[0][1][kept[0]], sides[0][2])
        self.pos = (code[n_neg:], sides[1][1][kept[1]], sides[1][2])

    def curve(self, weights):
        """(far, frr) of the claims of client i repeated ``weights[i]`` times, pooled:
        `fta_curve` of their concatenated scores (thresholds: the distinct scores
        present, then +inf)."""
        w = np.asarray(weights, dtype=float)
        k = len(self.values)
        at = [np.bincount(c, weights=w[who], minlength=k) for c, who, _ in (self.neg, self.pos)]
        present = (at[0] + at[1]) > 0
        n_all = [float(w @ size) for _, _, size in (self.neg, self.pos)]
        neg_at_or_above = np.append(np.cumsum(at[0][::-1])[::-1][present], 0.0)
        pos_below = np.append((np.cumsum(at[1]) - at[1])[present], at[1].sum())
        far = neg_at_or_above / n_all[0]
        frr = (pos_below + (n_all[1] - at[1].sum())) / n_all[1]
        return far, frr


__all__ = ["MAX_CELLS", "PooledClaims", "Staircases", "step_corners"]
