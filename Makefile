# pointfail's entry points. Every recipe is one command calling the runner or the CLI: no shell
# pipelines doing work (tests/test_no_shell.py checks the recipes that call the runner).
#
#   make reproduce [STUDY=default] [BUNDLE=path] [SNAPSHOT=ts]   everything, in order, timed; tables compared
#   make verify [STUDY=...]          offline: regenerate every table from committed records, compare hashes
#   make test                        the test suite (the README's test command)
#   make smoke                       a few samples through the whole container pipeline (minutes)
#   make images / base / wheels      pinned images; the base from Debian packages
#   make check-pins                  recorded Debian versions the configured archive no longer has
#   make bundle [STUDY=default]      one archive with the study's images, data, records, locks (no network to use)
#   make data [STUDY=default]        the study's generated suites, rendered in the pinned suites image
#   make report [STUDY=default]      figures (HTML + PNG) from committed records
#   make ci-pristine                 `make reproduce` in a fresh clone inside a pristine Debian 12 container
#   make test-pristine [PRISTINE=…]  `make test` the same way (PRISTINE: extra `pointfail-runner pristine`
#                                    options, e.g. --mount/--env for a local wheel folder)
#
# Everything runs in the project venv $(VENV), made from $(PYTHON) on first use: Debian's python3
# refuses system-wide pip installs (PEP 668), and the machine's own Python is never changed. A target
# installs only what is missing (stamp files in the venv, keyed on the lock and requirement files).

PYTHON   ?= python3
VENV     ?= .venv
PY       := $(VENV)/bin/python
BOOTSTRAP = $(PYTHON) runner/src/pointfail_runner/bootstrap.py --venv $(VENV)
RUNNER   := $(PY) -m pointfail_runner
CLI      := $(PY) -m pointfail
# Image variant: empty = cuda when the Docker Engine has a GPU runtime, else cpu (the runner decides);
# VARIANT=cpu or VARIANT=cuda overrides.
VARIANT  ?=
BUILD_VARIANT = $(or $(VARIANT),cpu)
IMAGES   ?=
SMOKE    := work/smoke
PRISTINE ?=
STUDY    ?= default
BUNDLE   ?=
SNAPSHOT ?=
RECORD   ?=
# SNAPSHOT=20250520T000000Z takes Debian packages at their recorded versions from a snapshot archive,
# whose URL SNAPSHOT_MIRROR gives (Debian's snapshot service or a local mirror with its layout).
export SNAPSHOT_MIRROR

.PHONY: install install-dev help engine base lock wheels images smoke test test-fast reproduce publish verify \
        data report prereqs check-pins bundle ci-pristine test-pristine

help:
	@$(PYTHON) -c "print('targets: reproduce verify test smoke images base wheels check-pins bundle data report (STUDY=default, VARIANT=cpu|cuda, BUNDLE=path, SNAPSHOT=ts)')"

# The project venv: the library, the runner and their hashed dependencies (enough for reproduce/verify),
# or everything the tests use. With BUNDLE=path the wheels come from the bundle (no package index).
install:
	$(BOOTSTRAP) runtime --bundle=$(BUNDLE)

install-dev:
	$(BOOTSTRAP) dev

prereqs: install
	$(RUNNER) prereqs

# The main job: every stage of records/$(STUDY)/study.toml; exit 0 when the regenerated tables match
# (runner exit 3: a suite's content drifted but every table matched; 4: a table differs; make itself
# then exits 2 and prints `Error 3`/`Error 4`). BUNDLE=path: from the
# archival bundle, with no network at all.
reproduce: install
	$(RUNNER) reproduce --study records/$(STUDY)/study.toml --variant=$(VARIANT) --snapshot=$(SNAPSHOT) --bundle=$(BUNDLE)

# How the committed records were made: like reproduce, but writes into records/$(STUDY)/ and records
# the Debian versions the images were built with (images/*/debian.lock, images/base/base.lock.json).
publish: install
	$(RUNNER) reproduce --study records/$(STUDY)/study.toml --variant=$(VARIANT) --snapshot=$(SNAPSHOT) --publish

# Offline, no Docker, no GPU: every study with records (or STUDY=name for one).
verify: install
	$(CLI) verify $(if $(filter command line,$(origin STUDY)),records/$(STUDY),records)

data: install
	$(RUNNER) data --study records/$(STUDY)/study.toml --snapshot=$(SNAPSHOT)

report: install
	$(CLI) report records/$(STUDY)

engine: install
	$(RUNNER) engine

# The base image from Debian packages (debootstrap + docker import; mirror from the apt configuration).
# RECORD=1 writes this build's package versions into images/base/base.lock.json.
base: install
	$(RUNNER) base --snapshot=$(SNAPSHOT) --record=$(RECORD)

# Regenerate the Python lock files from requirements*.in (needs the package index; not part of a build).
lock: install
	$(RUNNER) lock $(IMAGES) --variant all
	$(RUNNER) lock-host

# The host wheelhouse (wheelhouse/<image>/<variant>/) from the committed lock files.
wheels: install
	$(RUNNER) wheels $(IMAGES) --variant $(BUILD_VARIANT)

images: base wheels
	$(RUNNER) build $(IMAGES) --variant $(BUILD_VARIANT) --snapshot=$(SNAPSHOT) --record=$(RECORD)

check-pins: install
	$(RUNNER) check-pins $(IMAGES) --snapshot=$(SNAPSHOT)

bundle: install
	$(RUNNER) bundle --study records/$(STUDY)/study.toml --variant $(BUILD_VARIANT)

smoke: install
	$(CLI) generate sheets --n 8 --seed 1 --out $(SMOKE)/data/sheets
	$(RUNNER) run --study runner/smoke/study.toml --data-root $(SMOKE)/data --work $(SMOKE)/jobs --records $(SMOKE)/records --variant cpu --wall-clock 600 --fix-permissions

# The README's test command: installs the test requirements and system packages, starts the engine.
test: install-dev
	$(RUNNER) prereqs
	$(RUNNER) engine
	$(PY) -m pytest -q -p no:cacheprovider --tb=short

# The README's main command as a newcomer's machine runs it: a fresh clone of this checkout's HEAD inside
# a container made from the project's Debian base with only python3, pip, venv, make and git (Debian's
# python3: PEP 668 in force), the clone at the same path as here and this machine's engine reachable;
# exit 0 when it ends with `[reproduce] OK`. Separate from .ci/run (adds a whole reproduce; artifact.md).
ci-pristine: install
	$(RUNNER) pristine -- make reproduce

# The README's test command the same way. PRISTINE passes options to `pointfail-runner pristine`, e.g. a
# machine whose torch wheels lie in a local folder: PRISTINE="--mount /opt/wheels --env PIP_FIND_LINKS=/opt/wheels".
test-pristine: install
	$(RUNNER) pristine --timeout 5400 $(PRISTINE) -- make test

test-fast: install-dev
	$(PY) -m pytest -q -m "not docker and not slow"
