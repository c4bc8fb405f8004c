# Entry points for newcomers and CI. Each sets up .venv on first use; nothing
# needs to be installed beforehand except Python 3.10+.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test test-oldest-mypy test-compiled docs generated-docs

setup: $(STAMP)

# Libraries whose communication functions the checker types (spmd_types.typesystem.ecosystem),
# installed without their dependencies so that the tests run them against the real code
# (deepspeed as a source tree: importing it needs dependencies it does not get, so the tests
# load the one module they run, deepspeed/sequence/layer.py; see tests/runtime/deepspeed_layer.py).
ECOSYSTEM := megatron-core==0.16.1 deepspeed==0.19.8

# torch is pinned for development: 2.13.0 installs from local disk, a newer
# release would download a multi-GB CUDA build. The package accepts torch>=2.6.
# The editable install uses compat mode: mypy cannot see PEP 660 import hooks.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -e ".[dev]" --config-settings editable_mode=compat
	$(BIN)/python -m pip install --quiet --no-deps $(ECOSYSTEM)
	touch $@

# The main job: type-check the bundled examples and report, file by file, which
# are clean and which bugs the plugin caught. The buggy twins are there on
# purpose, so the demo does not fail on them.
demo: $(STAMP)
	$(BIN)/python -m spmd_mypy.cli --exit-zero examples/

# The documentation site, built strictly (a broken link fails), into site/.
docs: $(STAMP)
	$(BIN)/python -m mkdocs build --strict

# Rewrite every generated part of the docs: the rule tables in docs/type-system.md, the typed signatures
# and tables of accepted types in the collectives' docstrings, the API reference in docs/reference/, and
# mypy's output under the docs' checked samples (tools/docs/__init__.py lists them). A test fails while
# any is out of date; `$(BIN)/python -m tools.docs --check` names them without writing.
generated-docs: $(STAMP)
	$(BIN)/python -m tools.docs

# The whole suite, then the plugin's tests again under the oldest supported mypy and compiled with mypyc.
test: $(STAMP)
	$(BIN)/python -m pytest
	$(MAKE) test-oldest-mypy
	$(MAKE) test-compiled

OLDEST_MYPY := 2.0.0
OLD_VENV := .venv-mypy-$(OLDEST_MYPY)
$(OLD_VENV)/.installed:
	$(PYTHON) -m venv $(OLD_VENV)
	$(OLD_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(OLD_VENV)/bin/python -m pip install --quiet torch==2.13.0 mypy==$(OLDEST_MYPY) "pytest>=8"
	touch $@

test-oldest-mypy: $(OLD_VENV)/.installed
	PYTHONPATH=$(CURDIR) $(OLD_VENV)/bin/python -m pytest -p no:cacheprovider tests/plugin/test_cases.py tests/plugin/test_mypy_messages.py tests/stubs

# The compiled build (tools/compiled.py): the plugin and the rule core compiled with mypyc in a fresh copy of
# the checkout, never in the checkout itself (the extensions would shadow the sources being edited), and the
# plugin's case suites and fix tests run against that copy: both builds must report the same diagnostics.
# `make test-compiled COMPILED_TESTS=tests/plugin/test_cases.py` runs only the case suites.
COMPILED := build/compiled
COMPILED_TESTS ?= tests/plugin tests/fixes
test-compiled: $(STAMP)
	$(BIN)/python -m tools.compiled build $(COMPILED)
	cd $(COMPILED) && $(CURDIR)/$(BIN)/python -m tools.compiled check
	cd $(COMPILED) && $(CURDIR)/$(BIN)/python -m pytest -p no:cacheprovider $(COMPILED_TESTS)
