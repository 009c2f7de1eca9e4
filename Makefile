# replay: every target sets up what it needs itself, starting from python3 and make.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PY     := $(BIN)/python
# Re-install whenever pyproject.toml changes.
STAMP_RUNTIME := $(VENV)/.installed-runtime
STAMP_TEST    := $(VENV)/.installed-test

.PHONY: all demo test bench browser clean lint

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

# The HTML report is checked in a real headless Chromium (Debian's package).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing chromium (Debian package) for the browser tests" >&2; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; }

demo: $(STAMP_RUNTIME)
	@PATH="$(CURDIR)/$(BIN):$$PATH" sh examples/demo.sh

test: $(STAMP_TEST) browser
	$(PY) -m pytest

# ruff, and mypy over the package as it is imported (replay.pipeline, replay.stages): the folders are
# linked under build/typecheck/replay/ so the type checker sees the installed names, not the folders.
TYPECHECK := build/typecheck
lint: $(STAMP_TEST)
	$(BIN)/ruff check pipeline stages tests examples
	@rm -rf $(TYPECHECK) && mkdir -p $(TYPECHECK)/replay
	@ln -s ../../../pipeline $(TYPECHECK)/replay/pipeline && ln -s ../../../stages $(TYPECHECK)/replay/stages
	cd $(TYPECHECK) && MYPYPATH=. ../../$(BIN)/mypy --config-file ../../pyproject.toml -p replay.pipeline -p replay.stages

bench: $(STAMP_TEST)
	$(PY) tests/bench/bench_read.py
	$(PY) tests/bench/bench_walk.py

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .hypothesis tests/bench/data
