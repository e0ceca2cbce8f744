"""``pointfail generate <kind> ...``: write a synthetic suite; ``pointfail generate verify DIR``.

Implementation notes (the user-facing text is :data:`DESCRIPTION`). Each kind is the module ``pointfail.generated.suites.<kind>`` (``sheets``, ``text``, ``web``), which provides
``add_arguments(parser)`` and ``run(args) -> int``. The module is imported only when its kind is
chosen (the kind's parser fills in its arguments on first use), so ``pointfail --help`` imports no
generator and a kind whose module is missing fails with a clear message instead of breaking the CLI.

``pointfail generate verify DIR [--regenerate]`` checks a suite against its ``manifest.json`` (see
:func:`pointfail.generated.suites.manifest.verify_manifest`) and prints what differs and why.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from pointfail.commands._help import HelpFormatter, add_command, example_epilog, prints_help
from pointfail.generated.suites import KINDS

DESCRIPTION = """\
Generate a synthetic GUI suite in PointerBench's layout, with a scene graph per
image (every element a point could land on), so every miss can be labeled by the
exact oracle judge: sheets (spreadsheet grids), text (document pages) or web (real
HTML pages rendered by Chromium; needs the web extra: pip install 'pointfail[web]'
and a Chromium). The same kind, seed and n give the same files, byte for byte; each
suite has a manifest.json with the content hash of every file.

verify checks a suite against its manifest.json and prints what differs and why."""

KIND_EXAMPLES = {
    "sheets": "pointfail generate sheets --n 50 --seed 1 --out suites/sheets",
    "text": "pointfail generate text --n 50 --seed 1 --out suites/text",
    "web": "pointfail generate web --n 20 --seed 0 --out suites/web",
}


class _LazyKindParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` that imports ``pointfail.generated.suites.<kind>`` and lets it add its arguments
    the first time it parses (argparse's sub-parser action calls ``parse_known_args``)."""

    kind: str | None = None
    _loaded = False
    _missing = False

    def parse_known_args(self, args=None, namespace=None):  # noqa: D102 (argparse API)
        if self.kind and not self._loaded:
            self._loaded = True
            try:
                mod = importlib.import_module(f"pointfail.generated.suites.{self.kind}")
            except ModuleNotFoundError as e:
                if e.name != f"pointfail.generated.suites.{self.kind}":
                    raise
                self._missing = True
                self.set_defaults(func=_missing(self.kind))
            else:
                mod.add_arguments(self)
                self.set_defaults(func=mod.run)
        if self._missing:  # swallow the kind's options: the run function explains what is missing
            return super().parse_known_args([], namespace)
        return super().parse_known_args(args, namespace)


def _missing(kind: str):
    def run(args: argparse.Namespace) -> int:
        print(f"pointfail generate: the {kind!r} generator (module pointfail.generated.suites.{kind}) is not installed "
              "in this checkout", file=sys.stderr)
        return 1

    return run


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``pointfail generate`` with one sub-command per suite kind plus ``verify``."""
    import textwrap

    p = add_command(subparsers, "generate", description=DESCRIPTION,
                    example=(KIND_EXAMPLES["sheets"], "pointfail generate verify suites/sheets"))
    kinds = p.add_subparsers(dest="kind", metavar="KIND", parser_class=_LazyKindParser)
    for kind, help_text in KINDS.items():
        kp = kinds.add_parser(kind, help=help_text, description=textwrap.fill(f"Generate a {kind} suite: {help_text}.", 84),
                              epilog=example_epilog(KIND_EXAMPLES.get(kind, f"pointfail generate {kind} --out DIR")),
                              formatter_class=HelpFormatter)
        kp.kind = kind
    vp = add_command(kinds, "verify", help="check a generated suite against its manifest.json",
                     description="""\
Check a generated suite against its manifest.json: every file's content hash (decoded
pixels for images), and with --regenerate, the suite made again from the manifest's
generator, seed and n. Prints what differs and why; exit 1 when anything does.""",
                     example="pointfail generate verify suites/sheets --regenerate")
    vp.add_argument("suite_dir", metavar="DIR", help="the suite directory (holds manifest.json)")
    vp.add_argument("--regenerate", action="store_true",
                    help="also regenerate the suite from the manifest's generator, seed and n and compare")
    vp.set_defaults(func=_verify)
    p.set_defaults(func=prints_help(p))


def _verify(args: argparse.Namespace) -> int:
    from pointfail.generated.suites.errors import SuiteError
    from pointfail.generated.suites.manifest import verify_manifest

    try:
        res = verify_manifest(args.suite_dir, regenerate=args.regenerate)
    except SuiteError as e:
        print(f"pointfail generate verify: {e}", file=sys.stderr)
        return 1
    print(res.explain())
    return 0 if res.ok else 1
