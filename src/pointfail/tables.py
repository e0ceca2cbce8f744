"""Canonical rendering of tables: exact rounding, Markdown (tabulate), CSV, JSON and SHA256SUMS.

The rules (``shared/DESIGN.md``, "Records and tables"):

* counts are Python ``int``; rates and means are exact :class:`fractions.Fraction` values until they
  are rounded **once**, here, by :func:`fmt_fraction` (round half to even on the exact value, pure
  integer arithmetic, so no float and no locale is involved);
* every cell is a ``str`` by the time it reaches a renderer, so no ``repr`` of a numpy scalar or a
  float can leak into a file;
* rows are sorted by the caller with explicit keys; renderers keep the order they are given;
* output is UTF-8 with ``\\n`` line ends, returned as ``bytes``.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Optional, Union

__all__ = [
    "NA",
    "Column",
    "JsonDocument",
    "Section",
    "Table",
    "count",
    "decimal",
    "fmt_fraction",
    "fmt_p",
    "fmt_pct",
    "json_number",
    "p_value",
    "parse_sha256sums",
    "pct",
    "rate",
    "render_csv",
    "render_json",
    "render_md",
    "render_table_md",
    "sha256sums",
    "text",
]

NA = "n/a"
"""Cell text for a value that does not exist (a rate over zero samples, a share of zero labels)."""


def fmt_fraction(value: Optional[Fraction | int], digits: int, *, scale: int = 1) -> str:
    """Format ``value * scale`` with ``digits`` decimals, rounding half to even on the exact value.

    ``fmt_fraction(Fraction(2, 3), 1, scale=100)`` is ``"66.7"``; ``fmt_fraction(Fraction(1, 8), 2)``
    is ``"0.12"`` (half to even); ``None`` gives :data:`NA`. Equivalent to Python's
    ``f"{x:.{digits}f}"`` applied to the exact rational (no binary float in between).
    """
    if value is None:
        return NA
    v = Fraction(value) * scale
    neg = v < 0
    v = abs(v)
    q, r = divmod(v.numerator * 10**digits, v.denominator)
    twice = 2 * r
    if twice > v.denominator or (twice == v.denominator and q % 2 == 1):
        q += 1
    s = str(q)
    if digits:
        s = s.rjust(digits + 1, "0")
        s = s[:-digits] + "." + s[-digits:]
    if neg and q != 0:
        s = "-" + s
    return s


def fmt_p(value: Fraction, sig: int = 4) -> str:
    """A probability in (0, 1] with ``sig`` significant digits, from the exact value, rounded once
    half to even: ``"1"`` for 1, ``"0.625"``, ``"0.001953"``, and scientific notation below 1e-4
    (``"3.815e-06"``), trailing zeros removed, like ``f"{p:.4g}"`` but without a float."""
    v = Fraction(value)
    if v <= 0:
        return "0"
    e = 0  # find e with 10**(sig-1) <= v * 10**(sig-1-e) < 10**sig
    while v >= Fraction(10) ** (e + 1):
        e += 1
    while v < Fraction(10) ** e:
        e -= 1
    scaled = v * Fraction(10) ** (sig - 1 - e)
    q, r = divmod(scaled.numerator, scaled.denominator)
    if 2 * r > scaled.denominator or (2 * r == scaled.denominator and q % 2 == 1):
        q += 1
    if q == 10**sig:  # rounding carried into a new digit
        q //= 10
        e += 1
    digits = str(q)
    if -4 <= e < sig:
        if e >= 0:
            s = digits[: e + 1] + "." + digits[e + 1 :] if e + 1 < len(digits) else digits + "0" * (e + 1 - len(digits))
        else:
            s = "0." + "0" * (-e - 1) + digits
        if "." in s:
            s = s.rstrip("0").rstrip(".")
        return s
    mant = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    if "." in mant:
        mant = mant.rstrip("0").rstrip(".")
    return f"{mant}e{'-' if e < 0 else '+'}{abs(e):02d}"


def fmt_pct(num: int, den: int, digits: int = 1) -> str:
    """``num / den`` as a percentage with ``digits`` decimals, :data:`NA` when ``den == 0``."""
    return NA if den == 0 else fmt_fraction(Fraction(num, den), digits, scale=100)


def json_number(value: Optional[Fraction], digits: int) -> Optional[float]:
    """A Fraction rounded once to ``digits`` decimals and returned as the float whose shortest repr
    is that decimal string (so ``json.dumps`` writes exactly it), or ``None``."""
    if value is None:
        return None
    return float(fmt_fraction(value, digits))


def render_csv(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> bytes:
    """CSV (RFC 4180 quoting via :mod:`csv`, ``\\n`` line ends, UTF-8). Every cell must be ``str``.

    Raises:
        TypeError: when a cell is not a ``str`` (guards against float/numpy reprs).
    """
    _check_cells(rows)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(headers)
    w.writerows(rows)
    return buf.getvalue().encode("utf-8")


def render_table_md(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A GitHub-flavoured Markdown table via ``tabulate`` (``disable_numparse=True``: cells are
    printed exactly as given). An empty table renders as ``(no rows)``."""
    from tabulate import tabulate

    _check_cells(rows)
    if not rows:
        return "(no rows)\n"
    return tabulate([list(r) for r in rows], headers=list(headers), tablefmt="github", disable_numparse=True) + "\n"


def render_md(title: str, notes: Sequence[str], sections: Sequence[tuple[Optional[str], Sequence[str], Sequence[Sequence[str]]]]) -> bytes:
    """A Markdown document: ``# title``, the notes as a bullet list, then each section
    ``(subtitle or None, headers, rows)`` as a table. Returns UTF-8 bytes with ``\\n`` line ends."""
    out = [f"# {title}\n"]
    if notes:
        out.append("\n" + "".join(f"- {n}\n" for n in notes))
    for sub, headers, rows in sections:
        if sub:
            out.append(f"\n## {sub}\n")
        out.append("\n" + render_table_md(headers, rows))
    return "".join(out).encode("utf-8")


def render_json(obj: Any) -> bytes:
    """Canonical pretty JSON: sorted keys, 2-space indent, UTF-8, a final ``\\n``; no NaN.

    Raises:
        ValueError: on NaN/infinity; TypeError: on a value JSON cannot encode (e.g. numpy scalars,
        Fractions: round them with :func:`json_number` first).
    """
    return (json.dumps(obj, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")


def sha256sums(files: Mapping[str, bytes]) -> bytes:
    """``SHA256SUMS`` in the format ``sha256sum -c`` reads: ``<hex>  <name>\\n`` per file, sorted by
    name (byte order of the UTF-8 names)."""
    lines = [f"{hashlib.sha256(data).hexdigest()}  {name}\n" for name, data in sorted(files.items(), key=lambda kv: kv[0].encode("utf-8"))]
    return "".join(lines).encode("utf-8")


def parse_sha256sums(data: bytes) -> dict[str, str]:
    """Parse a ``SHA256SUMS`` file into ``{name: hex}``.

    Raises:
        ValueError: on a line that is not ``<64 hex>  <name>``.
    """
    out: dict[str, str] = {}
    for i, line in enumerate(data.decode("utf-8").split("\n"), start=1):
        if not line:
            continue
        h, sep, name = line.partition("  ")
        if not sep or len(h) != 64 or any(c not in "0123456789abcdef" for c in h):
            raise ValueError(f"SHA256SUMS line {i} is not '<sha256>  <name>': {line!r}")
        out[name] = h
    return out


def _check_cells(rows: Sequence[Sequence[Any]]) -> None:
    for r in rows:
        for c in r:
            if not isinstance(c, str):
                raise TypeError(f"table cell {c!r} ({type(c).__name__}) is not a str: format it first")


# ----------------------------------------------------------------------------------------------
# tables as data: what a table builder returns, rendered here and only here

Section = tuple[Optional[str], Sequence[str], Sequence[Sequence[str]]]
"""One Markdown section: ``(subtitle or None, headers, rows of str)``."""


@dataclass(frozen=True, slots=True)
class Column:
    """One column of a table: its header and how an exact value is written into a cell.

    ``digits is None``: the value is a ``str`` (written as is) or an ``int`` count (``str(n)``).
    ``digits`` set: the value is an exact ``Fraction`` (or ``int``) written with :func:`fmt_fraction`
    after multiplying by ``scale``; ``None`` is :data:`NA`. ``p_value``: written with :func:`fmt_p`.

    >>> pct("hit_rate_pct").format(Fraction(2, 3)), count("n").format(7), pct("x").format(None)
    ('66.7', '7', 'n/a')
    """

    name: str
    digits: Optional[int] = None
    scale: int = 1
    p_value: bool = False

    def format(self, value: Any) -> str:
        """The cell text of ``value`` (rules in the class docstring).

        Raises:
            TypeError: a float or any other type a rule does not allow (no ``repr`` reaches a file).
        """
        if self.p_value:
            return fmt_p(value)
        if self.digits is not None:
            if value is not None and (isinstance(value, (bool, float)) or not isinstance(value, (int, Fraction))):
                raise TypeError(f"column {self.name!r}: {value!r} is not an exact number")
            return fmt_fraction(value, self.digits, scale=self.scale)
        if isinstance(value, str):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        raise TypeError(f"column {self.name!r}: cell {value!r} ({type(value).__name__}) is neither str nor int")


def text(name: str) -> Column:
    """A column of strings."""
    return Column(name)


def count(name: str) -> Column:
    """A column of integer counts."""
    return Column(name)


def pct(name: str, digits: int = 1) -> Column:
    """A column of exact rates in [0, 1] written as percentages with ``digits`` decimals."""
    return Column(name, digits=digits, scale=100)


def decimal(name: str, digits: int) -> Column:
    """A column of exact numbers written with ``digits`` decimals."""
    return Column(name, digits=digits)


def p_value(name: str) -> Column:
    """A column of exact probabilities written with :func:`fmt_p` (4 significant digits)."""
    return Column(name, p_value=True)


def rate(num: int, den: int) -> Optional[Fraction]:
    """``num / den`` as an exact Fraction, ``None`` when ``den == 0`` (written :data:`NA`)."""
    return Fraction(num, den) if den else None


@dataclass(frozen=True)
class Table:
    """A table as data: ``<name>.csv`` (the columns, one row per entry of ``rows``, each cell written
    by its :class:`Column`) and ``<name>.md`` (``# title``, the notes as bullets, then either the same
    table or, when given, ``md_sections``: a Markdown layout of its own, e.g. a pivot).

    ``rows`` hold exact values (``str``, ``int``, ``Fraction`` or ``None``), in output order.
    """

    name: str
    title: str
    notes: Sequence[str]
    columns: Sequence[Column]
    rows: Sequence[Sequence[Any]]
    md_sections: Optional[Sequence[Section]] = None

    @property
    def headers(self) -> list[str]:
        """The column names."""
        return [c.name for c in self.columns]

    def cells(self) -> list[list[str]]:
        """Every row with each value written by its column."""
        cols = self.columns
        out = []
        for r in self.rows:
            if len(r) != len(cols):
                raise ValueError(f"table {self.name!r}: a row has {len(r)} cells for {len(cols)} columns")
            out.append([c.format(v) for c, v in zip(cols, r)])
        return out

    def files(self) -> dict[str, bytes]:
        """``{"<name>.md": bytes, "<name>.csv": bytes}``."""
        cells = self.cells()
        sections = self.md_sections if self.md_sections is not None else [(None, self.headers, cells)]
        return {
            f"{self.name}.md": render_md(self.title, self.notes, sections),
            f"{self.name}.csv": render_csv(self.headers, cells),
        }


@dataclass(frozen=True)
class JsonDocument:
    """A JSON file (``name`` with its extension) rendered by :func:`render_json`."""

    name: str
    obj: Any

    def files(self) -> dict[str, bytes]:
        """``{name: bytes}``."""
        return {self.name: render_json(self.obj)}


Output = Union[Table, JsonDocument]
