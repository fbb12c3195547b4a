"""Scanning a face folder ``ROOT/<client>/<images>``: which clients and image files it
holds (`scan_faces`), in natural order (`natural_key`), refused with one line naming the
folder or file (`ssgallery.errors.InputError`) or, with ``skip_bad``, skipped with a
warning; and how every input step reports a recoverable problem (`InputWarning`,
`default_warn`) and names an option only its command has (`use_option`). Reading the
images: `ssgallery.images.ingest`."""

import os
import re
import warnings
from pathlib import Path

from ssgallery.errors import InputError, option
from ssgallery.formats.hdf5 import client_id_problem

IMAGE_EXTENSIONS = (".pgm", ".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff")


class InputWarning(UserWarning):
    """A recoverable input problem (a resized image, a skipped bad file)."""


def default_warn(message):
    """Report ``message`` as an `InputWarning` (the CLI passes its own printer)."""
    warnings.warn(message, InputWarning, stacklevel=3)


def natural_key(name):
    """Sort key putting ``s2`` before ``s10`` (digit runs compare as numbers)."""
    return [(0, int(tok), "") if tok.isdigit() else (1, 0, tok.lower())
            for tok in re.split(r"(\d+)", str(name)) if tok]


def _is_hidden(name):
    return name.startswith(".")


def scan_faces(root, extensions=IMAGE_EXTENSIONS, min_images=1, skip_bad=False,
               clients=None, warn=default_warn, min_images_option=False, input_options=True):
    """List the clients and their image files under ``root``.

    ``root`` holds one folder per client (the folder name is the client id) with that
    client's images. Hidden files and folders are skipped, as are plain files directly
    in ``root`` (READMEs, manifests). Clients and files are sorted naturally (s2 < s10).

    Parameters
    ----------
    root : str or Path
    extensions : tuple of str
        Lower-case image extensions (matched case-insensitively).
    min_images : int
        A client folder with fewer images is an error.
    skip_bad : bool
        Warn and skip non-image files instead of failing.
    min_images_option : bool
        ``min_images`` is the caller's option of that name (``enroll --min-images``): a
        refusal says which value would take the folder (`too_few_images`).
    input_options : bool
        The caller has options ``skip_bad`` and ``strict`` (``enroll``): a bad file's
        refusal and the resize warning name them; ``roc`` has neither.
    clients : iterable of str or None
        Only these client folders (each must exist).
    warn : callable(str) or None
        Receives each warning; None: `default_warn`.

    Returns
    -------
    list of (client_id, [Path, ...])
    """
    root = Path(root)
    warn = default_warn if warn is None else warn
    folders, exts = _client_folders(root, extensions, clients)
    out = []
    for folder in folders:
        paths = _image_files(folder, exts, skip_bad, warn, input_options)
        if len(paths) < min_images:
            raise too_few_images(folder, len(paths), min_images, "", min_images_option)
        out.append((folder.name, paths))
    return out


def check_faces_root(root):
    """Raise `InputError` naming ``root`` unless it is a folder (of client folders): one
    line for every command that reads a faces folder (enroll, its background, roc)."""
    if not os.path.exists(root):
        raise InputError("face folder does not exist", path=root)
    if not os.path.isdir(root):
        raise InputError("not a folder (expected ROOT/<client>/<images>)", path=root)


def _client_folders(root, extensions, clients):
    """`scan_faces`' client folders under ``root``, sorted naturally (only ``clients``
    when given), and the ``extensions`` lower-cased; raises `InputError` on a missing
    root, a folder name that is no client id, a missing wanted client or no client
    folder at all."""
    check_faces_root(root)
    exts = tuple(e.lower() for e in extensions)
    folders = sorted((p for p in root.iterdir() if p.is_dir() and not _is_hidden(p.name)),
                     key=lambda p: natural_key(p.name))
    for folder in folders:  # folder names are client ids: check them before any work
        problem = client_id_problem(folder.name)
        if problem:
            raise InputError(f"cannot enrol this folder: {problem}", path=folder)
    if clients is not None:
        wanted = [str(c) for c in clients]
        by_name = {p.name: p for p in folders}
        missing = [c for c in wanted if c not in by_name]
        if missing:
            raise InputError(f"no client folder {', '.join(missing)}", path=root)
        folders = [by_name[c] for c in sorted(set(wanted), key=natural_key)]
    if not folders:
        loose = [p for p in root.iterdir() if p.is_file() and p.suffix.lower() in exts]
        hint = f"; found {len(loose)} image(s) directly in it" if loose else ""
        raise InputError(f"no client folders (expected ROOT/<client>/<images>){hint}",
                         path=root)
    return folders, exts


def _image_files(folder, exts, skip_bad, warn, input_options):
    """The image files of one client ``folder``, sorted naturally (hidden ones left out,
    a sub-folder ignored with a warning, a non-image refused or, with ``skip_bad``,
    skipped with a warning)."""
    paths = []
    for entry in sorted(folder.iterdir(), key=lambda p: natural_key(p.name)):
        if _is_hidden(entry.name):
            continue
        try:
            entry.name.encode("utf-8")
        except UnicodeEncodeError:
            raise InputError("file name is not valid UTF-8; rename it", path=entry) \
                from None
        if entry.is_dir():
            warn(f"{entry}: ignoring sub-folder inside a client folder")
            continue
        if entry.suffix.lower() in exts:
            paths.append(entry)
            continue
        msg = f"not an image file (extension '{entry.suffix or '(none)'}')"
        if not skip_bad:
            raise InputError(msg + use_option("skip_bad", "to skip it", input_options),
                             path=entry)
        warn(f"{entry}: {msg}; skipped")
    return paths


def too_few_images(folder, found, min_images, kind, min_images_option):
    """The refusal of a client ``folder`` with ``found`` (``kind``: "" or "readable ")
    images, fewer than ``min_images``; it names the value of the option `min_images`
    that would take the folder when that is the caller's option and can."""
    hint = (f" ({option('min_images')} {found} would enrol it)"
            if min_images_option and found >= 1 else "")
    return InputError(f"client folder has {found} {kind}image(s), at least {min_images} "
                      f"needed{hint}", path=folder)


def use_option(name, what, offered):
    """The end of a refusal or warning that names an option, when the command has it.

    Parameters
    ----------
    name : str
        The option's parameter name (``skip_bad``; shown as the CLI or the library
        names it: `ssgallery.errors.option`).
    what : str
        What the option does here ("to skip it").
    offered : bool
        The caller has that option (``input_options`` of `scan_faces`).

    Returns
    -------
    str
        ``; use --NAME WHAT``, or "" when not ``offered``: a message never names an option
        its command does not have.
    """
    return f"; use {option(name)} {what}" if offered else ""
