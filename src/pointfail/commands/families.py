"""``pointfail families``: what each model family expects and answers (see DESCRIPTION)."""

from __future__ import annotations

import argparse
import sys

from pointfail.commands._help import add_command

TYPE_CHECKING = False  # typing and pathlib are not imported at run time: ``pointfail COMMAND --help`` stays light
if TYPE_CHECKING:
    from typing import Any

EXAMPLE_INSTRUCTION = "the Save button"
"""The instruction the examples are written for."""
EXAMPLE_IMAGE_SIZE = (1024, 768)
"""The image the example replies point into (PointerBench's screenshot size), pixels."""
EXAMPLE_POINT = (0.25, 0.5)
"""The example point, normalized: a quarter across, half way down (pixel 256, 384)."""

DESCRIPTION = f"""\
List every model family, one line each (at most 160 columns; long cells end in …):
its coordinate frame (what the numbers mean and which axis comes first), an example
reply in its own syntax, and the checkpoints it covers. The examples ask for "{EXAMPLE_INSTRUCTION}"
and answer the point a quarter across and half way down a {EXAMPLE_IMAGE_SIZE[0]}x{EXAMPLE_IMAGE_SIZE[1]} screenshot
(pixel {int(EXAMPLE_POINT[0] * EXAMPLE_IMAGE_SIZE[0])}, {int(EXAMPLE_POINT[1] * EXAMPLE_IMAGE_SIZE[1])}).
Families whose replies are in pixels of the resized model input answer in the size
their processor makes from that screenshot (shown).

Family names are accepted in any common spelling wherever a command takes one
(qwen2.5-vl, Qwen2.5-VL, qwen2_5_vl) and as checkpoint ids (Qwen/Qwen2.5-VL-3B-Instruct).

Give NAMEs to see those families in full (the example prompt in the family's own
phrasing, the system prompt and the reply as sent and received, every checkpoint);
--format json prints every field for every listed family."""


def family_info(fam: Any) -> dict[str, Any]:
    """One family as plain data: ``name``, ``frame`` (``name``, ``kind``, ``scale``, ``axis_order``
    (``"x, y"`` or ``"y, x"``), ``description``), ``example`` (``instruction``, ``image_size``
    ``[W, H]`` pixels, ``model_input_size`` ``[W, H]`` or ``None``, ``point_px`` ``[x, y]`` pixels of
    the image, ``system_prompt``, ``prompt``, ``reply``), ``can_box``, ``backend``, ``checkpoints``."""
    size = EXAMPLE_IMAGE_SIZE
    mis = fam.expected_model_input_size(size) if fam.resize else None
    x, y = EXAMPLE_POINT
    return {
        "name": fam.name,
        "frame": {
            "name": fam.frame.name,
            "kind": fam.frame.kind,
            "scale": fam.frame.scale,
            "axis_order": ", ".join(fam.frame.order),
            "description": fam.frame.doc,
        },
        "example": {
            "instruction": EXAMPLE_INSTRUCTION,
            "image_size": list(size),
            "model_input_size": list(mis) if mis else None,
            "point_px": [x * size[0], y * size[1]],
            "system_prompt": fam.system_prompt,
            "prompt": fam.prompt(EXAMPLE_INSTRUCTION, "point"),
            "reply": fam.format_point(x, y, size, mis),
        },
        "can_box": fam.can_box,
        "backend": fam.backend,
        "checkpoints": list(fam.checkpoints),
    }


def _one_line(text: str, width: int | None = None) -> str:
    flat = " ".join(text.split())
    if width is not None and len(flat) > width:
        return flat[: width - 1] + "…"
    return flat


def _table(infos: list[dict[str, Any]], fmt: str) -> str:
    """The families as one table of at most :data:`pointfail.commands._console.WIDTH` columns (long
    cells end in ``…``; NAME or ``--format json`` shows them in full)."""
    from pointfail.commands._console import table

    rows = []
    for d in infos:
        ex = d["example"]
        frame = f"{d['frame']['name']}: {d['frame']['description']}"
        if ex["model_input_size"]:
            frame += f" (here {ex['model_input_size'][0]}x{ex['model_input_size'][1]})"
        rows.append([
            d["name"],
            frame,
            d["frame"]["axis_order"],
            _one_line(ex["reply"]),
            ", ".join(d["checkpoints"]) or "-",
        ])
    headers = ["family", "frame", "axis order", "example reply", "checkpoints"]
    return table(headers, rows, empty="no model families", fmt=fmt)


def _details(d: dict[str, Any]) -> str:
    ex = d["example"]
    lines = [
        f"{d['name']}",
        f"  frame: {d['frame']['name']} ({d['frame']['kind']}): {d['frame']['description']}; axis order {d['frame']['axis_order']}",
    ]
    if ex["model_input_size"]:
        lines.append(f"  model input for a {ex['image_size'][0]}x{ex['image_size'][1]} image: "
                     f"{ex['model_input_size'][0]}x{ex['model_input_size'][1]} (the family's smart_resize setting)")
    lines.append(f"  answers boxes too: {'yes' if d['can_box'] else 'no'}")
    lines.append(f"  checkpoints: {', '.join(d['checkpoints']) or '-'}")
    if ex["system_prompt"]:
        lines.append("  system prompt:")
        lines.extend(f"    {ln}" for ln in ex["system_prompt"].splitlines())
    lines.append(f"  example prompt ({ex['instruction']!r}):")
    prompt = ex["prompt"]
    lines.extend(f"    {ln}" for ln in prompt.splitlines())
    lines.append(f"  example reply (pixel {ex['point_px'][0]:g}, {ex['point_px'][1]:g} of {ex['image_size'][0]}x{ex['image_size'][1]}):")
    lines.extend(f"    {ln}" for ln in ex["reply"].splitlines())
    return "\n".join(lines)


def _run(args: argparse.Namespace) -> int:
    from pointfail.families import get_family, list_families

    if args.names:
        try:
            fams = [get_family(n) for n in args.names]
        except KeyError as e:
            print(f"pointfail families: {e.args[0]}", file=sys.stderr)
            return 2
    else:
        fams = list_families()
    infos = [family_info(f) for f in fams]
    if args.format == "json":
        import json

        sys.stdout.write(json.dumps(infos, indent=2, ensure_ascii=False) + "\n")
    elif args.names:
        sys.stdout.write("\n\n".join(_details(d) for d in infos) + "\n")
    else:
        sys.stdout.write(_table(infos, args.format) + "\n")
        sys.stdout.write("in full (prompt, system prompt, every checkpoint): pointfail families NAME\n")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``pointfail families [NAME ...] [--format FMT]``."""
    p = add_command(subparsers, "families",
                    description=DESCRIPTION, example="pointfail families qwen2.5-vl molmo")
    p.add_argument("names", nargs="*", metavar="NAME", help="families to show in full (any spelling)")
    p.add_argument("--format", default="simple",
                   help="json, or a table style: simple, github, plain, grid, ...")
    p.set_defaults(func=_run)
