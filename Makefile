# A virtual environment in .venv, created once and reused; every target sets it up.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup run test bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

setup: $(STAMP)

# The main job: a short, real AVI training run on an embedded Ray (exact values tracked).
run: $(STAMP)
	$(PY) -m launch --algo avi --game tictactoe --minutes 3

# The test suite, as CI runs it.
test: $(STAMP)
	$(PY) -m pytest -q

# Engine speed, ours beside OpenSpiel's when it is installed (pip install open_spiel).
bench: $(STAMP)
	$(PY) -m benchmarks.games_speed

clean:
	rm -rf $(VENV) build *.egg-info
