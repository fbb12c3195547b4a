"""The enrollment store (HDF5, default ``enrollment.h5``): everything ``compress`` trains on.

Layout (format ``ssgallery-enrollment``, `FORMAT_VERSION` = 2)::

    /            attrs: format, format_version, tool_version, created, fingerprint,
                        matcher, matcher_config (JSON, never a command), image_shape,
                        basis_stale, stale_clients (JSON), digest
    /images      (n, H, W) uint8 (float32 when the images are not 8-bit), gzip
    /labels      (n,) str    client id (folder name) of each image
    /paths       (n,) str    path relative to its source root
    /sha256      (n,) str    of the file's bytes
    /roots       (n,) str    absolute source root the image came from
    /clients     (k,) str    enrolled clients (verification claims are made for them)
    /background  (j,) str    impostor-only subjects (negatives when training)
    /matcher     matcher state (e.g. PCA mean and basis)
    /features    (n, d) float64  matcher.transform of every image, computed once at enroll
                 (optional: stores written before it existed lack it; compress then
                 recomputes them)

It holds face images and stays on the training host; the gallery does not.

Integrity: the root attribute ``digest`` is the SHA-256 of the whole content
(`ssgallery.formats.integrity.node_digest` of the root group: every attribute but
``digest``/``hmac`` and every dataset and group, recursively); `load_store` checks it
before using anything, and refuses links to other files and virtual datasets.
"""

import hashlib
import json
import os
from dataclasses import dataclass, field

import numpy as np

from ssgallery import jsontext
from ssgallery.checks import stored_flag
from ssgallery.errors import FormatError
from ssgallery.formats import integrity
from ssgallery.formats.hdf5 import (
    build_matcher,
    hdf5_image,
    open_checked,
    read_state,
    write_header,
    write_state,
)
from ssgallery.formats.store_checks import check_pixels, store_problem, string_list
from ssgallery.formats.store_rows import (  # noqa: F401  (StackedImages: public here too)
    FORMAT,
    FORMAT_VERSION,
    KIND,
    StackedImages,
    StoreImages,
)

_OPEN = {"hint": " (run 'ssgallery enroll FACES_DIR' first)",
         "rewrite": "re-run 'ssgallery enroll FACES_DIR' to write it"}


@dataclass
class EnrollmentStore:
    """An enrollment store in memory. See the module docstring for the file layout.

    Attributes
    ----------
    images : ndarray, shape (n, H, W), float32 on [0, 255]
        Or a `StoreImages` / `StackedImages` read a slice at a time (lazily loaded
        stores, ``enroll --add``).
    labels : ndarray, shape (n,), str
    paths, sha256, roots : list of str, length n
    clients, background : list of str
    matcher_name : str
    matcher_config : dict
    matcher_state : dict
    basis_stale : bool
        True when clients were added (``--add``) after the matcher was fitted.
    stale_clients : list of str
        The clients added since the matcher was fitted.
    features : ndarray, shape (n, d), float64, or None
        The stored matcher's features of every image (``None``: not cached).
    file_bytes : int or None
        The size of the file `load_store` read it from (from the descriptor it checked
        and read; None for a store not read from a file).
    encrypted : bool
        That file was encrypted (`ssgallery.formats.encryption`).
    """

    images: np.ndarray
    labels: np.ndarray
    paths: list
    sha256: list
    roots: list
    clients: list
    background: list
    matcher_name: str
    matcher_config: dict
    matcher_state: dict
    basis_stale: bool = False
    stale_clients: list = field(default_factory=list)
    created: str = ""
    tool_version: str = ""
    path: str = None
    features: np.ndarray = None
    file_bytes: int = field(default=None, compare=False)
    encrypted: bool = field(default=False, compare=False)

    @property
    def image_shape(self):
        return tuple(int(s) for s in self.images.shape[1:])

    @property
    def fingerprint(self):
        """sha256 over the content: images (by hash), roles, matcher name and config, and
        an external matcher's contract digest (``contract_sha256`` of its state: another
        program is another matcher)."""
        role = {c: "client" for c in self.clients} | {b: "background" for b in self.background}
        rows = sorted(zip((role.get(str(lab), "?") for lab in self.labels),
                          map(str, self.labels), self.paths, self.sha256))
        content = {"rows": rows, "matcher": self.matcher_name, "config": self.matcher_config,
                   "shape": self.image_shape, "stale": sorted(self.stale_clients)}
        contract = (self.matcher_state or {}).get("contract_sha256")
        if contract is not None:
            content["contract"] = str(contract)
        payload = json.dumps(content, sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()

    def matcher(self, host=None):
        """The fitted matcher, rebuilt from the stored state (``host``: the host's matcher
        program, see `ssgallery.formats.hdf5.build_matcher`)."""
        return build_matcher(self.matcher_name, self.matcher_config, self.matcher_state,
                             self.path, host=host)

    def matcher_features(self, matcher=None):
        """Features (n, d) of every image: the cached ones, else ``matcher.transform``."""
        if self.features is not None:
            return self._cached(matcher)
        return (matcher or self.matcher()).transform(self.images)

    def dimension(self, matcher=None):
        """d of the matcher space (0 without images); from the cache when there is one."""
        if self.features is not None:
            return int(self._cached(matcher).shape[1])
        if not len(self.images):
            return 0
        return int((matcher or self.matcher()).transform(self.images[:1]).shape[1])

    def _cached(self, matcher=None):
        """The cached features, of the matcher's dimension (``matcher.dimension()``): a
        store whose cache is of another width is refused (`FormatError`) before anything
        is computed from it, not after every client is trained."""
        d = (matcher or self.matcher()).dimension()
        if self.features.shape[1] != d:
            raise FormatError(f"corrupt {KIND}: cached features of dimension "
                              f"{self.features.shape[1]}, the matcher's is {d}", path=self.path)
        return self.features

    def save(self, path, force=False, privacy_key=None):
        """Write the store to ``path`` atomically, holding its lock.

        An existing file at ``path`` is replaced only when it is an enrollment store, or
        with ``force`` when it is not an ssgallery file (never a gallery: see
        `ssgallery.formats.atomic.check_writable`). With ``privacy_key`` (bytes) the
        file is encrypted in memory before it is written
        (`ssgallery.formats.encryption`). A store whose rows are read on demand
        (`StoreImages`, `StackedImages`) is written a slice at a time, also over the file
        it reads from, and reads its rows from the file written from then on.
        """
        import h5py

        from ssgallery.formats.atomic import atomic_path
        from ssgallery.formats.seal import USERBLOCK

        images = self.images
        dtype = np.uint8 if _is_8bit(images, WRITE_ROWS) else np.float32
        strings = h5py.string_dtype()
        with atomic_path(path, FORMAT, force, lock=True,
                         encrypted=privacy_key is not None) as tmp, \
                hdf5_image(tmp, USERBLOCK, FORMAT, privacy_key) as f:
            write_header(f, FORMAT, FORMAT_VERSION)
            f.attrs["fingerprint"] = self.fingerprint
            f.attrs["matcher"] = self.matcher_name
            f.attrs["matcher_config"] = jsontext.dumps(self.matcher_config, sort_keys=True)
            f.attrs["image_shape"] = np.asarray(self.image_shape, dtype=np.int64)
            f.attrs["basis_stale"] = bool(self.basis_stale)
            f.attrs["stale_clients"] = jsontext.dumps(sorted(self.stale_clients))
            _write_images(f, images, dtype)
            for name in ("labels", "paths", "sha256", "roots", "clients", "background"):
                values = [str(v) for v in getattr(self, name)]
                f.create_dataset(name, data=np.array(values, dtype=object), dtype=strings)
            write_state(f.create_group("matcher"), self.matcher_state)
            if self.features is not None:
                f.create_dataset("features", data=np.asarray(self.features, dtype=np.float64))
            digest = f.attrs["digest"] = integrity.node_digest(f, exclude=integrity.ROOT_EXCLUDED)
        self.path = os.fspath(path)
        if not isinstance(images, np.ndarray):  # read lazily: from now on, the file written
            self.images = StoreImages(path, images.shape, dtype is np.uint8, privacy_key,
                                      digest)


WRITE_ROWS = 1024  # images converted and written at a time


def _write_images(f, images, dtype):
    """``/images``: gzip, one image per chunk, written `WRITE_ROWS` images at a time (a
    `StoreImages` or `StackedImages` source is never read whole)."""
    rows = WRITE_ROWS
    chunks = (1,) + tuple(images.shape[1:]) if len(images) else None
    data = f.create_dataset("images", shape=images.shape, dtype=dtype, compression="gzip",
                            chunks=chunks)
    for start in range(0, len(images), rows):
        data[start:start + rows] = np.asarray(images[start:start + rows]).astype(dtype)


def _is_8bit(images, chunk=1024):
    """True when every pixel is an integer on [0, 255] (checked ``chunk`` images at a
    time: no full-size temporary; an array, a `StoreImages` or a `StackedImages`)."""
    if not int(np.prod(images.shape)):
        return False
    for i in range(0, len(images), chunk):
        block = images[i:i + chunk]
        if block.min() < 0 or block.max() > 255 or not np.array_equal(block, np.round(block)):
            return False
    return True


def load_store(path, images=True, privacy_key=None):
    """Read an enrollment store.

    Parameters
    ----------
    path : str or Path
    images : bool
        Read every image into memory (float32); False leaves a `StoreImages` that
        reads the rows asked for (large stores: ``compress`` reads slices).
    privacy_key : bytes, optional
        The host's privacy key, needed when the store is encrypted
        (`ssgallery.formats.encryption`).

    Raises
    ------
    FormatError
        One line naming the file: missing, not HDF5, foreign, corrupt, newer version.
    """
    path = os.fspath(path)
    opened = {}  # what the checked open found: the file's size, its seal
    with open_checked(path, FORMAT, FORMAT_VERSION, KIND, **_OPEN,
                      privacy_key=privacy_key, facts=opened) as f:
        try:
            digest = integrity.node_digest(f, path, exclude=integrity.ROOT_EXCLUDED)
            integrity.check_digest(digest, integrity.attr_text(f.attrs.get("digest")),
                                   "the store's content", path)
            strs = {name: string_list(f, name)
                    for name in ("labels", "paths", "sha256", "roots", "clients", "background")}
            check_pixels(f)
            store = EnrollmentStore(
                images=(f["images"][()].astype(np.float32) if images
                        else StoreImages(path, f["images"].shape,
                                        f["images"].dtype.kind in "iu", privacy_key,
                                        digest, opened["seal"])),
                labels=np.array(strs["labels"], dtype=str),
                paths=strs["paths"], sha256=strs["sha256"], roots=strs["roots"],
                clients=strs["clients"], background=strs["background"],
                matcher_name=str(f.attrs["matcher"]),
                matcher_config=json.loads(f.attrs["matcher_config"]),
                matcher_state=read_state(f["matcher"], path)[0],
                basis_stale=stored_flag("basis_stale", f.attrs.get("basis_stale", False)),
                stale_clients=json.loads(f.attrs.get("stale_clients", "[]")),
                created=str(f.attrs.get("created", "")),
                tool_version=str(f.attrs.get("tool_version", "")), path=path,
                features=f["features"][()] if "features" in f else None,
                file_bytes=opened["bytes"], encrypted=opened["encrypted"])
        except (KeyError, ValueError, TypeError, OSError, RuntimeError,  # h5py: HDF5 errors
                AttributeError) as exc:  # a group where a dataset belongs
            raise FormatError(f"corrupt {KIND}: {exc}", path=path) from None
    problem = store_problem(store, strs)
    if problem:
        raise FormatError(f"corrupt {KIND}: {problem}", path=path)
    return store


def store_summary(path, privacy_key=None):
    """What ``ssgallery info`` shows about an enrollment store, as a JSON-able dict
    (``privacy_key``: see `load_store`)."""
    store = load_store(path, privacy_key=privacy_key)
    matcher = store.matcher()  # checks the stored state
    dim = store.dimension(matcher)
    counts = {c: int(np.sum(store.labels == c)) for c in store.clients}
    return {"path": os.fspath(path), "created": store.created,
            "tool_version": store.tool_version, "n_images": len(store.images),
            "image_shape": list(store.image_shape), "n_clients": len(store.clients),
            "clients": store.clients, "images_per_client": counts,
            "n_background": len(store.background), "background": store.background,
            "matcher": store.matcher_name, "matcher_config": store.matcher_config,
            "matcher_settings": matcher.settings(), "dimension": dim,
            "matcher_contract": matcher.recorded_contract(),
            "basis_stale": store.basis_stale, "stale_clients": store.stale_clients,
            "fta_folds": matcher.fta_folds_, "file_bytes": store.file_bytes,
            "fingerprint": store.fingerprint}
