"""``verify``: score probe images against one claimed client.

Reads the gallery's header, its matcher state and the claimed client's group only,
maps the probes to the matcher space in one batch, and computes m similarities per
probe: g(x) = sum_j beta_j s(x, z_j) + b (Eq. 1 (g(x))). A claim is accepted when
g(x) >= the client's threshold.

Failure to acquire (FTA): a probe that is not a usable face is never scored and never
accepted. It is one when the matcher says it is not a face in its own terms
(`ssgallery.matchers.base.Matcher.is_face`: for eigenface, too far from face
space), or when the file is so small that it was enlarged more than
1 / `MIN_SCALE` times in a dimension to the gallery's size (no face detail left).

This module is on the latency-critical path: it imports numpy, h5py and PIL (through
`ssgallery.images.ingest`) and the matcher, never scikit-learn or matplotlib.
"""

import os
from dataclasses import dataclass

import numpy as np

from ssgallery.errors import InputError, clipped
from ssgallery.formats.integrity import reads_key_files
from ssgallery.formats.textfile import read_lines
from ssgallery.images.ingest import MIN_SCALE, too_small  # noqa: F401  (MIN_SCALE: public here too)

ACCEPT, REJECT, FTA = "accept", "reject", "failure-to-acquire"


@dataclass
class VerifyResult:
    """One probe's verdict: ``status`` is ACCEPT, REJECT or FTA; ``score`` is None for a
    failure to acquire (never scored), ``quality`` the matcher's (None if it has no
    measure) and ``reason`` says why a probe failed to acquire."""

    probe: str
    claim: str
    score: float
    threshold: float
    accept: bool
    status: str = ACCEPT
    quality: float = None
    reason: str = None

    def to_dict(self):
        return dict(self.__dict__)


def failures_to_acquire(matcher, images, sizes=None):
    """Which probes (n, H, W) fail to acquire, and why.

    Parameters
    ----------
    matcher : Matcher
    images : ndarray, shape (n, H, W)
    sizes : ndarray, shape (n, 2), optional
        (width, height) of each file before it was resized to the gallery's size.

    Returns
    -------
    fta : ndarray of bool, shape (n,)
    quality : ndarray of float, shape (n,) (NaN: the matcher has no measure)
    reasons : list of str or None
    """
    from ssgallery.matchers.base import face_check

    ok, quality = face_check(matcher, images, each=True)
    fta = ~ok
    limit = getattr(matcher, "quality_threshold_", None)
    reasons = [None if not bad else f"not a face for the {matcher.name} matcher" + (
               f" (quality {q:.3g} < {limit:.3g})" if limit is not None else "")
               for bad, q in zip(fta, quality)]
    if sizes is not None:
        h, w = images.shape[1:]
        for i, have in enumerate(np.asarray(sizes).tolist()):
            small = too_small(have, (w, h))
            if small:
                fta[i], reasons[i] = True, small
    return fta, quality, reasons


def read_probe_list(list_path):
    """Paths listed in a text file, one per line (blank lines and ``#`` comments skipped).

    Relative paths are taken relative to the current directory, like ``xargs``. A path
    that does not exist is refused naming its line, and, when it is relative and exists
    beside the list, saying so (the usual mistake: a list written in the probes' folder).
    """
    lines = read_lines(list_path, "probe list")
    numbered = [(n, line.strip()) for n, line in enumerate(lines, 1)
                if line.strip() and not line.lstrip().startswith("#")]
    if not numbered:
        raise InputError("probe list is empty", path=list_path)
    for n, path in numbered:
        if not os.path.lexists(path):
            beside = os.path.join(os.path.dirname(os.fspath(list_path)), path)
            hint = (f"; paths are read from the current folder, not the list's: {beside} "
                    "exists" if not os.path.isabs(path) and os.path.exists(beside) else "")
            raise InputError(f"line {n}: no such file {clipped(path)}{hint}", path=list_path)
    return [path for _, path in numbered]


@reads_key_files()
def load_client(gallery_path, claim, *, key_file=None, matcher_cmd=None,
                privacy_key_file=None, warn=None):
    """The claimed client's model with its matcher (``model.matcher``), checked.

    ``key_file`` (default ``$SSGALLERY_KEY_FILE``): the host's signing key; ``matcher_cmd``
    (default ``$SSGALLERY_MATCHER_CMD`` or the configuration file): the host's external
    matcher program (see `ssgallery.matchers.host`); ``privacy_key_file`` (default
    ``$SSGALLERY_PRIVACY_KEY_FILE``): the host's privacy key, needed for a gallery with
    protected templates (`ssgallery.formats.protect`); ``warn``: told when the gallery's
    matcher runs no program and ignores ``matcher_cmd``."""
    from ssgallery.formats.gallery import read_client

    return read_client(gallery_path, claim,
                       **host_settings(key_file, matcher_cmd, privacy_key_file, warn))


def host_settings(key_file=None, matcher_cmd=None, privacy_key_file=None, warn=None):
    """What this host brings to a gallery read: ``{"key": ..., "host": ...,
    "privacy_key": ...}`` for `ssgallery.formats.gallery.read_client` and
    ``read_search`` (the signing key, default ``$SSGALLERY_KEY_FILE``; the external
    matcher program, see `ssgallery.matchers.host`, with ``warn`` told when the
    gallery's matcher runs no program and ignores ``matcher_cmd``; the privacy key,
    default ``$SSGALLERY_PRIVACY_KEY_FILE``)."""
    from ssgallery.formats.encryption import load_keys

    host = None
    if matcher_cmd is not None:
        from ssgallery.matchers.host import host_matcher

        host = host_matcher(matcher_cmd, warn)
    key, privacy_key = load_keys(key_file, privacy_key_file)  # never one secret
    return {"key": key, "host": host, "privacy_key": privacy_key}


def score_images(model, images, progress=None):
    """g(x) of probe images (n, H, W) for a client model, shape (n,); ``progress``: one
    step per image mapped to the matcher space (`transform_in_chunks`)."""
    from ssgallery.matchers.base import transform_in_chunks

    features = transform_in_chunks(model.matcher, np.asarray(images, dtype=np.float32),
                                   progress=progress, each=True)
    return score_features(model, model.matcher, features)


def score_features(model, matcher, features):
    """g(x) of probes (n, d) in ``matcher``'s space for a client's record, shape (n,):
    the one computation of a score ``verify`` and ``identify`` print (identify's stacked
    index only ranks the clients). Given features from ``transform_in_chunks(...,
    each=True)``, a probe's score is the same to the last digit alone and in any batch
    (each probe is summed as it would be alone:
    `ssgallery.formats.gallery.model.ClientModel.decision_function`)."""
    return model.decision_function(features, model.similarity_function(matcher))


@reads_key_files()
def verify(gallery_path, probes, claim, *, strict=False, warn=None, key_file=None,
           matcher_cmd=None, progress=None, privacy_key_file=None):
    """Verify probe images against a claimed identity.

    Parameters
    ----------
    gallery_path : str or Path
    probes : list of str or Path
        Probe image files; read and scored `BATCH` at a time.
    claim : str
        The claimed client id.
    strict : bool
        Refuse probes whose size differs from the gallery's images instead of resizing.
    warn : callable(str), optional
        Receives warnings (e.g. resized probes, a ``matcher_cmd`` the gallery's matcher
        ignores).
    key_file, matcher_cmd, privacy_key_file : str, optional
        See `load_client`.
    progress : ssgallery.progress.Progress, optional
        Reports reading the probes and mapping them to the matcher space (one step per
        image).

    Returns
    -------
    list of VerifyResult
        In the order of ``probes``; failures to acquire (`failures_to_acquire`)
        are never scored and never accepted.

    Raises
    ------
    FormatError
        Missing, foreign, corrupt or newer gallery.
    UnknownClientError
        Unknown claim.
    InputError
        A bad probe image.
    """
    probes = [os.fspath(p) for p in probes]
    if not probes:
        raise InputError("no probe images given")
    model = load_client(gallery_path, claim, key_file=key_file, matcher_cmd=matcher_cmd,
                        privacy_key_file=privacy_key_file, warn=warn)
    out = []
    for start, images, sizes, shown in probe_batches(probes, model.header["image_shape"],
                                                     strict, warn, progress):
        fta, quality, reasons = failures_to_acquire(model.matcher, images, sizes)
        scores = np.full(len(images), np.nan)
        if not fta.all():
            scores[~fta] = score_images(model, images[~fta], shown)
        for p, s, bad, q, why in zip(probes[start:], scores, fta, quality, reasons):
            status = FTA if bad else (ACCEPT if s >= model.threshold else REJECT)
            out.append(VerifyResult(probe=p, claim=claim, score=None if bad else float(s),
                                    threshold=model.threshold, accept=status == ACCEPT,
                                    status=status,
                                    quality=None if np.isnan(q) else float(q), reason=why))
    return out


BATCH = 256  # probe images read, mapped and scored at once (verify, identify)


def probe_batches(probes, image_shape, strict=False, warn=None, progress=None):
    """Yield ``(start, images (k, H, W), sizes (k, 2), progress)`` for
    ``probes[start:start + k]``, `BATCH` files at a time, each brought to
    ``image_shape`` (H, W) as `ssgallery.images.ingest.load_image_list` does: memory
    does not grow with the number of probes; the probes resized are warned of once, after
    the last batch. Of more than one batch, each batch's
    ``progress`` names its probes before every phase (``probes 257-405 of 405: reading
    probes``): a batch's phases start again from 0, the name says which batch it is."""
    from ssgallery.images.ingest import default_warn, load_image_list, resize_warning
    from ssgallery.progress import prefixed

    h, w = (int(v) for v in image_shape)
    n = len(probes)
    resized = []  # of every batch: one warning after the last
    for start in range(0, n, BATCH):
        end = min(start + BATCH, n)
        shown = progress if n <= BATCH else prefixed(progress,
                                                      f"probes {start + 1}-{end} of {n}: ")
        images, sizes = load_image_list(probes[start:end], size=(w, h), strict=strict,
                                        warn=warn or default_warn, return_sizes=True,
                                        progress=shown, resized=resized)
        yield start, images, sizes, shown
    if resized:
        (warn or default_warn)(resize_warning(resized, (w, h)))


def exit_status(results):
    """The batch rule of ``verify``: 1 if any probe is rejected, else 3 if any failed to
    acquire, else 0 (every claim accepted). A script's ``verify && open`` opens only
    when every probe was accepted."""
    statuses = {r.status for r in results}
    if REJECT in statuses:
        return 1
    return 3 if FTA in statuses else 0
