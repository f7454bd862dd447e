PYTHON ?= python3
VENV   ?= .venv
HOST   ?= 127.0.0.1
PORT   ?= 8080
BIN    := $(VENV)/bin

.PHONY: run test crd bench clean

$(BIN)/llmdeploy: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

run: $(BIN)/llmdeploy
	$(BIN)/llmdeploy serve --host $(HOST) --port $(PORT)

test: $(BIN)/llmdeploy
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
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis .import_linter_cache
