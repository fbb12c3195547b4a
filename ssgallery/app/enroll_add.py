"""``enroll --add``: new subjects appended to an existing store, whose matcher (and its
options, basis and enrolled features) is kept (`ssgallery.app.enroll.enroll`)."""

import json
import os

import numpy as np

from ssgallery.errors import InputError, option
from ssgallery.formats.store import EnrollmentStore
from ssgallery.matchers.base import transform_in_chunks

__all__ = ["add_clients", "kept_matcher", "unused_cache_dir"]


def kept_matcher(old, matcher, options, matcher_cmd=None, warn=None):
    """``add`` keeps the store's matcher and its options (the enrolled features and
    basis stay valid): another ``matcher`` is refused before any image is read, and
    matcher ``options`` given anyway are named in one warning line, as ignored. The
    host's ``command`` and ``cache_dir`` are not the options of a matcher that runs a
    program (a file never holds them): not named, but a program named must be the
    store's (`ssgallery.matchers.host.same_program`) and ``cache_dir`` gets
    `unused_cache_dir`'s warning; a matcher that runs none names them as ignored. The
    host's program ``matcher_cmd`` is taken as `compress` takes it: checked the same
    way, or named in `compress`'s warning (`ssgallery.matchers.host.name_unused`)."""
    from ssgallery.images.ingest import default_warn
    from ssgallery.matchers import get_matcher_class
    from ssgallery.matchers.host import (
        HostMatcher,
        host_matcher,
        runs_program,
        same_program,
        split_command,
    )

    if matcher is not None and matcher != old.matcher_name:
        raise InputError(f"{option('add')} adds clients with the store's {old.matcher_name} "
                         f"matcher, not {option('matcher')} {matcher}: enrol every client "
                         f"again without {option('add')} to change the matcher",
                         path=old.path)
    if matcher_cmd is not None:
        same_program(old, host_matcher(matcher_cmd, warn or default_warn))
    options = dict(options or {})
    if runs_program(get_matcher_class(old.matcher_name)):
        cache_dir = options.pop("cache_dir", None)
        command = options.pop("command", None)
        if command is not None:  # -O command=...: named as given, not as matcher_cmd
            given = f"{option('matcher_options')} command"
            same_program(old, HostMatcher(split_command(command, given), source=given))
        if cache_dir is not None:
            unused_cache_dir(warn, cache_dir)
    if options:
        ignored = ", ".join(f"{k}={v if isinstance(v, str) else json.dumps(v)}"
                            for k, v in sorted(options.items()))
        (warn or default_warn)(
            f"{os.fspath(old.path)}: {option('add')} keeps the store's {old.matcher_name} "
            f"matcher and its options; ignored: {ignored} (enrol every client again "
            f"without {option('add')} to change them)")


def unused_cache_dir(warn=None, value=None):
    """Warn through ``warn`` that the external matcher option ``cache_dir`` (``value``)
    given to `ssgallery.app.enroll.enroll` does nothing there: it is not stored, and
    enroll (new store or ``add``) scores nothing through the program; where the commands
    that score read it (`ssgallery.matchers.host.CACHE_WHERE`). A ``value`` that is no
    folder name is refused first (`ssgallery.matchers.host.cache_folder`), as the
    matcher refuses it."""
    from ssgallery.images.ingest import default_warn
    from ssgallery.matchers.host import CACHE_WHERE, cache_folder

    cache_folder(value, "external matcher option")

    (warn or default_warn)("the external matcher option cache_dir is not stored and enroll "
                           f"keeps no answers in it: {CACHE_WHERE}")


def add_clients(src, store_path, progress, key):
    """``--add``: append new subjects, keep the fitted matcher, record that it is stale
    when it learns from images (a PCA basis; not a pretrained descriptor or an external
    program, `ssgallery.matchers.base.Matcher.learns_from_images`). ``src`` holds the new
    subjects' images only; the old ones stay on disk until the new store is written
    (`ssgallery.formats.store_rows.StackedImages`).

    Returns
    -------
    store : EnrollmentStore or None
        The store written (None: no new image, nothing written).
    new_clients : list of str
    """
    from ssgallery.app.fold_spaces import learns_from_images
    from ssgallery.formats.store_rows import StackedImages
    from ssgallery.matchers import get_matcher_class

    old, new_images = src.old, src.images
    known = set(old.clients) | set(old.background)
    new_clients = [c for c in src.clients if c not in known]
    new_bg = [b for b in src.bg_names if b not in known]
    if not len(new_images):
        return None, []
    stale = learns_from_images(get_matcher_class(old.matcher_name))
    store = EnrollmentStore(
        images=StackedImages([old.images, new_images]),
        labels=np.concatenate([old.labels, src.labels]),
        paths=old.paths + src.paths, sha256=old.sha256 + src.shas,
        roots=old.roots + src.roots,
        clients=old.clients + new_clients, background=old.background + new_bg,
        matcher_name=old.matcher_name, matcher_config=old.matcher_config,
        matcher_state=old.matcher_state, basis_stale=old.basis_stale or stale,
        stale_clients=sorted(set(old.stale_clients) | (set(new_clients) | set(new_bg)
                                                        if stale else set())))
    if old.features is not None:  # the matcher is kept, so old features stay valid
        matcher = old.matcher()  # (checked to be of its dimension: matcher_features)
        store.features = np.concatenate([old.matcher_features(matcher), transform_in_chunks(
            matcher, new_images, progress=progress)])
    store.save(store_path, privacy_key=key)
    return store, new_clients
