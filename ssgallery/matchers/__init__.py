"""Matcher plugins: what turns face images into things a similarity compares.

A matcher is a class registered in the ``ssgallery.matchers`` entry-point group
(``eigenface``, ``external`` and ``dlib`` ship with ssgallery; ``dlib`` needs the
``ssgallery[dlib]`` extra). Third-party packages add their
own with, in their ``pyproject.toml``::

    [project.entry-points."ssgallery.matchers"]
    mymatcher = "mypackage.module:MyMatcher"

Images everywhere are float arrays of shape (n, H, W) on the 8-bit scale [0, 255].
"""

from ssgallery.errors import SsgalleryError
from ssgallery.matchers.base import Matcher

GROUP = "ssgallery.matchers"
# The matchers shipped with ssgallery (also registered as entry points), looked up
# without scanning installed distributions: importlib.metadata costs verify start-up.
BUILTIN = {"eigenface": ("ssgallery.matchers.eigenface", "EigenfaceMatcher"),
           "external": ("ssgallery.matchers.external", "ExternalMatcher"),
           "dlib": ("ssgallery.matchers.deep", "DlibMatcher")}


def available_matchers():
    """Names of the registered matchers, sorted."""
    from importlib.metadata import entry_points

    return sorted(set(BUILTIN) | {ep.name for ep in entry_points(group=GROUP)})


def get_matcher_class(name):
    """The matcher class registered under ``name``."""
    if name in BUILTIN:
        import importlib

        module, cls = BUILTIN[name]
        return getattr(importlib.import_module(module), cls)
    from importlib.metadata import entry_points

    for ep in entry_points(group=GROUP):
        if ep.name == name:
            return ep.load()
    known = ", ".join(available_matchers()) or "none"
    raise SsgalleryError(f"unknown matcher '{name}' (registered: {known})")


__all__ = ["GROUP", "Matcher", "available_matchers", "get_matcher_class"]
