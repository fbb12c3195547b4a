"""Elastic graph matching of Gabor jets, vectorised over pairs.

The gallery (model) image carries a rectangular grid graph of 8 x 10 = 80 nodes; the
probe image is searched for it in three steps (Wiskott et al. 1997, CSU EBGM):

1. rigid shift: the whole graph moves by one integer offset within +-4 px, chosen by
   the mean magnitude similarity of the jets;
2. local search: each node moves independently within +-2 px of the rigid position,
   maximising its magnitude similarity minus a small distortion penalty;
3. phase refinement: at the chosen positions a sub-pixel displacement d is estimated
   from the phase differences by predictive iteration (coarse scales first, each step
   unwrapping the finer phases with the current d), and the node scores the phase
   similarity  S_phi = sum_j a_j a'_j cos(phi_j - phi'_j - d.k_j) / (|a| |a'|).

The score of a pair is the mean S_phi over nodes: 1 for identical images, lower for
different ones. It is neither symmetric nor positive semi-definite (it contains
maxima over positions). Magnitude similarities of all probe positions against all
gallery nodes are one batched matrix product per chunk of pairs.
"""

import numpy as np

from .gabor import scale_of_kernel, wave_vectors

GRID_COLS, GRID_ROWS = 8, 10
RIGID, LOCAL = 4, 2  # search radii in pixels
RADIUS = RIGID + LOCAL
DISTORTION = 0.005  # penalty per squared pixel of local node displacement
MAX_REFINE = 2.0  # largest sub-pixel correction (px) the phase may add
PAIRS_PER_CHUNK = 256
PROBES_PER_CHUNK = 16  # each probe's search windows take 2 MB
STAGES = (3, 1, 0)  # predictive iteration: scales >= 3, then >= 1, then all


def grid_nodes(shape):
    """Node positions (row, col) of the grid graph on an image of ``shape``: (80, 2) int."""
    H, W = shape
    ys = np.rint(np.linspace(0.12 * (H - 1), 0.90 * (H - 1), GRID_ROWS)).astype(int)
    xs = np.rint(np.linspace(0.15 * (W - 1), 0.85 * (W - 1), GRID_COLS)).astype(int)
    return np.array([(y, x) for y in ys for x in xs])


class GraphMatcher:
    """EBGM scorer for images of one shape (H, W).

    Feature extraction (`probe_features`, `gallery_features`) takes the
    complex Gabor responses of `ssgallery_ebgm.gabor.responses`; `score`
    scores every probe against every gallery image.
    """

    def __init__(self, shape):
        self.shape = tuple(shape)
        H, W = self.shape
        self.nodes = grid_nodes(self.shape)
        r = np.arange(-RADIUS, RADIUS + 1)
        self.offsets = np.stack(np.meshgrid(r, r, indexing="ij"), -1).reshape(-1, 2)  # (169, 2)
        pos = self.nodes[:, None, :] + self.offsets[None, :, :]
        pos[..., 0] = np.clip(pos[..., 0], 0, H - 1)
        pos[..., 1] = np.clip(pos[..., 1], 0, W - 1)
        self.window = pos[..., 0] * W + pos[..., 1]  # (80, 169) flat pixel indices
        self.node_index = self.nodes[:, 0] * W + self.nodes[:, 1]
        side = 2 * RADIUS + 1
        inner = np.abs(self.offsets).max(1)
        self.rigid = np.flatnonzero(inner <= RIGID)  # candidate rigid shifts
        lr = np.arange(-LOCAL, LOCAL + 1)
        local = np.stack(np.meshgrid(lr, lr, indexing="ij"), -1).reshape(-1, 2)
        centre = self.offsets[self.rigid]
        nb = centre[:, None, :] + local[None, :, :] + RADIUS
        self.neighbours = nb[..., 0] * side + nb[..., 1]  # (n_rigid, 25)
        self.penalty = (DISTORTION * (local**2).sum(1)).astype(np.float32)
        self.k = wave_vectors()
        self.kk = np.stack([self.k[:, 0] ** 2, self.k[:, 0] * self.k[:, 1], self.k[:, 1] ** 2], 1)
        self.k32, self.kk32 = self.k.astype(np.float32), self.kk.astype(np.float32)
        scale = scale_of_kernel()
        self.stages = [np.flatnonzero(scale >= s) for s in STAGES]

    def probe_features(self, R):
        """(unit magnitude jets (H*W, 40) float32, complex responses (H*W, 40))."""
        mag = np.abs(R)
        mag /= np.maximum(np.sqrt(np.einsum("ij,ij->i", mag, mag)), 1e-12)[:, None]
        return mag, R

    def gallery_features(self, R):
        """(unit magnitude jets (80, 40), complex jets (80, 40)) at the grid nodes."""
        J = R[self.node_index]
        mag = np.abs(J)
        return mag / np.maximum(np.linalg.norm(mag, axis=1, keepdims=True), 1e-12), J

    def score(self, probes, galleries):
        """Scores of every probe against every gallery image, shape (P, G)."""
        P, G = len(probes), len(galleries)
        out = np.empty((P, G))
        if P == 0 or G == 0:
            return out
        g_mag = np.stack([g[0] for g in galleries])  # (G, 80, 40)
        g_jet = np.stack([g[1] for g in galleries])
        gc = min(G, 256)
        pc = max(1, min(PROBES_PER_CHUNK, PAIRS_PER_CHUNK // gc))
        for p0 in range(0, P, pc):
            chunk = probes[p0 : p0 + pc]
            for g0 in range(0, G, gc):
                B = g_mag[g0 : g0 + gc].transpose(1, 2, 0)  # (80, 40, gc)
                out[p0 : p0 + len(chunk), g0 : g0 + gc] = self._score_chunk(
                    chunk, B, g_jet[g0 : g0 + gc]
                )
        return out

    def _score_chunk(self, probes, B, Jg):
        n_nodes, n_win = self.window.shape
        pc, gc = len(probes), B.shape[2]
        S = np.empty((n_nodes, pc, n_win, gc), np.float32)  # magnitude similarities
        for i, (mag, _) in enumerate(probes):
            S[:, i] = np.matmul(mag[self.window], B)
        best = S.sum(0)[:, self.rigid, :].argmax(1)  # rigid shift, (pc, gc)
        win = self.neighbours[best]  # (pc, gc, 25) window offsets around the rigid shift
        kn = np.arange(n_nodes)[:, None, None, None]
        pn = np.arange(pc)[None, :, None, None]
        gn = np.arange(gc)[None, None, :, None]
        flat = ((kn * pc + pn) * n_win + win[None]) * gc + gn
        L = np.take(S, flat) - self.penalty  # local search, (80, pc, gc, 25)
        pick = np.take_along_axis(win[None], L.argmax(-1)[..., None], -1)[..., 0]
        pos = self.window[np.arange(n_nodes)[:, None, None], pick]  # (80, pc, gc)
        Jp = np.empty((n_nodes, pc, gc, Jg.shape[-1]), np.complex64)
        for i, (_, R) in enumerate(probes):
            Jp[:, i] = R[pos[:, i]]  # probe jets at the chosen positions
        prod = Jp * np.conj(Jg.transpose(1, 0, 2))[:, None, :, :]
        w = np.abs(prod)
        dphi = np.arctan2(prod.imag, prod.real)
        a2 = (Jp.real**2 + Jp.imag**2).sum(-1)
        g2 = (np.abs(Jg) ** 2).sum(-1).T[:, None, :]
        norm = np.sqrt(a2 * g2)
        dx = np.zeros(w.shape[:-1] + (1,), np.float32)
        dy = np.zeros_like(dx)
        for cols in self.stages:  # predictive iteration, coarse -> fine
            kx, ky = self.k32[cols, 0], self.k32[cols, 1]
            wc = w[..., cols]
            delta = dphi[..., cols] - dx * kx - dy * ky
            delta -= _TWO_PI * np.rint(delta * _INV_TWO_PI)  # wrap to [-pi, pi]
            delta *= wc
            gam = wc @ self.kk32[cols]  # sum w k k'
            phi = delta @ self.k32[cols]  # sum w k dphi
            det = gam[..., 0] * gam[..., 2] - gam[..., 1] ** 2
            det[det <= 1e-12] = np.inf
            dx += ((gam[..., 2] * phi[..., 0] - gam[..., 1] * phi[..., 1]) / det)[..., None]
            dy += ((gam[..., 0] * phi[..., 1] - gam[..., 1] * phi[..., 0]) / det)[..., None]
            size = np.sqrt(dx * dx + dy * dy)
            shrink = np.minimum(1.0, MAX_REFINE / np.maximum(size, 1e-12))
            dx *= shrink
            dy *= shrink
        dphi -= dx * self.k32[:, 0]
        dphi -= dy * self.k32[:, 1]
        s_phi = (w * np.cos(dphi)).sum(-1, dtype=float) / np.maximum(norm, 1e-12)
        return s_phi.mean(0)


_TWO_PI = np.float32(2.0 * np.pi)
_INV_TWO_PI = np.float32(1.0 / (2.0 * np.pi))
