# A virtual environment in .venv, created once and reused; every target sets it up,
# with the exact versions of constraints.txt (those CI tested) inside pyproject's ranges,
# then compiles the numba kernels into their cache (launch/kernels.py): a first run, and
# the tests, load them instead of compiling them in each process.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# Where `make lock` finds torch's CPU build (PyPI has only the CUDA one for Linux): a
# page or folder of wheels, such as a local mirror.
TORCH_CPU_WHEELS ?= https://download.pytorch.org/whl/cpu/torch/

.PHONY: setup system-deps lock run test test-quick bench docs docs-serve clean

$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c constraints.txt -e '.[test,bitbully]'
	$(PY) -m launch.kernels
	touch $(STAMP)

setup: $(STAMP)

# constraints.txt again from pyproject.toml: the pinned versions that still fit stay,
# `make lock UPGRADE=--upgrade` takes the newest releases (then run `make test`).
lock: $(STAMP)
	$(PY) -m pip install -q uv
	$(VENV)/bin/uv pip compile pyproject.toml --extra test --extra bitbully --python $(PY) --find-links $(TORCH_CPU_WHEELS) \
		--custom-compile-command "make lock" $(UPGRADE) -o constraints.txt

# The main job: a short, real AVI training run on an embedded Ray (exact values tracked).
run: $(STAMP)
	$(PY) -m launch --algo avi --game tictactoe --minutes 3

# The Debian packages the tests and the local cluster check need (.ci/system-deps lists
# them: Redis, Chromium, GNU Go, gtp-rhino, sshd, ...), installed where missing as root;
# without root it names them and stops.
system-deps:
	bash .ci/system-deps

# The test suite, as CI runs it: the Debian packages first, then .venv; the quick tier on
# two workers (none of its tests starts Ray or a training run), then the slow tier
# in one process around one Ray start (two Ray clusters on two cores would time each other
# out). Both tiers run when the first fails; the suite fails when either does.
test: system-deps $(STAMP)
	$(PY) -m pytest -q -n 2 -m "not slow" --durations=20; quick=$$?; \
	$(PY) -m pytest -q -m slow --durations=20; slow=$$?; \
	test $$quick = 0 && test $$slow = 0

# The inner loop: every test not marked slow (none that starts Ray, the launcher in a
# subprocess or a training run; tests/conftest.py) on two workers, stopping at the first failure.
test-quick: $(STAMP)
	$(PY) -m pytest -q -x -n 2 -m "not slow" --durations=10

# Engine speed, ours beside OpenSpiel's when it is installed (pip install open_spiel).
bench: $(STAMP)
	$(PY) -m benchmarks.games_speed

# The docs site (MkDocs Material, docs/ and mkdocs.yml) into site/, strict: a broken link fails.
# docs/reference/config.md is generated: `$(PY) -m launch.config_doc` rewrites it.
docs: $(STAMP)
	$(PY) -m launch.config_doc
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --site-dir site

docs-serve: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs serve -a 127.0.0.1:8000

clean:
	rm -rf $(VENV) build site *.egg-info
