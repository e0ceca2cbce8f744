"""``pointfail score``: parse and score one model reply, print one JSON object (see DESCRIPTION)."""

from __future__ import annotations

import argparse
import sys

from pointfail.commands._help import add_command, flag_error

DESCRIPTION = """\
Parse one model reply in its family's coordinate convention, test the first point
against the target (a mask file or a pixel box) and print one JSON line: outcome
(hit, miss or no_prediction), primary (the first point, normalized [x, y] with the
origin top-left, or null), points, boxes, flags, in_target, distance_px,
distance_norm, box (box tasks), frame, reason, ignored, truncated and image_size.

--diagnose adds frame_compliance: whether the first point would have hit had the
same numbers been read as 0-1, 0-100, 0-1000, original pixels or resized pixels.
It is a diagnostic and never changes the outcome.

Families that answer in pixels of the resized model input (qwen2_5_vl, ui_tars_1_5,
gta1, opencua) need --model-input-size W H (the size the model saw), or
--model-input-size family: the size the family's published resize setting
(smart_resize) makes of the image; the JSON then says which (model_input_size,
model_input_size_source).

Exit status: 0 when the reply was scored (whatever the outcome); 1 when the image
or mask cannot be used (unreadable, wrong size, empty) or the family's frame needs
--model-input-size; 2 for usage errors (an unknown family, for example)."""

EXAMPLE = ("pointfail score --family molmo --image-size 1024 768 --box 100 100 200 200 "
           "--text '<point x=\"14.6\" y=\"19.5\" alt=\"x\">x</point>'")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``score`` subcommand."""
    p = add_command(subparsers, "score", description=DESCRIPTION, example=EXAMPLE)
    p.add_argument("--family", required=True,
                   help="model family, any spelling (qwen2.5-vl, Qwen2.5-VL); list: pointfail families")
    img = p.add_mutually_exclusive_group(required=True)
    img.add_argument("--image", metavar="PATH", help="the original image (only its size is read)")
    img.add_argument("--image-size", nargs=2, type=int, metavar=("W", "H"), help="original image size in pixels")
    p.add_argument(
        "--model-input-size",
        nargs="+",
        metavar="W H | family",
        help="size in pixels of the resized image the model saw, needed by the resized-pixel families "
             "(qwen2_5_vl, ui_tars_1_5, gta1, opencua); 'family': the size the family's published resize "
             "setting (smart_resize) makes of the image, as pointfail evaluate --model-input-size family",
    )
    tgt = p.add_mutually_exclusive_group(required=True)
    tgt.add_argument("--mask", metavar="PATH", help="binary mask file, same size as the image")
    tgt.add_argument(
        "--box", nargs=4, type=float, metavar=("X0", "Y0", "X1", "Y1"),
        help="target box in pixels of the original image, edges inclusive"
    )
    p.add_argument("--task", choices=("point", "box"), default="point", help="the task the model was given")
    p.add_argument("--allow-rescale", action="store_true",
                   help="accept a mask of another size with the same aspect ratio (it is rescaled)")
    p.add_argument(
        "--diagnose",
        action="store_true",
        help="add the coordinate-frame compliance diagnostic (other readings; never changes the outcome)",
    )
    p.add_argument("--text", required=True, help="the model's raw reply ('-' reads it from standard input)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Score the reply and print the JSON object; returns the exit status described above."""
    from pointfail.frames import FrameError
    from pointfail.geometry import GeometryError
    from pointfail.records import canonical_json
    from pointfail.scoring import score_prediction

    text = sys.stdin.read() if args.text == "-" else args.text
    try:
        from pointfail.families import get_family

        family = get_family(args.family)
    except KeyError as e:
        print(f"pointfail score: {e.args[0] if e.args else e}", file=sys.stderr)
        return 2
    mis = args.model_input_size
    if mis is not None and mis != ["family"] and not (len(mis) == 2 and all(v.isdigit() for v in mis)):
        print(f"pointfail score: --model-input-size takes W H (two whole numbers) or 'family', not {' '.join(mis)}",
              file=sys.stderr)
        return 2
    try:
        if mis == ["family"]:
            from pointfail.geometry import image_size

            if family.resize is None:
                print(f"pointfail score: --model-input-size family: {family.name} answers in the {family.frame.name} "
                      "frame, which needs no model-input size", file=sys.stderr)
                return 2
            args.model_input_size = family.expected_model_input_size(
                tuple(args.image_size) if args.image_size else image_size(args.image))
        elif mis is not None:
            args.model_input_size = (int(mis[0]), int(mis[1]))
        res = score_prediction(
            family,
            text,
            image_path=args.image,
            image_size=args.image_size,
            model_input_size=args.model_input_size,
            mask_path=args.mask,
            box=args.box,
            task=args.task,
            allow_rescale=args.allow_rescale,
        )
    except (GeometryError, FrameError, ValueError) as e:
        hint = ("; or --model-input-size family for the size the family's published resize setting makes"
                if mis is None and family.resize is not None else "")
        print(f"pointfail score: {flag_error(str(e))}{hint}", file=sys.stderr)
        return 1
    out = res.to_dict()
    if mis is not None:  # the size the reply was read with, and where it came from
        out["model_input_size"] = list(args.model_input_size)
        out["model_input_size_source"] = "family" if mis == ["family"] else "given"
    if getattr(args, "diagnose", False):
        from pointfail.geometry import TargetRegion
        from pointfail.scoring import target_from_args, frame_compliance

        region = TargetRegion.from_target(
            target_from_args(args.mask, args.box, None), res.image_size, allow_rescale=args.allow_rescale
        )
        out["frame_compliance"] = frame_compliance(
            family, text, res.image_size, region, model_input_size=args.model_input_size
        )
    sys.stdout.write(canonical_json(out))
    return 0
