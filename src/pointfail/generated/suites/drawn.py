"""A suite drawn with Pillow (``sheets``, ``text``): what varies between them, and the one generation
path they share.

A suite module defines its categories (``{category: (data_type, weight)}``), the fonts it draws with
and ``make_sample(rng, index, painter, category=..., **schedules)``; :class:`DrawnSuite` turns that
into ``generate(out_dir, *, n, seed, absent_share=0.0)`` (the generator contract
:func:`pointfail.generated.suites.manifest.verify_manifest` calls) and the ``pointfail generate <kind>``
command (``add_arguments`` / ``run``).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pointfail.generated.suites.cli import add_suite_arguments, run_suite_command
from pointfail.generated.suites.painter import TextPainter
from pointfail.generated.suites.rows import SampleSpec, category_schedule
from pointfail.generated.suites.writer import generate_suite

__all__ = ["DrawnSuite"]


@dataclass(frozen=True)
class DrawnSuite:
    """One Pillow-drawn suite.

    name: the suite (``sheets``). module: the generator module recorded in the manifest (the module
    :func:`~pointfail.generated.suites.manifest.verify_manifest` regenerates with). id_prefix: sample ids are
    ``<id_prefix>_<NNNN>``. version: ``generator_version`` in the manifest. fonts: the
    :data:`pointfail.generated.suites.fonts.FONTS` names it draws with. categories: ``{category: (data_type,
    weight)}``; every index's category is fixed by :func:`~pointfail.generated.suites.rows.category_schedule`
    over these weights. make_sample: builds one sample (raises
    :class:`~pointfail.generated.suites.errors.SuiteError` to be retried). schedules: further per-index
    keyword arguments of ``make_sample`` fixed the same way, ``{keyword: {value: weight}}``, each
    shuffled with its own stream ``"<name>-<keyword>"`` (the text suite's ``language``).
    """

    name: str
    module: str
    id_prefix: str
    version: int
    fonts: tuple[str, ...]
    categories: Mapping[str, tuple[str, int]]
    make_sample: Callable[..., SampleSpec]
    schedules: Mapping[str, Mapping[str, int]] = field(default_factory=dict)

    def generate(self, out_dir: str | Path, *, n: int, seed: int, absent_share: float = 0.0) -> dict[str, Any]:
        """Write an ``n``-sample suite with ``seed`` into ``out_dir``; returns the manifest. Categories
        (and every schedule) follow their weights exactly (largest remainders); see
        :func:`pointfail.generated.suites.writer.generate_suite` for the layout, retries, absent referents
        (``absent_share``) and errors."""
        painter = TextPainter()
        per_index = {"category": category_schedule({c: w for c, (_, w) in self.categories.items()}, n, self.name, seed)}
        for key, weights in self.schedules.items():
            per_index[key] = category_schedule(dict(weights), n, f"{self.name}-{key}", seed)

        def make(rng: Any, i: int) -> SampleSpec:
            return self.make_sample(rng, i, painter, **{k: v[i] for k, v in per_index.items()})

        return generate_suite(
            suite=self.name, generator=self.module, id_prefix=self.id_prefix, out_dir=out_dir, n=n, seed=seed,
            make_sample=make, font_names=self.fonts, generator_version=self.version, absent_share=absent_share,
        )

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """``pointfail generate <name>`` options: ``--n``, ``--seed``, ``--out``, ``--absent-share``
        (:func:`pointfail.generated.suites.cli.add_suite_arguments`)."""
        add_suite_arguments(parser)

    def run(self, args: argparse.Namespace) -> int:
        """Generate the suite; prints a one-line summary. Returns 0, or 1 with a message on a
        :class:`~pointfail.generated.suites.errors.SuiteError` (e.g. a missing font)."""
        return run_suite_command(self.name, self.generate, args)
