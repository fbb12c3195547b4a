"""Look at the built docs site in headless Chromium: no text cut at a window's width.

    make docs && python tools/docs_layout.py            # every page of site/ at 1280 px
    python tools/docs_layout.py --width 1024 --page getting-started

Every page of the site is loaded in Chromium (``chromium --headless --dump-dom``, no
network, no other dependency) with a script that measures, once the page has laid out:

- ``cut``: an element whose text is wider than its box while the box hides what
  overflows (``overflow: hidden``/``clip``, an ellipsis): text nobody can read;
- ``page``: the page itself wider than the window (the whole page scrolls sideways);
- ``scrolls``: a code block or table that scrolls sideways inside itself. Allowed only
  for a ``text`` block (a printed table wider than any page: roc --wide, the benchmark
  pages' printed output) and a table's own scroll wrapper; every other code block wraps
  its lines as a terminal does (docs/stylesheets/wide.css), so one that scrolls is a
  problem.

Prints one line per problem (page, element, its text's start, text width vs box width)
and exits 1 when there is any; ``--verbose`` also lists the allowed scrolling blocks.
Run it after changing docs/stylesheets/ or a page's wide block (docs/contributing.md).
"""

import argparse
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome")
REPORT = re.compile(r'<script id="layout-report" type="application/json">(.*?)</script>',
                    re.DOTALL)

# Runs in the page after load: [kind, element, text, content width, box width] per finding.
PROBE = r"""
<script>
window.addEventListener("load", () => setTimeout(() => {
  const found = [];
  const name = (el) => el.tagName.toLowerCase() +
    (el.className && typeof el.className === "string"
      ? "." + el.className.trim().split(/\s+/).join(".") : "");
  const text = (el) => (el.innerText || "").trim().replace(/\s+/g, " ").slice(0, 60);
  const shown = (el) => el.getClientRects().length > 0 &&
    getComputedStyle(el).visibility !== "hidden";
  const doc = document.documentElement;
  if (doc.scrollWidth > doc.clientWidth + 1) {
    found.push(["page", "html", document.title, doc.scrollWidth, doc.clientWidth]);
  }
  for (const el of document.body.querySelectorAll("*")) {
    if (el.closest(".md-search, .md-dialog, .md-tooltip, .md-clipboard, script, style")) {
      continue;
    }
    if (!shown(el) || el.clientWidth === 0 || !text(el)) continue;
    if (el.scrollWidth <= el.clientWidth + 1) continue;
    const style = getComputedStyle(el);
    const ox = style.overflowX;
    if (ox === "hidden" || ox === "clip" || style.textOverflow === "ellipsis") {
      found.push(["cut", name(el), text(el), el.scrollWidth, el.clientWidth]);
    } else if (ox === "auto" || ox === "scroll") {
      const block = el.closest("div.highlight") || el.closest("pre") || el;
      found.push(["scrolls", name(block), text(el), el.scrollWidth, el.clientWidth]);
    }
  }
  const out = document.createElement("script");
  out.id = "layout-report";
  out.type = "application/json";
  out.textContent = JSON.stringify(found);
  document.body.appendChild(out);
}, 300));
</script>
"""


def browser():
    """The Chromium program on PATH, or None."""
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    return None


def pages(site, only=None):
    """The site's pages (``index.html`` of each folder), but not 404 or assets."""
    out = []
    for p in sorted(Path(site).rglob("*.html")):
        rel = p.relative_to(site).as_posix()
        if rel.startswith(("assets/", "search/")) or rel == "404.html":
            continue
        if only and not any(o in rel for o in only):
            continue
        out.append(p)
    return out


def measure(program, page, width, height=900, timeout=120):
    """The findings of `PROBE` on ``page`` (an HTML file) at ``width`` px:
    list of [kind, element, text, content width, box width]."""
    with tempfile.TemporaryDirectory(prefix="docs_layout_") as profile:
        res = subprocess.run(
            [program, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--no-first-run", "--disable-extensions", f"--user-data-dir={profile}",
             f"--window-size={width},{height}", "--virtual-time-budget=5000",
             "--dump-dom", Path(page).resolve().as_uri()],
            capture_output=True, text=True, timeout=timeout, check=False)
    m = REPORT.search(res.stdout)
    if m is None:
        raise RuntimeError(f"{page}: Chromium gave no layout report (exit {res.returncode}): "
                           f"{res.stderr.strip()[-500:]}")
    return json.loads(html.unescape(m.group(1)))


def allowed(finding):
    """A sideways scroll the site means to have: a ``text`` block, a table's wrapper."""
    kind, element = finding[0], finding[1]
    return kind == "scrolls" and ("language-text" in element or
                                  "md-typeset__scrollwrap" in element)


def check(site, width=1280, only=None, program=None, verbose=False, say=print):
    """Problems found on the pages of ``site`` (a built mkdocs site) at ``width`` px:
    a list of lines (page, kind, element, text, widths); [] when none."""
    program = program or browser()
    if program is None:
        raise SystemExit("docs_layout: no Chromium on PATH (apt-get install chromium)")
    site = Path(site)
    problems = []
    with tempfile.TemporaryDirectory(prefix="docs_layout_site_") as tmp:
        copy = Path(tmp) / "site"
        shutil.copytree(site, copy)
        for page in pages(copy, only):
            text = page.read_text(encoding="utf-8")
            page.write_text(text.replace("</body>", PROBE + "</body>", 1), encoding="utf-8")
            rel = page.relative_to(copy).as_posix()
            for f in measure(program, page, width):
                line = f"{rel}: {f[0]} {f[1]} '{f[2]}' {f[3]} px in {f[4]} px"
                if not allowed(f):
                    problems.append(line)
                elif verbose:
                    say(f"allowed: {line}")
    return problems


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--site", default=str(REPO / "site"), help="the built site [site/]")
    ap.add_argument("--width", type=int, default=1280, help="window width in px [1280]")
    ap.add_argument("--page", action="append", help="only pages whose path contains this")
    ap.add_argument("--verbose", action="store_true", help="list allowed scrolling blocks")
    args = ap.parse_args(argv)
    if not (Path(args.site) / "index.html").is_file():
        raise SystemExit(f"docs_layout: {args.site} holds no built site: run 'make docs'")
    problems = check(args.site, args.width, args.page, verbose=args.verbose)
    for line in problems:
        print(line)
    print(f"docs_layout: {len(problems)} problem(s) at {args.width} px", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    os.environ.setdefault("LC_ALL", "C.UTF-8")
    sys.exit(main())
