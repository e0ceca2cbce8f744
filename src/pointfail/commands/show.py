"""``pointfail show DIR --id ID [--id ID ...] [--out PATH]``: draw a sample for a person to look at.

The PNG shows the screenshot with every scene graph element outlined (one colour per category,
thin), the target box filled translucent green with a green outline, the row's reference point as a
small cross, and a caption strip below with the id, category, instruction and target id. Works on any
directory in the PointerBench layout (``DIR/data/test/metadata.jsonl``); rows without a scene graph
get the target only. Output: ``--out`` is the file for a single id, otherwise a directory that gets
``<id>.png`` per id (default: ``show/`` under the current directory).
"""

from __future__ import annotations

import argparse
import sys

TYPE_CHECKING = False  # typing, json and pathlib are imported when the command runs, not by ``pointfail --help``
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    from PIL import Image

CATEGORY_COLORS: tuple[tuple[int, int, int], ...] = (
    (31, 119, 180), (255, 127, 14), (148, 103, 189), (214, 39, 40), (140, 86, 75), (227, 119, 194),
    (127, 127, 127), (188, 189, 34), (23, 190, 207), (57, 59, 121),
)
"""Outline colours, assigned to categories in sorted order (tab10 without its green, which is the
target's colour)."""
TARGET_GREEN = (0, 200, 0)
CAPTION_H = 64


class ShowError(RuntimeError):
    """The suite directory, row, image or scene graph cannot be read; the message names the file."""


def load_rows(suite_dir: Path) -> dict[str, dict[str, Any]]:
    """Metadata rows of ``DIR/data/test/metadata.jsonl`` keyed by id.

    Raises:
        ShowError: the file is missing or a line is not a JSON object with an ``id`` (names the line).
    """
    import json

    p = suite_dir / "data" / "test" / "metadata.jsonl"
    if not p.is_file():
        raise ShowError(f"{p} not found: not a suite in the PointerBench layout")
    rows: dict[str, dict[str, Any]] = {}
    with open(p, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                rows[str(row["id"])] = row
            except (json.JSONDecodeError, KeyError, TypeError) as e:
                raise ShowError(f"{p}:{n}: not a metadata row ({e})") from None
    return rows


DEFAULT_HIDDEN = frozenset({"caret"})
"""Categories not outlined unless asked for (``--categories all``): text pages have a caret box at
every character boundary, which hides the text under outlines."""


def _outline_elements(od: Any, sg_path: Path, categories: set[str] | str | None) -> list[tuple[str, tuple[int, int, int]]]:
    """Outline on ``od`` (the overlay's ImageDraw) the scene graph's elements of the wanted
    ``categories`` (as :func:`render_sample`), one colour per category; returns the legend.

    Raises:
        ShowError: the scene graph cannot be read.
    """
    import json

    try:
        sg = json.loads(sg_path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise ShowError(f"cannot read scene graph {sg_path}: {e}") from None

    def wanted(cat: str) -> bool:
        if categories == "all":
            return True
        return cat in categories if categories is not None else cat not in DEFAULT_HIDDEN

    cats = sorted({el["category"] for el in sg.get("elements", []) if wanted(el["category"])})
    colors = {c: CATEGORY_COLORS[i % len(CATEGORY_COLORS)] for i, c in enumerate(cats)}
    for el in sg.get("elements", []):
        if el["category"] not in colors:
            continue
        x0, y0, x1, y1 = el["box"]
        od.rectangle([x0, y0, max(x0, x1 - 1), max(y0, y1 - 1)], outline=colors[el["category"]] + (150,))
    return [(c, colors[c]) for c in cats]


def render_sample(suite_dir: Path, row: dict[str, Any], *, elements: bool = True,
                  categories: set[str] | str | None = None) -> Image.Image:
    """The annotated picture of one row (RGB, image width x image height + caption strip).
    ``categories``: the element categories to outline (``None``: all but :data:`DEFAULT_HIDDEN`;
    ``"all"``: every category).

    Raises:
        ShowError: the image or the scene graph named by the row cannot be read.
    """
    from PIL import Image, ImageDraw, ImageFont

    test_dir = suite_dir / "data" / "test"
    img_path = test_dir / row["file_name"]
    try:
        with Image.open(img_path) as im:
            base = im.convert("RGB")
    except (OSError, ValueError) as e:
        raise ShowError(f"cannot read image {img_path}: {e}") from None
    W, H = base.size
    canvas = Image.new("RGB", (W, H + CAPTION_H), (255, 255, 255))
    canvas.paste(base, (0, 0))
    overlay = Image.new("RGBA", (W, H), (0, 0, 0, 0))
    od = ImageDraw.Draw(overlay)
    legend: list[tuple[str, tuple[int, int, int]]] = []
    if elements and row.get("scene_graph"):
        legend = _outline_elements(od, test_dir / row["scene_graph"], categories)
    x0, y0, x1, y1 = row["bbox"]
    od.rectangle([x0, y0, max(x0, x1 - 1), max(y0, y1 - 1)], fill=TARGET_GREEN + (90,), outline=TARGET_GREEN + (255,), width=2)
    px, py = row.get("point", [(x0 + x1) // 2, (y0 + y1) // 2])
    if min(x1 - x0, y1 - y0) < 12:  # thin or tiny target: ring it so a person finds it
        od.ellipse([px - 16, py - 16, px + 16, py + 16], outline=TARGET_GREEN + (255,), width=2)
    od.line([px - 5, py, px + 5, py], fill=(0, 120, 0, 255), width=1)
    od.line([px, py - 5, px, py + 5], fill=(0, 120, 0, 255), width=1)
    top = Image.alpha_composite(canvas.crop((0, 0, W, H)).convert("RGBA"), overlay).convert("RGB")
    canvas.paste(top, (0, 0))
    d = ImageDraw.Draw(canvas)
    try:
        from pointfail.generated.suites.fonts import load_font

        font = load_font("dejavu-sans", 12)
    except Exception:  # caption only: fall back to Pillow's built-in font when DejaVu is absent
        font = ImageFont.load_default()
    d.text((6, H + 4), f"{row['id']}  [{row.get('data_type', '')}/{row.get('category', '')}]  "
           f"{row.get('answer_type', '')} box {row['bbox']}  target {row.get('target_id', '-')}", fill=(0, 0, 0), font=font)
    d.text((6, H + 22), f"instruction: {row.get('instruction', '')}"[:170], fill=(0, 0, 0), font=font)
    x = 6
    for c, col in legend:
        d.rectangle([x, H + 44, x + 10, H + 54], outline=col, width=2)
        d.text((x + 14, H + 42), c, fill=(60, 60, 60), font=font)
        x += 24 + round(font.getlength(c))
    return canvas


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``pointfail show``."""
    from pointfail.commands._help import add_command

    p = add_command(subparsers, "show", description="""\
Draw one or more samples of a suite (any directory in PointerBench's layout) for a
person to look at: the screenshot with every scene-graph element outlined (one colour
per category), the target filled green, the row's reference point as a small cross,
and a caption with the id, category, instruction and target id. Rows without a scene
graph get the target only.

--out is the PNG file for a single id, otherwise a directory that gets <id>.png per id.""",
                    example="pointfail show suites/sheets --id pfs_0000 --out sample.png")
    p.add_argument("suite_dir", metavar="DIR", help="suite directory (PointerBench layout)")
    p.add_argument("--id", dest="ids", action="append", required=True, help="sample id as in metadata.jsonl, e.g. pfs_0000 (repeatable)")
    p.add_argument("--out", help="output PNG (one id) or directory (several ids) (default: ./show/)")
    p.add_argument("--no-elements", action="store_true", help="draw the target only, not the scene graph")
    p.add_argument("--categories", help="comma-separated element categories to outline, or 'all' "
                   f"(default: all but {', '.join(sorted(DEFAULT_HIDDEN))})")
    p.set_defaults(func=run)


def id_hint(unknown: list[str], rows: dict[str, Any]) -> str:
    """What the ids of the suite look like, for an unknown-id message: the ids that end with what was
    typed (``0000`` -> ``pfs_0000``), else the first and last id and how many there are."""
    ids = list(rows)
    if not ids:
        return " (the suite has no samples)"
    near = [i for u in unknown for i in ids if i.rpartition("_")[2] == u][:5]
    if near:
        return f"; did you mean {', '.join(near)}?"
    return f"; its {len(ids)} ids run {ids[0]} .. {ids[-1]}"


def run(args: argparse.Namespace) -> int:
    """Write one PNG per requested id; returns 0, or 1 naming an unknown id or unreadable file."""
    from pathlib import Path

    suite_dir = Path(args.suite_dir)
    try:
        rows = load_rows(suite_dir)
        unknown = [i for i in args.ids if i not in rows]
        if unknown:
            raise ShowError(f"unknown id(s) {', '.join(unknown)} in {suite_dir}{id_hint(unknown, rows)}")
        single_file = len(args.ids) == 1 and args.out and args.out.lower().endswith(".png")
        out_dir = None if single_file else Path(args.out or "show")
        for i in args.ids:
            cats: set[str] | str | None = None
            if args.categories:
                cats = "all" if args.categories == "all" else set(args.categories.split(","))
            pic = render_sample(suite_dir, rows[i], elements=not args.no_elements, categories=cats)
            dest = Path(args.out) if out_dir is None else out_dir / f"{i}.png"
            dest.parent.mkdir(parents=True, exist_ok=True)
            pic.save(dest, format="PNG")
            print(dest)
    except ShowError as e:
        print(f"pointfail show: {e}", file=sys.stderr)
        return 1
    return 0
