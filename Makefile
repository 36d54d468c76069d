# The two commands of the README: `make run` and `make test`. Everything else is a helper of those.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 8000
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml requirements.lock | sha1sum | cut -c1-12)

.PHONY: run test lint typecheck pytest acceptance venv bench-domain bench-refresh bench-api bench-dashboard browsers clean

$(STAMP): pyproject.toml requirements.lock
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(PY) -m pip install --quiet --disable-pip-version-check -c requirements.lock -e '.[dev,litellm]'
	@rm -f $(VENV)/.installed-*
	@touch $(STAMP)

venv: $(STAMP)

# The browser tests drive Debian's Chromium through its chromedriver (never a downloaded browser).
browsers:
	@test -x /usr/bin/chromium -a -x /usr/bin/chromedriver || \
	  (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium chromium-driver)

run: $(STAMP)
	$(PY) manage.py ladder_run --port $(PORT)

test: $(STAMP) browsers lint typecheck pytest acceptance

lint: $(STAMP)
	$(VENV)/bin/ruff check .

typecheck: $(STAMP)
	$(VENV)/bin/mypy .

pytest: $(STAMP)
	$(PY) -m pytest $(PYTEST_ARGS)

acceptance: $(STAMP)
	$(PY) ../shared/acceptance/check.py

bench-domain: $(STAMP)
	$(PY) benchmarks/bench_domain.py

clean:
	rm -rf $(VENV) staticfiles .local db.sqlite3*

bench-refresh: $(STAMP)
	$(PY) benchmarks/bench_refresh.py

bench-api: $(STAMP)
	$(PY) benchmarks/bench_api.py

bench-dashboard: $(STAMP)
	$(PY) benchmarks/bench_dashboard.py
