"""Synthetic suite generators: screenshots in the PointerBench layout plus a scene graph per image.

Each generator is one module ``pointfail.generated.suites.<kind>`` providing ``add_arguments(parser)`` and
``run(args) -> int`` (the ``pointfail generate <kind>`` contract) and a ``generate(out_dir, *, n,
seed, absent_share=0.0)`` function. The directory format is fixed in ``docs/architecture.md``
("Generated suites"). Shared, one job per module:

- :mod:`~pointfail.generated.suites.errors`: ``SuiteError``, ``FontMissingError``.
- :mod:`~pointfail.generated.suites.scene`: the scene graph (elements, boxes, the 1024x768 frame).
- :mod:`~pointfail.generated.suites.rows`: a sample's random stream and category schedule, instruction
  wording helpers, the writers' result (``Named``) and the metadata row.
- :mod:`~pointfail.generated.suites.fonts`: the declared fonts and the rendering environment.
- :mod:`~pointfail.generated.suites.painter`: text drawn glyph by glyph with exact ink boxes.
- :mod:`~pointfail.generated.suites.writer`: deterministic PNGs, the directory layout, the generation loop.
- :mod:`~pointfail.generated.suites.manifest`: manifest digests, comparison and verification.
- :mod:`~pointfail.generated.suites.drawn`: ``DrawnSuite``, what the Pillow-drawn suites (sheets, text) share.
- :mod:`~pointfail.generated.suites.cli`: the ``pointfail generate`` options.
- :mod:`~pointfail.generated.suites.absent`: absent referents; :mod:`~pointfail.generated.suites.corpus`: word lists.

Kinds: ``sheets`` (spreadsheet grids, modelled on PointerBench-Sheets), ``text`` (document surfaces,
modelled on PointerBench-Text), ``web`` (rendered web pages; separate module).
"""

from __future__ import annotations

__all__ = ["DRAWN", "KINDS", "generate_command"]

KINDS: dict[str, str] = {
    "sheets": "spreadsheet grids: cells, headers, colours, relative references, edges, handles, corners",
    "text": "document surfaces: words, characters, punctuation, carets, word/line/paragraph boxes",
    "web": "rendered web pages with DOM-derived scene graphs",
}
"""Suite kind -> one-line description; the module is ``pointfail.generated.suites.<kind>``."""

DRAWN = ("sheets", "text")
"""The kinds drawn by Pillow alone, which ``pointfail generate`` renders on any machine with the fonts,
byte for byte the suites image's output (``web`` needs the pinned browser)."""


def generate_command(generator: str, n: int | None, seed: int | None, absent_share: float | None, out: str) -> str | None:
    """The ``pointfail generate`` line that renders a study's generated benchmark into ``out``
    without Docker (every option the study gives it, ``--absent-share`` included, so the files match
    the committed manifest), or ``None`` for a kind that needs more than Pillow (:data:`DRAWN`) or a
    spec without ``n`` and ``seed``."""
    if generator not in DRAWN or n is None or seed is None:
        return None
    share = f" --absent-share {absent_share:g}" if absent_share else ""
    return f"pointfail generate {generator} --n {n} --seed {seed}{share} --out {out}"
