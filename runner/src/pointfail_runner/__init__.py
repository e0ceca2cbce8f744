"""pointfail's parent runner (issue 4; ``shared/DESIGN.md``, "Containers").

A torch-free package over the Docker Engine API (the docker SDK for Python). It starts an engine when
none answers (:func:`pointfail_runner.engine.ensure_engine`), builds the base image from Debian
packages (:mod:`pointfail_runner.base`), builds the per-family images from ``images/`` with a
host-prepared wheelhouse (:mod:`pointfail_runner.images`), runs one model container at a time with
no network and a wall-clock limit it enforces itself (:mod:`pointfail_runner.container`), and turns
responses into records with the core library (:mod:`pointfail_runner.study`).

No shell anywhere: every process is started with an argument list, never through a shell
(``tests/test_no_shell.py`` scans the runner, the images and the Makefile for it).
"""

__version__ = "0.1.0"
