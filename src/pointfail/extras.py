"""Optional dependencies: which extra brings which module, and the one-line error when one is missing.

pointfail's base install parses, scores, judges with the oracle and aggregates. Figures, model
judges, containers, model weights, web rendering and OCR need more, grouped as the extras of
``pyproject.toml`` (``[project.optional-dependencies]``). :data:`EXTRAS` repeats which importable
modules each extra brings (``tests/test_extras.py`` checks it against ``pyproject.toml``), so a
feature asks for its extra by name before it writes anything::

    require("report", "the report")      # raises MissingExtra when matplotlib is absent

and the command line turns :class:`MissingExtra` into one line on standard error and exit status 2::

    pointfail report: the report needs matplotlib, which is not installed: pip install 'pointfail[report]'
"""

from __future__ import annotations

import importlib

__all__ = ["EXTRAS", "MissingExtra", "extra_for_module", "require"]

EXTRAS: dict[str, tuple[str, ...]] = {
    "judge": ("ollama", "openai", "httpx", "tenacity"),
    "served": ("openai", "httpx", "tenacity"),
    "report": ("matplotlib",),
    "runner": ("docker",),
    "models": ("transformers", "torch"),
    "web": ("playwright",),
    "ocr": ("pytesseract",),
    "hub": ("huggingface_hub",),
}
"""Extra name -> the top-level modules it makes importable (``httpx`` comes with ``ollama`` and
``openai``). ``cli`` is ``report`` and ``judge`` together; ``tqdm`` is a base dependency."""


class MissingExtra(ImportError):
    """A feature needs an optional dependency that is not installed.

    Attributes:
        extra: the extra that brings it (``report``, ``judge``, ...).
        module: the module that could not be imported.
        purpose: what needed it, as the user would say it (``the report``).
    """

    def __init__(self, extra: str, module: str, purpose: str):
        self.extra = extra
        self.module = module
        self.purpose = purpose
        super().__init__(
            f"{purpose} needs {module}, which is not installed: pip install 'pointfail[{extra}]'",
            name=module,
        )


def extra_for_module(module: str) -> str | None:
    """The extra that brings a module (``matplotlib.pyplot`` -> ``report``), or ``None``."""
    top = module.split(".", 1)[0]
    for extra, mods in EXTRAS.items():
        if top in mods:
            return extra
    return None


def require(extra: str, purpose: str) -> None:
    """Import every module of ``extra`` now, before any file is written.

    Args:
        extra: a key of :data:`EXTRAS`.
        purpose: what needs it, for the message (``"the report"``, ``"--judge ollama"``).

    Raises:
        MissingExtra: a module of the extra is not installed (or fails to import because one of its
            own dependencies is missing).
        KeyError: an unknown extra name (a programming error).
    """
    for module in EXTRAS[extra]:
        try:
            importlib.import_module(module)
        except ImportError as e:
            raise MissingExtra(extra, getattr(e, "name", None) or module, purpose) from e
