"""Synthetic suite generators: screenshots in the PointerBench layout plus a scene graph per image.

Each generator is one module ``pointfail.suites.<kind>`` providing ``add_arguments(parser)`` and
``run(args) -> int`` (the ``pointfail generate <kind>`` contract) and a ``generate(out_dir, n, seed)``
function. Layout, manifest, fonts, deterministic PNG writing and verification are shared in
:mod:`pointfail.suites.common`. The directory format is fixed in ``docs/architecture.md``
("Generated suites").

Kinds: ``sheets`` (spreadsheet grids, modelled on PointerBench-Sheets), ``text`` (document surfaces,
modelled on PointerBench-Text), ``web`` (rendered web pages; separate module).
"""

from __future__ import annotations

KINDS: dict[str, str] = {
    "sheets": "spreadsheet grids: cells, headers, colours, relative references, edges, handles, corners",
    "text": "document surfaces: words, characters, punctuation, carets, word/line/paragraph boxes",
    "web": "rendered web pages with DOM-derived scene graphs",
}
"""Suite kind -> one-line description; the module is ``pointfail.suites.<kind>``."""
