VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: test demo lint typecheck docs bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

lint: $(STAMP)
	$(VENV)/bin/ruff check orchestrator providers tests examples bench
	$(VENV)/bin/ruff format --check orchestrator providers tests examples bench
	$(VENV)/bin/lint-imports --no-logo

typecheck: $(STAMP)
	$(VENV)/bin/mypy

test: $(STAMP) lint typecheck
	$(VENV)/bin/pytest -q

demo: $(STAMP)
	$(VENV)/bin/failover demo

# The documentation site into site/ (`.venv/bin/mkdocs serve` to browse it while editing).
docs: $(STAMP)
	$(VENV)/bin/mkdocs build --strict

bench: $(STAMP)
	$(PY) bench/engine_overhead.py
	$(PY) bench/providers_bench.py

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache .import_linter_cache site
