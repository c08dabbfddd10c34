# berth — the two commands a new user needs are `make run` and `make test`.
SHELL := /bin/bash
NPX := npx --no-install
SETUP_STAMP := node_modules/.berth-setup

.PHONY: setup generate check-generated lint test run bench clean

## setup: install Node dependencies (npm ci), once per package-lock change
setup: $(SETUP_STAMP)
$(SETUP_STAMP): package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

## generate: regenerate generated/ from proto/ (buf + ts-proto, nothing downloaded)
generate: setup
	$(NPX) buf generate

## check-generated: fail when generated/ is not what `make generate` produces
check-generated: generate
	@if [ -n "$$(git status --porcelain -- generated)" ]; then \
	  echo "generated/ is stale: run 'make generate' and commit" >&2; git status --porcelain -- generated >&2; exit 1; fi

## lint: buf lint (STANDARD), buf breaking against main, tsc --noEmit (strict)
lint: setup
	$(NPX) buf lint
	@if git rev-parse --verify -q main >/dev/null && git cat-file -e main:buf.yaml 2>/dev/null; then \
	  $(NPX) buf breaking --against '.git#branch=main'; fi
	$(NPX) tsc --noEmit -p .

## test: every test (vitest)
test: setup
	$(NPX) vitest run

## run: start berth on 127.0.0.1:50051 (flags via ARGS="--cpus 4 --gpus 0-3")
run: setup
	node bin/berth.js serve $(ARGS)

## bench: benchmarks, printing ratios measured side by side
bench: setup
	node bin/bench.js

clean:
	rm -rf node_modules .venv
