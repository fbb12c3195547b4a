"""``ssgallery info``: what a gallery and an enrollment store hold."""

import os

import click

from ssgallery import jsontext
from ssgallery.cli.operating import (
    calibration_line,
    few_people_warning,
    frr_warning,
    open_set_line,
    unresolved_warning,
)
from ssgallery.cli.operating_far import far_warning
from ssgallery.cli.options import (
    contract_line,
    key_file_option,
    matcher_line,
    privacy_key_option,
    unrecorded_fta_warning,
    warn,
)
from ssgallery.cli.progress import quiet_option
from ssgallery.errors import printable
from ssgallery.tables import DASH, counted, format_table, signed


def _size(n):
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024.0


def signature_line(summary):
    """``signature: ...`` of a gallery's (or a client's) summary: checked with the key,
    or signed and not checked (no key given); None for an unsigned gallery read without
    a key (nothing was checked, nothing to check)."""
    if summary["signature_checked"]:
        return "signature: checked: signed with the configured key, not edited since"
    if summary["signed"]:
        return ("signature: signed, not checked (--key-file or $SSGALLERY_KEY_FILE checks "
                "it as verify does)")
    return None


def _print_gallery(g):
    click.echo(f"gallery {g['path']}: {counted(g['n_clients'], 'client')}, "
               f"{_size(g['file_bytes'])}, "
               f"created {g['created']} by ssgallery {g['tool_version']} "
               f"(format {g['format_version']})")
    if signature_line(g):
        click.echo(signature_line(g))
    target = "not recorded" if g["target_far"] is None else f"{g['target_far']:g}"
    dim = DASH if g["dimension"] is None else g["dimension"]
    click.echo(f"{matcher_line(g['matcher'], g['matcher_settings'], dim)}, shared state "
               f"{_size(g['matcher_state_bytes'])}; target FAR {target}")
    _echo_contract(g)
    click.echo(calibration_line(g.get("calibration"), g["matcher"]))
    click.echo(open_set_line(g.get("open_set")))
    rows = [[printable(r["client"]), r["m"], r["bytes"], r["svm_n_support"],
             r["svm_bytes"] or None, None if r["ratio"] is None else f"{r['ratio']:.1f}x",
             signed(r["threshold"])] for r in g["clients"]]
    click.echo(format_table(["client", "m", "bytes", "SVM #SVs", "SVM bytes", "ratio",
                             "threshold"], rows, right=range(1, 7)))
    if g["clients"]:
        n = len(g["clients"])
        m = sum(r["m"] for r in g["clients"]) / n
        sv = sum(r["svm_n_support"] or 0 for r in g["clients"]) / n
        models = f"{_size(g['bytes_total'])} of client models" + (
            "" if g["prototype_dtype"] == "float64" else
            f" (prototypes stored as {g['prototype_dtype']}: whole pixel values, exact)")
        if g["ratio"] is not None:
            click.echo(f"total: {models} vs "
                       f"{_size(g['svm_bytes_total'])} for the full SVMs ({g['ratio']:.1f}x "
                       f"smaller); matches per claim: {m:g} vs {sv:.1f}")
        else:
            why = ("no full SVM recorded" if g["svm_compared"] else
                   "--svm compares with the full SVMs, reading every client")
            click.echo(f"total: {models}; matches per claim: {m:g} ({why})")


def _warn_gallery(g):
    """The gallery summary's warnings (stderr), with or without --json or --quiet."""
    for advice in (unresolved_warning(g.get("calibration"), command="info"),
                   few_people_warning(g.get("calibration")),
                   frr_warning(g.get("calibration"), g["matcher"], command="info"),
                   far_warning(g.get("calibration"))):
        if advice:
            warn(advice)
    if g["basis_stale"]:
        warn("compressed from a store whose matcher basis was stale")
    if unrecorded_fta_warning(g.get("store"), g.get("fta_folds"), gallery=g["path"]):
        warn(unrecorded_fta_warning(g.get("store"), g["fta_folds"], gallery=g["path"]))


def _warn_pairing(out):
    """A gallery shown beside a store it was not compressed from (another enrollment, or
    this store as it was before ``enroll`` wrote it again): say so (stderr)."""
    g, s = out.get("gallery"), out.get("store")
    if g is None or s is None or g.get("store_fingerprint") in (None, s["fingerprint"]):
        return
    warn(f"{g['path']} was not compressed from {s['path']} as it is now (another "
         "enrollment store, or this one enrolled again or added to since): its models and "
         "thresholds are not this store's; compress it again from this store (after enroll "
         "--add: compress --update)")


def _print_client(r):
    svm = "no full SVM recorded" if r["svm_n_support"] is None else (
        f"full SVM {r['svm_n_support']} SVs, {r['svm_bytes']} bytes ({r['ratio']:.1f}x)"
        + ("" if r["svm_threshold"] is None else f", threshold {signed(r['svm_threshold'])}"))
    click.echo(printable(f"client {r['client']} of {r['gallery']}: m = {r['m']}, "
                         f"{r['bytes']} bytes, b = {signed(r['intercept'])}, threshold "
                         f"{signed(r['threshold'])}; {svm}"))
    if signature_line(r):
        click.echo(signature_line(r))
    _echo_contract(r)
    norm = r.get("normalization") or {}
    if norm:
        shown = ", ".join(f"{k} {v:.4f}" if isinstance(v, float) else f"{k} {v}"
                          for k, v in sorted(norm.items()) if k != "kind")
        click.echo(printable(f"normalisation: {norm.get('kind', '?')} ({shown})"))
    if r["provenance"]:
        click.echo("provenance (how it was trained):")
    for key, value in sorted(r["provenance"].items()):
        unit = PROVENANCE_UNITS.get(key) if isinstance(value, (int, list)) else None
        click.echo(printable(f"  {key}: {value}" + (f" ({unit})" if unit else "")))


# what a provenance count counts (the keys stay as --json prints them): images, not people
PROVENANCE_UNITS = {"n_genuine": "the client's own training images",
                    "n_impostor": "other people's images the client trained on",
                    "max_impostors": "at most this many impostor images per client, 0: no cap",
                    "frr_heldout": "its held-out genuine images rejected at the threshold, "
                                   "of those held out"}


def _print_store(s):
    h, w = s["image_shape"]
    click.echo(f"store {s['path']}: {counted(s['n_clients'], 'client')} + "
               f"{counted(s['n_background'], 'background subject')}, "
               f"{counted(s['n_images'], 'image')} of {w}x{h}, {_size(s['file_bytes'])}, "
               f"created {s['created']}")
    click.echo(matcher_line(s["matcher"], s["matcher_settings"], s["dimension"])
               + (f"; basis STALE (added since the fit: {', '.join(s['stale_clients'][:10])})"
                  if s["basis_stale"] else ""))
    _echo_contract(s)


def _warn_store(s):
    """The store summary's warning (stderr), with or without --json or --quiet."""
    if unrecorded_fta_warning(s["path"], s.get("fta_folds")):
        warn(unrecorded_fta_warning(s["path"], s["fta_folds"]))


def _echo_contract(summary):
    """The line of what the file records of its matcher program's contract, if any."""
    if contract_line(summary.get("matcher_contract")):
        click.echo(contract_line(summary["matcher_contract"]))


@click.command("info")
@click.option("--gallery", default=None, metavar="FILE", help="Gallery [gallery.h5 if present].")
@click.option("--store", default=None, metavar="FILE",
              help="Enrollment store [enrollment.h5 if present].")
@click.option("--svm", is_flag=True,
              help="Also compare each client with its full SVM (#SVs, bytes, ratio): reads "
                   "and checks every client's group, seconds on 10,000 clients.")
@click.option("--client", "--claim", "client_id", default=None, metavar="ID",
              help="Only this client of the gallery, with its full SVM and its provenance "
                   "(reads that client's group only; --claim, as verify and show name it, "
                   "is the same).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@quiet_option
@key_file_option
@privacy_key_option
def command(gallery, store, svm, client_id, as_json, quiet, key_file, privacy_key_file):
    """Summarise a gallery (clients, m, bytes per client, thresholds, matcher) and an
    enrollment store. With --svm, also the bytes and matches per claim of each client's
    full SVM (its support vectors) and the compression ratio. For an external matcher,
    the program contract the file records (kind, range, quality threshold, digest),
    read from the file: no program is run.

    Without options, shows gallery.h5 and enrollment.h5 of the current folder, those
    that exist; --client reads gallery.h5 unless --gallery names another (with --store
    too). The gallery's summary comes from its header and stacked index, after
    checking the whole file's seal and digests; --svm also reads and checks every
    client's group.

    With a signing key (--key-file or $SSGALLERY_KEY_FILE), the gallery's signature is
    checked as verify checks it, and every client's group against it (the check before
    deploying): a gallery unsigned, signed with another key or edited since is refused
    with verify's line and status (2), and the summary says "signature: checked".
    Without a key a signed gallery's signature is not checked, and the summary says so.

    Exit status: 0 summarised (warnings aside), 2 input error (a missing, foreign,
    corrupt, edited or unsigned file: one line on stderr), 4 internal error.

    \b
    Examples:
      ssgallery info
      ssgallery info --gallery site.h5 --svm
      ssgallery info --gallery site.h5 --client c03
      ssgallery info --gallery site.h5 --json
      ssgallery info --gallery site.h5 --key-file /etc/ssgallery/sign.key
    """
    from ssgallery.errors import FormatError
    from ssgallery.formats.encryption import load_keys, load_privacy_key
    from ssgallery.formats.gallery import client_summary, gallery_summary
    from ssgallery.formats.store import store_summary

    if gallery is None and store is None:
        gallery = "gallery.h5" if os.path.exists("gallery.h5") else None
        store = "enrollment.h5" if os.path.exists("enrollment.h5") else None
        if gallery is None and store is None:
            raise FormatError("no gallery.h5 or enrollment.h5 here (use --gallery/--store)")
    if client_id is not None and gallery is None:  # --store given: the folder's gallery
        if not os.path.exists("gallery.h5"):
            raise click.UsageError("--client needs a gallery (--gallery FILE)")
        gallery = "gallery.h5"
    if key_file is not None and gallery is None:
        raise click.UsageError("--key-file checks a gallery's signature: give --gallery FILE")
    out = {}
    key, privacy_key = load_keys(key_file, privacy_key_file) if gallery is not None else \
        (None, load_privacy_key(privacy_key_file))
    if client_id is not None:
        out["client"] = client_summary(gallery, client_id, privacy_key=privacy_key, key=key)
    elif gallery is not None:
        out["gallery"] = gallery_summary(gallery, svm=svm, privacy_key=privacy_key, key=key)
    if store is not None:
        out["store"] = store_summary(store, privacy_key=privacy_key)
    if as_json:
        click.echo(jsontext.dumps(out, indent=2))
        if "gallery" in out:  # its warnings (stderr), as without --json
            _warn_gallery(out["gallery"])
        if "store" in out:
            _warn_store(out["store"])
        _warn_pairing(out)
        return
    if "gallery" in out:
        _print_gallery(out["gallery"])
        _warn_gallery(out["gallery"])
    if "client" in out:
        _print_client(out["client"])
    if "store" in out:
        if "gallery" in out or "client" in out:
            click.echo()
        _print_store(out["store"])
        _warn_store(out["store"])
    _warn_pairing(out)
