"""``pointfail generate <kind> ...``: write a synthetic suite; ``pointfail generate verify DIR``.

Each kind is the module ``pointfail.suites.<kind>`` (``sheets``, ``text``, ``web``), which provides
``add_arguments(parser)`` and ``run(args) -> int``. The module is imported only when its kind is
chosen (the kind's parser fills in its arguments on first use), so ``pointfail --help`` imports no
generator and a kind whose module is missing fails with a clear message instead of breaking the CLI.

``pointfail generate verify DIR [--regenerate]`` checks a suite against its ``manifest.json`` (see
:func:`pointfail.suites.common.verify_manifest`) and prints what differs and why.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from pointfail.suites import KINDS


class _LazyKindParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` that imports ``pointfail.suites.<kind>`` and lets it add its arguments
    the first time it parses (argparse's sub-parser action calls ``parse_known_args``)."""

    kind: str | None = None
    _loaded = False
    _missing = False

    def parse_known_args(self, args=None, namespace=None):  # noqa: D102 (argparse API)
        if self.kind and not self._loaded:
            self._loaded = True
            try:
                mod = importlib.import_module(f"pointfail.suites.{self.kind}")
            except ModuleNotFoundError as e:
                if e.name != f"pointfail.suites.{self.kind}":
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
        print(f"pointfail generate: the {kind!r} generator (module pointfail.suites.{kind}) is not installed "
              "in this checkout", file=sys.stderr)
        return 1

    return run


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``pointfail generate`` with one sub-command per suite kind plus ``verify``."""
    p = subparsers.add_parser("generate", help="generate a synthetic suite (sheets, text, web) or verify one",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    kinds = p.add_subparsers(dest="kind", metavar="KIND", parser_class=_LazyKindParser)
    for kind, help_text in KINDS.items():
        kp = kinds.add_parser(kind, help=help_text, description=f"Generate a {kind} suite: {help_text}.")
        kp.kind = kind
    vp = kinds.add_parser("verify", help="check a generated suite against its manifest.json")
    vp.add_argument("suite_dir", metavar="DIR")
    vp.add_argument("--regenerate", action="store_true",
                    help="also regenerate the suite from the manifest's generator, seed and n and compare")
    vp.set_defaults(func=_verify)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])


def _verify(args: argparse.Namespace) -> int:
    from pointfail.suites.common import SuiteError, verify_manifest

    try:
        res = verify_manifest(args.suite_dir, regenerate=args.regenerate)
    except SuiteError as e:
        print(f"pointfail generate verify: {e}", file=sys.stderr)
        return 1
    print(res.explain())
    return 0 if res.ok else 1
