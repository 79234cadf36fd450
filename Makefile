# Two commands on a fresh machine: `make run` and `make test`. Both set everything up.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed

.PHONY: install run test bench lint format demo clean

$(INSTALLED): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

install: $(INSTALLED)

## run: migrate, queue seeds.txt and crawl on the embedded database (Ctrl-C stops it)
run: install
	$(BIN)/python -m crawler.run --seeds seeds.txt

## test: the whole suite on a throwaway embedded Postgres (or TEST_DATABASE_URL)
test: install
	$(BIN)/python -m pytest -q -p no:cacheprovider

## bench: every benchmark, each printing its figure and its ratio to a baseline
bench: install
	$(BIN)/python bench/denylist.py
	$(BIN)/python bench/linkfilter.py
	$(BIN)/python bench/yield.py
	$(BIN)/python bench/claims.py
	$(BIN)/python bench/audit.py
	$(BIN)/python bench/selfcheck.py
	$(BIN)/python bench/crawl.py
	$(BIN)/python bench/panel.py
	$(BIN)/python bench/roots.py
	$(BIN)/python bench/growth.py
	$(BIN)/python bench/churn.py
	$(BIN)/python bench/bulk.py

## demo: crawl a small fake internet (fakeweb), print what to look at, then serve the panel
demo: install
	$(BIN)/python -m tests.fakeweb.demo

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: install
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache
