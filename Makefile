# Two commands set up everything on a fresh machine with Python 3.11:
#   make sim    the simulated Gen3 under a controller (CONTROLLER=... instead of the parameter
#               files' one, DURATION=... simulated seconds, MODE=lockstep instead of realtime,
#               PIN=auto to pin the two nodes to one CPU each, RT=20 for SCHED_FIFO 20,
#               CPU_LATENCY=0 to keep the CPUs polling instead of halting while the nodes run,
#               PARAMS=file.yaml layered over the shipped parameter file)
#   make test   the whole test suite
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat requirements.txt setup.py | md5sum | cut -c1-12)
CONTROLLER ?=
MODE ?= realtime
DURATION ?= 10
PIN ?= none
RT ?= 0
CPU_LATENCY ?= none
PYTEST_ARGS ?=
PARAMS ?=
# 7x7 matrices never gain from BLAS threads; idle BLAS threads spinning next to a 1 kHz loop
# on 2 cores cost far more than they give.
export OPENBLAS_NUM_THREADS := 1
export OMP_NUM_THREADS := 1

.PHONY: venv test sim bench lint clean

venv: $(STAMP)

$(STAMP): requirements.txt setup.py
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	rm -f $(VENV)/.installed-* && touch $@

test: $(STAMP)
	$(PY) -m pytest $(PYTEST_ARGS)

sim: $(STAMP)
	$(PY) -m torque_ctrl_ros.run_sim $(if $(CONTROLLER),--controller $(CONTROLLER)) --mode $(MODE) --duration $(DURATION) --cpus $(PIN) --rt-priority $(RT) --cpu-latency-us $(CPU_LATENCY) $(if $(PARAMS),--params-file $(PARAMS))

bench: $(STAMP)
	$(PY) -m torque_ctrl_ros.bench

lint: $(STAMP)
	$(VENV)/bin/ruff check torque_ctrl_ros test tools launch setup.py
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) build install log *.egg-info .pytest_cache .mypy_cache .ruff_cache
