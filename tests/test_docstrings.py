"""The docstrings are markdown for the API pages (mkdocstrings): no Sphinx roles such as
``:func:`x```, which those pages show literally, and no section numbers of design
documents (refer to a document by name)."""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted(p for package in ("ssgallery", "ssgallery_ebgm", "ssgallery_dlibbox")
                 for p in (ROOT / package).rglob("*.py"))
FORBIDDEN = re.compile(r":(?:py:)?(?:func|class|meth|mod|attr|data|exc|obj|ref):`|§\s*\d")


def docstrings(source):
    """(line, text) of the module's, classes' and functions' docstrings in ``source``."""
    tree = ast.parse(source)
    nodes = [tree] + [n for n in ast.walk(tree) if isinstance(
        n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))]
    for node in nodes:
        text = ast.get_docstring(node, clean=False)
        if text:
            yield getattr(node, "lineno", 1), text


def forbidden(source):
    """(line, match) of every Sphinx role or section number in the docstrings."""
    return [(line, hit.group(0)) for line, text in docstrings(source)
            for hit in FORBIDDEN.finditer(text)]


def test_the_check_finds_roles_and_section_numbers():
    source = '"""Module."""\n\nclass A:\n    def f(self):\n        """See :func:`g`, ' \
        ':class:`~a.B` and DESIGN.md §2."""\n'
    assert [hit for _, hit in forbidden(source)] == [":func:`", ":class:`", "§2"]
    assert len(SOURCES) > 40


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_sphinx_roles_or_section_numbers(path):
    bad = forbidden(path.read_text(encoding="utf-8"))
    assert not bad, (f"{path.relative_to(ROOT)}: write `name` (markdown), not Sphinx roles, "
                     f"and name documents, not their section numbers: {bad}")
