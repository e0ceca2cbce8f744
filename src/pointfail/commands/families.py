"""``pointfail families``: list the registered model families with their coordinate frames."""

from __future__ import annotations


def _run(args) -> int:
    from tabulate import tabulate

    from pointfail.families import list_families

    rows = []
    for fam in list_families():
        scale = "" if fam.frame.scale is None else f"{fam.frame.scale:g}"
        rows.append(
            [
                fam.name,
                fam.frame.name,
                fam.frame.kind,
                scale,
                fam.frame.order,
                fam.backend or "-",
                ", ".join(fam.checkpoints) or "-",
            ]
        )
    headers = ["family", "frame", "kind", "scale", "order", "backend", "checkpoints"]
    print(tabulate(rows, headers=headers, tablefmt=args.format))
    return 0


def register(subparsers) -> None:
    """Add ``pointfail families [--format FMT]`` (FMT: any tabulate table format, default ``simple``)."""
    p = subparsers.add_parser("families", help="list model families, their coordinate frames and checkpoints")
    p.add_argument("--format", default="simple", help="tabulate table format (simple, github, plain, ...)")
    p.set_defaults(func=_run)
