"""Absent referents for the generated suites: rows whose referent is nowhere on the screen.

"The model points at something that is not there" is the ``hallucinated`` failure the source study
cares most about, and the grounding-metrics document counts absent referents apart from the hit
rate (``correctly_declined``, ``hallucinated_a_location``, ``missed_a_present_referent``). To measure
it, a suite can turn a share of its rows into **absent rows**: the screenshot is unchanged, but the
instruction names a referent of the suite's own kind that is not on it: a cell value no cell shows
(sheets), a word that is nowhere in the text (text), a link text that no element of the page shows
(web).

Proof of absence (from the scene graph, which lists every visible element a point could land on,
with the text it shows): the referent, case-folded with whitespace collapsed, is not a substring of
any element's text, case-folded the same way (:func:`absence_proof`). The row carries the proof
(``absence_proof``: the referent, the rule, the scene graph file and how many elements and texts were
checked); :func:`check_absence_proof` re-derives it from the scene graph, so a loader never trusts a
row's word for it.

Row format (``data/test/metadata.jsonl``; the PointerBench fields with the target left out):
``bbox`` and ``point`` are ``null``, ``eval`` is ``{"type": "absent"}``, ``target_id`` is ``null``,
``referent`` is ``"absent"`` (``"present"`` on every other row of the suite), ``category`` names the
kind of referent asked for, and every row of the suite, present or absent, has ``absent_possible:
true`` (so prompts tell every model how to decline, on every row, without revealing which rows are
absent). ``answer_type`` keeps the task of the row it replaced (point or bbox).

Which rows: exactly ``round(n * share)`` indices, drawn with ``random.Random(f"{suite}:{seed}:absent")``
(:func:`absent_indices`), so the choice is deterministic and independent of the hash seed; each
absent row's referent is drawn with ``random.Random(f"{suite}:{seed}:{index}:absent")``.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterable
from typing import Any, Optional

from pointfail.generated.suites.errors import SuiteError
from pointfail.generated.suites.rows import quote

__all__ = [
    "ABSENCE_RULE",
    "REFERENT_MAKERS",
    "absent_indices",
    "absence_proof",
    "check_absence_proof",
    "make_absent_rows",
]

ABSENCE_RULE = "casefold-substring: the referent is not a substring of any scene-graph element text"
"""The rule :func:`absence_proof` applies, recorded in every proof."""

MAX_DRAWS = 200
"""Referent candidates drawn per absent row before giving up (a SuiteError)."""


def _fold(s: str) -> str:
    return " ".join(str(s).casefold().split())


def _texts(scene_graph: dict[str, Any]) -> list[str]:
    return [_fold(el["text"]) for el in scene_graph.get("elements", []) if isinstance(el.get("text"), str)]


def absence_proof(scene_graph: dict[str, Any], referent: str, scene_graph_file: str) -> dict[str, Any]:
    """Prove from ``scene_graph`` that ``referent`` is shown nowhere in its image.

    Args:
        scene_graph: the scene graph object (``docs/architecture.md``), elements with optional ``text``.
        referent: the text the instruction names.
        scene_graph_file: the scene graph's path relative to ``data/test`` (recorded in the proof).

    Returns:
        ``{"rule", "referent", "scene_graph", "elements_checked", "texts_checked"}``.

    Raises:
        SuiteError: the referent is empty, or some element's text contains it (it is present).
    """
    ref = _fold(referent)
    if not ref:
        raise SuiteError("an absent referent needs a non-empty text")
    texts = _texts(scene_graph)
    for t in texts:
        if ref in t:
            raise SuiteError(f"referent {referent!r} is shown in the image (element text {t!r})")
    return {
        "rule": ABSENCE_RULE,
        "referent": referent,
        "scene_graph": scene_graph_file,
        "elements_checked": len(scene_graph.get("elements", [])),
        "texts_checked": len(texts),
    }


def check_absence_proof(scene_graph: dict[str, Any], proof: Any) -> None:
    """Re-derive an absent row's proof from its scene graph.

    Raises:
        SuiteError: the proof is not a dict with this module's rule and a referent, its counts differ
            from the scene graph's, or the referent is in the image after all.
    """
    if not isinstance(proof, dict) or proof.get("rule") != ABSENCE_RULE or not isinstance(proof.get("referent"), str):
        raise SuiteError(f"absence_proof {proof!r} is not a proof of this module's rule")
    again = absence_proof(scene_graph, proof["referent"], str(proof.get("scene_graph")))
    for k in ("elements_checked", "texts_checked"):
        if proof.get(k) != again[k]:
            raise SuiteError(f"absence_proof {k} = {proof.get(k)!r}, the scene graph gives {again[k]}")


def absent_indices(suite: str, seed: int, n: int, share: float) -> list[int]:
    """The indices (sorted) of the ``round(n * share)`` rows that become absent rows.

    Raises:
        SuiteError: ``share`` outside ``[0, 1)``.
    """
    if not (0.0 <= share < 1.0):
        raise SuiteError(f"absent share must be in [0, 1), got {share!r}")
    k = round(n * share)
    return sorted(random.Random(f"{suite}:{seed}:absent").sample(range(n), k)) if k else []


# --------------------------------------------------------------------------------- referent makers

_WORDS_RE = re.compile(r"[^\W\d_]{4,}")


def _corpus_words(lang: str = "en") -> list[str]:
    """Words of four letters or more from the embedded corpus's sentences in ``lang`` (English when
    the corpus has no such language)."""
    from pointfail.generated.suites.corpus import SENTENCES

    sents = SENTENCES.get(lang) or SENTENCES["en"]
    return sorted({w for s in sents for w in _WORDS_RE.findall(s)})


def _sheet_value(rng: random.Random, scene_graph: dict[str, Any], lang: str) -> str:
    """A cell value shaped like the sheet's own: an existing cell text with every digit redrawn and
    every letter run replaced by a corpus word, else a 4-digit number."""
    cells = sorted(el["text"] for el in scene_graph.get("elements", [])
                   if el.get("category") == "cell" and isinstance(el.get("text"), str) and el["text"].strip())
    if not cells:
        return str(rng.randint(1000, 9999))
    v = rng.choice(cells)
    words = _corpus_words(lang)
    v = re.sub(r"\d", lambda m: str(rng.randint(0, 9)), v)
    return re.sub(r"[^\W\d_]{3,}", lambda m: rng.choice(words).capitalize() if m.group(0)[0].isupper() else rng.choice(words), v)


def sheets_referent(rng: random.Random, scene_graph: dict[str, Any], row: dict[str, Any]) -> tuple[str, str, str]:
    """``(instruction, referent, category)`` for a sheets absent row: a cell value no cell shows,
    shaped like the sheet's own values (words in the row's ``language``)."""
    v = _sheet_value(rng, scene_graph, str(row.get("language") or "en"))
    qv = quote(rng, v)
    instr = rng.choice((f"Click the cell that shows {qv}.", f"Select the cell whose displayed text is {qv}.",
                        f"Tap the cell that reads {qv}."))
    return instr, v, "cell_content"


def text_referent(rng: random.Random, scene_graph: dict[str, Any], row: dict[str, Any]) -> tuple[str, str, str]:
    """``(instruction, referent, category)`` for a text absent row: a corpus word of the row's
    ``language`` that is nowhere in the text (another language's word when the screen shows them
    all)."""
    texts = _texts(scene_graph)
    lang = str(row.get("language") or "en")
    cands = [w for w in _corpus_words(lang) if not any(_fold(w) in t for t in texts)]
    if not cands:  # the screen shows every long word of its language's corpus: another language's
        from pointfail.generated.suites.corpus import LANGUAGES

        others = sorted({w for lg in LANGUAGES if lg != lang for w in _corpus_words(lg)})
        cands = [w for w in others if not any(_fold(w) in t for t in texts)]
    w = rng.choice(cands)
    qw = quote(rng, w)
    instr = rng.choice((f"Click the word {qw}.", f"Point to the word {qw} in the text.", f"Select the word {qw}."))
    return instr, w, "word"


def web_referent(rng: random.Random, scene_graph: dict[str, Any], row: dict[str, Any]) -> tuple[str, str, str]:
    """``(instruction, referent, category)`` for a web absent row: a link text (two English corpus
    words) no element shows."""
    words = _corpus_words()
    t = f"{rng.choice(words).capitalize()} {rng.choice(words)}"
    qt = quote(rng, t)
    instr = rng.choice((f"Click the link {qt}.", f"Follow the {qt} link.", f"Click on the link labelled {qt}."))
    return instr, t, "link"


Maker = Callable[[random.Random, dict[str, Any], dict[str, Any]], tuple[str, str, str]]
"""``maker(rng, scene_graph, row) -> (instruction, referent, category)``."""

REFERENT_MAKERS: dict[str, Maker] = {
    "sheets": sheets_referent,
    "text": text_referent,
    "web": web_referent,
}
"""Per suite: the :data:`Maker` of its absent referents."""


# ------------------------------------------------------------------------------------------- rows


def make_absent_rows(
    rows: list[dict[str, Any]],
    scene_graphs: dict[str, dict[str, Any]],
    *,
    suite: str,
    seed: int,
    share: float,
    maker: Optional[Maker] = None,
    order: Optional[Iterable[int]] = None,
) -> list[dict[str, Any]]:
    """Turn ``round(len(rows) * share)`` of a suite's rows into absent rows (module docstring); every
    row gets ``absent_possible`` and ``referent``. With ``share == 0`` the rows come back unchanged.

    Args:
        rows: the suite's metadata rows in index order (PointerBench fields plus ``target_id`` and
            ``scene_graph``).
        scene_graphs: image file name (``row["file_name"]``) -> scene graph object.
        suite, seed: the generation settings (the random streams derive from them).
        share: fraction of rows to make absent, in ``[0, 1)``.
        maker: the referent maker (default :data:`REFERENT_MAKERS` ``[suite]``).
        order: the indices to use for the draw (default ``range(len(rows))``).

    Returns:
        New row dicts (the input is not modified).

    Raises:
        SuiteError: a bad share, an unknown suite, or no absent referent found in :data:`MAX_DRAWS`
            draws for a row.
    """
    if share == 0:
        return [dict(r) for r in rows]
    if maker is None:
        if suite not in REFERENT_MAKERS:
            raise SuiteError(f"no absent-referent maker for suite {suite!r}; known: {', '.join(sorted(REFERENT_MAKERS))}")
        maker = REFERENT_MAKERS[suite]
    chosen = set(absent_indices(suite, seed, len(rows), share))
    out: list[dict[str, Any]] = []
    for i, row in enumerate(rows):
        new = dict(row, absent_possible=True, referent="present")
        if i in chosen:
            graph = scene_graphs[row["file_name"]]
            rng = random.Random(f"{suite}:{seed}:{i}:absent")
            proof = None
            for _ in range(MAX_DRAWS):
                instr, referent, category = maker(rng, graph, row)
                try:
                    proof = absence_proof(graph, referent, str(row.get("scene_graph")))
                    break
                except SuiteError:
                    continue
            if proof is None:
                raise SuiteError(f"{row['id']}: no absent referent in {MAX_DRAWS} draws")
            new.update(instruction=instr, bbox=None, point=None, eval={"type": "absent"}, target_id=None,
                       referent="absent", category=category, absence_proof=proof)
        out.append(new)
    return out

