"""The judge registry: one file per judge kind, keyed by name, discovered (as model families are).

A judge kind is a module ``pointfail/judge/kinds/<name>.py`` that defines ``KIND = <JudgeKind
subclass>()``; files starting with ``_`` are helpers. Everything that names a judge reads this
registry: ``pointfail judge --judge NAME`` (its choices and the kind's own options), the study file
(``[study] primary_judge`` and ``[judge] compared`` are checked against it), the lineage rules
(:mod:`pointfail.running.judges.lineage`: a kind with ``model_judge`` must declare its lineage), the runner's
judge stage (:func:`make_judges` is the one place that turns a name into a judge), and the agreement
reports and tables (which read judge names from the records). Adding a judge is adding its file.

Public API::

    get_kind(name) -> JudgeKind        # KeyError listing the known names
    list_kinds() -> list[JudgeKind]    # sorted by name
    kind_names() -> tuple[str, ...]
    make_judges(name, settings) -> list[Judge]
    refresh()                          # forget the discovered kinds (after adding a file at run time)

``settings`` is one flat mapping: the study's ``[judge]`` table (``pointfail.inputs.study.JudgeSpec`` fields:
``ollama_model``, ``openai_base_url``, ``oracle_tolerance_px``, ...) with the command line's options
laid over it (``host``, ``seed``, ``num_ctx``, ``num_predict``, ``timeout``, ``transport_retries``,
``no_schema``, ``concurrency``, ``labels``, ...); a kind reads the keys it knows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Optional

from pointfail.discovery import Registry

__all__ = ["JudgeKind", "JudgeSetupError", "get_kind", "kind_names", "list_kinds", "make_judges", "refresh"]


class JudgeSetupError(ValueError):
    """A judge cannot be made from the settings given (a missing option, an unreadable file); the
    message says what to pass."""


class JudgeKind:
    """What a judge kind declares (class attributes) and does.

    Attributes:
        name: the registry key, the value of ``--judge`` and of ``[study] primary_judge``.
        summary: one line for ``--help``.
        model_judge: a model labels the misses: the study must declare the judge's ``lineage`` and it
            is checked against every evaluated model (:mod:`pointfail.running.judges.lineage`).
        needs_scene_graphs: only generated suites (``loader = "suite"``) can be judged by it.
        runs_in_study: the runner's judge stage can run it from the study file alone (``False`` for
            human labels, which come from a file given on the command line).
        extra: the optional dependency group it needs (:func:`pointfail.extras.require`), or ``None``.
    """

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    model_judge: ClassVar[bool] = False
    needs_scene_graphs: ClassVar[bool] = False
    runs_in_study: ClassVar[bool] = True
    extra: ClassVar[Optional[str]] = None

    def add_arguments(self, parser: Any) -> None:
        """Options of ``pointfail judge`` only this kind reads (none by default)."""

    def model_name(self, settings: Mapping[str, Any]) -> Optional[str]:
        """The judge model's name for the lineage note (``[judge] <name>_model`` by default)."""
        v = settings.get(f"{self.name}_model")
        return str(v) if v else None

    def server_url(self, settings: Mapping[str, Any]) -> Optional[str]:
        """The server the judge talks to, which the command line checks answers before any record is
        read (``None``: no server)."""
        return None

    def make(self, settings: Mapping[str, Any]) -> list[Any]:
        """The judges (:class:`pointfail.judge.miss.Judge`, not yet entered) for ``settings``: one for
        most kinds, one per annotator for human labels.

        Raises:
            JudgeSetupError: the settings do not say enough.
        """
        raise NotImplementedError


_REGISTRY: Registry[JudgeKind] = Registry(__name__, "KIND", JudgeKind, unique=True)


def _load() -> dict[str, JudgeKind]:
    return _REGISTRY.get()


def refresh() -> None:
    """Forget the discovered kinds, so the next lookup scans ``kinds.__path__`` again."""
    _REGISTRY.refresh()


def get_kind(name: str) -> JudgeKind:
    """The judge kind ``name``.

    Raises:
        KeyError: no such kind (the message lists the known ones).
    """
    kind = _REGISTRY.lookup(name)  # enters that kind's module only (the file name is the key)
    if kind is None:
        raise KeyError(f"unknown judge {name!r} (known: {', '.join(sorted(_load()))})")
    return kind


def list_kinds() -> list[JudgeKind]:
    """Every judge kind, sorted by name."""
    return [v for _, v in sorted(_load().items())]


def kind_names() -> tuple[str, ...]:
    """The registry's names, sorted."""
    return tuple(sorted(_load()))


def make_judges(name: str, settings: Mapping[str, Any]) -> list[Any]:
    """The one place a judge name becomes judges: ``get_kind(name).make(settings)``.

    Raises:
        KeyError: unknown kind. JudgeSetupError: see :meth:`JudgeKind.make`.
    """
    return get_kind(name).make(settings)
