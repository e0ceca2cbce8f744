# pointfail's entry points. Every recipe is one command calling the runner or the CLI: no shell
# pipelines doing work (tests/test_no_shell.py checks the recipes that call the runner).
# The lead adds reproduce / verify / data / report.

PYTHON  ?= python3
RUNNER  := $(PYTHON) -m pointfail_runner
VARIANT ?= cpu
IMAGES  ?=
SMOKE   := work/smoke

.PHONY: help engine base lock wheels images smoke test test-fast

help:
	@$(PYTHON) -c "print('targets: base wheels images smoke test test-fast (VARIANT=cpu|cuda, IMAGES=\"scorer ocr ...\")')"

engine:
	$(RUNNER) engine

# The base image from Debian packages (debootstrap + docker import; mirror from the apt configuration).
base:
	$(RUNNER) base

# Regenerate lock files from requirements*.in (needs the package index; not part of a normal build).
lock:
	$(RUNNER) lock $(IMAGES) --variant all

# The host wheelhouse (wheelhouse/<image>/<variant>/) from the committed lock files.
wheels:
	$(RUNNER) wheels $(IMAGES) --variant $(VARIANT)

images: base wheels
	$(RUNNER) build $(IMAGES) --variant $(VARIANT)

smoke:
	$(PYTHON) -m pointfail generate sheets --n 8 --seed 1 --out $(SMOKE)/data/sheets
	$(RUNNER) run --study runner/smoke/study.toml --data-root $(SMOKE)/data --work $(SMOKE)/jobs --records $(SMOKE)/records --variant cpu --wall-clock 600 --fix-permissions

test:
	$(PYTHON) -m pytest -q

test-fast:
	$(PYTHON) -m pytest -q -m "not docker and not slow"
