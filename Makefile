PYTHON ?= python3
VENV   ?= .venv
HOST   ?= 127.0.0.1
PORT   ?= 8080
BIN    := $(VENV)/bin
MLFLOW_VENV := .venv-mlflow
CHECKOV_VENV := .venv-checkov

.PHONY: run test test-tools crd bench clean

$(BIN)/llmdeploy: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

run: $(BIN)/llmdeploy
	$(BIN)/llmdeploy serve --host $(HOST) --port $(PORT)

# prometheus and promtool for tests/promserver.py: installed when missing, if run as root where apt-get is.
# mlflow for tests/mlflowserver.py and checkov for tests/scanner.py: installed when missing, each
# into a venv of its own (each is large and pins many packages, so they stay out of $(VENV)).
# Never fails by itself: without them those tests skip (or fail, under CI=true).
test-tools:
	@command -v prometheus >/dev/null && command -v promtool >/dev/null || \
	  { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus; } || \
	  echo "test-tools: prometheus/promtool are not installed; the tests that need them skip (fail under CI=true)"
	@[ -x $(MLFLOW_VENV)/bin/mlflow ] || \
	  { $(PYTHON) -m venv $(MLFLOW_VENV) && $(MLFLOW_VENV)/bin/pip install --quiet mlflow==3.17.2; } || \
	  echo "test-tools: mlflow is not installed in $(MLFLOW_VENV); the tests that need it skip (fail under CI=true)"
	@[ -x $(CHECKOV_VENV)/bin/checkov ] || \
	  { $(PYTHON) -m venv $(CHECKOV_VENV) && $(CHECKOV_VENV)/bin/pip install --quiet checkov==3.3.30; } || \
	  echo "test-tools: checkov is not installed in $(CHECKOV_VENV); the tests that need it skip (fail under CI=true)"

test: $(BIN)/llmdeploy test-tools
	$(BIN)/ruff check hooks tests bench
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/pytest
	$(BIN)/python -m bench --short

bench: $(BIN)/llmdeploy
	$(BIN)/python -m bench

crd: $(BIN)/llmdeploy
	$(BIN)/llmdeploy crd > crds/llmdeployments.serving.llmdeploy.io.yaml

clean:
	rm -rf $(VENV) $(MLFLOW_VENV) $(CHECKOV_VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis .import_linter_cache
