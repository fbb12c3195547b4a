"""What `ssgallery.app.enroll.enroll` reads, in both of its modes: the subject names
checked against the folders (`resolve_names`), the store it replaces or adds to, and the
images of the clients and the background subjects (`read_sources`; with ``add``, the new
subjects' only, the enrolled ones' files checked against the store)."""

import os
from dataclasses import dataclass

import numpy as np

from ssgallery.app.enroll_add import kept_matcher
from ssgallery.checks import shown
from ssgallery.errors import FormatError, InputError, clipped, option
from ssgallery.formats.hdf5 import comma_hint, split_ids
from ssgallery.formats.store import EnrollmentStore, load_store
from ssgallery.tables import did_you_mean


def _split_names(value):
    if value is None:
        return None
    if isinstance(value, str):
        return split_ids(value)
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


def _known_subjects(faces_dir, bg_dir, names, old, skip_bad, warn, progress,
                    clients=None):
    """``--add``: the subjects of ``faces_dir`` (``names``) and of ``bg_dir`` that the
    store already holds, after checking that their files are the enrolled ones (hashed,
    never decoded nor kept: only new subjects' pixels are read). ``clients``: those of
    ``names`` named as clients here; one the store holds as a background subject is
    refused with other files and kept as background, with a warning, with the same."""
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
    background = set(map(str, old.background))
    for name, rows in known.items():
        if rows != enrolled[name]:
            if name in background and name in (clients or ()):
                raise InputError(f"{_as_background([name])}: {option('add')} adds new "
                                 f"subjects only; {_make_client(name)}", path=old.path)
            kind = "background subject" if name in background else "client"
            raise InputError(f"{kind} '{clipped(name)}' is already enrolled with other "
                             f"images; re-run enroll without {option('add')} to re-enrol "
                             f"everyone", path=old.path)
    kept = [n for n in (clients or ()) if n in known and n in background]
    if kept:
        more = f" (and {len(kept) - 5} more)" if len(kept) > 5 else ""
        warn(f"{os.fspath(old.path)}: {_as_background(kept[:5], more)}: kept as such by "
             f"{option('add')}; {_make_client(kept[0])}")
    return known


def _as_background(names, more=""):
    """"'c05' is a background ... subject ..., not a client" (or "'c05', 'c07' are ...")."""
    named = ", ".join(f"'{clipped(n)}'" for n in names) + more
    if len(names) == 1 and not more:
        return f"{named} is a background (impostor-only) subject of the store, not a client"
    return f"{named} are background (impostor-only) subjects of the store, not clients"


def _make_client(name):
    return (f"to make '{clipped(name)}' a client, enroll every subject again without "
            f"{option('add')} ('{clipped(name)}' not among {option('background')})")


def _scan_subjects(root):
    """The subject folders of ``root`` in natural order (``s2`` before ``s10``), the
    order of the store's clients and of every table that lists them."""
    from ssgallery.images.ingest import natural_key
    from ssgallery.images.scan import check_faces_root

    root = os.fspath(root)
    check_faces_root(root)
    names = [e.name for e in os.scandir(root) if e.is_dir() and not e.name.startswith(".")]
    return sorted(names, key=lambda name: (natural_key(name), name))


@dataclass
class Sources:
    """What both modes of `enroll` start from: the images read and the old store."""

    images: np.ndarray
    labels: np.ndarray
    paths: list
    shas: list
    roots: list
    clients: list
    bg_names: list
    old: EnrollmentStore = None


def _old_store(store_path, add, force, key):
    """The store at ``store_path`` (None if there is none, or a foreign file to be
    replaced with ``force``); refuses a gallery or a special file there at once. ``key``:
    the privacy key (an encrypted store)."""
    from ssgallery.formats.atomic import check_writable
    from ssgallery.formats.store import FORMAT

    exists = os.path.exists(store_path)
    if add and not exists:
        raise FormatError(f"no such ssgallery enrollment store to add to (drop "
                          f"{option('add')} to create it)", path=store_path)
    if exists and not add:
        found = check_writable(store_path, FORMAT, force, encrypted=key is not None)
        if force and found != FORMAT:
            return None  # a foreign file the caller asked to replace
    # foreign / newer / corrupt -> FormatError, never clobber
    return load_store(store_path, images=False, privacy_key=key) if exists else None


def resolve_names(faces_dir, clients, background):
    """(clients, background folder or None, background names) checked against the
    subfolders of ``faces_dir``."""
    faces_dir = os.fspath(faces_dir)
    typed, clients = clients, _split_names(clients)
    if clients == []:  # '--clients ,': a typo, not 'no client folders' in faces_dir
        raise InputError(f"{option('clients')} names no client folder: {shown(typed)}")
    bg_dir, bg_names = None, []
    subjects = _scan_subjects(faces_dir)
    if background is not None:
        if isinstance(background, (str, os.PathLike)) and os.path.isdir(background):
            bg_dir = os.fspath(background)
        else:
            bg_names = _background_names(background, subjects)
    also = f"subject folder named {{}} for {option('background')} (nor a folder of that name)"
    for names, what in ((clients or [], "client folder named {}"), (bg_names, also)):
        missing = [n for n in names if n not in subjects]
        if missing:
            hint = did_you_mean(missing[:5], subjects)
            raise InputError(f"no {what.format(', '.join(clipped(n) for n in missing[:5]))}"
                             + (f"; {hint}" if hint else "") + comma_hint(subjects),
                             path=faces_dir)
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


def _background_names(background, subjects):
    """The subject names of a ``background`` that is no folder. A value with a path
    separator (``nobg/``, ``data/impostors``) names a folder, never subjects (a subject
    is a folder name of FACES_DIR, ``subjects``): one that is not there is refused as
    such (with the subject it may have meant, ``c04/`` for ``c04``)."""
    text = os.fspath(background) if isinstance(background, os.PathLike) else background
    if isinstance(text, str) and ("/" in text or os.sep in text):
        what = "not a folder" if os.path.exists(text) else "no such folder"
        name = text.rstrip("/" + os.sep)
        meant = (f"; did you mean {option('background')} {name}, the subject folder of "
                 f"the faces folder?" if name in subjects else "")
        raise InputError(f"{what} for {option('background')} (a folder DIR/<subject>/* of "
                         f"impostor-only subjects, or subject folder names of the faces "
                         f"folder, A,B,...){meant}", path=text)
    return _split_names(background)


PAIRED = 20  # the subjects holding one file that `shared_images` pairs one by one


def _holders(labels, shas, paths):
    """{digest: {subject: its first path}} of the digests two subjects or more hold."""
    holders = {}
    for label, sha, path in zip(map(str, labels), map(str, shas), map(str, paths)):
        holders.setdefault(sha, {}).setdefault(label, path)
    return {sha: held for sha, held in holders.items() if len(held) > 1}


def shared_images(labels, shas, paths):
    """The pairs of subjects that hold byte-identical image files (the same SHA-256 under
    two ids: one person's folder copied under another name, or into the background).

    Parameters
    ----------
    labels, shas, paths : sequences of str
        The subject, file digest and path of every image row.

    Returns
    -------
    list of tuple
        ``(a, b, n, path_a, path_b)`` per pair of subjects ``a`` < ``b``: ``n`` digests
        they share and one file of each with the first of them; most shared first. Of
        a file that more than `PAIRED` subjects hold, the first `PAIRED` (by name) are
        paired (`crowded_images` names such files): 10,000 subjects holding one file
        made 50 million pairs (3,000: 28 s and 1.8 GB).
    """
    pairs = {}
    for held in _holders(labels, shas, paths).values():
        subjects = sorted(held)[:PAIRED]
        for i, a in enumerate(subjects):
            for b in subjects[i + 1:]:
                n, first = pairs.get((a, b), (0, (held[a], held[b])))
                pairs[(a, b)] = (n + 1, first)
    return [(a, b, n, pa, pb) for (a, b), (n, (pa, pb))
            in sorted(pairs.items(), key=lambda item: (-item[1][0], item[0]))]


def crowded_images(labels, shas, paths):
    """The files that more than `PAIRED` subjects hold (see `shared_images`): ``(n,
    path)`` per file, ``n`` its subjects and the first one's path; most held first."""
    crowds = [(len(held), held[min(held)]) for held in _holders(labels, shas, paths).values()
              if len(held) > PAIRED]
    return sorted(crowds, key=lambda c: (-c[0], c[1]))


def read_sources(faces_dir, store_path, names, *, add, strict, skip_bad, size, min_images,
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
                                progress, clients=clients)

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
    return Sources(
        images=(parts[0][0].images if len(parts) == 1 else  # no 2nd copy of every pixel
                np.concatenate([p.images for p, _ in parts])).astype(np.float32, copy=False),
        labels=labels,
        paths=[str(x) for p, _ in parts for x in p.paths],
        shas=[str(x) for p, _ in parts for x in p.sha256],
        roots=[r for _, rs in parts for r in rs],
        clients=[c for c in clients if c in present],  # --skip-bad may have dropped a client
        bg_names=[b for b in bg_names if b in present], old=old)
