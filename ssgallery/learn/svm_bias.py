"""The SVM's bias b when no support vector is free (every alpha at a bound).

libsvm (``calculate_rho``; Chang and Lin, "LIBSVM: a library for support vector
machines", ACM TIST 2(3), 2011) takes b as the mean of y_i - f0(x_i) over the free
support vectors (0 < alpha_i < C_i), where f0 = sum_j alpha_j y_j K(., x_j) is the
decision function without b. When there is none, the KKT conditions only bound b to an
interval [lo, hi], and libsvm takes its middle. With the teacher's class weights (each
class's C times the other class's prior) the two classes weigh the same, so every alpha
at its bound satisfies sum_i alpha_i y_i = 0 exactly and, at a small C, the solution is
often "all at bound": the weighted hinge loss is then flat in b on [lo, hi] and any b in
it is an SVM solution (the start of the regularisation path of Hastie, Rosset,
Tibshirani and Zhu, JMLR 5, 2004, for balanced classes). In floating point one alpha
often ends 1e-14 below its bound; libsvm counts it as free and returns an END of the
interval instead of its middle, so fits of the same client on nearly the same data put
b at either end or in the middle.

`free_support` counts the free SVs with a relative tolerance on "at a bound";
`bias_interval` computes [lo, hi] with the same tolerance.
"""

import numpy as np

RTOL = 1e-8  # alpha within RTOL * C_i of 0 or of C_i is at that bound


def free_support(alpha, upper, rtol=RTOL):
    """Mask of the free alphas: rtol * C_i < alpha_i < (1 - rtol) * C_i.

    Parameters
    ----------
    alpha : ndarray of shape (n,)
        |dual coefficient| of every training sample (0 for a non-SV).
    upper : ndarray of shape (n,)
        Each sample's bound C_i (C times its class weight).
    rtol : float
        Relative tolerance.

    Returns
    -------
    ndarray of bool, shape (n,)
    """
    return (alpha > rtol * upper) & (alpha < (1.0 - rtol) * upper)


def bias_interval(f0, y, alpha, upper, rtol=RTOL):
    """The interval of b allowed by the KKT conditions when no alpha is free.

    A sample at its upper bound has y_i (f0_i + b) <= 1, one at 0 has
    y_i (f0_i + b) >= 1.

    Parameters
    ----------
    f0 : ndarray of shape (n,)
        Training decision values without the bias.
    y : ndarray of shape (n,)
        +1 / -1.
    alpha, upper : ndarray of shape (n,)
        As in `free_support`.

    Returns
    -------
    (lo, hi) : tuple of float
    """
    at_upper = alpha >= (1.0 - rtol) * upper
    pos = y > 0
    below = np.r_[-np.inf, (-1.0 - f0)[at_upper & ~pos], (1.0 - f0)[~at_upper & pos]]
    above = np.r_[np.inf, (1.0 - f0)[at_upper & pos], (-1.0 - f0)[~at_upper & ~pos]]
    return float(below.max()), float(above.min())


__all__ = ["RTOL", "bias_interval", "free_support"]
