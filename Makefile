# The two commands of the README: `make run` and `make test`. Everything else is a helper of those.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 8000
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml requirements.lock | sha1sum | cut -c1-12)
# The LiteLLM proxy runs apart from the ladder, in a virtualenv of its own (docs/LITELLM.md):
# litellm[proxy] 1.108.7 (1.108.8+ need litellm-enterprise / litellm-proxy-extras releases the registry
# lacks), gunicorn<24, and ladder_client from this repo (--no-deps, editable: the ladder's own pins
# stay in .venv). The stamp follows the lock only: an editable install reads the source in place.
PROXY_VENV := .venv-litellm-proxy
PROXY_LOCK := requirements-litellm-proxy.lock
PROXY_STAMP := $(PROXY_VENV)/.installed-$(shell cat $(PROXY_LOCK) | sha1sum | cut -c1-12)

.PHONY: run test lint lint-imports typecheck pytest acceptance check-deploy soak credentials-soak venv venv-litellm-proxy bench-domain bench-gateway bench-refresh bench-api bench-dashboard bench-body browsers clean

$(STAMP): pyproject.toml requirements.lock
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(PY) -m pip install --quiet --disable-pip-version-check -c requirements.lock -e '.[dev,litellm]'
	@rm -f $(VENV)/.installed-*
	@touch $(STAMP)

venv: $(STAMP)

$(PROXY_STAMP): $(PROXY_LOCK)
	@test -x $(PROXY_VENV)/bin/python || $(PYTHON) -m venv $(PROXY_VENV)
	$(PROXY_VENV)/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(PROXY_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -c $(PROXY_LOCK) \
	  'litellm[proxy]' msgspec httpx httpx-aiohttp stamina
	$(PROXY_VENV)/bin/python -m pip install --quiet --disable-pip-version-check --no-deps -e .
	@rm -f $(PROXY_VENV)/.installed-*
	@touch $(PROXY_STAMP)

# The proxy's virtualenv alone (make test builds it too: the proxy's integration test runs in it).
venv-litellm-proxy: $(PROXY_STAMP)

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

pytest: $(STAMP) $(PROXY_STAMP)
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
	rm -rf $(VENV) $(PROXY_VENV) staticfiles .local db.sqlite3*

bench-refresh: $(STAMP)
	$(PY) benchmarks/bench_refresh.py

bench-api: $(STAMP)
	$(PY) benchmarks/bench_api.py

bench-dashboard: $(STAMP)
	$(PY) benchmarks/bench_dashboard.py

bench-body: $(STAMP)
	$(PY) benchmarks/bench_body.py

# The LiteLLM proxy (.venv-litellm-proxy, --num_workers 1) with and without the ladder's hook against
# an upstream that answers at once, the ladder under gunicorn gthread; the Router's figure too.
# Last line: ratio=<with hook / without rps>, resolution cache off (docs/LITELLM.md).
bench-gateway: $(STAMP) $(PROXY_STAMP)
	$(PY) benchmarks/bench_gateway.py
