# The two commands of the quick start. Both create .venv (once) and install infill into it.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: demo test setup setup-test vsix clean

# What running infill needs (the demo); the test extra (playwright, transformers, triton,
# bitsandbytes, Neovim: gigabytes) is added only by `make test`.
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -e .
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed pyproject.toml
	$(PY) -m pip install -q -e '.[test]'
	touch $@

setup: $(VENV)/.installed
setup-test: $(VENV)/.installed-test

# Fill the hole in examples/sample.py (the argument of `read_lines()` on line 23) with the
# embedded model, printing the completion and its figures.
demo: setup
	$(VENV)/bin/infill complete examples/sample.py --line 23 --column 37
	$(VENV)/bin/infill complete examples/sample.py --line 23 --column 37 --json

# Everything CI runs: unit and end-to-end tests (LSP + real Neovim, WebSocket + browser),
# then the VS Code end-to-end test in code-server.
test: setup-test
	bash scripts/setup_browser_tests.sh $(PY)
	OMP_NUM_THREADS=1 $(PY) -m pytest -q
	PYTHON=$(abspath $(PY)) bash scripts/vscode_e2e.sh

vsix:
	cd editors/vscode && npm ci && npm run package

clean:
	rm -rf $(VENV) build *.egg-info
