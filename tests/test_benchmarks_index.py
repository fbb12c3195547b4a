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
