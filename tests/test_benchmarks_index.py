"""docs/benchmarks/index.md is the table `benchmarks/_index.py` makes of the pages.

The index shows each benchmark page's headline figures, read from the page; it is
rewritten whenever a script writes its page. These tests fail when the committed index
is not what the committed pages give (a page edited or added without the index), and
when a page has no headline (a new page needs an entry in `_index.HEADLINES`; a page
whose tables changed shape needs its entry mended).
"""

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PAGES = REPO / "docs" / "benchmarks"
sys.path.insert(0, str(REPO / "benchmarks"))
import _index


def pages():
    return sorted(p for p in PAGES.glob("*.md") if p.name != "index.md")


def test_every_page_has_headline_figures():
    missing = [p.stem for p in pages() if _index.headline(p.stem, p.read_text("utf-8")) is None]
    assert not missing, f"no headline for {missing}: add or mend benchmarks/_index.HEADLINES"


def test_the_index_is_what_the_pages_give():
    index = (PAGES / "index.md").read_text("utf-8")
    assert _index.index_text(pages()) in index, (
        "docs/benchmarks/index.md is stale: cd benchmarks && python -c "
        "'import _results; _results.write_index()'")
    for page in pages():  # a link to every page
        assert f"]({page.name})" in index


def test_cells_are_read_by_row_and_column():
    text = ("| method | m | EER % |\n|---|---|---|\n| svm | - | 1.31 |\n| ssvm | 2 | 1.36 |\n"
            "| ssvm | 3 | 1.28 |\n\nprinted\n")
    assert _index.cell(text, "ssvm", "EER %") == "1.36"
    assert _index.cell(text, "ssvm", "EER %", where={"m": "3"}) == "1.28"
    assert _index.headline("paper_att", text) is None  # no 'client EER %' column: no figure
    assert _index.headline("no_such_page", text) is None


def test_roc_s_table_makes_a_page_table_without_its_notes_and_a_headline():
    import _results

    from ssgallery.tables import format_table

    text = format_table(["method", "m", "matches", "EER % [95% CI]", "FRR@FAR=1%"],
                        [["svm", None, "51.8 ± 23.1", "1.31 [0.95, 1.80]", "7.60"],
                         ["ssvm", 2, "2.0 ± 0.0", "1.36 [1.00, 1.75]", "8.00"]],
                        right=range(1, 5))
    text += ("\n—: FAR 0.1% is below the resolution of a client's curve (1/21 impostor "
             "claims)\nEER: each client's own threshold sweep, averaged over clients and "
             "repetitions (the headline)")
    page = _results.text_table(text)
    assert page.splitlines() == [
        "| method | m | matches | EER % [95% CI] | FRR@FAR=1% |", "|---|---|---|---|---|",
        "| svm | — | 51.8 ± 23.1 | 1.31 [0.95, 1.80] | 7.60 |",
        "| ssvm | 2 | 2.0 ± 0.0 | 1.36 [1.00, 1.75] | 8.00 |"]
    assert _index.headline("paper_att", page) == (
        "AT&T, eigenface: mean client EER 1.36 % at m = 2 vs 1.31 % for the full SVM "
        "(51.8 ± 23.1 matches per claim)")
