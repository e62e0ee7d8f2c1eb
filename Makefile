# kubeplane — every command a developer or CI needs. `make test` works from a fresh clone.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: venv test lint typecheck unit soak bench run clean

# The example scheduler plugins (examples/scheduler-plugins) are installed too: their tests and docs use them.
$(STAMP): pyproject.toml constraints.txt examples/scheduler-plugins/pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "error: $(PYTHON) not found; set PYTHON=/path/to/python3.11" >&2; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[test]' -e examples/scheduler-plugins
	touch $(STAMP)

venv: $(STAMP)

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests bench tools examples
	$(VENV)/bin/ruff format --check src tests bench tools examples

typecheck: $(STAMP)
	$(VENV)/bin/mypy

# pytest exits 5 when it collected nothing: that is a failure here, never a pass.
unit: $(STAMP)
	$(PY) -m pytest -m "not soak" -q

test: lint typecheck unit

soak: $(STAMP)
	$(PY) -m pytest -m soak -q

bench: $(STAMP)
	@for b in bench/*.py; do echo "# $$b" >&2; $(PY) $$b $(BENCH_ARGS) || exit 1; done

# A whole cluster in the foreground (docs/up.md): state in .kubeplane/, kubectl via .kubeplane/kubeconfig.
# Ctrl-C stops it; flags of `kubeplane up` go in UP_ARGS, e.g. make run UP_ARGS="--nodes 100 --store memory".
run: $(STAMP)
	$(VENV)/bin/kubeplane up $(UP_ARGS)

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis
