"""benchmarks/template_privacy.py's tables: replay, re-identification, linkability per
arm, accuracy and start-up (`report`), and the one line per set on the most linkable
arm under two keys against the target (`worst_arm`)."""

from _privacy_linkability import ARMS, KEY_INVARIANT
from _results import markdown_table

from ssgallery.biometrics.intervals import clopper_pearson


def _fmt_pair(pair):
    return f"{100 * pair[0]:.1f} / {100 * pair[1]:.1f}"


def _fmt_rank(hits_n):
    hits, n = hits_n
    lo, hi = clopper_pearson(hits, n)
    return f"{100 * hits / n:.1f} ({100 * lo:.1f}-{100 * hi:.1f})"


def _arms_cell(link, key):
    return " / ".join(f"{link[key][arm][0]:.3f}" for arm in ARMS)


LINK_TARGET = 0.05  # D<->sys between two keys, every arm (issue 23)


def worst_arm(row):
    """One line: the protected gallery's most linkable arm under two keys, vs the target."""
    link = row["link"]["two keys v2"]
    arm = max(ARMS, key=lambda a: link[a][0])
    met = "met" if link[arm][0] <= LINK_TARGET else "MISSED"
    one = " (one pair: the same under every key)" if arm in KEY_INVARIANT[2] else ""
    return (f"- {row['set']}: worst arm under two keys: {arm}{one}, D<->sys "
            f"{link[arm][0]:.3f} (floor {link[arm][1]:.3f}); target <= {LINK_TARGET}: {met}")


def report(rows, med, load):
    head = ["set", "N", "replay plain % (clients / prototypes)", "replay protected %",
            "rank-1 plain % (95 % CI)", "rank-1 protected, no key %",
            "rank-1 protected, wrong key %", "chance %"]
    table1 = [[r["set"], r["N"], _fmt_pair(r["replay plain"]), _fmt_pair(r["replay protected"]),
               _fmt_rank(r["reid"]["plain"]), _fmt_rank(r["reid"]["protected, no key"]),
               _fmt_rank(r["reid"]["protected, wrong key"]), f"{100 / r['N']:.1f}"]
              for r in rows]
    arms = " / ".join(ARMS)
    head2 = ["set", f"D<->sys plain ({arms})", f"protected, same key ({arms})",
             f"protected, two keys ({arms})", f"first scheme, two keys ({arms})",
             "null floor (two keys)", "mated scores pooled"]
    table2 = [[r["set"], _arms_cell(r["link"], "plain"), _arms_cell(r["link"], "same key"),
               _arms_cell(r["link"], "two keys v2"), _arms_cell(r["link"], "two keys v1"),
               f"{r['link']['two keys v2']['distance'][1]:.3f}", r["link"]["mated"]]
              for r in rows]
    head3 = ["set", "max |score diff|", "identical verdicts",
             "mean client EER plain / protected %"]
    table3 = []
    for r in rows:
        diff, same, e0, e1 = r["accuracy"]
        table3.append([r["set"], f"{diff:.1e}", str(same), f"{100 * e0:.2f} / {100 * e1:.2f}"])
    text = "\n\n".join(markdown_table(h, t) for h, t in
                       ((head, table1), (head2, table2), (head3, table3)))
    text += "\n\n" + "\n".join(worst_arm(r) for r in rows)
    if med:
        galleries = [name for verb, name in med if verb == "verify"]
        rows3 = []
        for name in galleries:
            cells = [name]
            for verb in ("verify", "identify"):
                (w, c), (w0, c0) = med[verb, name], med[verb, "plain"]
                cells += [f"{w * 1000:.0f}", f"{w / w0:.3f}", f"{c * 1000:.0f}", f"{c / c0:.3f}"]
            rows3.append(cells)
        head4 = [f"start-up ({rows[0]['set']}, N = {rows[0]['N']}, load {load})"]
        for verb in ("verify", "identify"):
            head4 += [f"{verb} wall ms", "x plain", f"{verb} CPU ms", "x plain"]
        text += "\n\n" + markdown_table(head4, rows3)
    print(text)
    return text
