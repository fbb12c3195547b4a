"""``ssgallery enroll``: scan face folders, fit the matcher, write the enrollment store."""

import os
from dataclasses import dataclass

import numpy as np

from ssgallery.app.enroll_add import add_clients, kept_matcher, unused_cache_dir
from ssgallery.errors import FormatError, InputError, naming, option
from ssgallery.formats.store import EnrollmentStore, load_store
from ssgallery.learn.threads import single_threaded_blas
from ssgallery.matchers.base import transform_in_chunks
from ssgallery.progress import as_progress
from ssgallery.tables import counted, did_you_mean, listed


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

    def to_dict(self):
        return dict(self.__dict__, image_shape=list(self.image_shape),
                    dropped_clients=list(self.dropped_clients))


def _split_names(value):
    if value is None:
        return None
    if isinstance(value, str):
        value = value.split(",")
    return [v.strip() for v in value if v and v.strip()]


def _load(root, names, *, size, strict, skip_bad, min_images, warn, progress,
          min_images_option=True):
    from ssgallery.images.ingest import load_faces

    return load_faces(root, size=size, strict=strict, skip_bad=skip_bad,
                      min_images=min_images, clients=names, warn=warn, progress=progress,
                      min_images_option=min_images_option)


def _new_faces(root, names, known, *, size, **load):
    """The faces of the subjects ``names`` not in ``known`` (all of them when nothing is
    known; an empty set when every one is)."""
    from ssgallery.images.ingest import FaceSet

    new = None if names is None else [n for n in names if n not in known]
    if known and new is not None and not new:  # --add, no new subject here
        return FaceSet(images=np.zeros((0, size[1], size[0]), dtype=np.float32),
                       labels=np.array([], dtype=str), root=os.fspath(root))
    return _load(root, new, size=size, **load)


def _known_subjects(faces_dir, bg_dir, names, old, skip_bad, warn, progress):
    """``--add``: the subjects of ``faces_dir`` (``names``) and of ``bg_dir`` that the
    store already holds, after checking that their files are the enrolled ones (hashed,
    never decoded nor kept: only new subjects' pixels are read)."""
    from ssgallery.images.ingest import file_rows

    enrolled = {}
    for lab, p, h in zip(old.labels, old.paths, old.sha256):
        enrolled.setdefault(str(lab), set()).add((p, h))
    known = {}
    sources = [(faces_dir, [n for n in names if n in enrolled])]
    if bg_dir is not None:
        sources.append((bg_dir, [n for n in _scan_subjects(bg_dir) if n in enrolled]))
    for root, subjects in sources:
        if subjects:
            known.update(file_rows(root, subjects, enrolled, skip_bad=skip_bad, warn=warn,
                                   progress=progress))
    for name, rows in known.items():
        if rows != enrolled[name]:
            raise InputError(f"client '{name}' is already enrolled with other images; "
                             f"re-run enroll without {option('add')} to re-enrol everyone",
                             path=old.path)
    return known


def _scan_subjects(root):
    """The subject folders of ``root`` in natural order (``s2`` before ``s10``), the
    order of the store's clients and of every table that lists them."""
    from ssgallery.images.ingest import natural_key

    root = os.fspath(root)
    if not os.path.isdir(root):
        raise InputError("no such folder" if not os.path.exists(root) else "not a folder",
                         path=root)
    names = [e.name for e in os.scandir(root) if e.is_dir() and not e.name.startswith(".")]
    return sorted(names, key=lambda name: (natural_key(name), name))


@dataclass
class _Sources:
    """What both modes of `enroll` start from: the images read and the old store."""

    images: np.ndarray
    labels: np.ndarray
    paths: list
    shas: list
    roots: list
    clients: list
    bg_names: list
    old: EnrollmentStore = None


def enroll(faces_dir, store_path="enrollment.h5", *, matcher=None, matcher_options=None,
           clients=None, background=None, add=False, strict=False, skip_bad=False, size=None,
           min_images=2, warn=None, progress=None, force=False, privacy_key_file=None,
           matcher_cmd=None):
    """Scan ``faces_dir/<client>/*``, fit the matcher and write the enrollment store.

    The store's lock (``<store>.lock``) is held from reading the old store to writing
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
        unused_cache_dir(warn)  # with add: the store's matcher decides (kept_matcher)
    names = _resolve_names(faces_dir, clients, background)  # bad names: no lock file made
    with output_lock(store_path, wait=warn or default_warn):
        src = _read_sources(faces_dir, store_path, names, add=add, strict=strict,
                            skip_bad=skip_bad, size=size, min_images=min_images, warn=warn,
                            progress=progress, force=force, key=key,
                            asked=(matcher, matcher_options, matcher_cmd))
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


def _old_store(store_path, add, force, key):
    """The store at ``store_path`` (None if there is none, or a foreign file to be
    replaced with ``force``); refuses a gallery or a special file there at once. ``key``:
    the privacy key (an encrypted store)."""
    from ssgallery.formats.atomic import check_writable, hdf5_format
    from ssgallery.formats.store import FORMAT

    exists = os.path.exists(store_path)
    if add and not exists:
        raise FormatError(f"no such ssgallery enrollment store to add to (drop "
                          f"{option('add')} to create it)", path=store_path)
    if exists and not add:
        check_writable(store_path, FORMAT, force, encrypted=key is not None)
        if force and hdf5_format(store_path) != FORMAT:
            return None  # a foreign file the caller asked to replace
    # foreign / newer / corrupt -> FormatError, never clobber
    return load_store(store_path, images=False, privacy_key=key) if exists else None


def _resolve_names(faces_dir, clients, background):
    """(clients, background folder or None, background names) checked against the
    subfolders of ``faces_dir``."""
    faces_dir = os.fspath(faces_dir)
    clients = _split_names(clients)
    bg_dir, bg_names = None, []
    if background is not None:
        if isinstance(background, (str, os.PathLike)) and os.path.isdir(background):
            bg_dir = os.fspath(background)
        else:
            bg_names = _split_names(background)
    subjects = _scan_subjects(faces_dir)
    missing = [n for n in (clients or []) + bg_names if n not in subjects]
    if missing:
        hint = did_you_mean(missing[:5], subjects)
        raise InputError(f"no client folder named {', '.join(missing[:5])}"
                         + (f"; {hint}" if hint else ""), path=faces_dir)
    if clients is None:
        clients = [s for s in subjects if s not in bg_names]
    overlap = sorted(set(clients) & set(bg_names))
    if overlap:
        raise InputError(f"{', '.join(overlap)} named both as client and as background")
    clash = sorted(set(_scan_subjects(bg_dir)) & set(clients)) if bg_dir is not None else []
    if clash:  # every subject, enrolled or not (enroll --add reads only the new ones)
        raise InputError(f"background subject(s) {', '.join(clash[:5])} have the same name "
                         f"as clients", path=bg_dir)
    return clients, bg_dir, bg_names


def _read_sources(faces_dir, store_path, names, *, add, strict, skip_bad, size, min_images,
                  warn, progress, force, key, asked=(None, None, None)):
    """The shared front of both modes: old store, images (clients + background);
    ``asked``: the matcher, options and program given (with ``add``:
    `ssgallery.app.enroll_add.kept_matcher`)."""
    faces_dir = os.fspath(faces_dir)
    clients, bg_dir, bg_names = names
    old = _old_store(store_path, add, force, key)
    known = {}
    if add:  # new images take the store's size (resized with a warning unless --strict)
        kept_matcher(old, *asked, warn=warn)
        size = old.image_shape[::-1]
        known = _known_subjects(faces_dir, bg_dir, clients + bg_names, old, skip_bad, warn,
                                progress)

    faces = _new_faces(faces_dir, clients + bg_names, known, size=size, strict=strict,
                       skip_bad=skip_bad, min_images=min_images, warn=warn, progress=progress)
    shape = faces.images.shape[1:]
    parts = [(faces, [os.path.abspath(faces_dir)] * len(faces.labels))]
    if bg_dir is not None:
        bg = _new_faces(bg_dir, _scan_subjects(bg_dir) if known else None, known,
                        size=shape[::-1], strict=strict, skip_bad=skip_bad, min_images=1,
                        min_images_option=False, warn=warn, progress=progress)
        bg_names = sorted(set(map(str, bg.labels)))
        parts.append((bg, [os.path.abspath(bg_dir)] * len(bg.labels)))
    labels = np.concatenate([np.asarray(p.labels, dtype=str) for p, _ in parts])
    present = set(map(str, labels))
    return _Sources(
        images=(parts[0][0].images if len(parts) == 1 else  # no 2nd copy of every pixel
                np.concatenate([p.images for p, _ in parts])).astype(np.float32, copy=False),
        labels=labels,
        paths=[str(x) for p, _ in parts for x in p.paths],
        shas=[str(x) for p, _ in parts for x in p.sha256],
        roots=[r for _, rs in parts for r in rs],
        clients=[c for c in clients if c in present],  # --skip-bad may have dropped a client
        bg_names=[b for b in bg_names if b in present], old=old)


def _enroll_fresh(src, store_path, matcher, matcher_options, progress, force, key,
                  faces_dir):
    """Fresh enrolment: fit the matcher on every image, write the store (again when
    it is unchanged but plain and a privacy ``key`` is given: it is then encrypted)."""
    from ssgallery.formats.encryption import file_format
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
            and (key is None or file_format(store_path) is not None):  # (a key: encrypted)
        return _summary(old, store_path, changed=False, new_clients=[])
    # one BLAS thread, as in training (ssgallery.learn.threads): a multi-threaded SVD of a
    # few hundred images spins its threads when the other core is busy
    with naming(faces_dir), single_threaded_blas():  # naming: which images are identical
        with progress.phase(f"fitting the {matcher} matcher", 1, "fits"):
            instance.fit(src.images)
            progress.advance()
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
        stale_clients=list(store.stale_clients), dimension=dim, fingerprint=store.fingerprint)
