# Two commands do all the set-up: `make run` and `make test` (see README.md).
SHELL := /bin/bash
PY := .venv/bin/python
PORT ?= 8000
# requirements.txt (runtime) and requirements-dev.txt (tests, tooling) are locks with hashes,
# generated from requirements*.in by `make lock`. `make run` installs the runtime set only.
RUNTIME_STAMP := .venv/.installed-runtime
VENV_STAMP := .venv/.installed-dev
PIP_INSTALL := $(PY) -m pip install --quiet --require-hashes

TEST_ENV := DJANGO_SECRET_KEY=test-only-secret DJANGO_DEBUG=0 AUDIT_SIGNING_KEY=dGVzdC1vbmx5LWF1ZGl0LXNpZ25pbmcta2V5LTAwMDA= \
	DATABASE_URL=$${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/suspensions} \
	CELERY_BROKER_URL=$${TEST_BROKER_URL:-redis://127.0.0.1:6379/15} \
	DJANGO_ALLOW_ASYNC_UNSAFE=true WEBHOOK_ALLOW_PRIVATE=1
# Web and worker write their metrics to one directory so /metrics sums both (docs/api.md, "7.11 Metrics");
# `make run` empties it before either starts: the previous run's processes are gone.
# WEBHOOK_ALLOW_PRIVATE: the demo's and the tests' webhook receivers listen on 127.0.0.1
# (docs/api.md, "Retries and guarantees").
RUN_ENV := DJANGO_DEBUG=$${DJANGO_DEBUG:-1} PROMETHEUS_MULTIPROC_DIR=$(CURDIR)/var/prometheus WEBHOOK_ALLOW_PRIVATE=1 \
	CELERY_LOG_LEVEL=$${CELERY_LOG_LEVEL:-WARNING} \
	EMAIL_BACKEND=$${EMAIL_BACKEND:-django.core.mail.backends.filebased.EmailBackend} \
	EMAIL_FILE_PATH=$${EMAIL_FILE_PATH:-$(CURDIR)/var/mail} CONSOLE_BASE_URL=$${CONSOLE_BASE_URL:-http://127.0.0.1:$(PORT)}

# make run's database: the embedded PostgreSQL (bin/localdb.py), its data and socket under var/postgres,
# started first and stopped last by bin/supervise.py. DATABASE_URL set in the environment or on make's
# command line (make run DATABASE_URL=postgres://...) is used instead, and nothing is started for it.
RUN_DB := $(if $(DATABASE_URL),,--postgres var/postgres)

# mypy's Django plugin imports the settings, which need a secret, an audit key and a DATABASE_URL with DEBUG off;
# nothing connects to it.
LINT_ENV := DJANGO_SECRET_KEY=lint AUDIT_SIGNING_KEY=dGVzdC1vbmx5LWF1ZGl0LXNpZ25pbmcta2V5LTAwMDA= DATABASE_URL=postgres://lint@127.0.0.1:5432/lint

# `make test` runs the whole suite, slow and browser tests included, in this many pytest-xdist
# workers (TEST_WORKERS=0: one process). Sized for the 2-core machine CI runs on; each worker has
# its own test database (test_<name>_gwN) and Redis database (the broker's number minus N,
# tests/conftest.py), and starts its own servers, Celery workers and Chromium on free ports.
TEST_WORKERS ?= 2

.PHONY: install install-runtime lock run creds db check test lint services browser proxy pgbouncer bench clean

# Everything: the runtime set and the development/test set (test, lint, bench).
install: $(VENV_STAMP)

install-runtime: $(RUNTIME_STAMP)

$(RUNTIME_STAMP): requirements.txt
	@echo "Installing the runtime set into .venv (requirements.txt)..."
	@test -x $(PY) || python3 -m venv .venv
	@$(PY) -m pip install --quiet --upgrade pip
	@$(PIP_INSTALL) -r requirements.txt
	@touch $(RUNTIME_STAMP)

# The Python client (clients/python) is installed editable for its tests and examples, built offline
# with the pinned setuptools of the dev set (no build isolation, no download).
$(VENV_STAMP): requirements.txt requirements-dev.txt clients/python/pyproject.toml
	test -x $(PY) || python3 -m venv .venv
	$(PY) -m pip install --quiet --upgrade pip
	$(PIP_INSTALL) -r requirements.txt -r requirements-dev.txt
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e ./clients/python
	touch $(VENV_STAMP) $(RUNTIME_STAMP)

# Re-lock after editing requirements*.in (LOCK_ARGS=--upgrade moves every pin to the newest
# release that resolves). The compiler lives in a throwaway venv, never in .venv.
lock:
	tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && python3 -m venv "$$tmp" && \
	"$$tmp/bin/pip" install --quiet uv==0.13.9 && \
	for set in requirements requirements-dev; do \
		"$$tmp/bin/uv" pip compile --quiet --generate-hashes --python-version 3.11 \
			--custom-compile-command "make lock" $(LOCK_ARGS) $$set.in -o $$set.txt || exit 1; \
	done

# The audit checkpoints' signing key (docs/auditors.md, "What is recorded"): an Ed25519 seed of this checkout's own,
# added to an older .env that lacks it.
AUDIT_KEY_LINE = AUDIT_SIGNING_KEY=$$(python3 -c 'import base64, os; print(base64.b64encode(os.urandom(32)).decode())')

# The local settings the README's manage.py commands read (gitignored, never overwritten):
# DEBUG on, a secret key and a data key (webhook secrets at rest) of this checkout's own.
# Production sets its environment instead.
.env:
	@umask 077; { echo '# Written by make run for this checkout only; production sets its own environment.'; \
		echo 'DJANGO_DEBUG=1'; \
		echo "DJANGO_SECRET_KEY=$$(python3 -c 'import secrets; print(secrets.token_urlsafe(50))')"; \
		echo "DATA_ENCRYPTION_KEYS=$$(python3 -c 'import base64, os; print(base64.urlsafe_b64encode(os.urandom(32)).decode())')"; \
		echo "$(AUDIT_KEY_LINE)"; } > .env

# One Ctrl-C stops all: bin/supervise.py starts PostgreSQL, runs migrate and seed_demo, then web, worker,
# sweeper (the expiry sweep's own worker: a slow delivery never holds it, docs/deploy.md) and beat; it sends each of these one SIGTERM, waits for it, and stops PostgreSQL last.
# The terminal is for people: short lines (warnings, errors, one per request; TERMINAL_LOG_LEVEL=INFO
# for more), no banners; the JSON logs go to var/log/<process>.log. Once the web answers, the login,
# the token and the demo's links are printed last; `make creds` prints them again.
# Celery's warning to a root shell is for servers (which run as a user of their own), not for this demo.
RUN_LOGS := LOG_DIR=$(CURDIR)/var/log DJANGO_RUNSERVER_HIDE_WARNING=true \
	PYTHONWARNINGS="ignore:You're running the worker with superuser privileges"
run: install-runtime .env
	@grep -q '^AUDIT_SIGNING_KEY=' .env || { umask 077; echo "$(AUDIT_KEY_LINE)" >> .env; }
	@mkdir -p var/broker var/broker-processed var/broker-control var/mail var/log
	@rm -rf var/prometheus && mkdir -p var/prometheus
	@echo "Starting PostgreSQL, migrating and seeding the demo; then serving on http://127.0.0.1:$(PORT)/."
	@echo "JSON logs: var/log/. Approver emails: var/mail/. Ctrl-C stops all."
	@$(RUN_ENV) $(RUN_LOGS) $(PY) bin/supervise.py $(RUN_DB) \
		--first "$(PY) manage.py migrate --noinput -v0" \
		--first "$(PY) manage.py seed_demo -v0 --credentials var/credentials.txt" \
		web ".venv/bin/uvicorn suspensions_project.asgi:application --host 127.0.0.1 --port $(PORT) --lifespan off --no-access-log --log-level warning" \
		worker ".venv/bin/celery -A suspensions_project --quiet worker -Q celery,fanout,delivery --concurrency 1 -n worker@%h" \
		sweeper ".venv/bin/celery -A suspensions_project --quiet worker -Q sweep --concurrency 1 -n sweeper@%h" \
		beat ".venv/bin/celery -A suspensions_project --quiet beat --schedule var/celerybeat-schedule" \
		--ready http://127.0.0.1:$(PORT)/healthz --then "cat var/credentials.txt"

# The login, the token and the demo's links that make run printed last (written by its seed_demo).
creds:
	@cat var/credentials.txt 2>/dev/null || echo "No demo credentials yet: make run writes them once it has seeded the demo."

# The embedded PostgreSQL alone, until Ctrl-C: for the README's manage.py commands when make run is not
# running (with DEBUG on, as .env has it, their DATABASE_URL defaults to this server).
db: install-runtime
	@echo "The embedded PostgreSQL of make run, for manage.py commands (with DEBUG on, their default). Ctrl-C stops it."
	$(PY) bin/supervise.py --postgres var/postgres

services:
	bash .ci/services.sh

browser:
	command -v chromium >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null)

# Debian's nginx for the slow-client test and bench, which run it in the foreground with a temporary
# prefix and deploy/nginx/suspensions.conf. nginx-light where the release still has it, else nginx
# (on a host with systemd, Debian's package also starts its default site on port 80).
proxy:
	command -v nginx >/dev/null || test -x /usr/sbin/nginx || (apt-get update -qq && \
		pkg=$$(apt-cache show nginx-light >/dev/null 2>&1 && echo nginx-light || echo nginx) && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$pkg >/dev/null)

# Debian's PgBouncer for tests/ops/test_pgbouncer.py, which starts it itself with a temporary ini on a
# free port (docs/decisions.md, "`make run`'s PostgreSQL"). On a host with systemd the package also starts its own
# service on port 6432; nothing here uses that one.
pgbouncer:
	command -v pgbouncer >/dev/null || test -x /usr/sbin/pgbouncer || (apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pgbouncer >/dev/null)

lint: install
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/lint-imports --no-cache
	$(LINT_ENV) .venv/bin/mypy suspensions suspensions_project clients/python/src

# The inner loop (under two minutes): lint, formatting, types, and every test not marked slow or browser.
check: install services
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/lint-imports --no-cache
	$(TEST_ENV) .venv/bin/mypy suspensions suspensions_project clients/python/src
	$(TEST_ENV) $(PY) -m pytest -q -n auto -m "not slow and not browser" $(PYTEST_ARGS)

test: install services browser proxy pgbouncer
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/lint-imports --no-cache
	$(TEST_ENV) .venv/bin/mypy suspensions suspensions_project clients/python/src
	$(TEST_ENV) $(PY) manage.py makemigrations --check --dry-run
	$(TEST_ENV) $(PY) -m pytest -n $(TEST_WORKERS) $(PYTEST_ARGS)

bench: install services proxy
	$(TEST_ENV) $(PY) bench/run_all.py

clean:
	rm -rf var test-artifacts .pytest_cache
