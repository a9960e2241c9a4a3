# Two entry points for a fresh machine: `make bench` (the offline benchmark) and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install bench test lint

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

bench: $(STAMP)
	$(BIN)/guardrail bench --out reports/latest

test: $(STAMP)
	$(BIN)/ruff check guardrail proxy eval tests
	$(BIN)/mypy
	$(BIN)/guardrail policies check policies
	$(BIN)/pytest
