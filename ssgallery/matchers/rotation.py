"""Secret isometries of the matcher space, one per client: renewable, unlinkable
templates (issue 23 item 3; ISO/IEC 24745).

For a similarity that depends on the features only through ||x - z|| (the RBF
s(x, z) = exp(-gamma ||x - z||^2) of the eigenface and dlib matchers), an isometry
z -> Q (z - c), with Q orthogonal, preserves every similarity: ||Q(x - c) - Q(z - c)||
= ||x - z||. So a client's prototypes stored as Q_k (z_j - c_k), and put back
(`Isometries.apply` with ``inverse``) by a reader holding the key, give the same g(x)
(Eq. 1 (g(x))) up to rounding, and the same verdicts.

Each client k has its own isometry (`Isometries`): Q_k Haar-random and c_k Gaussian,
drawn from a secret seed of its own. One isometry for the whole gallery would keep every
distance between the clients' prototypes, so each template's distance from its
gallery's centroid (and all the inter-client geometry) would link the same people
across two deployments without any key; with independent per-client isometries, what a
stored gallery still shows of a client is the norm ||z_j - c_k|| (hidden by the wide
random centre) and the distances between the client's own m prototypes (one number
for m = 2; docs/privacy.md measures what that links).

Q_k is generated as Stewart's (1980) product of Householder reflections of fresh
Gaussian vectors with Mezzadri's (2007) sign correction, the distribution of the Q of
the QR decomposition of a Gaussian matrix (Haar on O(d)), in O(d^2) random numbers and
O(m d^2) operations per client: never a d x d matrix, never a QR per client.

What it does not do: it is not encryption. Whoever has the seed (the host's key) undoes
it. A prototype can still be submitted at the comparator (after the map) of the
deployment it came from; that is what renewal is for. A matcher whose prototypes live
in a bounded pixel box (an external program) cannot be rotated: its similarity is not
rotation-invariant.

`secret_rotation` and `secret_offset` are the one gallery-wide isometry of the first
scheme (template protection version 1), kept to read galleries written with it.

numpy only (on the ``verify`` path).
"""

import hashlib

import numpy as np

from ssgallery.learn.similarity import RBFSimilarity


def _uniforms(seed, n):
    """``n`` uniforms on (0, 1), float64, from SHAKE-256 of ``seed``: the same numbers on
    every platform and numpy version (a gallery outlives its writer's numpy)."""
    raw = np.frombuffer(hashlib.shake_256(b"ssgallery-rotation\0" + seed).digest(8 * n),
                        dtype="<u8")
    return ((raw >> np.uint64(11)).astype(np.float64) + 0.5) / float(1 << 53)


def _normals(seed, n):
    """``n`` standard normals from SHAKE-128 of ``seed`` (Box-Muller on 32-bit uniforms,
    both outputs of each pair): the per-client streams, O(d^2) numbers per client."""
    pairs = -(-n // 2)
    raw = np.frombuffer(hashlib.shake_128(b"ssgallery-isometry-2\0" + seed).digest(8 * pairs),
                        dtype="<u4").reshape(2, pairs)
    u = (raw.astype(np.float64) + 0.5) * (1.0 / 4294967296.0)
    r, t = np.sqrt(-2.0 * np.log(u[0])), (2.0 * np.pi) * u[1]
    return np.concatenate([r * np.cos(t), r * np.sin(t)])[:n]


def secret_offset(seed, d, scale):
    """The secret centre c (d,) of version 1: Gaussian entries of standard deviation
    ``scale``, from the secret ``seed`` (a stream apart from `secret_rotation`'s)."""
    u = _uniforms(b"offset\0" + seed, 2 * int(d)).reshape(2, int(d))
    return scale * np.sqrt(-2.0 * np.log(u[0])) * np.cos(2.0 * np.pi * u[1])


def secret_rotation(seed, d):
    """A Haar-random orthogonal matrix (d, d) from the secret ``seed`` (bytes), version 1.

    Gaussian entries (Box-Muller on `_uniforms`), QR, and the signs of R's diagonal
    folded into Q (Mezzadri 2007), so Q is uniform on O(d) and unique for the seed.
    """
    d = int(d)
    if d < 1:
        raise ValueError(f"dimension must be >= 1, got {d}")
    u = _uniforms(seed, 2 * d * d).reshape(2, d, d)
    G = np.sqrt(-2.0 * np.log(u[0])) * np.cos(2.0 * np.pi * u[1])
    Q, R = np.linalg.qr(G)
    return Q * np.where(np.diag(R) < 0, -1.0, 1.0)


class Isometries:
    """k secret isometries z -> Q_i (z - c_i) of R^d, one per seed: Q_i Haar-random,
    c_i with Gaussian entries of standard deviation ``scale``.

    Q_i = H_0 H_1 ... H_{d-2} D (Stewart 1980): H_j reflects coordinates j..d-1 about
    the hyperplane orthogonal to w_j, with w_j from a fresh Gaussian vector x of length
    d - j (v = x + sign(x_0) ||x|| e_0, the Householder vector that QR would compute),
    and D the signs that make R's diagonal positive (Mezzadri 2007).

    Parameters
    ----------
    seeds : list of bytes
        One secret seed per isometry.
    d : int
        The dimension.
    scale : float
        Standard deviation of the centres' entries.
    """

    def __init__(self, seeds, d, scale):
        d, k = int(d), len(seeds)
        if d < 1:
            raise ValueError(f"dimension must be >= 1, got {d}")
        n = d * (d + 1) // 2  # the reflections' vectors and the last diagonal sign
        G = np.stack([_normals(s, n + d) for s in seeds]) if k else np.zeros((0, n + d))
        self.d, self.offset = d, scale * G[:, n:]
        self.signs, self.vectors = np.empty((k, d)), []
        start = 0
        for j in range(d - 1):
            x = G[:, start:start + d - j]
            start += d - j
            s = np.where(x[:, 0] < 0, -1.0, 1.0)
            v = x.copy()
            v[:, 0] += s * np.linalg.norm(x, axis=1)
            self.vectors.append(v / np.linalg.norm(v, axis=1)[:, None])
            self.signs[:, j] = -s  # the sign of R_jj = -sign(x_0) ||x||
        self.signs[:, d - 1] = np.where(G[:, start] < 0, -1.0, 1.0)

    def apply(self, Z, owner, inverse=False):
        """Rows of ``Z`` (p, d) through their isometries: row r through isometry
        ``owner[r]``: Q (z - c), or with ``inverse`` Q^T z + c. Returns a new (p, d)."""
        Y = np.array(Z, dtype=np.float64, copy=True).reshape(-1, self.d)
        owner = np.asarray(owner, dtype=np.intp)
        if not inverse:
            Y -= self.offset[owner]
            Y *= self.signs[owner]
        steps = range(self.d - 1) if inverse else range(self.d - 2, -1, -1)
        for j in steps:
            w = self.vectors[j][owner]
            Y[:, j:] -= 2.0 * np.einsum("pj,pj->p", Y[:, j:], w)[:, None] * w
        if inverse:
            Y *= self.signs[owner]
            Y += self.offset[owner]
        return Y


def rotatable(matcher):
    """None when ``matcher``'s similarity survives a rotation of its space (RBF on
    unbounded features), else why not (one line)."""
    if matcher.bounds() is not None:
        return (f"the {matcher.name} matcher's prototypes live in a bounded space (pixels "
                "for a black-box program) and its similarity is not rotation-invariant; "
                "templates cannot be rotated (encrypt the gallery instead)")
    if not isinstance(matcher.similarity(), RBFSimilarity):
        return (f"the {matcher.name} matcher's similarity is not an RBF of the feature "
                "distance; a rotation would change its scores")
    return None
