"""Protected templates in a gallery: the record of a keyed rotation of the matcher space
(`ssgallery.matchers.rotation`) and the matcher that applies it (issue 23 item 3).

A protected gallery holds each client's prototypes rotated, Q z_j, and no rendered
prototype image; its root attribute ``template_protection`` (JSON) says how::

    {"kind": "orthogonal-rotation", "version": 1, "d": d, "offset_scale": s,
     "salt": <32 hex, random per gallery>, "check": <32 hex>}

Q and the centre c (entries of standard deviation s: ten times the plain prototypes'
spread per dimension) are drawn from seed = HKDF-SHA256(privacy key, salt, "ssgallery-rotation-1")
(`ssgallery.formats.encryption.hkdf`): the key never enters the file, two galleries
compressed with the same key still get different rotations, and ``check`` (the first 16
bytes of HMAC-SHA256(seed, "ssgallery rotation check")) tells a wrong key apart.
Readers that score probes (``verify``, ``identify``) or draw prototypes (``show``) wrap
the gallery's matcher with `protected_matcher`; without the key they refuse the
gallery with one line.
"""

import dataclasses
import hashlib
import hmac
import json
import os

import numpy as np

from ssgallery.errors import FormatError, SsgalleryError, option
from ssgallery.formats.encryption import PRIVACY_KEY_ENV, hkdf
from ssgallery.matchers.rotation import (
    RotatedMatcher,
    rotatable,
    secret_offset,
    secret_rotation,
)

ATTR = "template_protection"
KIND = "orthogonal-rotation"
VERSION = 1
OFFSET_SPREADS = 10.0  # the centre's spread, in spreads of the plain prototypes


def _seed(privacy_key, salt):
    return hkdf(privacy_key, salt, b"ssgallery-rotation-1")


def _check(seed):
    return hmac.new(seed, b"ssgallery rotation check", hashlib.sha256).digest()[:16]


def new_protection(matcher, privacy_key, prototypes):
    """A fresh isometry of ``matcher``'s space under ``privacy_key`` (bytes), about a
    centre ten times wider than the spread of ``prototypes`` (P, d), the plain
    prototypes of every client.

    Returns
    -------
    record : dict
        The gallery's ``template_protection`` attribute (JSON-able).
    rotated : RotatedMatcher
        ``rotated.rotate(Z)`` gives the prototypes to store.

    Raises
    ------
    SsgalleryError
        No key, or a matcher whose space cannot be rotated (`rotatable`).
    """
    if privacy_key is None:
        raise SsgalleryError(f"protecting the templates needs the privacy key "
                             f"({option('privacy_key_file')} or ${PRIVACY_KEY_ENV})")
    problem = rotatable(matcher)
    if problem:
        raise SsgalleryError(problem)
    salt, d = os.urandom(16), int(matcher.dimension())
    P = np.asarray(prototypes, dtype=np.float64).reshape(-1, d)
    spread = float(np.sqrt(np.mean((P - P.mean(0)) ** 2))) if len(P) > 1 else 1.0
    seed = _seed(privacy_key, salt)
    record = {"kind": KIND, "version": VERSION, "d": d, "salt": salt.hex(),
              "check": _check(seed).hex(), "offset_scale": OFFSET_SPREADS * (spread or 1.0)}
    return record, _isometry(matcher, seed, record)


def _isometry(matcher, seed, record):
    d = record["d"]
    return RotatedMatcher(matcher, secret_rotation(seed, d),
                          secret_offset(seed, d, record["offset_scale"]))


def protect_models(models, rotated):
    """Copies of client models (`ssgallery.formats.gallery.ClientModel`) with their
    prototypes rotated by ``rotated`` and no rendered images; g(x) on rotated features is
    unchanged (`ssgallery.matchers.rotation`)."""
    return [dataclasses.replace(model, prototypes=rotated.rotate(model.prototypes),
                                prototype_images=None) for model in models]


def protection_record(header, path=None):
    """The gallery header's ``template_protection`` record (dict), None when the
    templates are plain. Raises `FormatError` on a malformed record."""
    raw = header.get(ATTR)
    if raw is None:
        return None
    try:
        record = json.loads(raw.decode() if isinstance(raw, bytes) else raw)
        ok = (isinstance(record, dict) and record.get("kind") == KIND
              and record.get("version") == VERSION and isinstance(record.get("d"), int)
              and record["d"] >= 1 and len(bytes.fromhex(record["salt"])) == 16
              and isinstance(record.get("offset_scale"), float)
              and np.isfinite(record["offset_scale"]) and record["offset_scale"] > 0
              and len(bytes.fromhex(record["check"])) == 16)
    except (ValueError, TypeError, KeyError, AttributeError):
        ok = False
    if not ok:
        raise FormatError("corrupt gallery header: bad template_protection record", path=path)
    return record


def _needs_key(path):
    return FormatError(f"the gallery's templates are protected (rotated with a secret key); "
                       f"using them needs the privacy key ({option('privacy_key_file')} or "
                       f"${PRIVACY_KEY_ENV})", path=path)


class UnkeyedMatcher:
    """The matcher of a protected gallery read without the key (``info``): it knows its
    dimension and similarity range, cannot check the prototypes (they are plausible only
    through the key) and refuses to map probes."""

    def __init__(self, inner, path):
        self.inner, self.path = inner, path
        self.name = inner.name

    def dimension(self):
        return self.inner.dimension()

    def similarity_range(self):
        return self.inner.similarity_range()

    def check_prototypes(self, Z):
        """Nothing can be checked without the key."""

    def __getattr__(self, name):
        raise _needs_key(self.path)


def protected_matcher(matcher, header, privacy_key, path=None, required=True):
    """``matcher`` as the gallery's prototypes need it: itself for plain templates, the
    keyed `RotatedMatcher` for protected ones (an `UnkeyedMatcher` without the key
    when not ``required``).

    Raises
    ------
    FormatError
        Protected templates and no key (``required``), another key, or a record that
        does not fit the matcher (one line naming the file).
    """
    record = protection_record(header, path)
    if record is None:
        return matcher
    if privacy_key is None:
        if required:
            raise _needs_key(path)
        return UnkeyedMatcher(matcher, path)
    seed = _seed(privacy_key, bytes.fromhex(record["salt"]))
    if not hmac.compare_digest(_check(seed), bytes.fromhex(record["check"])):
        raise FormatError("the gallery's templates are protected with another privacy key",
                          path=path)
    if matcher.dimension() != record["d"]:
        raise FormatError(f"corrupt gallery: template_protection is for dimension "
                          f"{record['d']}, the matcher's is {matcher.dimension()}", path=path)
    return _isometry(matcher, seed, record)

