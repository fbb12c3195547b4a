"""tools/docs_layout.py finds text a browser cuts, in real headless Chromium.

Pages made here, loaded as the tool loads the built site: a box that hides its
overflowing text, a console block that scrolls sideways and a page wider than the
window are problems; a ``text`` block that scrolls (a printed table wider than any
page) is allowed. Needs Chromium on PATH (the docs check's only requirement): without
it the tests skip on a developer's machine and fail in CI.
"""

import sys
from pathlib import Path

import pytest
from helpers import in_ci

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tools"))
import docs_layout

LONG = "ssgallery roc --scores report/scores/*.txt --wide " * 8

PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>{title}</title>
<style>body {{ margin: 0; font: 16px monospace; }} code {{ overflow: auto; display: block; }}
</style></head><body><div style="width: 600px">{body}</div></body></html>
"""

FINE = ("<p>A paragraph that wraps as it should, however long it is: " + LONG + "</p>"
        '<div class="language-text highlight"><pre><code>' + LONG + "</code></pre></div>")
CUT = ('<div class="md-ellipsis" style="overflow: hidden; white-space: nowrap">'
       + LONG + "</div>")
SCROLLS = '<div class="language-console highlight"><pre><code>' + LONG + "</code></pre></div>"
WIDE = '<p style="white-space: nowrap; width: 3000px">' + LONG + "</p>"


@pytest.fixture(scope="module")
def chromium():
    program = docs_layout.browser()
    if program is None:  # the rule of real data (tests/conftest.py): skip here, fail in CI
        message = "no Chromium on PATH: tools/docs_layout.py cannot run here"
        if in_ci():
            pytest.fail(message)
        pytest.skip(message)
    return program


def _site(tmp_path, **pages):
    site = tmp_path / "site"
    for name, body in pages.items():
        folder = site if name == "home" else site / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "index.html").write_text(PAGE.format(title=name, body=body), "utf-8")
    (site / "assets").mkdir()
    (site / "assets" / "x.html").write_text("<html><body>not a page</body></html>")
    return site


def test_text_cut_or_scrolled_sideways_is_found(tmp_path, chromium):
    site = _site(tmp_path, home=FINE, cut=CUT, scrolls=SCROLLS, wide=WIDE)
    problems = docs_layout.check(site, width=1280, program=chromium)
    kinds = sorted((line.split(":")[0], line.split()[1]) for line in problems)
    assert kinds == [("cut/index.html", "cut"), ("scrolls/index.html", "scrolls"),
                     ("wide/index.html", "page")], problems
    cut, = (line for line in problems if line.startswith("cut/"))
    assert "div.md-ellipsis 'ssgallery roc --scores" in cut and "px in 600 px" in cut


def test_a_text_block_may_scroll_and_is_listed_when_asked(tmp_path, chromium):
    site = _site(tmp_path, home=FINE)
    said = []
    assert docs_layout.check(site, program=chromium, verbose=True, say=said.append) == []
    allowed, = said
    assert allowed.startswith("allowed: index.html: scrolls div.language-text.highlight")


def test_the_window_width_decides(tmp_path, chromium):
    site = _site(tmp_path, narrow='<p style="white-space: nowrap">' + "x" * 100 + "</p>")
    assert docs_layout.check(site, width=1280, program=chromium) == []
    problem, = docs_layout.check(site, width=400, program=chromium)
    assert problem.startswith("narrow/index.html: page html 'narrow'")
