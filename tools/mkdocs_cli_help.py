"""mkdocs hook: show each command's help text as preformatted text in the CLI reference.

mkdocs-click passes click's help text through as markdown, which loses the layout of
click's ``\\b`` blocks (the examples) and swallows ``<client>``-style placeholders. The
help is written for a terminal, so the reference shows it as ``--help`` does.
"""

import inspect

from mkdocs_click import _docs


def _make_description(ctx, remove_ascii_art=False):
    text = ctx.command.help or ctx.command.short_help
    if not text:
        return
    lines = [ln for ln in inspect.cleandoc(text).splitlines() if ln.strip() != "\b"]
    yield "```text"
    yield from lines
    yield "```"
    yield ""


def on_config(config):
    _docs._make_description = _make_description
    return config
