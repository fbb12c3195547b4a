"""A matcher that is a program: the external-matcher contract (docs/external-matcher.md).

::

    PROGRAM --probe-list A.txt --gallery-list B.txt --out S.txt
        lists: one path per line (.pgm/.png, or float32 .npy for prototypes)
        S.txt: |A| x |B| whitespace-separated similarity matrix in list order; exit 0
    PROGRAM --describe
        {"kind": "similarity"|"distance", "symmetric": bool, "range": [lo, hi],
         "serve": bool (optional), "quality": bool (optional)}
        JSON types only: a string or a number for a bool, a string or a bool for a
        range end, is refused (`ssgallery.matchers.external.contract.parse_describe`)
    PROGRAM --quality-list A.txt --out Q.txt   (only when --describe says "quality": true)
        Q.txt: |A| numbers, one per line: how face-like each image is, higher is more
    PROGRAM --serve   (only when --describe says "serve": true)
        started once; answers the same requests as JSON lines on stdin/stdout
        (`ssgallery.matchers.external.serve`)

The program is named by the host that runs ssgallery (`ssgallery.matchers.host`:
an option, ``$SSGALLERY_MATCHER_CMD`` or a configuration file), never by a store or a
gallery: they hold only the matcher's name and ``contract_sha256``, the SHA-256 of the
program's ``--describe`` JSON and of the stored matcher parameters. Before the first
scoring run the host's program is asked to describe itself, and a different digest is
refused (`ssgallery.errors.MatcherError`, one line).

The program runs without a shell, in its own process group, with a timeout of
``timeout_base + timeout_per_pair * |A| * |B|`` seconds (at most a week); on timeout (or Ctrl-C) the
whole group is killed, and any process the program left behind in its group is killed
after it exits. Its output (stdout or the answer file) may hold at most
`MAX_ANSWER_BASE` + `MAX_ANSWER_PER_PAIR` bytes per scored pair; a longer
answer is refused and the program killed. Every failure is a one-line
`ssgallery.errors.MatcherError` naming the program.

A *distance* is turned into a similarity ``s = exp(-d / scale)`` and a quality score
sets a failure-to-acquire threshold: see `ssgallery.matchers.external.matcher`.

The package, one idea per module:

- `contract`: the answers' parsing and bounds (``--describe``, the matrix), the
  contract digest, the quality threshold;
- `oneshot`: running the program once: image and list files, the process, its limits;
- `serve`: the persistent ``--serve`` session (one process per command per ssgallery
  process);
- `cache`: the answer cache (memory and SQLite), keyed by image content;
- `program`: `ProgramClient`, the program side of the matcher: naming and running it
  (one-shot or served), its ``--describe`` contract and the check of a rebuilt
  matcher's, the score and quality requests;
- `matcher`: `ExternalMatcher` (a `ProgramClient` and a `ssgallery.matchers.Matcher`):
  features, similarity and its conversion, the answer cache, fit, state.
"""

from ssgallery.matchers.external.contract import (
    MAX_ANSWER_BASE,
    MAX_ANSWER_PER_PAIR,
    QUALITY_MARGIN,
    answer_limit,
    contract_digest,
    parse_matrix,
    quality_threshold,
)
from ssgallery.matchers.external.matcher import PIXEL_RANGE, QUALITY_MAX_IMAGES, ExternalMatcher
from ssgallery.matchers.external.oneshot import MAX_STDERR_KEPT, write_images, write_pgm

__all__ = ["MAX_ANSWER_BASE", "MAX_ANSWER_PER_PAIR", "MAX_STDERR_KEPT", "PIXEL_RANGE",
           "QUALITY_MARGIN", "QUALITY_MAX_IMAGES", "ExternalMatcher", "answer_limit",
           "contract_digest", "parse_matrix", "quality_threshold", "write_images", "write_pgm"]
