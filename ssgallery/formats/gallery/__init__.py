"""The gallery file (HDF5, default ``gallery.h5``): what a verification host deploys.

Layout (format ``ssgallery-gallery``, `FORMAT_VERSION` = 3; version 2, float64
prototypes only, is written when the prototypes need no more and is still read:
`ssgallery.formats.prototypes`)::

    /                       attrs: format, format_version, tool_version, created,
                                   matcher (name), matcher_config (JSON, never a command),
                                   image_shape, target_far, store (path it was compressed
                                   from), threshold_mode, calibration (JSON: mode, target
                                   FAR, normalised global threshold, held-out FAR counts
                                   and interval; both absent in older galleries: per-client
                                   thresholds), section_digests (JSON: {"matcher": sha256, ...}),
                                   digest (root digest), hmac (optional signature)
    /matcher                matcher state: arrays as datasets, numbers/strings as attrs
                            (e.g. PCA mean and basis for eigenface)
    /client_index           (N,) rows (id: UTF-8 bytes, digest: SHA-256 hex of the
                            client's group), sorted by id
    /clients/<client_id>    prototypes (m, d) in the matcher space, uint8 when every
                            prototype of the gallery is a whole number in [0, 255]
                            (a black box's training images; version 3), else float64,
                            read back as float64,
                            prototype_images (m, H, W) uint8 (rendered, for `show`),
                            beta (m,); attrs intercept, threshold, similarity (JSON),
                            provenance (m, lambda, solver, init, omega, ...),
                            normalization (JSON, e.g. {"kind": "znorm", "mean", "std", "n"})
    /index                  every client's model stacked for 1:N search
                            (`ssgallery.formats.search_index`)

Integrity (`ssgallery.formats.integrity`): ``digest`` = SHA-256 over the root
attributes (but ``digest``/``hmac``; they include ``section_digests``, so the matcher
state's digest and any other section's, such as a future ``/index``) and the bytes of
``/client_index``; each client's group has its digest in the index. A writer adding a
section puts its `ssgallery.formats.integrity.node_digest` into
``section_digests`` before the root digest is computed; its readers check it.
`read_client` checks the signature (when the host has a key), the root digest, the
matcher's digest and the one client's digest, then the values (`check_model`):
finite, consistent shapes, m >= 1, gamma > 0, prototypes plausible in the matcher space,
and a threshold that some probes pass and some fail. It opens a constant number of
groups whatever the number of clients.

No training image is stored, only virtual prototypes, but prototypes are biometric
templates (docs/privacy.md: encryption, protected templates). Nothing is pickled:
`read_client` reads the header, the matcher state and one client group with h5py
and numpy only (this module is on the ``verify`` path: no scikit-learn here).
"""

from ssgallery.formats.gallery.checks import check_model, never_accepting, score_range
from ssgallery.formats.gallery.model import (
    FORMAT,
    FORMAT_VERSION,
    KIND,
    OLDEST_VERSION,
    ClientModel,
    Gallery,
    model_bytes,
)
from ssgallery.formats.gallery.read import open_search, read_client, read_gallery, read_search
from ssgallery.formats.gallery.summary import (
    client_summary,
    gallery_summary,
    header_calibration,
    header_open_set,
)
from ssgallery.formats.gallery.write import write_gallery

__all__ = ["FORMAT", "FORMAT_VERSION", "KIND", "OLDEST_VERSION", "ClientModel", "Gallery", "check_model",
           "client_summary", "gallery_summary", "header_calibration", "header_open_set", "model_bytes",
           "never_accepting", "open_search", "read_client", "read_gallery", "read_search", "score_range",
           "write_gallery"]
