"""compress's table of clients and the line under it (`ssgallery.cli.compress`)."""

from ssgallery.errors import printable
from ssgallery.tables import listed

__all__ = ["TABLE_LEGEND", "client_table", "table_legend"]


def _pct(value):
    return None if value is None else f"{100 * value:.0f}%"


# one line under the table, as long as the gallery's lines after it
TABLE_LEGEND = ("threshold: accept when g(x) >= it; FRR: held-out genuine images rejected at "
                "it; CV FRR: at a cross-validated threshold of the client's own; SVM #SVs, "
                "SVM CV FRR: its full SVM's; vs SVM: share of held-out genuine-impostor pairs "
                "misranked beyond the SVM")


def client_table(rows):
    """One line per client: m, the stored threshold, the FRR of its held-out genuine
    images at that threshold, its own CV threshold's FRR, and its full SVM's #SVs and
    CV FRR (both CV FRRs at the client's own threshold for the target FAR), and "vs SVM":
    the share of held-out genuine-impostor pairs it misranks beyond its SVM
    (``teacher_gap``; "-" without held-out images or in galleries made before it)."""
    from ssgallery.tables import format_table, signed

    head = ["client", "m", "threshold", "FRR", "CV FRR", "SVM #SVs", "SVM CV FRR", "vs SVM"]
    return format_table(head, [[printable(r["client"]), r["m"], signed(r["threshold"]),
                                _pct(r.get("frr")), _pct(r["cv_frr"]), r["svm_n_support"],
                                _pct(r["svm_cv_frr"]), _gap(r.get("teacher_gap"))]
                               for r in rows], right=range(1, 8))


def _gap(value):
    return None if value is None else f"{value:+.3f}"


def table_legend(summary):
    """The line under the table: `TABLE_LEGEND`, and why an FRR shown "—" is unknown."""
    return TABLE_LEGEND + _unknown_frr_note(summary)


def _unknown_frr_note(summary):
    """The legend's words for an FRR shown "—": why the table does not know it (a
    client kept by --update from a gallery that did not record it, or none of its images
    held out); "" when every FRR is known."""
    unknown = {r["client"] for r in summary.clients if r.get("frr") is None}
    if not unknown:
        return ""
    old = unknown & set(summary.kept or ())
    why = [(f"kept from a gallery written before it recorded each client's FRR (its "
            f"calibration names the few worst): {listed(printable(c) for c in sorted(old))}"
            "; compress them again without --update to see it")] if old else []
    why += ["no held-out genuine image"] if unknown - old else []
    return f"; FRR —: {' or '.join(why)}"
