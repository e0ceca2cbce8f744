"""HTML of the failure browser: the study page (written here, complete, no script needed) and the
shells of the sample list and sample page (filled in by ``assets/app.js`` from the data files).

Every text that comes from records or a study file is escaped with :func:`html.escape`; the pages
load nothing from the network.
"""

from __future__ import annotations

import csv
import io
from html import escape
from importlib import resources
from typing import Any, Mapping, Optional, Sequence
from urllib.parse import urlencode

from pointfail.outputs.view.style import COLORS, SEGMENT_LABELS, SEGMENTS, segment_css

__all__ = ["Bar", "profile_chart_html", "study_page_html", "shell_html", "segment_filter", "asset_text"]

Bar = tuple[str, str, Mapping[str, int], int]
"""One failure-profile bar: ``(model, benchmark or "pooled", {segment: count}, n)``."""

POOLED = "pooled"


def asset_text(name: str) -> str:
    """The text of a packaged asset (``app.js``, ``style.css``)."""
    return resources.files("pointfail.outputs.view").joinpath("assets", name).read_text(encoding="utf-8")


def segment_filter(segment: str) -> dict[str, str]:
    """The list filter that selects exactly the samples of one bar segment: ``hit`` and
    ``no_prediction`` by outcome, a failure mode by outcome ``miss`` and that mode, the judge's other
    states by outcome ``miss`` and that judge state."""
    if segment in ("hit", "no_prediction", "error"):
        return {"outcome": segment}
    if segment in ("unlabeled", "judge_unavailable", "pending"):
        return {"outcome": "miss", "judge": segment}
    return {"outcome": "miss", "mode": segment}


def list_href(model: str, benchmark: str, segment: Optional[str] = None) -> str:
    """``list.html#…`` selecting one model's samples on one benchmark (all its benchmarks for the
    pooled bar), optionally one segment."""
    q: dict[str, str] = {"model": model}
    if benchmark != POOLED:
        q["benchmark"] = benchmark
    if segment:
        q.update(segment_filter(segment))
    return "list.html#" + urlencode(q)


def legend_html() -> str:
    """The legend: a pattern swatch and the name of every segment."""
    items = "".join(
        f'<li><span class="swatch seg-{s}" aria-hidden="true"></span><code>{s}</code> '
        f'<span class="muted">{escape(SEGMENT_LABELS[s])}</span></li>' for s in SEGMENTS)
    return f'<ul class="legend" aria-label="legend">{items}</ul>'


def profile_chart_html(bars: Sequence[Bar], *, links: bool) -> str:
    """The failure profile as HTML: one horizontal stacked bar per model × benchmark (pooled bars
    last per model). A segment's width is its share of n; each segment carries its count (written
    in it when wide enough), its name and share in ``title``/``aria-label``, its pattern, and with
    ``links`` a link to exactly its samples in the list."""
    rows = []
    for m, b, seg, n in bars:
        parts = []
        for s in SEGMENTS:
            c = int(seg.get(s, 0))
            if not c:
                continue
            share = 100.0 * c / n if n else 0.0
            label = f"{m} · {b} · {s}: {c} of {n} ({share:.1f}%)"
            attrs = (f'class="seg seg-{s}" style="width:{share:.4f}%" data-model="{escape(m)}" '
                     f'data-benchmark="{escape(b)}" data-segment="{s}" data-count="{c}" '
                     f'title="{escape(label)}" aria-label="{escape(label)}"')
            text = f"<span>{c}</span>" if share >= 4.0 else ""
            if links:
                parts.append(f'<a {attrs} href="{escape(list_href(m, b, s))}">{text}</a>')
            else:
                parts.append(f'<span {attrs} role="img">{text}</span>')
        head = f"{escape(m)} · {escape(b)}"
        if links:
            head = f'<a href="{escape(list_href(m, b))}">{head}</a>'
        cls = "bar-row pooled" if b == POOLED else "bar-row"
        rows.append(f'<div class="{cls}"><div class="bar-label">{head} <span class="muted">n={n}</span></div>'
                    f'<div class="bar">{"".join(parts)}</div></div>')
    return ('<figure class="profile"><figcaption>Failure profile: share of samples per outcome; '
            'numbers are counts; n = samples whose referent is in the image (hit + miss + no_prediction + error; '
            'absent referents are counted apart)'
            + ("; click a segment to list exactly those samples" if links else "")
            + "</figcaption>" + "".join(rows) + legend_html() + "</figure>")


def _csv(data: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(data.decode("utf-8"))))


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], caption: str, cls: str = "") -> str:
    th = "".join(f"<th scope=col>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return _scroll(f'<table class="data {cls}"><caption>{escape(caption)}</caption><thead><tr>{th}</tr></thead>'
                   f'<tbody>{body}</tbody></table>')


def record_counts(tables: Mapping[str, bytes]) -> tuple[int, int]:
    """``(present, absent)``: records whose referent is in the image (the ``n`` of every hit rate,
    summed over the ``pooled`` rows of ``outcomes.csv``) and records of absent referents (the pooled
    ``n_absent`` of ``absent.csv``, counted apart), as ``aggregate`` wrote them."""
    def pooled(name: str, col: str) -> int:
        if name not in tables:
            return 0
        data = _csv(tables[name])
        i = data[0].index(col)
        return sum(int(r[i]) for r in data[1:] if r[1] == POOLED)

    return pooled("outcomes.csv", "n"), pooled("absent.csv", "n_absent")


def _scroll(table: str) -> str:
    """A wide table in a box that scrolls sideways instead of being cut at the page's edge."""
    return f'<div class="table-scroll">{table}</div>'


def headline_html(tables: Mapping[str, bytes]) -> str:
    """The headline table (hit rate with its bootstrap interval, model × benchmark and pooled) from
    the bytes of ``headline.csv`` as ``aggregate`` writes it."""
    if "headline.csv" not in tables:
        return ""
    rows = _csv(tables["headline.csv"])[1:]
    models = sorted({r[0] for r in rows})
    benches = sorted({r[1] for r in rows if r[1] != POOLED}) + [POOLED]
    cell = {(r[0], r[1]): r for r in rows}
    out = []
    for m in models:
        line = [f"<th scope=row>{escape(m)}</th>"]
        for b in benches:
            r = cell.get((m, b))
            if r is None:
                line.append("<td></td>")
                continue
            _, _, n, hit, rate, lo, hi = r[:7]
            line.append(f"<td><strong>{escape(rate)}</strong> <span class=muted>[{escape(lo)}, {escape(hi)}]</span>"
                        f"<br><span class=muted>{escape(hit)} / {escape(n)}</span></td>")
        out.append("<tr>" + "".join(line) + "</tr>")
    th = "<th scope=col>model</th>" + "".join(f"<th scope=col>{escape(b)}</th>" for b in benches)
    return _scroll(f'<table class="data headline"><caption>Hit rate (%) with bootstrap 95% interval; hit / n, where '
                   f'n counts the samples whose referent is in the image (absent referents apart)</caption>'
                   f"<thead><tr>{th}</tr></thead><tbody>{''.join(out)}</tbody></table>")


def composition_html(tables: Mapping[str, bytes], *, links: bool) -> str:
    """The failure-composition table (counts of each failure mode and of the judge's other states),
    every count linking to its samples when ``links``."""
    if "failure_composition.csv" not in tables:
        return ""
    data = _csv(tables["failure_composition.csv"])
    headers, rows = data[0], data[1:]
    count_cols = {h for h in headers if h in SEGMENTS}
    out = []
    for r in rows:
        m, b = r[0], r[1]
        cells = []
        for h, v in zip(headers, r):
            txt = escape(v)
            if links and h in count_cols and v not in ("0", ""):
                txt = f'<a href="{escape(list_href(m, b, h))}" data-table-count="{escape(m)}|{escape(b)}|{h}">{txt}</a>'
            elif links and h == "miss" and v not in ("0", ""):
                href = list_href(m, b) + "&outcome=miss"
                txt = f'<a href="{escape(href)}">{txt}</a>'
            cells.append(txt)
        out.append(cells)
    return _table(headers, out, "Failure composition: counts of labeled misses per mode (shares over labeled misses); "
                  "judge abstentions, outages and pending counted apart", "composition")


def agreement_html(tables: Mapping[str, bytes]) -> str:
    """The judge-agreement table, when the study has a second judge."""
    if "judge_agreement.csv" not in tables:
        return ""
    data = _csv(tables["judge_agreement.csv"])
    return _table(data[0], [[escape(c) for c in r] for r in data[1:]],
                  "Judge agreement: each further judge against the primary judge on the same misses")


def validity_html(tables: Mapping[str, bytes]) -> str:
    """The judge-validity table: which judge the failure composition rests on, per benchmark, and its
    agreement with the people who labeled its misses (the review mode's labels)."""
    data = _csv(tables["judge_validity.csv"])
    return _table(data[0], [[escape(c) for c in r] for r in data[1:]],
                  "Judge validity: the judge each benchmark's failure composition rests on, against the people "
                  "who labeled its misses (review.html)")


def page_html(title: str, body: str, *, css: str, head_extra: str = "", scripts: Sequence[str] = (),
              inline_css: bool = False) -> str:
    """A complete page: ``css`` is a path (linked) or, with ``inline_css``, the CSS text itself."""
    style = f"<style>\n{css}</style>" if inline_css else f'<link rel="stylesheet" href="{escape(css)}">'
    tags = "".join(f'<script src="{escape(s)}"></script>' for s in scripts)
    return (f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1"><link rel="icon" href="data:,">'
            f"<title>{escape(title)}</title>{style}{head_extra}</head>\n<body>\n{body}\n{tags}</body></html>\n")


def nav_html(study: str, current: str) -> str:
    """The header with the study's name and the links between the three pages."""
    def link(href: str, text: str, key: str) -> str:
        cur = ' aria-current="page"' if key == current else ""
        return f'<a href="{href}"{cur}>{text}</a>'

    return (f'<header class="top"><span class="brand">pointfail</span> <span class="study">{escape(study)}</span>'
            f'<nav>{link("index.html", "Study", "study")} {link("list.html", "Samples", "list")} '
            f'{link("review.html", "Review", "review")}</nav></header>')


def study_page_html(
    study: str,
    description: str,
    bars: Sequence[Bar],
    tables: Mapping[str, bytes],
    *,
    links: bool = True,
    inline_css: bool = False,
    summary: Optional[Mapping[str, Any]] = None,
    notes: Sequence[str] = (),
) -> str:
    """The study page: title and description, sample counts, the failure-profile chart, the headline
    table, the failure-composition table and judge agreement when two judges exist.

    Args:
        study, description: from ``study.toml``.
        bars: :data:`Bar` rows in table order.
        tables: ``aggregate.build_tables`` output (``headline.csv``, ``failure_composition.csv``,
            ``judge_agreement.csv`` are used).
        links: link segments and counts to ``list.html`` (the site); ``False`` for a standalone page
            (the report).
        inline_css: embed the CSS (standalone page) instead of linking ``assets/style.css``.
        summary: ``{"models": int, "benchmarks": int, "errors": int}`` for the header; the records it
            counts come from ``tables`` (:func:`record_counts`), so the report and the site agree.
        notes: extra paragraphs (e.g. missing images and the command that brings them).
    """
    css = asset_text("style.css") + segment_css() if inline_css else "assets/style.css"
    counts = ""
    if summary:
        def count(k: int, noun: str) -> str:
            return f"{k} {noun}" + ("" if k == 1 else "s")

        present, absent = record_counts(tables)
        counts = (f'<p class="counts">{count(present + absent, "record")}: {present} with the referent in the image '
                  f'(n, in every hit rate)' + (f', {absent} with an absent referent (counted apart, absent.md)'
                                               if absent else "")
                  + f' · {count(summary["models"], "model")} · {count(summary["benchmarks"], "benchmark")} · '
                  f'{count(summary["errors"], "infrastructure error")} (non-hits, in their own column)</p>')
    note_html = "".join(f'<p class="note">{escape(n)}</p>' for n in notes)
    body = (
        (nav_html(study, "study") if links else "")
        + f'<main><h1>Failure profile: {escape(study)}</h1>'
        + (f"<p>{escape(description)}</p>" if description else "")
        + counts + note_html
        + profile_chart_html(bars, links=links)
        + "<h2>Hit rate</h2>" + headline_html(tables)
        + "<h2>How the misses fail</h2>" + composition_html(tables, links=links)
        + (("<h2>Judge agreement</h2>" + agreement_html(tables)) if "judge_agreement.csv" in tables else "")
        + (("<h2>Judge validity</h2>" + validity_html(tables)) if "judge_validity.csv" in tables else "")
        + "</main>"
    )
    return page_html(f"pointfail: {study}", body, css=css, inline_css=inline_css)


def shell_html(study: str, page: str, data_scripts: Sequence[str]) -> str:
    """The sample list (``page="list"``) or sample page (``"sample"``): header, an empty ``<main>``
    and the data scripts, then ``assets/app.js``, which renders from the data."""
    title = "samples" if page == "list" else "sample"
    body = nav_html(study, page) + f'<main id="app" data-page="{page}"><p class="loading">Loading…</p></main>'
    head = '<script>window.PF={chunks:[],details:{},waiting:{}};</script>'
    return page_html(f"pointfail: {study}: {title}", body, css="assets/style.css", head_extra=head,
                     scripts=[*data_scripts, "assets/app.js"])


def color_of(segment: str) -> str:
    """The fill colour of a segment (for figures that do not use the CSS)."""
    return COLORS[segment]
