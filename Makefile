# Two commands on a fresh machine: `make run` and `make test`. Both set everything up.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed

.PHONY: install run test bench bench-readme lint format demo clean citus

$(INSTALLED): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

install: $(INSTALLED)

## run: migrate, queue seeds.txt and crawl on the embedded database (Ctrl-C stops it);
## the panel listens on BIND (make run BIND=127.0.0.1:8080); CRAWL_WORKERS crawler
## processes (make run CRAWL_WORKERS=4; auto, the default: about one per core)
BIND ?= 127.0.0.1:8000
run: install
	$(BIN)/python -m crawler.runner.run --seeds seeds.txt --bind $(BIND)

## test: the whole suite on a throwaway embedded Postgres (or TEST_DATABASE_URL) and a
## one-machine Citus cluster, in TEST_WORKERS processes (pytest-xdist; each its own
## databases): most tests wait on crawls and servers, so on two cores two workers left
## them about 40% idle, and three ran tests/e2e in about two thirds of the time
## (make test TEST_WORKERS=0: one process)
TEST_WORKERS ?= 3
test: install
	$(BIN)/python -m pytest -q -p no:cacheprovider -n $(TEST_WORKERS) --dist worksteal

## citus: build the Citus extension (vendor/citus, AGPL-3.0) into the embedded Postgres
## server, for the tests that start a one-machine Citus cluster (they skip without it)
citus: install
	bash vendor/citus/build.sh

# Every benchmark, in this order (a new one: add its file name here).
BENCHES := denylist.py linkfilter.py yield.py claims.py audit.py selfcheck.py crawl.py slowweb.py panel.py \
	roots.py growth.py churn.py bulk.py cores.py citus.py roundtrips.py hostile.py hostile_crawl.py export.py \
	storage.py knownnames.py
BENCH_RESULTS := $(CURDIR)/var/bench-results.jsonl
# The commit the run measures, read once as make starts ("+dirty": tracked files changed)
BENCH_COMMIT := $(shell git rev-parse --short HEAD 2>/dev/null)$(if $(shell git status \
	--porcelain --untracked-files=no 2>/dev/null),+dirty)

## bench: every benchmark (or those named: make bench BENCHES="crawl.py churn.py"), each
## printing its figure and its ratio to a baseline, then one table of every figure, its
## target, PASS/FAIL, the date and the commit (bench/summary.py)
bench: install
	mkdir -p $(CURDIR)/var && rm -f $(BENCH_RESULTS)
	for script in $(BENCHES); do \
		BENCH_RESULTS=$(BENCH_RESULTS) BENCH_COMMIT=$(BENCH_COMMIT) $(BIN)/python bench/$$script \
			|| echo "bench/$$script exited with status $$?"; \
	done
	$(BIN)/python bench/summary.py $(BENCH_RESULTS) $(BENCHES)

## bench-readme: the last `make bench`'s figures into bench/README.md's current table (its
## rows replace theirs, the others stay) and its table at the top of bench/HISTORY.md
bench-readme: install
	$(BIN)/python bench/summary.py --update-readme $(BENCH_RESULTS)

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
