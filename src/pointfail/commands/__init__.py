"""Subcommands of the pointfail CLI, one module each (see ``pointfail.cli``)."""
