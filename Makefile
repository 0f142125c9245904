# fabscope: set-up, quick start and tests.  Needs only python3 (>= 3.11) and gcc;
# everything else comes from PyPI into .venv (the mpich wheel brings mpicc/mpiexec).

PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
STAMP   = $(VENV)/.fabscope-installed

.PHONY: setup demo test bench bench-all clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,mpi,map,report,dask,history]'
	@touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(BIN)/fabscope demo

# the whole suite: the testbed's link-bound tests beside the CPU-bound ones (tests/lanes.py says why)
test: $(STAMP)
	$(BIN)/python tests/lanes.py

# the headline table: each quick case beside its peer, the ratio, the command of the full bench
bench: $(STAMP)
	$(BIN)/python bench/run_all.py

# every full bench with its default options (long: hours on 2 cores; some need sudo or SimGrid)
bench-all: $(STAMP)
	for b in bench/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
