"""The failure browser's review mode: a person labels a study's misses, with the keyboard.

Source: the grounding-metrics document, "Reviewing a model's predictions": predictions travel to the
page as predictions, the person gives a verdict, and the verdict is kept apart from the model's. Here
the person sees a miss as the judge saw it (the image with the target tinted green and the point
marked, and the instruction the model was given) and picks one of the four failure modes or "can't
tell". The judges' verdicts on that miss stay hidden until the person has answered (no anchoring).

``review.html#<filters>`` takes the sample list's filters (model, benchmark, failure mode, category,
...; the outcome is always ``miss``) and two of its own: ``per=N`` keeps a stratified sample of at most
``N`` misses per model × benchmark, chosen by a hash of each sample's key and ``seed`` (default 0),
so the same link gives every annotator the same misses.

Keys: ``1``-``4`` the failure modes (least to most severe), ``0`` or ``c`` can't tell; ``→``/``j``
next, ``←``/``k`` previous, ``n`` the next miss not labeled yet. Labels are kept in the browser's local
storage (per study and annotator) and exported as a JSONL file, one line per label::

    {"model": M, "benchmark": B, "sample_id": S, "label": L, "annotator": A}

which ``pointfail judge STUDY --judge human --labels FILE`` stores as verdicts of judge
``human:<annotator>`` (:mod:`pointfail.running.judges.human`); an exported file can be imported back into the
page. Works from ``file://`` and under ``pointfail view --serve``.
"""

from __future__ import annotations

from typing import Sequence

from pointfail.outputs.view.pages import nav_html, page_html

__all__ = ["ASSETS", "review_html"]

ASSETS = ("review.js", "review.css")
"""The review page's own asset files (in ``view/assets/``), copied beside ``app.js``."""


def review_html(study: str, data_scripts: Sequence[str]) -> str:
    """The review page: header, an empty ``<main data-page="review">``, the data scripts, then
    ``assets/app.js`` (the columns and drawing helpers) and ``assets/review.js``, which renders."""
    body = nav_html(study, "review") + '<main id="app" data-page="review"><p class="loading">Loading…</p></main>'
    head = ('<script>window.PF={chunks:[],details:{},waiting:{}};</script>'
            '<link rel="stylesheet" href="assets/review.css">')
    return page_html(f"pointfail: {study}: review", body, css="assets/style.css", head_extra=head,
                     scripts=[*data_scripts, "assets/app.js", "assets/review.js"])
