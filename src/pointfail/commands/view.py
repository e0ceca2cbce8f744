"""``pointfail view records/<study> [--out DIR] [--serve]``: the study's failure browser.

Writes a static site (default ``records/<study>/view/``) that opens from ``file://``: a study page
(failure profile, headline, failure composition; each bar segment links to exactly its samples), a
sample list (filters, counts, paging, keyboard navigation) and one page per sample (annotated image,
raw reply, parse, geometry, every judge attempt). With ``--serve`` it then serves the site on
loopback (a free port unless ``--port``) and opens it in the default browser.

Images are copied from where the records say they are (``data/<study>/...`` in the checkout, or
``--image-root`` folders); when they are missing, the pages say which command brings them.
"""

from __future__ import annotations

import argparse
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``pointfail view``."""
    from pointfail.commands._help import add_command

    p = add_command(subparsers, "view", description="""\
Write a study's failure browser, a static site that opens from file:// (default
<study>/view/): a study page (failure profile, hit rates, failure composition; each
bar segment links to exactly its samples), a sample list (filters, counts, keyboard
navigation) and a page per sample (the image with the target and every parsed point,
the raw reply, the parse, the geometry, every judge attempt), and a review mode
(review.html) where a person labels misses with the keyboard, the judges' verdicts
hidden until answered, and exports the labels for pointfail judge --judge human.
With --serve it then serves the site on 127.0.0.1 and opens it in the default browser.

Images are copied from where the records say they are; when they are missing, the
pages say which command brings them.""",
                    example="pointfail view records/default --serve")
    p.add_argument("study", help="study directory (records/<study>)")
    p.add_argument("--out", help="site directory (default: <study>/view)")
    p.add_argument("--image-root", action="append", default=[], metavar="DIR",
                   help="another folder record image paths may resolve into (repeatable)")
    p.add_argument("--no-images", action="store_true", help="write the site without images")
    p.add_argument("--serve", action="store_true", help="serve the site on 127.0.0.1 and open it in a browser")
    p.add_argument("--port", type=int, default=0, help="port for --serve; 0 picks a free one")
    p.add_argument("--no-open", action="store_true", help="with --serve: do not open a browser")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Build (and serve) the site; 0 on success, 1 naming the record or study problem."""
    from pointfail.aggregate import AggregateError
    from pointfail.records import RecordError
    from pointfail.outputs.view import build_site, serve

    try:
        res = build_site(args.study, args.out, image_roots=args.image_root, with_images=not args.no_images,
                         log=lambda m: print(m, flush=True))
    except (RecordError, AggregateError) as e:
        print(f"pointfail view: {e}", file=sys.stderr)
        return 1
    from pointfail.commands._console import wrap

    for b, (n, hint) in sorted(res.missing_images.items()):
        print(wrap(f"[view] {n} records of {b} have no image: {hint}"))
    print(f"[view] open {res.out_dir / 'index.html'}")
    print(f"[view] review mode (label misses): {res.out_dir / 'review.html'}")
    if args.serve:
        try:
            serve(res.out_dir, port=args.port, open_browser=not args.no_open)
        except OSError as e:
            print(f"pointfail view: cannot serve on port {args.port}: {e}", file=sys.stderr)
            return 1
    return 0
