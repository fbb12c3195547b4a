"""Options shared by several commands: the host's matcher program and signing key; how
library messages are shown (`as_flags`, `warn`)."""

import os
import re
import shlex

import click

MATCHER_CMD_HELP = (
    "External matcher: the program and its arguments on THIS host, split like a shell "
    "would (no shell runs it). Default: $SSGALLERY_MATCHER_CMD, else `command` in the "
    "[external] table of $SSGALLERY_CONFIG (~/.config/ssgallery/config.toml). A store or "
    "gallery never names a program; it holds a digest of the program's --describe "
    "answer, and a program with another digest is refused. A file whose matcher runs no "
    "program (eigenface, dlib) ignores it, and a warning says so.")

KEY_FILE_HELP = (
    "Signing key (a file of 16-4096 bytes). Default: $SSGALLERY_KEY_FILE. With a key, "
    "compress signs the gallery (HMAC-SHA256 of its digest) and verify, identify, roc, "
    "info and show refuse a gallery that is unsigned or signed with another key.")


PRIVACY_KEY_FILE_HELP = (
    "Privacy key (a file of 16-4096 bytes, kept apart from the signing key: the "
    "--key-file's file, or a file of the same bytes, is refused). Default: "
    "$SSGALLERY_PRIVACY_KEY_FILE. With it, stores and galleries are written encrypted "
    "(AES-256-GCM) and encrypted ones can be read; without it an encrypted file is "
    "refused. See docs/privacy.md.")


class Fraction(click.ParamType):
    """A rate option (``--target-far``, ``--target-fpir``, ``identify --fpir``): a number
    in [0, 1) ((0, 1) with ``low_open``), refused in the words of
    `ssgallery.checks.not_a_fraction` (a percentage typed for a fraction is named)."""

    name = "fraction"

    def __init__(self, low_open=False):
        self.low_open = low_open

    def convert(self, value, param, ctx):
        from ssgallery.checks import not_a_fraction, parses_as_float

        typed = value.strip() if isinstance(value, str) else ""
        if typed.endswith("%") and parses_as_float(typed[:-1]):  # "1%": said as 2 is
            self.fail(f"expected {not_a_fraction(typed, self.low_open)}", param, ctx)
        number = click.FLOAT.convert(value, param, ctx)
        problem = not_a_fraction(number, self.low_open)
        if problem:
            self.fail(f"expected {problem}", param, ctx)
        return number


def privacy_key_option(func):
    return click.option("--privacy-key-file", default=None, metavar="FILE",
                        help=PRIVACY_KEY_FILE_HELP)(func)


def matcher_cmd_option(func):
    return click.option("--matcher-cmd", default=None, metavar="'PROGRAM ARGS'",
                        help=MATCHER_CMD_HELP)(func)


def key_file_option(func):
    return click.option("--key-file", default=None, metavar="FILE", help=KEY_FILE_HELP)(func)


def probe_options(func):
    """--list, --strict, --json and --csv: how verify and identify take their probes and
    print their results."""
    for option in reversed([
            click.option("--list", "list_file", default=None, type=click.Path(), metavar="FILE",
                         help="Also take the probes listed in FILE (one path per line, "
                         "relative to the current folder, not to FILE's)."),
            click.option("--strict", is_flag=True, help="Refuse probes of another size than "
                         "the gallery's instead of resizing them."),
            click.option("--json", "as_json", is_flag=True, help="Print the results as JSON."),
            click.option("--csv", "as_csv", is_flag=True, help="Print one CSV line per "
                         "probe, after a header line.")]):
        func = option(func)
    return func


def probe_paths(probes, list_file):
    """The PROBE arguments followed by the paths listed in ``list_file``; at least one."""
    from ssgallery.app.verify import read_probe_list
    from ssgallery.errors import InputError

    paths = list(probes)
    if list_file is not None:
        paths += read_probe_list(list_file)
    if not paths:
        raise InputError("no probe images given (PROBE arguments or --list FILE)")
    folder = next((p for p in paths if os.path.isdir(p)), None)
    if folder is not None:  # a probe is one image: say how to give a folder's images
        patterns = _images_glob(folder)
        if patterns is None:
            from ssgallery.images.ingest import IMAGE_EXTENSIONS

            raise InputError("a folder, not a probe image, and it holds no image file "
                             f"({' '.join(IMAGE_EXTENSIONS)}): give probe images or list "
                             "them in --list FILE", path=folder)
        raise InputError(f"a folder, not a probe image: give its images ({patterns}) or "
                         "list them in --list FILE", path=folder)
    return paths


def _images_glob(folder, looked_at=1000):
    """``FOLDER/*.png FOLDER/*.jpg``: shell patterns of the images in ``folder``, one per
    extension among its first ``looked_at`` image files as spelt there, the commonest
    first (None when the whole folder was read and holds none; ``*.png`` when it could
    not be read or its first ``looked_at`` files are no images): a folder of AT&T's .pgm faces is given as
    ``s1/*.pgm``, one of .png and .jpg probes as both patterns, which a shell expands to
    every probe there (one pattern left the others out); a folder whose name a shell
    would split or expand is quoted (``'my probes'/*.png``)."""
    from collections import Counter
    from itertools import islice

    from ssgallery.images.ingest import IMAGE_EXTENSIONS

    found, seen = Counter(), looked_at
    try:
        with os.scandir(folder) as entries:
            seen = 0
            for seen, entry in enumerate(islice(entries, looked_at), 1):
                ext = os.path.splitext(entry.name)[1]
                if ext.lower() in IMAGE_EXTENSIONS and not entry.name.startswith("."):
                    found[ext] += 1
    except OSError:  # unreadable: the pattern of the usual probes
        seen = looked_at
    if not found and seen < looked_at:  # read to its end: no image there
        return None
    exts = sorted(sorted(found), key=found.get, reverse=True) or [".png"]
    return " ".join(os.path.join(shlex.quote(folder), f"*{ext}") for ext in exts)


_OPTION = re.compile(r"`([a-z][a-z0-9_]*)`")


def as_flags(text, command=None):
    """A library message as the command line shows it: each parameter it names
    (`ssgallery.errors.option`) becomes ``command``'s long flag or argument name for
    that parameter (e.g. ``--skip-bad``, ``FACES_DIR``: an argument is also found by
    its metavar), else ``--name-with-dashes``."""
    params = {p.name: p for p in getattr(command, "params", ())}
    for p in getattr(command, "params", ()):
        if isinstance(p, click.Argument) and p.metavar:
            params.setdefault(p.metavar.strip("[]. ").lower(), p)

    def shown(match):
        param = params.get(match.group(1))
        if isinstance(param, click.Argument):
            return param.human_readable_name.strip("[]. ")
        flags = [o for o in getattr(param, "opts", ()) if o.startswith("--")]
        return flags[0] if flags else "--" + match.group(1).replace("_", "-")

    return _OPTION.sub(shown, str(text))


def warn(message):
    """Print a library warning line (flags shown, control characters escaped)."""
    from ssgallery.errors import printable

    ctx = click.get_current_context(silent=True)
    text = as_flags(message, ctx.command if ctx is not None else None)
    click.echo(f"ssgallery: warning: {printable(text)}", err=True)


def matcher_line(name, settings, dimension):
    """``matcher: NAME (key value, ...), d = D``: a store's or gallery's matcher as
    ``enroll`` and ``info`` print it (its settings, `ssgallery.matchers.Matcher.settings`:
    what holds, unset keys left out)."""
    from ssgallery.errors import printable

    shown = ", ".join(f"{k} {v}" for k, v in sorted(settings.items()) if v is not None)
    return printable(f"matcher: {name} ({shown}), d = {dimension}")  # a file's text


def unrecorded_fta_warning(store, folds, gallery=None):
    """The warning ``info`` and ``compress`` give of a store (or of a ``gallery``
    compressed from it, which carries its matcher state) whose failure-to-acquire limits
    were fitted before stores recorded what their folds held out
    (`ssgallery.matchers.Matcher.fta_folds_` ``"unrecorded"``), with the command that
    refits them; None otherwise."""
    if folds != "unrecorded":
        return None
    store = shlex.quote(os.fspath(store or "STORE"))
    whose = f"{os.fspath(gallery)}: its store's" if gallery else f"{store}: its"
    return (f"{whose} failure-to-acquire limits were fitted before stores recorded how "
            "(those enrolled before 2026-11-28 fitted them on held-out images, which "
            "refuse some strangers' faces as not a face: verify exit 3 instead of 1); "
            "enrol its faces again, without --add and with the options it was enrolled "
            "with (--clients, --background, the matcher's), to refit them on held-out "
            f"people: ssgallery enroll FACES_DIR --store {store} [OPTIONS]"
            + (", then compress every client again (not --update)" if gallery else ""))


def contract_line(contract):
    """``program contract: KIND, symmetric, range [lo, hi], ...; digest 0123456789ab...``:
    what a store or gallery records of its matcher program's ``--describe`` contract
    (`ssgallery.matchers.Matcher.recorded_contract`), as ``info`` prints it under the
    matcher line; None for a matcher that runs no program. The digest's first 12 digits
    are those a refused program's line names."""
    from ssgallery.errors import printable

    if not contract:
        return None
    c = contract
    lo, hi = c["range"]
    parts = [c["kind"], "symmetric" if c["symmetric"] else "not symmetric",
             f"range [{lo:g}, {hi:g}]"]
    if c["kind"] == "distance":
        parts.append(f"similarity exp(-d/{c['distance_scale']:.4g})")
    parts.append("no quality score" if c["quality_threshold"] is None else
                 f"quality threshold {c['quality_threshold']:.4g}")
    return printable(f"program contract: {', '.join(parts)}; digest "
                     f"{c['contract_sha256'][:12]}... (the program named on this host must "
                     "describe itself with it)")


def csv_list(values):
    """``values`` as one CSV field of ``;``-separated items, quoted as the csv module
    quotes (an item holding ``;`` or ``"`` between double quotes, its quotes doubled), so
    that ``next(csv.reader([field], delimiter=";"))`` reads the very items back (a client
    id may hold ``;``: `ssgallery.formats.hdf5.client_id_problem`); None when empty.
    Items without either character are joined as they are."""
    import csv
    import io

    if not values:
        return None
    out = io.StringIO()
    csv.writer(out, delimiter=";", lineterminator="").writerow(values)
    return out.getvalue()


def csv_text(head, rows):
    """CSV text (header line, then ``rows``); every field printable (`printable`), None
    empty, floats in full precision."""
    import csv
    import io

    from ssgallery.errors import printable

    def cell(value):
        if value is None:
            return ""
        return repr(value) if isinstance(value, float) else printable(value)

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(head)
    writer.writerows([cell(v) for v in row] for row in rows)
    return out.getvalue().rstrip("\n")
