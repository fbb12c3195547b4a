"""``ssgallery enroll``: scan face folders, fit the matcher, write the enrollment store."""

import os
from dataclasses import dataclass

from ssgallery.app.enroll_add import add_clients, unused_cache_dir
from ssgallery.app.enroll_sources import (
    PAIRED,
    crowded_images,
    read_sources,
    resolve_names,
    shared_images,
)
from ssgallery.errors import InputError, naming, option
from ssgallery.formats.integrity import reads_key_files
from ssgallery.formats.store import EnrollmentStore
from ssgallery.learn.threads import single_threaded_blas
from ssgallery.matchers.base import fit_matcher, transform_in_chunks
from ssgallery.progress import as_progress
from ssgallery.tables import counted, listed


@dataclass
class EnrollSummary:
    """What `enroll` did (also what ``ssgallery enroll --json`` prints)."""

    store: str
    changed: bool
    n_images: int
    clients: list
    background: list
    new_clients: list
    image_shape: tuple
    matcher: str
    matcher_config: dict
    matcher_settings: dict
    basis_stale: bool
    stale_clients: list
    dimension: int
    fingerprint: str
    dropped_clients: list = ()  # clients of the store it replaced that it no longer holds
    matcher_contract: dict = None  # what the store records of its program's contract

    def to_dict(self):
        return dict(self.__dict__, image_shape=list(self.image_shape),
                    dropped_clients=list(self.dropped_clients))


@reads_key_files()
def enroll(faces_dir, store_path="enrollment.h5", *, matcher=None, matcher_options=None,
           clients=None, background=None, add=False, strict=False, skip_bad=False, size=None,
           min_images=2, warn=None, progress=None, force=False, privacy_key_file=None,
           matcher_cmd=None):
    """Scan ``faces_dir/<client>/*``, fit the matcher and write the enrollment store.

    The store's lock (``.<store>.lock``) is held from reading the old store to writing
    the new one, so concurrent runs on one store serialise: a second ``add`` waits,
    then re-reads the store and appends to it.

    Parameters
    ----------
    faces_dir : str or Path
        ``ROOT/<client_id>/*.{pgm,png,jpg,...}``.
    store_path : str or Path
    matcher : str, optional
        Registered matcher name (``eigenface``, ``external``, plug-ins); default
        ``eigenface``, with ``add`` the store's (another one is refused, `InputError`).
    matcher_options : dict, optional
        Keyword arguments of the matcher's constructor (e.g. ``variance``, ``gamma``).
        With ``add`` the store's matcher keeps its options: these are ignored, with a
        warning that names them, and a program named (``command``) for a matcher that
        runs one must have the store's contract
        (`ssgallery.app.enroll_add.kept_matcher`).
    matcher_cmd : str or list of str, optional
        The host's external matcher program, as `compress`'s: for a new store, the
        ``command`` option of the ``external`` matcher (the default matcher then); with
        ``add``, the store's matcher is rebuilt with it as `compress` rebuilds it: a
        program whose contract is not the store's is refused, and a matcher that runs no
        program ignores it with `compress`'s warning. Also given as ``command``: refused.
    clients : list of str or comma-separated str, optional
        Subfolders to enrol as clients (default: every subfolder not in ``background``).
    background : str, optional
        Impostor-only subjects: a folder (``BG/<subject>/*``) or subfolder names of
        ``faces_dir`` (list or comma-separated).
    add : bool
        Enrol the new clients of ``faces_dir`` into an existing store without refitting the
        matcher; the store records that the basis is stale.
    strict, skip_bad, size, min_images, warn
        Passed to `ssgallery.images.ingest.load_faces`.
    progress : ssgallery.progress.Progress, optional
        Reports reading the images (one step per file), fitting the matcher and
        computing the features (one step per image).
    force : bool
        Replace a file at ``store_path`` that is not an ssgallery file (never a gallery).
    privacy_key_file : str, optional
        The host's privacy key (default ``$SSGALLERY_PRIVACY_KEY_FILE``): the store is
        written encrypted with it, and an encrypted store is read with it
        (`ssgallery.formats.encryption`).

    Returns
    -------
    EnrollSummary
        ``changed`` is False when the store already held exactly this content.
    """
    from ssgallery.formats.atomic import output_lock
    from ssgallery.formats.encryption import load_privacy_key
    from ssgallery.images.ingest import default_warn

    progress = as_progress(progress)
    key = load_privacy_key(privacy_key_file)
    matcher, matcher_options = _named_program(matcher, matcher_options, matcher_cmd, add)
    if "cache_dir" in matcher_options and not add and (matcher or "eigenface") == "external":
        # with add: the store's matcher decides (kept_matcher)
        unused_cache_dir(warn, matcher_options["cache_dir"])
    names = resolve_names(faces_dir, clients, background)  # bad names: no lock file made
    with output_lock(store_path, wait=warn or default_warn):
        src = read_sources(faces_dir, store_path, names, add=add, strict=strict,
                            skip_bad=skip_bad, size=size, min_images=min_images, warn=warn,
                            progress=progress, force=force, key=key,
                            asked=(matcher, matcher_options, matcher_cmd))
        _warn_shared(src, store_path, add, warn or default_warn)
        if add:
            store, new = add_clients(src, store_path, progress, key)
            return _summary(store or src.old, store_path, changed=store is not None,
                            new_clients=new)
        summary = _enroll_fresh(src, store_path, matcher or "eigenface", matcher_options,
                                progress, force, key, faces_dir)
    if summary.dropped_clients:
        (warn or default_warn)(
            f"{os.fspath(store_path)}: replaced; {counted(len(summary.dropped_clients), 'client')}"
            f" it held {'is' if len(summary.dropped_clients) == 1 else 'are'} no longer "
            f"enrolled (not enrolled from {os.fspath(faces_dir)}): "
            f"{listed(summary.dropped_clients, 5)} ({option('add')} adds clients to a store "
            "instead)")
    return summary


def _warn_shared(src, store_path, add, warn):
    """Warn when two subjects of the store to write hold byte-identical image files
    (`shared_images`; with ``add``, the store's rows too): compress would take each
    one's faces for impostors of the other, so a client among them rejects its own
    faces and the thresholds the clients share rise, while compress's warnings can only
    blame the matcher or the impostors."""
    labels, shas, paths = list(src.labels), list(src.shas), list(src.paths)
    if add:
        labels, shas, paths = (list(src.old.labels) + labels, list(src.old.sha256) + shas,
                               list(src.old.paths) + paths)
    pairs = shared_images(labels, shas, paths)
    if not pairs:
        return
    named = "; ".join(f"{a} and {b} hold {counted(n, 'identical image file')} ({pa} is {pb})"
                      for a, b, n, pa, pb in pairs[:3])
    more = f"; {counted(len(pairs) - 3, 'more pair')} of subjects" if len(pairs) > 3 else ""
    crowds = crowded_images(labels, shas, paths)
    if crowds:  # their pairs are not all counted above
        more += (f"; {counted(len(crowds), 'file')} held by more than {PAIRED} subjects "
                 f"each, whose pairs are not all counted (the most: {crowds[0][0]} "
                 f"subjects, {crowds[0][1]})")
    warn(f"{os.fspath(store_path)}: {named}{more}: one person under two ids? compress "
         "takes each one's faces for impostors of the other: a client among them rejects "
         "its own faces, and the thresholds every client shares rise; enrol each person once")


def _named_program(matcher, options, matcher_cmd, add):
    """(matcher, options) of `enroll` with the host's program ``matcher_cmd`` folded in:
    for a new store, the ``command`` option of an ``external`` matcher (the default
    then); with ``add`` it stays apart (`ssgallery.app.enroll_add.kept_matcher` checks
    it against the store's matcher). A program also named as ``command``, or with another
    ``matcher`` than ``external``, is refused."""
    options = dict(options or {})
    if matcher_cmd is None:
        return matcher, options
    if matcher not in (None, "external"):
        raise InputError(f"{option('matcher_cmd')} is for {option('matcher')} external, not "
                         f"{option('matcher')} {matcher}")
    if "command" in options:
        raise InputError(f"give the external matcher's command once: {option('matcher_cmd')} "
                         f"or {option('matcher_options')} command=..., not both")
    if add:
        return matcher, options
    from ssgallery.matchers.host import split_command

    options["command"] = split_command(matcher_cmd, option("matcher_cmd"))
    return matcher or "external", options


def _enroll_fresh(src, store_path, matcher, matcher_options, progress, force, key,
                  faces_dir):
    """Fresh enrolment: fit the matcher on every image, write the store (again when
    it is unchanged but plain and a privacy ``key`` is given: it is then encrypted)."""
    from ssgallery.matchers import get_matcher_class

    cls = get_matcher_class(matcher)
    options = dict(matcher_options or {})
    if matcher == "external" and options.get("command") is None:
        from ssgallery.matchers.host import host_matcher

        host = host_matcher()  # $SSGALLERY_MATCHER_CMD or the configuration file
        options.update(command=host.argv, cache_dir=options.get("cache_dir", host.cache_dir))
    instance = _built(cls, matcher, options)
    try:
        config = instance.get_config()
    except (TypeError, ValueError) as exc:
        raise InputError(f"bad option for matcher '{matcher}': {exc}") from None
    candidate = EnrollmentStore(images=src.images, labels=src.labels, paths=src.paths,
                                sha256=src.shas, roots=src.roots, clients=src.clients,
                                background=src.bg_names, matcher_name=matcher,
                                matcher_config=config,
                                matcher_state=_contract_state(instance))
    old = src.old
    if old is not None and old.fingerprint == candidate.fingerprint \
            and (key is None or old.encrypted) \
            and not _unrecorded_limits(old):  # (a key: kept encrypted)
        return _summary(old, store_path, changed=False, new_clients=[])
    # one BLAS thread, as in training (ssgallery.learn.threads): a multi-threaded SVD of a
    # few hundred images spins its threads when the other core is busy
    with naming(faces_dir), single_threaded_blas():  # naming: which images are identical
        fit_matcher(instance, src.images, src.labels, progress)
        candidate.matcher_config = instance.get_config()
        candidate.matcher_state = instance.get_state()
        # computed once, here
        candidate.features = transform_in_chunks(instance, src.images, progress=progress)
    candidate.save(store_path, force=force, privacy_key=key)
    new = sorted(set(src.clients) - set(old.clients)) if old is not None else list(src.clients)
    summary = _summary(candidate, store_path, changed=True, new_clients=new, matcher=instance)
    if old is not None:
        summary.dropped_clients = sorted(set(old.clients) - set(src.clients))
    return summary


def _built(cls, matcher, options):
    """``cls(**options)``, the matcher ``matcher`` made with the user's options: an option
    its constructor does not take (``--variance`` or ``-O variance=...`` for dlib) is one
    line naming it and the options it takes, not Python's TypeError."""
    import inspect

    try:
        params = inspect.signature(cls).parameters
    except (TypeError, ValueError):  # a plug-in without a signature: its own message
        params = {}
    if params and not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        unknown = [k for k in options if k not in params]
        if unknown:
            taken = [n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD,
                                                                 p.KEYWORD_ONLY)]
            raise InputError(f"matcher '{matcher}' has no option '{unknown[0]}' (its "
                             f"options: {', '.join(taken) or 'none'})")
    try:
        return cls(**options)
    except TypeError as exc:
        raise InputError(f"bad option for matcher '{matcher}': {exc}") from None


def _unrecorded_limits(store):
    """True when ``store``'s failure-to-acquire limits were fitted before stores recorded
    what their folds held out (`ssgallery.matchers.Matcher.fta_folds_`): enrolling the
    same faces again then refits them instead of keeping the store (``info`` and
    ``compress`` name that command)."""
    from ssgallery.matchers import get_matcher_class

    return bool(getattr(get_matcher_class(store.matcher_name), "fit_takes_groups", False)
                and getattr(store.matcher(), "fta_folds_", None) == "unrecorded")


def _contract_state(matcher):
    """The part of a matcher's state known before fitting that the store's fingerprint
    covers: an external program's contract digest (asks ``--describe``), else nothing."""
    digest = getattr(matcher, "contract_digest", lambda: None)()  # duck-typed plug-ins
    return {} if digest is None else {"contract_sha256": digest}


def _summary(store, store_path, *, changed, new_clients, matcher=None):
    matcher = matcher or store.matcher()
    dim = store.dimension(matcher)
    return EnrollSummary(
        store=os.fspath(store_path), changed=changed, n_images=len(store.images),
        clients=list(store.clients), background=list(store.background),
        new_clients=list(new_clients), image_shape=store.image_shape,
        matcher=store.matcher_name, matcher_config=store.matcher_config,
        matcher_settings=matcher.settings(), basis_stale=store.basis_stale,
        stale_clients=list(store.stale_clients), dimension=dim, fingerprint=store.fingerprint,
        matcher_contract=matcher.recorded_contract())
