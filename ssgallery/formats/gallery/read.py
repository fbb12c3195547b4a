"""Reading a gallery file, every part checked before use (layout and checks:
`ssgallery.formats.gallery`): one client (`read_client`, the verify path), the stacked
search index (`read_search`, 1:N) or every client (`read_gallery`)."""

import contextlib
import os

import numpy as np

from ssgallery.errors import FormatError, printable
from ssgallery.formats import integrity
from ssgallery.formats.encryption import distinct_keys
from ssgallery.formats.gallery.checked_reads import (
    LAZY_OPEN_ARGS,
    OPEN_ARGS,
    index_ids,
    open_verified,
    read_client_group,
    read_clients,
    read_matcher,
    read_stacked,
    state_bytes,
    unknown_client,
)
from ssgallery.formats.gallery.checks import check_images, check_model
from ssgallery.formats.gallery.model import FORMAT, FORMAT_VERSION, KIND, Gallery
from ssgallery.formats.hdf5 import client_id_problem, open_checked
from ssgallery.formats.protect import keyed_templates, unprotect_models
from ssgallery.formats.seal import SealMismatch


def _index_row(ids, client_id):
    """The row of ``client_id`` in a client index's ``ids`` (sorted UTF-8 bytes), or None:
    an id no client can have (`client_id_problem`: more than 200 bytes, ...) is looked
    up in no index (numpy's search widened every id to the asked one's length: a
    100,000-character --claim made verify of a 10,000-client gallery allocate 1 GB)."""
    if client_id_problem(client_id):
        return None
    want = client_id.encode("utf-8", "surrogateescape")
    row = int(np.searchsorted(ids, want))
    return row if row < len(ids) and ids[row] == want else None


def _client_from(f, path, client_id, key, host, matcher, privacy_key, required=True):
    """(model, matcher or None, header) of `read_client`, from the open file."""
    try:
        header, config, sections, index = open_verified(f, path, key)
        row = _index_row(index["id"], client_id)
        if row is None:
            raise unknown_client(path, client_id, index_ids(index, path),
                                 header.get("digest"))
        expected = index["digest"][row].decode("ascii", "replace")
        clients = integrity.check_node(f, "clients", path)
        model = read_client_group(clients, client_id, expected, path)
        built = None
        if matcher:
            built, tmap, _ = read_matcher(f, header, config, sections, path, host,
                                          privacy_key, required)
            if tmap is not None:
                unprotect_models([model], tmap)
    except (KeyError, ValueError, TypeError, OSError, RuntimeError) as exc:  # h5py: HDF5 errors
        raise FormatError(f"corrupt gallery: {exc}", path=path) from None
    return model, built, header


def read_client(path, client_id, *, images=False, matcher=True, key=None, host=None,
                privacy_key=None, required=True):
    """Read one client's model and the gallery's matcher, and nothing else.

    Parameters
    ----------
    path : str or Path
        The gallery file.
    client_id : str
        A name looked up in the client index, never an HDF5 path.
    images : bool
        Keep the rendered prototype images (for ``show``).
    matcher : bool
        Rebuild the matcher from the stored state (attribute ``matcher`` of the result).
    key : bytes, optional
        The host's signing key: an unsigned or wrongly signed gallery is refused.
    host : HostMatcher, optional
        The host's matcher program (default: from the environment / configuration).
    privacy_key : bytes, optional
        The host's privacy key: reads an encrypted gallery
        (`ssgallery.formats.encryption`), and gives the keyed matcher of protected
        templates (`ssgallery.formats.protect`; refused without it when ``matcher``).
    required : bool
        False: a protected gallery's matcher read without ``privacy_key`` is an
        `ssgallery.formats.protect.UnkeyedMatcher`, its templates left as stored
        (``info``), not a refusal.

    Returns
    -------
    model : ClientModel
        With extra attributes ``matcher`` (or None) and ``header`` (dict).

    Raises
    ------
    FormatError
        Missing, foreign, corrupt, edited, unsigned (with a key), older or newer gallery,
        or insane values.
    UnknownClientError
        Unknown client id (the message lists a few known ids).
    InputError
        ``key`` and ``privacy_key`` are one secret (`distinct_keys`).
    """
    distinct_keys(key, privacy_key)
    path = os.fspath(path)
    try:
        with open_checked(path, FORMAT, FORMAT_VERSION, KIND, **LAZY_OPEN_ARGS,
                          privacy_key=privacy_key) as f:
            model, built, header = _client_from(f, path, client_id, key, host, matcher,
                                                privacy_key, required)
    except SealMismatch as exc:  # bit rot in a part of the file this read needs
        raise exc.naming(f"while reading client '{printable(client_id)}'") from None
    check_model(model, built, path)
    if images:
        check_images(model, header["image_shape"], path)
    else:
        model.prototype_images = None
    model.header = header
    model.matcher = built
    return model


def read_search(path, *, key=None, host=None, privacy_key=None):
    """Read what a 1:N search needs: the header, the matcher and the stacked index
    (`ssgallery.formats.search_index`), in a few contiguous reads, all checked
    (signature with ``key``, root digest, matcher and index digests; see
    `read_client` for ``key``, ``host`` and ``privacy_key``).

    Returns
    -------
    index : SearchIndex
    matcher : Matcher
    header : dict
    """
    with open_search(path, key=key, host=host, privacy_key=privacy_key) as found:
        return found[:3]


@contextlib.contextmanager
def open_search(path, *, key=None, host=None, privacy_key=None):
    """`read_search`'s reads, the file kept open while the search runs.

    Yields
    ------
    index, matcher, header
        As `read_search` returns them.
    records : callable (list of str) -> dict of str to ClientModel
        The records ``verify`` reads for a few clients, from the same open file (not
        from whatever the path names later): each client group checked against the
        client index and by `check_model` with ``matcher``.
    """
    distinct_keys(key, privacy_key)
    path = os.fspath(path)
    with open_checked(path, FORMAT, FORMAT_VERSION, KIND, **LAZY_OPEN_ARGS,
                      privacy_key=privacy_key) as f:
        try:
            header, _, rows, index, matcher, _ = read_stacked(f, path, key, host,
                                                              privacy_key)
        except (KeyError, ValueError, TypeError, OSError, RuntimeError) as exc:  # h5py: HDF5 errors
            raise FormatError(f"corrupt gallery: {exc}", path=path) from None

        def records(client_ids):
            return _records(f, path, rows, client_ids, matcher, (header, privacy_key))

        yield index, matcher, header, records


def _records(f, path, rows, client_ids, matcher, keyed):
    """{id: ClientModel} of ``client_ids`` from an open gallery (see `open_search`);
    ``keyed`` = (header, privacy key): protected templates are put back as
    `read_stacked` put the index's."""
    out, cid = {}, "?"
    try:
        clients = integrity.check_node(f, "clients", path)
        for cid in client_ids:
            row = _index_row(rows["id"], cid)
            if row is None:
                raise unknown_client(path, cid, index_ids(rows, path))
            out[cid] = read_client_group(
                clients, cid, rows["digest"][row].decode("ascii", "replace"), path)
    except SealMismatch as exc:
        raise exc.naming(f"while reading client '{printable(cid)}'") from None
    except (KeyError, ValueError, TypeError, OSError, RuntimeError) as exc:  # h5py
        raise FormatError(f"corrupt gallery: {exc}", path=path) from None
    _, tmap = keyed_templates(matcher, *keyed, path)
    if tmap is not None:
        unprotect_models(list(out.values()), tmap)
    for model in out.values():
        check_model(model, matcher, path)
    return out


def read_gallery(path, *, arrays=False, key=None, host=None, matcher=False,
                 privacy_key=None, images=False):
    """Read the header and every client (for ``roc --gallery``, ``info --svm``), all
    checked: O(N) group opens.

    Parameters
    ----------
    arrays : bool
        Keep prototypes and beta of every client.
    key, host, privacy_key : see `read_client`.
    matcher : bool
        Also rebuild the matcher (attribute ``matcher`` of the result; for protected
        templates, the keyed one: refused without ``privacy_key``).
    images : bool
        Also keep every client's rendered prototype images (``prototype_images``, None
        when the gallery has none), read from the same checked open as the rest: what
        `ssgallery.formats.gallery.protected.rewrite_gallery` copies.

    Returns
    -------
    Gallery
        ``clients[id].provenance`` gains ``bytes_model`` (prototypes + beta + b + threshold,
        what verification needs per client) and ``bytes_images`` (rendered images); extra
        attribute ``matcher_state``: the stored matcher state (checked against its digest,
        from the same open file as the rest).
    """
    distinct_keys(key, privacy_key)
    path = os.fspath(path)
    with open_checked(path, FORMAT, FORMAT_VERSION, KIND, **OPEN_ARGS,
                      privacy_key=privacy_key) as f:
        try:
            header, config, sections, rows = open_verified(f, path, key)
            built, tmap, state = read_matcher(f, header, config, sections, path, host,
                                              privacy_key, required=matcher)
            out = read_clients(f, path, rows, built, arrays, tmap,
                               images and header["image_shape"])
        except (KeyError, ValueError, TypeError, OSError, RuntimeError) as exc:  # h5py: HDF5 errors
            raise FormatError(f"corrupt gallery: {exc}", path=path) from None
    gallery = Gallery(path=path, header=header, matcher_name=header["matcher"],
                      matcher_config=config, clients=out,
                      matcher_state_bytes=state_bytes(state))
    gallery.matcher = built if matcher else None
    gallery.matcher_state = state
    return gallery


