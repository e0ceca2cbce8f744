"""``official``: each benchmark's own scoring rule beside pointfail's hit rate,
``official_diagnostic``: the rows the two rules decide differently, and why, and
``official_screenspot_pro``: ScreenSpot-Pro's per-group report as its official script computes it."""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, Optional

from pointfail import metrics
from pointfail.aggregate.counting import with_pooled
from pointfail.aggregate.registry import ERROR_NOTE, TableBuilder, register
from pointfail.aggregate.rows import POOLED, Row
from pointfail.official import RULES, screenspot_correctness
from pointfail.tables import Output, Table, count, pct, rate, text

if TYPE_CHECKING:
    from pointfail.aggregate.study import Study

__all__ = ["Official", "REASONS", "SCREENSPOT_GROUPINGS", "ScreenSpotProGroups", "screenspot_group_keys"]

POOLED_RULE = "(each benchmark's own rule)"

REASONS = ("left_out", "no_answer", "official_parser", "mean_over_points", "rule")
"""Why a row's official score differs from pointfail's headline (1 for a hit, 0 otherwise), first
matching reason wins: ``left_out``: the official script leaves the row out of its mean (a missing
answer or a reply its parser raises on, RoboPoint/RoboRefer); ``no_answer``: an infrastructure error
the official script counts (as wrong); ``official_parser``: the official parser reads the reply
differently and pointfail's reading, under the same rule, agrees with the headline;
``mean_over_points``: a partial score, the mean over several points or box cells (Where2Place,
RefSpatial); ``rule``: the rule itself decides otherwise (every point counted, counting rows, ``int()``
truncation against continuous pixels, mask binarization, edges)."""


class _OfficialCell:
    __slots__ = ("scores", "own", "rules", "left_out", "read_differently", "differ", "reasons")

    def __init__(self) -> None:
        self.scores = metrics.ExactSum()
        self.own = metrics.ExactSum()
        self.rules: set[str] = set()
        self.left_out = 0
        self.read_differently = 0
        self.differ = 0
        self.reasons = dict.fromkeys(REASONS, 0)

    def merge(self, other: "_OfficialCell") -> None:
        self.scores.merge(other.scores)
        self.own.merge(other.own)
        self.rules |= other.rules
        self.left_out += other.left_out
        self.read_differently += other.read_differently
        self.differ += other.differ
        for k, v in other.reasons.items():
            self.reasons[k] += v


def _reason(row: Row, headline: float) -> Optional[str]:
    """Why the official score and the headline decide the row differently (:data:`REASONS`), ``None``
    when they agree."""
    score = row.official_score
    if score is None:
        return "left_out"
    if score == headline:
        return None
    if row.outcome == "error":
        return "no_answer"
    if row.official_own_score is not None and row.official_own_score == headline:
        return "official_parser"
    if 0.0 < score < 1.0:
        return "mean_over_points"
    return "rule"


@register
class Official(TableBuilder):
    """``official``: per model and benchmark, the mean ``OfficialScore.score`` over the rows the
    official script counts (exact, :class:`pointfail.metrics.ExactSum`; infrastructure errors included
    where the script counts a missing answer, left out where it skips it), the replies the official
    parser read differently from pointfail's family parser and what pointfail's reading would score
    under the same rule, beside pointfail's n and hit rate. ``official_diagnostic``: per model and
    benchmark, how many rows the official rule and the headline decide differently, by
    :data:`REASONS`. No file when no record carries an official score."""

    name = "official"

    def __init__(self) -> None:
        self._any = False
        self._cells: dict[tuple[str, str], _OfficialCell] = {}

    def add(self, row: Row, sample: int) -> None:
        """Fold a row's official score into its cell."""
        if row.official_rule is None:
            return
        self._any = True
        key = (row.model, row.benchmark)
        c = self._cells.get(key)
        if c is None:
            c = self._cells[key] = _OfficialCell()
        c.rules.add(row.official_rule)
        if row.official_score is None:
            c.left_out += 1
        else:
            c.scores.add(row.official_score)
        if row.official_own_score is not None:
            c.read_differently += 1
        own = row.official_own_score if row.official_own_score is not None else row.official_score
        if own is not None:
            c.own.add(own)
        reason = _reason(row, 1.0 if row.outcome == "hit" else 0.0)
        if reason is not None:
            c.differ += 1
            c.reasons[reason] += 1

    def tables(self, study: "Study") -> list[Output]:
        """The official-rule table and its diagnostic."""
        if not self._any:
            return []
        columns = [text("model"), text("benchmark"), count("n_official"), pct("official_score_pct"),
                   count("left_out"), count("read_differently"), pct("own_reading_score_pct"), count("pointfail_n"),
                   pct("pointfail_hit_rate_pct"), text("rule")]
        diag_columns = [text("model"), text("benchmark"), count("n"), count("decided_differently"),
                        *[count(r) for r in REASONS]]
        rows, diag = [], []
        cells = with_pooled(self._cells, _OfficialCell)
        for key in study.counts.keys():
            o = cells.get(key)
            if o is None:
                continue
            c = study.counts.cells[key]
            rule = POOLED_RULE if key[1] == POOLED else "; ".join(sorted(o.rules))
            rows.append([*key, o.scores.count, o.scores.mean(), o.left_out, o.read_differently, o.own.mean(), c.n,
                         rate(c.hit, c.n), rule])
            diag.append([*key, o.scores.count + o.left_out, o.differ, *[o.reasons[r] for r in REASONS]])
        notes = [
            "Each benchmark's own scoring rule, as its official evaluation script computes it (OfficialScore in the "
            "records: the publisher's parser where the script reads the text itself, its int() truncation or raw "
            "float comparison, its box handling; sources in pointfail.benchmarks.official), beside pointfail's "
            "point-in-target hit rate; pooled rows pool the samples, not the percentages.",
            "n_official: the rows the official script counts. Infrastructure errors are in it as wrong where the "
            "script counts a missing answer (Point-Bench, ScreenSpot-Pro, PointerBench) and in left_out where it "
            "skips it (Where2Place, RefSpatial), with the replies its parser raises on.",
            "read_differently: replies the official parser reads otherwise than pointfail's family parser; "
            "own_reading_score_pct: the same rule over the same rows with pointfail's reading of those replies "
            "(left_out rows pointfail can read included).",
            ERROR_NOTE,
        ]
        diag_notes = [
            "DIAGNOSTIC, beside official.md: per model and benchmark, the rows whose official score differs from "
            "pointfail's headline (1 for a hit, 0 otherwise), and why, the first matching reason: "
            "left_out (the official script leaves the row out of its mean), no_answer (an infrastructure error the "
            "script counts wrong), official_parser (the official parser reads the reply otherwise, and pointfail's "
            "reading under the same rule agrees with the headline), mean_over_points (a partial score: the mean "
            "over several points or box cells), rule (the rule itself: every point counted, counting rows, int() "
            "truncation against continuous pixels, mask binarization, edges).",
            "n: rows with an official rule (n_official + left_out).",
        ]
        return [Table("official", f"Official-rule scores: {study.name}", notes, columns, rows),
                Table("official_diagnostic", f"Official rule against the headline, row by row: {study.name}",
                      diag_notes, diag_columns, diag)]


# ------------------------------------------------------------------ ScreenSpot-Pro's per-group accuracies

SCREENSPOT_GROUPINGS = ("fine_grained", "seeclick_style", "leaderboard_simple_style", "leaderboard_detailed_style",
                        "overall")
"""The groupings ``evaluate`` of eval_screenspot_pro.py reports (lines 313-331), in its order."""

_INST_STYLE = "instruction"
_GT_TYPE = "positive"


def screenspot_group_keys(group: str, application: str, platform: str) -> list[tuple[str, str]]:
    """``(grouping, key)`` of every official grouping a ScreenSpot-Pro sample counts in, the keys
    written as eval_screenspot_pro.py writes them: ``fine_grained``
    ``plat:{platform} app:{application} inst_style:{style} gt_type:{gt}`` (lines 162-199),
    ``seeclick_style`` ``plat:{platform} inst_style:{style} gt_type:{gt}`` (201-235),
    ``leaderboard_simple_style`` ``group:{group}`` (267-295), ``leaderboard_detailed_style``
    ``app:{application}`` (237-265), ``overall`` (297-310). pointfail asks the English ``instruction``
    of each positive sample, so ``inst_style`` is ``instruction`` and ``gt_type`` ``positive``. A sample
    without a ``group`` (loaded as ``""``) is ``group: None`` in the official results (line 406), and the
    script's filter treats ``None`` as no filter (lines 50-59): ``group:None`` counts every sample
    (:meth:`ScreenSpotProGroups.tables` adds them).

    >>> screenspot_group_keys("CAD", "autocad", "windows")[2:]
    [('leaderboard_simple_style', 'group:CAD'), ('leaderboard_detailed_style', 'app:autocad'), ('overall', 'overall')]
    """
    style = f"inst_style:{_INST_STYLE} gt_type:{_GT_TYPE}"
    keys = [("fine_grained", f"plat:{platform} app:{application} {style}"),
            ("seeclick_style", f"plat:{platform} {style}")]
    if group:
        keys.append(("leaderboard_simple_style", f"group:{group}"))
    return [*keys, ("leaderboard_detailed_style", f"app:{application}"), ("overall", "overall")]


class _GroupCell:
    """The counts ``calc_metric_for_result_list`` (eval_screenspot_pro.py lines 112-134) reads."""

    __slots__ = ("total", "correct", "wrong_format", "text_total", "text_correct", "icon_total", "icon_correct")

    def __init__(self) -> None:
        self.total = self.correct = self.wrong_format = 0
        self.text_total = self.text_correct = self.icon_total = self.icon_correct = 0

    def add(self, correctness: str, ui_type: str) -> None:
        ok = correctness == "correct"
        self.total += 1
        self.correct += ok
        self.wrong_format += correctness == "wrong_format"
        if ui_type == "text":
            self.text_total += 1
            self.text_correct += ok
        elif ui_type == "icon":
            self.icon_total += 1
            self.icon_correct += ok


def _official_acc(num: int, den: int) -> Fraction:
    """``num / den if den > 0 else 0`` (eval_screenspot_pro.py lines 130-132): an empty group is 0,
    not n/a."""
    return Fraction(num, den) if den else Fraction(0)


@register
class ScreenSpotProGroups(TableBuilder):
    """``official_screenspot_pro``: per model and ScreenSpot-Pro benchmark, every metric block of
    eval_screenspot_pro.py's report (:data:`SCREENSPOT_GROUPINGS`, keys by
    :func:`screenspot_group_keys`): ``num_total`` (every sample of the group: missing answers and
    replies without a point are in it as ``wrong_format``), ``num_correct_action``,
    ``wrong_format_num``, ``action_acc``, ``text_acc`` and ``icon_acc`` (over the group's
    ``ui_type`` text / icon samples; 0 when there are none, as the script writes), exact fractions
    rounded once in the table's format. Each row's correctness is
    :func:`pointfail.official.screenspot_correctness` of its ``OfficialScore``. No file when
    no record carries the ScreenSpot-Pro rule."""

    name = "official_screenspot_pro"

    def __init__(self) -> None:
        self._cells: dict[tuple[str, str], dict[tuple[str, str], _GroupCell]] = {}

    def add(self, row: Row, sample: int) -> None:
        """Fold a ScreenSpot-Pro row into the groups it counts in."""
        if row.official_rule != RULES["screenspot-pro"]:
            return
        md = dict(row.metadata)
        correctness = screenspot_correctness(row.official_score, row.official_note)
        groups = self._cells.setdefault((row.model, row.benchmark), {})
        for gk in screenspot_group_keys(md.get("group", ""), md.get("application", ""), md.get("platform", "")):
            c = groups.get(gk)
            if c is None:
                c = groups[gk] = _GroupCell()
            c.add(correctness, md.get("ui_type", ""))
        if not md.get("group"):  # counted at the end, as the whole overall block
            groups.setdefault(("leaderboard_simple_style", "group:None"), _GroupCell())

    def tables(self, study: "Study") -> list[Output]:
        """One row per model, benchmark and official metric block."""
        if not self._cells:
            return []
        columns = [text("model"), text("benchmark"), text("grouping"), text("key"), count("num_total"),
                   count("num_correct_action"), count("wrong_format_num"), pct("action_acc_pct", 2),
                   count("text_total"), pct("text_acc_pct", 2), count("icon_total"), pct("icon_acc_pct", 2)]
        order = {g: i for i, g in enumerate(SCREENSPOT_GROUPINGS)}
        rows = []
        for key in study.counts.keys():
            groups = self._cells.get(key)
            if groups is None:
                continue
            for (grouping, k) in sorted(groups, key=lambda gk: (order[gk[0]], gk[1])):
                # group:None: the script's None filter keeps every sample, the overall block's counts
                c = groups[("overall", "overall") if k == "group:None" else (grouping, k)]
                rows.append([*key, grouping, k, c.total, c.correct, c.wrong_format, _official_acc(c.correct, c.total),
                             c.text_total, _official_acc(c.text_correct, c.text_total), c.icon_total,
                             _official_acc(c.icon_correct, c.icon_total)])
        notes = [
            "ScreenSpot-Pro's own report, block by block, as its official eval_screenspot_pro.py computes it "
            "(likaixin2000/ScreenSpot-Pro-GUI-Grounding bd8bbbb, evaluate and calc_metric_for_result_list): "
            "fine_grained (platform x application), seeclick_style (platform), leaderboard_simple_style (group), "
            "leaderboard_detailed_style (application) and overall; pointfail asks the English instruction of "
            "positive samples only, hence inst_style:instruction gt_type:positive.",
            "num_total: every sample of the block, missing answers (infrastructure errors) and replies with no "
            "point included as wrong_format; action_acc = num_correct_action / num_total; text_acc and icon_acc "
            "over the block's ui_type text and icon samples (text_total, icon_total), 0 where there are none, "
            "as the script writes. The script prints unrounded fractions; rounding happens here, once.",
            "A sample is correct when its first point (a box answer: its centre, as the official model wrappers "
            "click), normalized, lies in the box divided by img_size, edges inclusive (official.md's rule). group:None, where samples have no group, counts every sample, as "
            "the script's filter does.",
        ]
        return [Table("official_screenspot_pro", f"ScreenSpot-Pro official report by group: {study.name}", notes,
                      columns, rows)]
