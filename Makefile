# a2aWebCap — developer entry points. `make help` lists them.
GO      ?= go
# A count, not a duration: with a duration, Go 1.26's fuzz coordinator can fail a clean run with
# "context deadline exceeded" as the time runs out (golang/go#75804, fixed in Go 1.27).
FUZZTIME ?= 100000x
CHROMIUM ?= /usr/bin/chromium

.PHONY: help test lint unit interop fuzz bench bench-cluster npm chromium

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-13s %s\n", $$1, $$2}'

test: lint npm unit fuzz ## everything CI runs: lint, unit and interop tests (-race), fuzz smoke

lint: ## gofmt, go vet, go mod tidy -diff
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) mod tidy -diff

npm: ## install the pinned Node interop peers (capnweb, ws, @a2a-js/sdk, typescript) from interop/package-lock.json
	@if command -v npm >/dev/null 2>&1; then cd interop && npm ci --no-audit --no-fund --loglevel=error; \
	else echo "npm not found: interop tests will skip"; fi

chromium: ## install Debian's Chromium for the browser test (web/) when missing; apt-get, as root (CI does this)
	@if [ -x $(CHROMIUM) ]; then echo "$(CHROMIUM) is installed"; else \
	echo "installing chromium with apt-get"; \
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium fonts-liberation >/dev/null; fi

unit: ## go test -race ./... (interop tests included when node is present)
	$(GO) test -race -count=1 ./...

interop: npm ## only the interop tests against the real npm peers and the browser test, verbose
	$(GO) test -race -count=1 -v -run Interop ./interop/...
	$(GO) test -race -count=1 -v -run TestTypeScriptClient ./cmd/a2awebcap
	$(GO) test -race -count=1 -v ./web/...

fuzz: ## run each fuzz target for FUZZTIME executions
	$(GO) test -run='^$$' -fuzz='^FuzzDecode$$' -fuzztime=$(FUZZTIME) ./capnweb
	$(GO) test -run='^$$' -fuzz='^FuzzSession$$' -fuzztime=$(FUZZTIME) ./capnweb
	$(GO) test -run='^$$' -fuzz='^FuzzSessionBudget$$' -fuzztime=$(FUZZTIME) ./capnweb
	$(GO) test -run='^$$' -fuzz='^FuzzEncodeRawMessage$$' -fuzztime=$(FUZZTIME) ./capnweb
	$(GO) test -run='^$$' -fuzz='^FuzzCaptureJSON$$' -fuzztime=$(FUZZTIME) ./capnweb
	$(GO) test -run='^$$' -fuzz='^FuzzRawLookup$$' -fuzztime=$(FUZZTIME) ./capnweb
	$(GO) test -run='^$$' -fuzz='^FuzzReadMessage$$' -fuzztime=$(FUZZTIME) ./internal/ws
	$(GO) test -run='^$$' -fuzz='^FuzzFromWire$$' -fuzztime=$(FUZZTIME) ./binding
	$(GO) test -run='^$$' -fuzz='^FuzzJWT$$' -fuzztime=$(FUZZTIME) ./auth
	$(GO) test -run='^$$' -fuzz='^FuzzClaimed$$' -fuzztime=$(FUZZTIME) ./auth
	$(GO) test -run='^$$' -fuzz='^FuzzRule$$' -fuzztime=$(FUZZTIME) ./agent
	$(GO) test -run='^$$' -fuzz='^FuzzContract$$' -fuzztime=$(FUZZTIME) ./agent/capability
	$(GO) test -run='^$$' -fuzz='^FuzzManifest$$' -fuzztime=$(FUZZTIME) ./agent/capability
	$(GO) test -run='^$$' -fuzz='^FuzzLoad$$' -fuzztime=$(FUZZTIME) ./agent/session
	$(GO) test -run='^$$' -fuzz='^FuzzReadFrame$$' -fuzztime=$(FUZZTIME) ./agent/sandbox
	$(GO) test -run='^$$' -fuzz='^FuzzEncodeSameAsMarshal$$' -fuzztime=$(FUZZTIME) ./internal/a2ajson
	$(GO) test -run='^$$' -fuzz='^FuzzDecodeSameAsUnmarshal$$' -fuzztime=$(FUZZTIME) ./internal/a2ajson
	$(GO) test -run='^$$' -fuzz='^FuzzDecodeRequest$$' -fuzztime=$(FUZZTIME) ./internal/a2ajson
	$(GO) test -run='^$$' -fuzz='^FuzzFreeSameAsMarshal$$' -fuzztime=$(FUZZTIME) ./internal/a2ajson
	$(GO) test -run='^$$' -fuzz='^FuzzCheck$$' -fuzztime=$(FUZZTIME) ./netguard
	$(GO) test -run='^$$' -fuzz='^FuzzPayload$$' -fuzztime=$(FUZZTIME) ./x402

bench-cluster: ## cluster mode with 1, 2 and 3 replicas on the local PostgreSQL and NATS (docs/cluster.md#benchmarks)
	$(GO) run ./bench/cluster

bench: npm ## the capnweb benchmark harness (Go vs Node vs raw echo), prints ratios; the agent runtime's benchmarks
	$(GO) run ./bench/capnweb
	$(GO) test -run='^$$' -bench=. -benchmem ./agent
	$(GO) test -run='^$$' -bench=. -benchmem ./agent/sandbox
