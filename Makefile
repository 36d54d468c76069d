# The two commands of the README: `make run` and `make test`. Everything else is a helper of those.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 8000
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml requirements.lock | sha1sum | cut -c1-12)

.PHONY: run test lint lint-imports typecheck pytest acceptance check-deploy soak credentials-soak venv bench-domain bench-refresh bench-api bench-dashboard bench-body browsers clean

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

test: $(STAMP) browsers lint lint-imports typecheck check-deploy pytest acceptance

lint: $(STAMP)
	$(VENV)/bin/ruff check .

# Who may import whom (STYLE.md's import table), as import-linter contracts in pyproject.toml.
lint-imports: $(STAMP)
	$(VENV)/bin/lint-imports

typecheck: $(STAMP)
	$(VENV)/bin/mypy .

# Django's deployment checklist (and ladder's own deploy checks) under the production profile: a
# public host name, a fresh strong SECRET_KEY and credential key (docs/DEPLOY.md). Warnings fail.
check-deploy: $(STAMP)
	ALLOWED_HOSTS=ladder.example.com CSRF_TRUSTED_ORIGINS=https://ladder.example.com DEBUG=false \
	SECRET_KEY="$$($(PY) -c 'import secrets; print(secrets.token_urlsafe(50))')" \
	LADDER_CREDENTIAL_KEY="$$($(PY) -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())')" \
	$(PY) manage.py check --deploy --fail-level WARNING

pytest: $(STAMP)
	$(PY) -m pytest $(PYTEST_ARGS)

# The long profiles of the reliability suite (docs/RELIABILITY.md), never part of `make test`: every
# property at 10,000+ examples (HYPOTHESIS_PROFILE=nightly), schemathesis at 1,000 per operation, a
# 10-minute load run. On PostgreSQL: DATABASE_URL=postgres://postgres@127.0.0.1:5432/test make soak
soak: $(STAMP)
	HYPOTHESIS_PROFILE=nightly LADDER_LOAD_S=$${LADDER_LOAD_S:-600} $(PY) -m pytest \
	  tests/domain/test_properties.py tests/reliability/test_invariants.py \
	  tests/reliability/test_api_fuzz.py tests/reliability/test_load.py $(PYTEST_ARGS)

# A week of credential refreshes in about two minutes (docs/CREDENTIALS.md): 3-second tokens, two
# worker processes and a gateway fetching in parallel; never part of `make test`. Last line:
# refreshes=<n> reused=0 disabled=0 needs_reauth=0. PostgreSQL: DATABASE_URL=postgres://… make credentials-soak
credentials-soak: $(STAMP)
	$(PY) benchmarks/credentials_soak.py $(SOAK_ARGS)

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

bench-body: $(STAMP)
	$(PY) benchmarks/bench_body.py
