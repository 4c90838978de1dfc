# Thin aliases. Each target installs what it needs into .venv first.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install run test test-docker lint bench openapi docs flink

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/ticdc-sim serve

openapi: $(STAMP)
	$(BIN)/ticdc-sim openapi --output openapi/openapi.json

# the generated reference, then the manual as a site in site/ (links checked: --strict)
docs: $(STAMP)
	$(BIN)/ticdc-sim workload-spec --output docs/workload-spec.md
	$(BIN)/mkdocs build --strict --site-dir site

lint: $(STAMP)
	$(BIN)/ruff check
	$(BIN)/ruff format --check
	$(BIN)/mypy

# PyFlink in a venv of its own (.venv-flink) for tests/test_flink.py, where Java and PyPI allow
flink:
	scripts/ensure-flink

test: lint flink
	scripts/ensure-mariadb
	scripts/ensure-chromium
	$(BIN)/pytest

# the images and the compose stack, built and run with podman (minutes; tests/test_docker.py)
test-docker: $(STAMP)
	docker/ensure-podman
	TICDC_SIM_DOCKER=1 $(BIN)/pytest tests/test_docker.py

bench: $(STAMP)
	$(BIN)/python bench/startup.py
	$(BIN)/python bench/engine.py
	$(BIN)/python bench/encode.py
	$(BIN)/python bench/kafka.py
	$(BIN)/python bench/service.py
	$(BIN)/python bench/spark.py
	$(BIN)/python bench/api.py
