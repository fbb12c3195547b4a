"""Protected templates in a gallery: the record of keyed per-client isometries of the
matcher space (`ssgallery.matchers.rotation`) and the map that applies them (issue 23
item 3).

A protected gallery holds each client's prototypes through the client's own isometry,
Q_k (z_j - c_k), and no rendered prototype image; its root attribute
``template_protection`` (JSON) says how::

    {"kind": "orthogonal-rotation", "version": 2, "d": d, "offset_scale": s,
     "salt": <32 hex, random per gallery>, "check": <32 hex>}

The gallery's seed is HKDF-SHA256(privacy key, salt, "ssgallery-rotation-2")
(`ssgallery.formats.encryption.hkdf`); client k's seed is HMAC-SHA256(seed, "client"
|| 0 || its id), from which its Haar-random Q_k and its centre c_k (entries of standard
deviation s: ten times the plain prototypes' spread per dimension) are drawn
(`ssgallery.matchers.rotation.Isometries`). The key never enters the file, two
galleries compressed with the same key get unrelated isometries, and ``check`` (the
first 16 bytes of HMAC-SHA256(seed, "ssgallery rotation check")) tells a wrong key
apart. Readers holding the key put the prototypes back (`TemplateMap.unprotect`) as they
read them, so every score is the plain gallery's to rounding; without the key a reader
that scores probes or draws prototypes refuses the gallery with one line.

Version 1 (one isometry for the whole gallery, seed label "ssgallery-rotation-1") kept
every distance between clients, which links people across deployments
(docs/privacy.md); it is still read, never written: compress again to renew.
"""

import dataclasses
import hashlib
import hmac
import json
import os

import numpy as np

from ssgallery.checks import is_int
from ssgallery.errors import FormatError, SsgalleryError
from ssgallery.formats.encryption import hkdf
from ssgallery.formats.integrity import KeyNeeded, checked_key
from ssgallery.matchers.rotation import (
    Isometries,
    rotatable,
    secret_offset,
    secret_rotation,
)

ATTR = "template_protection"
KIND = "orthogonal-rotation"
VERSION = 2  # per-client isometries; 1: one for the gallery (read, never written)
VERSIONS = (1, 2)
OFFSET_SPREADS = 10.0  # the centres' spread, in spreads of the plain prototypes
BATCH = 256  # clients whose isometries are held in memory at once


def _seed(privacy_key, salt, version):
    """The rotation seed from the privacy key (`ssgallery.formats.integrity.checked_key`)."""
    return hkdf(checked_key(privacy_key, "privacy"), salt, b"ssgallery-rotation-%d" % version)


def _check(seed):
    return hmac.new(seed, b"ssgallery rotation check", hashlib.sha256).digest()[:16]


def _client_seed(seed, client_id):
    name = client_id.encode("utf-8", "surrogateescape")
    return hmac.new(seed, b"client\0" + name, hashlib.sha256).digest()


class TemplateMap:
    """The keyed isometries of a protected gallery: `protect` (plain -> stored) and
    `unprotect` (stored -> plain) of every client's prototypes.

    Parameters
    ----------
    record : dict
        The gallery's ``template_protection`` record (`protection_record`).
    seed : bytes
        The gallery's seed (from the privacy key and the record's salt).
    """

    def __init__(self, record, seed):
        self.record, self._seed = record, seed
        self.d, self.version = record["d"], record["version"]

    def protect(self, client_ids, Z, offsets):
        """Plain prototypes -> stored. ``Z`` (P, d) holds client ``client_ids[k]``'s
        rows ``offsets[k]:offsets[k + 1]``. Returns a new (P, d)."""
        return self._apply(client_ids, Z, offsets, inverse=False)

    def unprotect(self, client_ids, Z, offsets):
        """Stored prototypes -> plain (see `protect`)."""
        return self._apply(client_ids, Z, offsets, inverse=True)

    def _apply(self, client_ids, Z, offsets, inverse):
        Z = np.asarray(Z, dtype=np.float64).reshape(-1, self.d)
        scale = self.record["offset_scale"]
        if self.version == 1:
            Q = secret_rotation(self._seed, self.d)
            c = secret_offset(self._seed, self.d, scale)
            return Z @ Q + c if inverse else (Z - c) @ Q.T
        out = np.empty_like(Z)
        offsets = np.asarray(offsets, dtype=np.intp)
        for first in range(0, len(client_ids), BATCH):
            ids = client_ids[first:first + BATCH]
            lo, hi = offsets[first], offsets[first + len(ids)]
            owner = np.repeat(np.arange(len(ids)), np.diff(offsets[first:first + len(ids) + 1]))
            iso = Isometries([_client_seed(self._seed, str(c)) for c in ids], self.d, scale)
            out[lo:hi] = iso.apply(Z[lo:hi], owner, inverse)
        return out


def _stacked(models):
    ids = [model.client_id for model in models]
    offsets = np.concatenate([[0], np.cumsum([len(model.prototypes) for model in models])])
    return ids, offsets


def new_protection(matcher, privacy_key, prototypes):
    """Fresh per-client isometries of ``matcher``'s space under ``privacy_key`` (bytes),
    about centres ten times wider than the spread of ``prototypes`` (P, d), the plain
    prototypes of every client.

    Returns
    -------
    record : dict
        The gallery's ``template_protection`` attribute (JSON-able).
    tmap : TemplateMap

    Raises
    ------
    SsgalleryError
        No key, or a matcher whose space cannot be rotated (`rotatable`).
    """
    if privacy_key is None:
        raise KeyNeeded("protecting the templates needs the privacy key")
    problem = rotatable(matcher)
    if problem:
        raise SsgalleryError(problem)
    salt, d = os.urandom(16), int(matcher.dimension())
    P = np.asarray(prototypes, dtype=np.float64).reshape(-1, d)
    spread = float(np.sqrt(np.mean((P - P.mean(0)) ** 2))) if len(P) > 1 else 1.0
    seed = _seed(privacy_key, salt, VERSION)
    record = {"kind": KIND, "version": VERSION, "d": d, "salt": salt.hex(),
              "check": _check(seed).hex(), "offset_scale": OFFSET_SPREADS * (spread or 1.0)}
    return record, TemplateMap(record, seed)


def protect_models(models, tmap):
    """Copies of client models (`ssgallery.formats.gallery.ClientModel`) with their
    prototypes through their isometries and no rendered images; g(x) with the prototypes
    put back is unchanged (`ssgallery.matchers.rotation`)."""
    ids, offsets = _stacked(models)
    Z = tmap.protect(ids, np.concatenate([m.prototypes for m in models]), offsets) \
        if models else None
    return [dataclasses.replace(model, prototypes=Z[lo:hi], prototype_images=None)
            for model, lo, hi in zip(models, offsets[:-1], offsets[1:])]


def unprotect_models(models, tmap):
    """Put the prototypes of ``models`` (read from a protected gallery) back in place."""
    if not models:
        return
    ids, offsets = _stacked(models)
    Z = tmap.unprotect(ids, np.concatenate([m.prototypes for m in models]), offsets)
    for model, lo, hi in zip(models, offsets[:-1], offsets[1:]):
        model.prototypes = Z[lo:hi]


def protection_record(header, path=None):
    """The gallery header's ``template_protection`` record (dict), None when the
    templates are plain. Raises `FormatError` on a malformed record."""
    raw = header.get(ATTR)
    if raw is None:
        return None
    try:
        record = json.loads(raw.decode() if isinstance(raw, bytes) else raw)
        ok = (isinstance(record, dict) and record.get("kind") == KIND
              and is_int(record.get("version")) and record["version"] in VERSIONS
              and is_int(record.get("d"))
              and record["d"] >= 1 and len(bytes.fromhex(record["salt"])) == 16
              and isinstance(record.get("offset_scale"), float)
              and np.isfinite(record["offset_scale"]) and record["offset_scale"] > 0
              and len(bytes.fromhex(record["check"])) == 16)
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError):  # nested
        ok = False  # past the stack: as malformed as any other
    if not ok:
        raise FormatError("corrupt gallery header: bad template_protection record", path=path)
    return record


def _needs_key(path):
    return KeyNeeded("the gallery's templates are protected (rotated with a secret key); "
                     "using them needs the privacy key", path=path)


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

    def settings(self):
        """The matcher's configuration as it holds (the gallery's header carries it in
        the clear; the key protects the templates, not the matcher's settings)."""
        return self.inner.settings()

    def recorded_contract(self):
        """What the matcher holds of a program's contract (``info``), in the clear as
        its settings are."""
        return self.inner.recorded_contract()

    @property
    def fta_folds_(self):
        """What the folds of the matcher's failure-to-acquire limits held out
        (`ssgallery.matchers.Matcher.fta_folds_`), in the clear as its settings are."""
        return self.inner.fta_folds_

    def __getattr__(self, name):
        raise _needs_key(self.path)


def keyed_templates(matcher, header, privacy_key, path=None, required=True):
    """(matcher, template map) for the gallery's prototypes: ``(matcher, None)`` for
    plain templates; ``(matcher, TemplateMap)`` for protected ones with the key (the
    reader puts the prototypes back with it before using them); ``(UnkeyedMatcher,
    None)`` without the key when not ``required``.

    Raises
    ------
    FormatError
        Protected templates and no key (``required``), another key, or a record that
        does not fit the matcher (one line naming the file).
    """
    record = protection_record(header, path)
    if record is None:
        return matcher, None
    if privacy_key is None:
        if required:
            raise _needs_key(path)
        return UnkeyedMatcher(matcher, path), None
    seed = _seed(privacy_key, bytes.fromhex(record["salt"]), record["version"])
    if not hmac.compare_digest(_check(seed), bytes.fromhex(record["check"])):
        raise FormatError("the gallery's templates are protected with another privacy key",
                          path=path)
    if matcher.dimension() != record["d"]:
        raise FormatError(f"corrupt gallery: template_protection is for dimension "
                          f"{record['d']}, the matcher's is {matcher.dimension()}", path=path)
    return matcher, TemplateMap(record, seed)
