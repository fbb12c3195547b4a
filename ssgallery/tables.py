"""Plain-text tables for a terminal: every column as wide as its widest cell.

One implementation for every table the commands print (``roc``, ``compress``,
``info``): a header line, a rule, the rows; text columns left-aligned, numeric columns
right-aligned; `DASH` wherever a figure cannot be resolved or does not apply. Standard
library only. Scores, weights and thresholds print through `signed`, everywhere, and a
count with its noun through `counted` (``1 client``, ``2 clients``).
"""

DASH = "—"  # a figure the data cannot resolve, or that does not apply: the one symbol


def format_table(head, rows, right=(), gap="  "):
    """The text of a table.

    Parameters
    ----------
    head : list of str
        Column titles.
    rows : list of list
        Cells (converted with ``str``; None shows as `DASH`).
    right : collection of int
        Indices of the columns aligned to the right (numbers).
    gap : str
        Between two columns.

    Returns
    -------
    str
        Lines without trailing blanks, joined by newlines.
    """
    cells = [[DASH if c is None else str(c) for c in row] for row in rows]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *cells)]

    def line(row):
        return gap.join(str(x).rjust(w) if i in right else str(x).ljust(w)
                        for i, (x, w) in enumerate(zip(row, widths))).rstrip()

    return "\n".join([line(head), line(["-" * w for w in widths])] +
                     [line(r) for r in cells])


def signed(value):
    """A score, a weight (beta, b) or a threshold as every command prints it: signed,
    four decimals (``+0.2149``, ``-1.7600``), so that the figures of one line and of one
    column have the same precision."""
    return f"{float(value):+.4f}"


def counted(n, noun, plural=None, shown=None):
    """A count and its noun as every command prints it: singular for exactly one
    (``1 client``), plural otherwise (``0 clients``, ``2 clients``; ``plural`` when it is
    not ``noun + "s"``: ``counted(3, "impostor person", "impostor people")``; ``shown``:
    how ``n`` prints when not ``str(n)``, e.g. a mean ``f"{m:.3g}"``)."""
    return f"{n if shown is None else shown} {noun if n == 1 else plural or noun + 's'}"


def listed(names, shown=10):
    """``a, b, c``: the first ``shown`` of ``names`` (strings), then ``and N more``."""
    names = list(names)
    more = len(names) - shown
    return ", ".join(names[:shown]) + (f" and {more} more" if more > 0 else "")


CLOSE = 0.8  # difflib ratio from which a known id is close to a typed one
MOST_CLOSE = 3  # more known ids equally close than this: no guess
TYPED_MOST = 1000  # characters of a name that can be a typo of an id (at most 200 bytes)


def _folded(text):
    """``text`` as ids are compared for a hint: case folded, in Unicode compatibility
    form (NFKD) without its combining marks (accents), then NFC: ``José`` typed as one
    letter é, ``José`` spelt e + a combining accent (a folder named on macOS) and
    ``JOSE`` (typed without its accent) all fold to ``jose``."""
    import unicodedata

    loose = unicodedata.normalize("NFKD", unicodedata.normalize("NFKD", str(text)).casefold())
    return _nfc("".join(c for c in loose if not unicodedata.combining(c)))


def _closest(name, by_folded):
    """The known ids (``by_folded``: `_folded` -> ids) equally closest to ``name`` (case,
    accents and Unicode form ignored, difflib ratio at least `CLOSE`), sorted; none when
    more than `MOST_CLOSE` are (``c1`` among ``c01``..``c20``: ``c01``, ``c10``..``c19``,
    ``c21``); none for a name longer than `TYPED_MOST` characters, no typo of an id
    (folding and matching a 30,000,000-character claimed id took 36 s and 1.3 GB)."""
    from difflib import SequenceMatcher

    if len(str(name)) > TYPED_MOST:
        return []
    matcher, ratios = SequenceMatcher(), {}
    matcher.set_seq2(_folded(name))  # as difflib.get_close_matches does
    for folded in by_folded:
        matcher.set_seq1(folded)
        if matcher.real_quick_ratio() >= CLOSE and matcher.quick_ratio() >= CLOSE \
                and matcher.ratio() >= CLOSE:
            ratios[folded] = matcher.ratio()
    best = max(ratios.values(), default=None)
    close = sorted(k for f, r in ratios.items() if r == best for k in by_folded[f])
    return close if len(close) <= MOST_CLOSE else []


def did_you_mean(names, known):
    """``did you mean 'Abdullah_Gul'?``: for each of ``names`` (unknown ids, strings) the
    ones of ``known`` closest to it (`difflib`, case, accents and Unicode form ignored:
    `_folded`; ratio at least `CLOSE`), quoted, all of them when several are equally
    close (``did you mean 'c03' or 'c13'?`` for ``c3``; none when more than `MOST_CLOSE`
    are: no guess where the ratio cannot tell), so that difflib's tie-break (the last in
    sort order: ``c13``) never names one id as the one meant; an error message makes
    them printable. An id that is a typed name in another Unicode form (it looks the
    same) is said to be (``('José' is the same letters in Unicode form NFD)``). ``""``
    when none is close. A typed client id that is not there is most often a typo,
    another case of one that is, or one typed without its accents (``Jose``)."""
    by_folded = {}
    for k in known:
        by_folded.setdefault(_folded(k), []).append(str(k))
    found = []
    for name in names:
        found += [k for k in _closest(name, by_folded) if k not in found]
    if not found:
        return ""
    quoted = [f"'{f}'" for f in found]
    hint = ("did you mean " + (" or ".join(quoted) if len(quoted) < 3 else
                               ", ".join(quoted[:-1]) + " or " + quoted[-1]) + "?")
    same = [f for f in found for n in names if str(n) != f and _nfc(str(n)) == _nfc(f)]
    return hint + (f" ('{same[0]}' is the same letters in Unicode form "
                   f"{'NFC' if same[0] == _nfc(same[0]) else 'NFD'})" if same else "")


def _nfc(text):
    """``text`` in Unicode normal form NFC (composed: é one code point)."""
    import unicodedata

    return unicodedata.normalize("NFC", text)


def width(text):
    """The widest line of ``text``."""
    return max((len(line) for line in str(text).splitlines()), default=0)


__all__ = ["DASH", "counted", "did_you_mean", "format_table", "listed", "signed",
           "width"]
