"""The two kinds of ssgallery HDF5 file, the enrollment store and the gallery (and the
newest version of a score file's side-car), and how messages name them: one list for the writers' refusals (`ssgallery.formats.writable`) and the
readers' (`ssgallery.formats.hdf5`, `ssgallery.formats.encryption`). Standard library
only; imports nothing of the package."""

KIND_LABELS = {"ssgallery-enrollment": "an ssgallery enrollment store",
               "ssgallery-gallery": "an ssgallery gallery"}
SCORES_LABEL = "an ssgallery score side-car"  # JSON, not HDF5: no reader names it for another
# the newest format_version of each that this code reads and writes (the readers' and
# writers' FORMAT_VERSION; a writer never replaces a newer file it could not read)
NEWEST_VERSIONS = {"ssgallery-enrollment": 2,
                   "ssgallery-gallery": 3,  # 3: uint8 prototypes
                   "ssgallery-scores": 2}  # a score file's JSON side-car (score_meta)
# said when one of the two is given for the other: which command writes which
ROLES = "enroll writes a store, compress turns it into a gallery"


def kind_label(fmt):
    """``an ssgallery gallery``: how messages name a file of the format tag ``fmt``."""
    if fmt == "ssgallery-scores":
        return SCORES_LABEL
    return KIND_LABELS.get(fmt, f"a '{fmt}' file")


def other_kind(kind, fmt, found, encrypted=False):
    """Why a file tagged ``found`` is not the ``kind`` (tag ``fmt``) asked for (a reader's
    refusal): a store given for a gallery (or the reverse) is named as such, with the
    commands that write each (`ROLES`), ``encrypted`` or not."""
    if found in KIND_LABELS:
        label = kind_label(found).replace("an ", "an encrypted ", 1) if encrypted \
            else kind_label(found)
        return f"not an {kind} but {label} (format '{found}'; {ROLES})"
    what = (f"an encrypted '{found}' file" if encrypted else f"format '{found}'" if found
            else "no ssgallery format tag")
    return f"not an {kind} ({what}, expected '{fmt}')"


__all__ = ["KIND_LABELS", "NEWEST_VERSIONS", "ROLES", "SCORES_LABEL", "kind_label", "other_kind"]
