"""How every subcommand presents itself: plain-text help with an example, defaults shown.

Each command module registers its parser with :func:`add_command` (or passes :class:`HelpFormatter`
and :func:`example_epilog` itself), so every ``pointfail <command> --help`` has:

* a description in plain text (no markup), wrapped as written;
* every option's default, appended as ``(default: X)`` unless the help already states it or there
  is none (``None``, ``False``, an empty list, a required option);
* an ``example:`` section with one command line that works as written.

``tests/test_cli_help.py`` checks all three for every subcommand.
"""

from __future__ import annotations

import argparse

TYPE_CHECKING = False  # typing is not imported at run time: ``pointfail --help`` imports this module
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["HelpFormatter", "add_command", "example_epilog", "flag_error", "prints_help"]


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the description's line breaks and appends ``(default: X)`` to an option's help when it
    has a meaningful default that the help does not already mention."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if (
            not action.option_strings
            or action.required
            or action.default is None
            or action.default is False
            or action.default == argparse.SUPPRESS
            or action.default == []
            or "default" in text
            or isinstance(action, (argparse._HelpAction, argparse._VersionAction))
        ):
            return text
        return f"{text} (default: %(default)s)"


def example_epilog(*examples: str) -> str:
    """The ``example:`` section of a command's help (one command line, or a few for subcommand
    groups)."""
    head = "example:" if len(examples) == 1 else "examples:"
    return head + "\n" + "\n".join(f"  {e}" for e in examples)


def add_command(subparsers: Any, name: str, *, description: str, example: str | tuple[str, ...],
                help: str | None = None, **kwargs: Any) -> argparse.ArgumentParser:
    """Add a subcommand whose ``--help`` follows the rules of this module.

    Args:
        subparsers: the ``add_subparsers()`` action of the parent parser.
        name: the command name.
        help: one line for the parent's command list; by default a top-level command's line in
            :data:`pointfail.commands.COMMANDS` (the line ``pointfail --help`` shows).
        description: plain text, shown as written (leading/trailing blank lines removed).
        example: one command line (or a tuple of them) shown under ``example:``.
        kwargs: passed on to ``add_parser`` (``aliases``, ``parser_class``, ...).
    """
    examples = (example,) if isinstance(example, str) else tuple(example)
    if help is None:
        from pointfail.commands import COMMANDS

        help = COMMANDS[name][1]
    return subparsers.add_parser(
        name,
        help=help,
        description=description.strip("\n"),
        epilog=example_epilog(*examples),
        formatter_class=HelpFormatter,
        **kwargs,
    )


_FLAG_NAMES: dict[str, str] = {
    "model_input_size": "--model-input-size",
    "allow_rescale=True": "--allow-rescale",
    "allow_rescale": "--allow-rescale",
    "image_size": "--image-size",
    "image_path": "--image",
    "mask_path": "--mask",
}


def prints_help(parser: argparse.ArgumentParser) -> Callable[[argparse.Namespace], int]:
    """A command function for a command group run without its subcommand: print ``parser``'s help
    and return exit status 2 (a usage error)."""
    def run(args: argparse.Namespace) -> int:
        parser.print_help()
        return 2

    return run


def flag_error(message: str, names: dict[str, str] | None = None) -> str:
    """A library error message rewritten for the command line: the Python argument names the
    library uses (``model_input_size``, ``allow_rescale=True``, ...) replaced by the flags the user
    typed (``--model-input-size``, ``--allow-rescale``). ``names`` adds or overrides pairs."""
    import re

    table = dict(_FLAG_NAMES)
    if names:
        table.update(names)
    if not table:
        return message
    pattern = re.compile("|".join(rf"(?<![\w-]){re.escape(k)}(?![\w])" for k in sorted(table, key=len, reverse=True)))
    return pattern.sub(lambda m: table[m.group(0)], message)
