"""``verify``: score probe images against one claimed client.

Reads the gallery's header, its matcher state and the claimed client's group only,
maps the probes to the matcher space in one batch, and computes m similarities per
probe: g(x) = sum_j beta_j s(x, z_j) + b (Eq. 1 (g(x))). A claim is accepted when
g(x) >= the client's threshold.

This module is on the latency-critical path: it imports numpy, h5py and PIL (through
:mod:`ssgallery.images.ingest`) and the matcher, never scikit-learn or matplotlib.
"""

import os
from dataclasses import dataclass

import numpy as np

from ssgallery.errors import InputError
from ssgallery.formats.textfile import read_lines


@dataclass
class VerifyResult:
    """One probe's verdict."""

    probe: str
    claim: str
    score: float
    threshold: float
    accept: bool

    def to_dict(self):
        return dict(self.__dict__)


def read_probe_list(list_path):
    """Paths listed in a text file, one per line (blank lines and ``#`` comments skipped).

    Relative paths are taken relative to the current directory, like ``xargs``.
    """
    lines = read_lines(list_path, "probe list")
    paths = [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]
    if not paths:
        raise InputError("probe list is empty", path=list_path)
    return paths


def load_client(gallery_path, claim, *, key_file=None, matcher_cmd=None):
    """The claimed client's model with its matcher (``model.matcher``), checked.

    ``key_file`` (default ``$SSGALLERY_KEY_FILE``): the host's signing key; ``matcher_cmd``
    (default ``$SSGALLERY_MATCHER_CMD`` or the configuration file): the host's external
    matcher program (see :mod:`ssgallery.matchers.host`)."""
    from ssgallery.formats.gallery import read_client

    return read_client(gallery_path, claim, **host_settings(key_file, matcher_cmd))


def host_settings(key_file=None, matcher_cmd=None):
    """What this host brings to a gallery read: ``{"key": ..., "host": ...}`` for
    :func:`ssgallery.formats.gallery.read_client` and ``read_search`` (the signing key,
    default ``$SSGALLERY_KEY_FILE``; the external matcher program, see
    :mod:`ssgallery.matchers.host`)."""
    from ssgallery.formats.integrity import load_key

    host = None
    if matcher_cmd is not None:
        from ssgallery.matchers.host import host_matcher

        host = host_matcher(matcher_cmd)
    return {"key": load_key(key_file), "host": host}


def score_images(model, images):
    """g(x) of probe images (n, H, W) for a client model, shape (n,)."""
    matcher = model.matcher
    features = matcher.transform(np.asarray(images, dtype=np.float32))
    return model.decision_function(features, model.similarity_function(matcher))


def verify(gallery_path, probes, claim, *, strict=False, warn=None, key_file=None,
           matcher_cmd=None):
    """Verify probe images against a claimed identity.

    Parameters
    ----------
    gallery_path : str or Path
    probes : list of str or Path
        Probe image files; scored in one batch.
    claim : str
        The claimed client id.
    strict : bool
        Refuse probes whose size differs from the gallery's images instead of resizing.
    warn : callable(str), optional
        Receives warnings (e.g. resized probes).
    key_file, matcher_cmd : str, optional
        See :func:`load_client`.

    Returns
    -------
    list of VerifyResult
        In the order of ``probes``.

    Raises
    ------
    FormatError
        Missing, foreign, corrupt or newer gallery.
    SsgalleryError
        Unknown claim.
    InputError
        A bad probe image.
    """
    from ssgallery.images.ingest import default_warn, load_image_list

    probes = [os.fspath(p) for p in probes]
    if not probes:
        raise InputError("no probe images given")
    model = load_client(gallery_path, claim, key_file=key_file, matcher_cmd=matcher_cmd)
    h, w = (int(v) for v in model.header["image_shape"])
    images = load_image_list(probes, size=(w, h), strict=strict, warn=warn or default_warn)
    scores = score_images(model, images)
    return [VerifyResult(probe=p, claim=claim, score=float(s), threshold=model.threshold,
                         accept=bool(s >= model.threshold)) for p, s in zip(probes, scores)]
