"""How a field of the ``compress`` options enters the options digest that ``--resume``
and ``--update`` compare (`ssgallery.app.options.CompressOptions.digest_dict`): the
`option_field` of every options object, its digest rule (`ALWAYS`, `IF_CHANGED`,
`NEVER`) and its baseline. docs/contributing.md ("The digest rule") says why.
"""

from dataclasses import fields

from ssgallery.checks import checked_field

# How a field enters the options digest (what --resume/--update compare):
ALWAYS = "always"  # the fields of the first digest: always in it (never add one here)
IF_CHANGED = "if-changed"  # only when not at its default: a new field keeps old digests
NEVER = "never"  # never (set after training, checked on its own: threshold_mode)


def option_field(default, check=None, digest=IF_CHANGED, baseline=None):
    """A field of an options object: its default, ``check(name, value) -> value`` (raises
    `ssgallery.errors.InputError`, returns the value normalised; `ssgallery.checks`)
    and how it enters the digest (`ALWAYS`, `IF_CHANGED`, `NEVER`). ``baseline``: for
    an `IF_CHANGED` field whose default changed, the value every gallery made before the
    field existed was trained with (default: the default); the field enters the digest
    and the provenance when it is not at its baseline."""
    return checked_field(default, check, digest=digest,
                         baseline=default if baseline is None else baseline)


def changed_fields(options):
    """The `IF_CHANGED` fields of ``options`` that are not at their baseline, in order:
    what `ssgallery.app.options.CompressOptions.digest_dict` and ``provenance`` add to
    the fields every digest has.

    Parameters
    ----------
    options : CompressOptions
        An options object whose fields are `option_field` fields.

    Returns
    -------
    dict
        Field name -> value, in field order.
    """
    return {f.name: getattr(options, f.name) for f in fields(options)
            if f.metadata["digest"] == IF_CHANGED
            and getattr(options, f.name) != f.metadata["baseline"]}
