# occustream — two commands: `make demo` and `make test`.
# Every target installs what it needs on first use and is a no-op afterwards.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
SYSSTAMP := $(VENV)/.sysdeps
PYTEST_ARGS ?=
# pytest-xdist workers for `make test`; each worker starts its own broker, Redis and
# browser. The end-to-end tiers mostly wait on services, so 3 workers on a 2-core machine
# finish in about 12 min against about 20 serially. PYTEST_WORKERS=0: one process.
PYTEST_WORKERS ?= 3

.PHONY: demo test bench lint install sysdeps up down clean

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	@touch $(STAMP)

$(SYSSTAMP): scripts/install-sysdeps.sh
	bash scripts/install-sysdeps.sh
	@mkdir -p $(VENV) && touch $(SYSSTAMP)

install: $(STAMP) $(SYSSTAMP)

sysdeps: $(SYSSTAMP)

demo: install
	$(VENV)/bin/occustream demo

test: install
	$(PY) -m pytest -n $(PYTEST_WORKERS) --dist worksteal $(PYTEST_ARGS)

bench: install
	$(PY) -m bench

lint: install
	$(VENV)/bin/ruff check .

up:
	docker compose up -d --build

down:
	docker compose down

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
