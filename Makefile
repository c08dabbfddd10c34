# berth — the two commands a new user needs are `make run` and `make test`.
SHELL := /bin/bash
NPX := npx --no-install
SETUP_STAMP := node_modules/.berth-setup
# Python: a venv at .venv with the pinned tools (grpcio-tools, pytest) and the client installed.
VENV := .venv
PY := $(VENV)/bin/python
VENV_STAMP := $(VENV)/.berth-venv
PY_REQS := clients/python/requirements-dev.txt
PY_GEN := generated/python
PY_VENDORED := clients/python/src/berth_client/_proto
PROTOS := $(sort $(wildcard proto/berth/v1/*.proto))

.PHONY: setup build venv generate check-generated docs check-docs lint format test test-python run bench bench-fast bench-placement \
  bench-wire chaos clean

BUILD_STAMP := dist/.berth-build
BUILD_INPUTS := $(shell find src generated/ts -name '*.ts' -o -name '*.py') bin/build.mjs package.json

## setup: install Node dependencies (npm ci, once per package-lock change) and build the CLI (dist/)
setup: $(SETUP_STAMP) build
$(SETUP_STAMP): package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

## build: compile the CLI to JavaScript in dist/ (esbuild, bin/build.mjs; what bin/berth.js runs), when sources changed
build: $(BUILD_STAMP)
$(BUILD_STAMP): $(SETUP_STAMP) $(BUILD_INPUTS)
	node bin/build.mjs

## venv: create .venv with the pinned Python packages and the client (clients/python), once per change
venv: $(VENV_STAMP)
$(VENV_STAMP): $(PY_REQS) clients/python/pyproject.toml
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r $(PY_REQS)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e ./clients/python
	@touch $@

## generate: regenerate generated/ from proto/ (buf + ts-proto; grpcio-tools for Python, vendored into the client;
##   buf build: the FileDescriptorSets server reflection serves, generated/descriptors/*.binpb)
generate: setup venv
	$(NPX) buf generate
	mkdir -p generated/descriptors
	$(NPX) buf build -o generated/descriptors/berth.binpb
	$(NPX) buf build node_modules/grpc-health-check/proto -o generated/descriptors/health.binpb
	rm -rf $(PY_GEN) && mkdir -p $(PY_GEN)
	$(PY) -m grpc_tools.protoc -Iproto --python_out=$(PY_GEN) --grpc_python_out=$(PY_GEN) --pyi_out=$(PY_GEN) $(PROTOS)
	$(PY) clients/python/tools/vendor_proto.py $(PY_GEN) $(PY_VENDORED)

## check-generated: fail when generated/ is not what `make generate` produces
check-generated: generate
	@if [ -n "$$(git status --porcelain -- generated $(PY_VENDORED))" ]; then \
	  echo "generated/ is stale: run 'make generate' and commit" >&2; \
	  git status --porcelain -- generated $(PY_VENDORED) >&2; exit 1; fi

## docs: regenerate docs/reference/ (every CLI flag, every config key) from the CLI's and config file's definitions
docs: $(SETUP_STAMP)
	$(NPX) tsx scripts/docs/gen-reference.ts

## check-docs: fail when docs/reference/ is not what `make docs` writes, or a relative link in README.md or docs/
##   names a missing file or anchor (targets other branches add: scripts/docs/pending-links.txt)
check-docs: $(SETUP_STAMP)
	$(NPX) tsx scripts/docs/gen-reference.ts --check
	$(NPX) tsx scripts/docs/check-links.ts

## lint: biome ci (formatting + lint, fails on any difference; biome.json), buf lint (STANDARD), buf breaking against
##   main, tsc --noEmit (strict), mypy --strict (Python client), ruff format --check and ruff check (ruff.toml)
lint: setup venv
	$(NPX) biome ci .
	$(NPX) buf lint
	@if git rev-parse --verify -q main >/dev/null && git cat-file -e main:buf.yaml 2>/dev/null; then \
	  $(NPX) buf breaking --against '.git#branch=main'; fi
	$(NPX) tsc --noEmit -p .
	cd clients/python && ../../$(PY) -m mypy src/berth_client
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/ruff check .

## format: rewrite the sources the way `make lint` wants them (biome format and safe lint fixes; ruff for Python)
format: setup venv
	$(NPX) biome format --write .
	$(NPX) biome lint --write .
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

## test: every test (vitest, then the Python client's pytest suite against the real server); builds dist/ first
test: setup build
	@mkdir -p test-results
	$(NPX) vitest run --reporter=default --reporter=json --outputFile=test-results/vitest.json
	$(MAKE) --no-print-directory test-python
	@$(PY) bin/test-summary.py test-results/vitest.json test-results/pytest.xml

## test-python: the Python client's contract tests (pytest; exit 5 "no tests collected" is a failure)
test-python: setup build venv
	@mkdir -p test-results
	@$(PY) -m pytest -q --junitxml=test-results/pytest.xml test/python; rc=$$?; \
	  if [ $$rc -eq 5 ]; then echo "test-python: pytest collected no tests under test/python" >&2; fi; exit $$rc

## run: start berth on 127.0.0.1:50051 (flags via ARGS="--cpus 4 --gpus 0-3")
run: setup build
	node bin/berth.js serve $(ARGS)

## bench: every benchmark, printing ratios measured side by side, JSON in bench/results/ (one: BENCH=startup;
##   BENCH=engine-rate: the Python clients against their bare grpcio callers and Ray, BENCH_RAY_PYTHON)
bench: setup build venv
	node bin/bench.js $(BENCH)

## bench-fast: issue 11's benchmarks only (start-up, dispatch, run rate, output)
bench-fast: setup build
	node bin/bench.js startup dispatch run-rate output

## chaos: a longer chaos run (kills, cancels, releases, server SIGKILLs, link cuts): make chaos SEED=3 DURATION=300;
##   ETCD=1 on a cluster of MEMBERS (default 3) servers on an etcd of its own, the leader SIGKILLed and SIGTERMed
chaos: setup build
	SEED=$(SEED) DURATION=$(DURATION) CONCURRENCY=$(CONCURRENCY) ETCD=$(ETCD) MEMBERS=$(MEMBERS) \
	  LEADER_TTL=$(LEADER_TTL) node bin/chaos.js

## bench-placement: only the placement grid (claim+release at 10..10k machines × 0..1k waiters)
bench-placement: setup
	node bin/bench.js placement

## bench-wire: only the claim cycle against a bare grpc-js echo (1/16/128 streams, server CPU per cycle)
bench-wire: setup build
	node bin/bench.js wire

clean:
	rm -rf node_modules .venv dist
