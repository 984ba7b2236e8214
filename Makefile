# Two commands do all the set-up: `make run` and `make test` (see README.md).
SHELL := /bin/bash
PY := .venv/bin/python
VENV_STAMP := .venv/.installed

TEST_ENV := DJANGO_SECRET_KEY=test-only-secret DJANGO_DEBUG=0 \
	DATABASE_URL=$${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/suspensions} \
	CELERY_BROKER_URL=$${TEST_BROKER_URL:-redis://127.0.0.1:6379/15} \
	DJANGO_ALLOW_ASYNC_UNSAFE=true
RUN_ENV := DJANGO_DEBUG=$${DJANGO_DEBUG:-1}

.PHONY: install run test lint services browser bench clean

install: $(VENV_STAMP)

$(VENV_STAMP): requirements.txt
	test -x $(PY) || python3 -m venv .venv
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	touch $(VENV_STAMP)

run: install
	mkdir -p var/broker var/broker-processed
	$(RUN_ENV) $(PY) manage.py migrate --noinput
	$(RUN_ENV) $(PY) manage.py seed_demo
	@echo "Serving on http://127.0.0.1:8000/ (console /console/, API docs /api/docs/, admin /admin/). Ctrl-C stops all."
	trap 'kill 0' EXIT INT TERM; \
	$(RUN_ENV) .venv/bin/celery -A suspensions_project worker --beat --concurrency 1 --loglevel warning \
		--schedule var/celerybeat-schedule & \
	$(RUN_ENV) $(PY) manage.py runserver 127.0.0.1:8000 --noreload

services:
	bash .ci/services.sh

browser:
	command -v chromium >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null)

lint: install
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	DJANGO_SECRET_KEY=lint .venv/bin/mypy suspensions suspensions_project

test: install services browser
	.venv/bin/ruff check .
	$(TEST_ENV) .venv/bin/mypy suspensions suspensions_project
	$(TEST_ENV) $(PY) manage.py makemigrations --check --dry-run
	$(TEST_ENV) $(PY) -m pytest $(PYTEST_ARGS)

bench: install services
	$(TEST_ENV) $(PY) bench/run_all.py

clean:
	rm -rf var test-artifacts .pytest_cache
