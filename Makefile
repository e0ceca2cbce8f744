# pointfail's entry points. Every recipe is one command calling the runner or the CLI: no shell
# pipelines doing work (tests/test_no_shell.py checks the recipes that call the runner).
#
#   make reproduce [STUDY=default]   everything, in order, timed; tables compared with the committed ones
#   make verify [STUDY=...]          offline: regenerate every table from committed records, compare hashes
#   make test                        the test suite (the README's test command)
#   make smoke                       a few samples through the whole container pipeline (minutes)
#   make images / base / wheels      pinned images; the base from Debian packages
#   make data [STUDY=default]        the study's generated suites, rendered in the pinned suites image
#   make report [STUDY=default]      figures (HTML + PNG) from committed records

PYTHON  ?= python3
RUNNER  := $(PYTHON) -m pointfail_runner
# Image variant: empty = cuda when the Docker Engine has a GPU runtime, else cpu (the runner decides);
# VARIANT=cpu or VARIANT=cuda overrides.
VARIANT ?=
BUILD_VARIANT = $(or $(VARIANT),cpu)
IMAGES  ?=
SMOKE   := work/smoke
STUDY   ?= default
CLI     := $(PYTHON) -m pointfail

.PHONY: install install-dev help engine base lock wheels images smoke test test-fast reproduce publish verify data report prereqs

help:
	@$(PYTHON) -c "print('targets: reproduce verify test smoke images base wheels data report (STUDY=default, VARIANT=cpu|cuda)')"

# Python packages: the library and the runner (enough for reproduce/verify), or everything the tests use.
install:
	$(PYTHON) -m pip install -q -e ".[judge,hub]" -e runner

install-dev:
	$(PYTHON) -m pip install -q torch==2.14.1 torchvision==0.29.1
	$(PYTHON) -m pip install -q -r requirements-dev.txt -e . -e runner

prereqs: install
	$(RUNNER) prereqs

# The main job: every stage of records/$(STUDY)/study.toml; exit 0 when the regenerated tables match.
reproduce: install
	$(RUNNER) reproduce --study records/$(STUDY)/study.toml --variant=$(VARIANT)

# How the committed records were made: like reproduce, but writes into records/$(STUDY)/.
publish: install
	$(RUNNER) reproduce --study records/$(STUDY)/study.toml --variant=$(VARIANT) --publish

# Offline, no Docker, no GPU: every study with records (or STUDY=name for one).
verify: install
	$(CLI) verify $(if $(filter command line,$(origin STUDY)),records/$(STUDY),records)

data:
	$(RUNNER) data --study records/$(STUDY)/study.toml

report:
	$(CLI) report records/$(STUDY)

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
	$(RUNNER) wheels $(IMAGES) --variant $(BUILD_VARIANT)

images: base wheels
	$(RUNNER) build $(IMAGES) --variant $(BUILD_VARIANT)

smoke:
	$(PYTHON) -m pointfail generate sheets --n 8 --seed 1 --out $(SMOKE)/data/sheets
	$(RUNNER) run --study runner/smoke/study.toml --data-root $(SMOKE)/data --work $(SMOKE)/jobs --records $(SMOKE)/records --variant cpu --wall-clock 600 --fix-permissions

# The README's test command: installs the test requirements and system packages, starts the engine.
test: install-dev
	$(RUNNER) prereqs
	$(RUNNER) engine
	$(PYTHON) -m pytest -q -p no:cacheprovider

test-fast:
	$(PYTHON) -m pytest -q -m "not docker and not slow"
