"""Writing a gallery file: atomically, every section's digest, the root digest and the
optional signature (layout: `ssgallery.formats.gallery`)."""


import numpy as np

from ssgallery import jsontext
from ssgallery.errors import SsgalleryError
from ssgallery.formats import integrity
from ssgallery.formats.encryption import distinct_keys
from ssgallery.formats.gallery.model import FORMAT
from ssgallery.formats.hdf5 import (
    client_id_problem,
    hdf5_image,
    read_state,
    write_header,
    write_state,
)
from ssgallery.formats.prototypes import storage_dtype, storage_version
from ssgallery.formats.search_index import write_index


def write_gallery(path, *, matcher_name, matcher_config, matcher_state, image_shape,
                  clients, attrs=None, force=False, key=None, privacy_key=None):
    """Write a gallery atomically (a crash or Ctrl-C leaves ``path`` untouched).

    Every client's prototypes (and ``/index``'s) are stored in one dtype, the smallest
    that holds all of them exactly (uint8 for whole numbers in [0, 255], else float64),
    and the file gets the oldest format version that allows it
    (`ssgallery.formats.prototypes`).

    Parameters
    ----------
    path : str or Path
    matcher_name : str
    matcher_config : dict
        JSON-serialisable matcher constructor parameters (never a command).
    matcher_state : dict
        Arrays / numbers / strings (see `ssgallery.matchers.Matcher.get_state`).
    image_shape : tuple (H, W)
    clients : list of ClientModel
    attrs : dict, optional
        Extra root attributes (numbers / strings), e.g. target_far, store.
    force : bool
        Replace an existing file that is not an ssgallery file (never a store: see
        `ssgallery.formats.atomic.check_writable`).
    key : bytes, optional
        The host's signing key: the root digest gets an HMAC-SHA256 (root attr ``hmac``).
    privacy_key : bytes, optional
        The host's privacy key: the file is encrypted in memory before it is written
        (`ssgallery.formats.encryption`; signing and encryption compose: the HMAC is
        inside the ciphertext).
    """

    from ssgallery.formats.atomic import atomic_path
    from ssgallery.formats.seal import USERBLOCK

    distinct_keys(key, privacy_key)  # one secret never both signs and encrypts

    for model in clients:
        problem = client_id_problem(model.client_id)
        if problem:
            raise SsgalleryError(f"cannot store client {model.client_id!r}: {problem}")
    with atomic_path(path, FORMAT, force, lock=True,
                     encrypted=privacy_key is not None) as tmp, \
            hdf5_image(tmp, USERBLOCK, FORMAT, privacy_key) as f:
        dtype = storage_dtype(model.prototypes for model in clients)
        write_header(f, FORMAT, storage_version(dtype))
        f.attrs["matcher"] = matcher_name
        f.attrs["matcher_config"] = jsontext.dumps(matcher_config, sort_keys=True)
        f.attrs["image_shape"] = np.asarray(image_shape, dtype=np.int64)
        for name, value in (attrs or {}).items():
            f.attrs[name] = value
        write_state(f.create_group("matcher"), matcher_state)
        group = f.create_group("clients")
        for model in clients:
            _write_client(group.create_group(model.client_id), model, dtype)
        write_index(f, clients, dtype)
        # digests of what a reader gets back: computed by reading the written file
        sections = {"matcher": read_state(f["matcher"])[1],
                    "index": integrity.node_digest(f["index"])}
        rows = sorted((cid.encode("utf-8"), integrity.node_digest(group[cid]))
                      for cid in group)
        width = max([len(r[0]) for r in rows] + [1])
        index = np.array(rows, dtype=[("id", f"S{width}"), ("digest", "S64")])
        f.create_dataset("client_index", data=index)
        f.attrs["section_digests"] = jsontext.dumps(sections, sort_keys=True)
        digest = integrity.root_digest(dict(f.attrs.items()), f["client_index"][()])
        f.attrs["digest"] = digest
        if key is not None:
            f.attrs["hmac"] = integrity.sign(digest, key)


def _write_client(g, model, dtype):
    """One client's group; its prototypes as ``dtype`` (`storage_dtype`: exact)."""
    g.create_dataset("prototypes",
                     data=np.asarray(model.prototypes, dtype=np.float64).astype(dtype))
    g.create_dataset("beta", data=np.asarray(model.beta, dtype=np.float64))
    if model.prototype_images is not None:
        g.create_dataset("prototype_images", data=np.asarray(model.prototype_images, np.uint8),
                         compression="gzip")
    g.attrs["intercept"] = float(model.intercept)
    g.attrs["threshold"] = float(model.threshold)
    g.attrs["similarity"] = jsontext.dumps(model.similarity, sort_keys=True)
    g.attrs["provenance"] = jsontext.dumps(model.provenance, sort_keys=True)
    if model.normalization is not None:
        g.attrs["normalization"] = jsontext.dumps(model.normalization, sort_keys=True)
