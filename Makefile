SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
# Steps must run in the order listed, even under `make -j`.
.NOTPARALLEL:

GO ?= go

# golangci-lint is installed into the first GOPATH entry's bin directory.
GOPATH_BIN := $(firstword $(subst :, ,$(shell $(GO) env GOPATH)))/bin
GOLANGCI_LINT_VERSION := v2.15.0
GOLANGCI_LINT := $(GOPATH_BIN)/golangci-lint

# TypeScript SDK interop harness (see cmd/vigil/interop_test.go).
INTEROP_DIR := cmd/vigil/testdata/interop
INTEROP_STAMP := $(INTEROP_DIR)/node_modules/.installed

# TypeScript SDK v2 client and ext-tasks harness (see
# cmd/vigil-everything/clientv2_test.go).
CLIENTV2_DIR := cmd/vigil-everything/testdata/clientv2
CLIENTV2_STAMP := $(CLIENTV2_DIR)/node_modules/.installed

# The MCP Inspector CLI (cmd/vigil/inspector_test.go,
# cmd/vigil-everything/inspector_test.go); it runs on the conformance step's Node 22.
INSPECTOR_DIR := cmd/vigil/testdata/inspector
INSPECTOR_STAMP := $(INSPECTOR_DIR)/node_modules/.installed

# The real authorization server of the auth tests (oidc-provider, run with
# the conformance step's Node 22; see cmd/vigil/oidc_provider_test.go).
OIDC_DIR := cmd/vigil/testdata/oidc
OIDC_STAMP := $(OIDC_DIR)/node_modules/.installed

# The reference server @modelcontextprotocol/server-everything, pinned, which
# the gateway's end-to-end test fronts (see cmd/vigil/gateway_everything_e2e_test.go).
EVERYTHING_DIR := cmd/vigil/testdata/everything
EVERYTHING_STAMP := $(EVERYTHING_DIR)/node_modules/.installed

# The reference servers @modelcontextprotocol/server-filesystem, server-memory
# and server-sequential-thinking, pinned, which the gateway's test compares
# directly and through vigil -upstream (see cmd/vigil/gateway_servers_e2e_test.go).
SERVERS_DIR := cmd/vigil/testdata/servers
SERVERS_STAMP := $(SERVERS_DIR)/node_modules/.installed

# The REST upstream's end-to-end tests: Stoplight's Prism, pinned, the mock
# server of the Petstore 3 description that vigil fronts, and the TypeScript
# SDK v2 client that calls it through vigil in both eras
# (see cmd/vigil/gateway_openapi_real_e2e_test.go).
OPENAPI_DIR := cmd/vigil/testdata/openapi
OPENAPI_STAMP := $(OPENAPI_DIR)/node_modules/.installed

# The published descriptions gateway/internal/openapi's test loads
# (see gateway/internal/openapi/published_test.go): GitHub's from npm
# (@octokit/openapi), Stripe's from the Go module github.com/stripe/stripe-mock,
# which embeds stripe/openapi's spec3.json, into the module cache.
PUBLISHED_DIR := gateway/internal/openapi/testdata/published
PUBLISHED_STAMP := $(PUBLISHED_DIR)/node_modules/.installed
STRIPE_MOCK := github.com/stripe/stripe-mock@v0.203.0

# The MCP Apps extension's own package, whose JSON Schema the server's
# apps test checks Vigil's wire format against (see server/apps_schema_test.go).
APPS_DIR := server/testdata/apps
APPS_STAMP := $(APPS_DIR)/node_modules/.installed

# The real-client suite: a Go module of its own (go-sdk and mcp-go clients,
# so that Vigil's go.mod gains nothing) and its npm clients (the AI SDK,
# LangChain, mcp-remote, the TypeScript SDK v2), run on the conformance
# step's Node 22 (see interop/clients/doc.go).
CLIENTS_DIR := interop/clients
CLIENTS_NPM_DIR := $(CLIENTS_DIR)/testdata/npm
CLIENTS_STAMP := $(CLIENTS_NPM_DIR)/node_modules/.installed

# The official MCP conformance suites and Node 22, which they need
# (see cmd/vigil-everything/conformance_test.go).
CONFORMANCE_DIR := cmd/vigil-everything/testdata/conformance
CONFORMANCE_STAMP := $(CONFORMANCE_DIR)/node_modules/.installed

.PHONY: help short fresh-clone api deploy-validate e2e-deps test system-deps vet unit interop-deps clientv2-deps inspector-deps apps-deps oidc-deps everything-deps servers-deps openapi-deps published-deps conformance-deps clients-deps interop inspector auth conformance clients fuzz race50 bench bench-service bench-footprint bench-idle bench-auth bench-redis bench-hop bench-gateway bench-scale lint lint-install tidy-check check image

## help: list the documented targets (the default goal: `make` alone installs and runs nothing).
help:
	@awk -v lintversion=$(GOLANGCI_LINT_VERSION) '{ gsub(/\$$\(GOLANGCI_LINT_VERSION\)/, lintversion) } /^## [a-z0-9-]+:/ { sub(/^## /, ""); name = $$0; sub(/:.*/, "", name); text = $$0; sub(/^[^:]*: */, "", text); printf "  %-16s %s\n", name, text; next } /^## / { sub(/^## /, ""); printf "  %-16s %s\n", "", $$0 }' $(MAKEFILE_LIST)

## short: the inner loop, under five minutes on two cores: go test -short ./..., without -race and without external components
## (a test that needs Redis, nginx, Prometheus, Jaeger, Chromium, Node or an npm package calls testkit.External and skips). `make test` runs everything.
short:
	@echo "==> go test -short ./..."
	$(GO) test -short ./...

## test: vet, unit tests (incl. interop), interop transcript, real clients, fuzz. Used by CI and the README.
test: system-deps e2e-deps interop-deps clientv2-deps inspector-deps apps-deps oidc-deps everything-deps servers-deps openapi-deps published-deps conformance-deps clients-deps vet unit interop inspector conformance clients deploy-validate fuzz

## vet: go vet ./...
vet:
	@echo "==> go vet ./..."
	$(GO) vet ./...

## unit: go test -race -shuffle=on ./..., every component installed first.
unit: system-deps e2e-deps interop-deps clientv2-deps inspector-deps apps-deps oidc-deps everything-deps servers-deps openapi-deps published-deps conformance-deps
	@echo "==> go test -race -shuffle=on ./..."
	$(GO) test -race -shuffle=on -timeout 30m ./...

## interop-deps: install the interop harness's npm dependencies (only when needed).
interop-deps: $(INTEROP_STAMP)

$(INTEROP_STAMP): $(INTEROP_DIR)/package-lock.json $(INTEROP_DIR)/package.json
	@echo "==> npm ci --prefix $(INTEROP_DIR)"
	npm ci --prefix $(INTEROP_DIR) --no-audit --no-fund
	@touch $@

## clientv2-deps: install the TypeScript SDK v2 harness's npm dependencies (only when needed).
clientv2-deps: $(CLIENTV2_STAMP)

$(CLIENTV2_STAMP): $(CLIENTV2_DIR)/package-lock.json $(CLIENTV2_DIR)/package.json
	@echo "==> npm ci --prefix $(CLIENTV2_DIR)"
	npm ci --prefix $(CLIENTV2_DIR) --no-audit --no-fund
	@touch $@

## inspector-deps: install the MCP Inspector (only when needed); it runs on the conformance step's Node 22.
inspector-deps: $(INSPECTOR_STAMP)

$(INSPECTOR_STAMP): $(INSPECTOR_DIR)/package-lock.json $(INSPECTOR_DIR)/package.json
	@echo "==> npm ci --prefix $(INSPECTOR_DIR)"
	npm ci --prefix $(INSPECTOR_DIR) --no-audit --no-fund
	@touch $@

## apps-deps: install the MCP Apps extension's package (its JSON Schema) for the server's apps test (only when needed).
apps-deps: $(APPS_STAMP)

$(APPS_STAMP): $(APPS_DIR)/package-lock.json $(APPS_DIR)/package.json
	@echo "==> npm ci --prefix $(APPS_DIR)"
	npm ci --prefix $(APPS_DIR) --no-audit --no-fund
	@touch $@

## oidc-deps: install the authorization server of the auth tests (only when needed).
oidc-deps: $(OIDC_STAMP)

$(OIDC_STAMP): $(OIDC_DIR)/package-lock.json $(OIDC_DIR)/package.json
	@echo "==> npm ci --prefix $(OIDC_DIR)"
	npm ci --prefix $(OIDC_DIR) --no-audit --no-fund
	@touch $@

## everything-deps: install the reference server the gateway's test fronts, @modelcontextprotocol/server-everything (only when needed).
everything-deps: $(EVERYTHING_STAMP)

$(EVERYTHING_STAMP): $(EVERYTHING_DIR)/package-lock.json $(EVERYTHING_DIR)/package.json
	@echo "==> npm ci --prefix $(EVERYTHING_DIR)"
	npm ci --prefix $(EVERYTHING_DIR) --no-audit --no-fund
	@touch $@

## servers-deps: install the reference servers the gateway's test compares directly and through vigil, server-filesystem, server-memory and server-sequential-thinking (only when needed).
servers-deps: $(SERVERS_STAMP)

$(SERVERS_STAMP): $(SERVERS_DIR)/package-lock.json $(SERVERS_DIR)/package.json
	@echo "==> npm ci --prefix $(SERVERS_DIR)"
	npm ci --prefix $(SERVERS_DIR) --no-audit --no-fund
	@touch $@

## openapi-deps: install the REST upstream's end-to-end test components, Stoplight's Prism and the TypeScript SDK v2 client (only when needed).
openapi-deps: $(OPENAPI_STAMP)

$(OPENAPI_STAMP): $(OPENAPI_DIR)/package-lock.json $(OPENAPI_DIR)/package.json
	@echo "==> npm ci --prefix $(OPENAPI_DIR)"
	npm ci --prefix $(OPENAPI_DIR) --no-audit --no-fund
	@touch $@

## published-deps: fetch GitHub's and Stripe's published OpenAPI descriptions, which the REST upstream's load test reads (only when needed).
published-deps: $(PUBLISHED_STAMP)
	@echo "==> go mod download $(STRIPE_MOCK)"
	$(GO) mod download $(STRIPE_MOCK)

$(PUBLISHED_STAMP): $(PUBLISHED_DIR)/package-lock.json $(PUBLISHED_DIR)/package.json
	@echo "==> npm ci --prefix $(PUBLISHED_DIR)"
	npm ci --prefix $(PUBLISHED_DIR) --no-audit --no-fund
	@touch $@

## clients-deps: install the real-client suite's npm clients (only when needed).
clients-deps: $(CLIENTS_STAMP)

$(CLIENTS_STAMP): $(CLIENTS_NPM_DIR)/package-lock.json $(CLIENTS_NPM_DIR)/package.json
	@echo "==> npm ci --prefix $(CLIENTS_NPM_DIR)"
	npm ci --prefix $(CLIENTS_NPM_DIR) --no-audit --no-fund
	@touch $@

## system-deps: Debian packages the tests use (prometheus and promtool; chromium for the debug page's browser test; redis-server and nginx for the shared-session tests), installed when missing.
system-deps:
	@bash cmd/vigil/testdata/e2e/install-prometheus.sh

## e2e-deps: the Jaeger v2 binary for cmd/vigil's end-to-end test, built from its Go module once and cached.
e2e-deps:
	@bash cmd/vigil/testdata/e2e/install-jaeger.sh

## conformance-deps: install the conformance suites and Node 22 (only when needed).
conformance-deps: $(CONFORMANCE_STAMP)

$(CONFORMANCE_STAMP): $(CONFORMANCE_DIR)/package-lock.json $(CONFORMANCE_DIR)/package.json
	@echo "==> npm ci --prefix $(CONFORMANCE_DIR)"
	npm ci --prefix $(CONFORMANCE_DIR) --no-audit --no-fund
	@touch $@

## interop: run the TypeScript SDK interop tests on their own, verbosely (v1 against vigil and vigil-everything; v2 with ext-tasks against vigil-everything over HTTP and stdio in both eras); CI=true turns a skip into a failure.
interop: interop-deps clientv2-deps conformance-deps
	@echo "==> interop: TypeScript SDK clients (v1; v2 and ext-tasks) against vigil and vigil-everything"
	CI=true $(GO) test -count=1 -timeout 30m -run '^TestInterop' -v ./cmd/vigil ./cmd/vigil-everything

## inspector: the MCP Inspector CLI against vigil and vigil-everything, verbosely: tools/list --strict and a --load run in both eras, and the skills checks (skills/list, skills/get --verify --require-digests, both eras); CI=true turns a skip into a failure.
inspector: inspector-deps conformance-deps
	@echo "==> inspector: @modelcontextprotocol/inspector 2.12.0 (tools/list --strict, --load, skills --verify)"
	CI=true $(GO) test -count=1 -timeout 30m -run '^TestInspector' -v ./cmd/vigil ./cmd/vigil-everything

## auth: the authorization tests on their own, verbosely: the real authorization server (oidc-provider)
## and the TypeScript SDK's client-credentials flow against vigil; CI=true turns a skip into a failure.
auth: interop-deps oidc-deps conformance-deps
	@echo "==> auth: oidc-provider and the TypeScript SDK client against vigil -http -auth-issuer"
	CI=true $(GO) test -count=1 -timeout 30m -run '^Test(OIDCProvider|Auth)' -v ./cmd/vigil

## conformance: the official conformance suites against one vigil-everything, then through nginx round robin over three replicas sharing sessions on Redis (TLS only, an ACL user with a password, as deploy/ runs it) and on a 6-node Redis Cluster, then through the gateway (vigil -upstream in front of vigil-everything over stdio and over HTTP, against the expected failures in testdata/conformance/gateway-expected-failures-*.yml), verbosely (totals in the log).
conformance: system-deps conformance-deps
	@echo "==> conformance: @modelcontextprotocol/conformance 0.2.0-alpha.12 and 0.1.16, --suite all (one server; three replicas behind nginx on TLS Redis and on a 6-node Redis Cluster; through the gateway, stdio and HTTP upstream)"
	CI=true $(GO) test -count=1 -timeout 30m -run '^TestConformance(Shared|SharedCluster|ThroughGatewayStdio|ThroughGatewayHTTP)?$$' -v ./cmd/vigil-everything

## clients: the real-client suite on its own, verbosely: go-sdk v1.8.0, mcp-go v1.2.1, @ai-sdk/mcp 2.0.99, @langchain/mcp-adapters 1.1.4, mcp-remote 0.15.1 and the TypeScript SDK v2 against vigil and vigil-everything (every feature each has, both eras, HTTP and stdio), and 20 cuts and 20 kills per client checked against the recorded cause; its own Go module (interop/clients), so `unit` does not run it; CI=true turns a skip into a failure.
clients: clients-deps conformance-deps
	@echo "==> clients: real MCP clients against vigil and vigil-everything (interop/clients)"
	cd $(CLIENTS_DIR) && $(GO) mod tidy -diff && $(GO) vet ./... && CI=true $(GO) test -count=1 -timeout 30m -parallel 4 -v ./...

## deploy-validate: the ops kit (deploy/, dashboards/), checked offline by its own Go module.
deploy-validate: system-deps
	@echo "==> deploy/validate: dashboard, rules, compose, Kubernetes, Helm chart, Dockerfile, static build"
	cd deploy/validate && $(GO) vet ./... && $(GO) test -count=1 ./...

## image: build deploy/Dockerfile (vigil) and deploy/Dockerfile.gateway (vigil-gateway) for IMAGE_PLATFORMS (linux/amd64,linux/arm64) with docker buildx,
## each with BuildKit's SBOM and provenance attestations and the OCI labels, as OCI archives in bin/images (IMAGE_OUTPUT=type=registry pushes instead,
## to IMAGE_REPO); skipped with a message without Docker, a daemon that answers or the buildx plugin. The gateway image's npm step runs on each
## platform: an arm64 build on amd64 needs QEMU (docker run --privileged --rm tonistiigi/binfmt --install arm64).
IMAGE_PLATFORMS ?= linux/amd64,linux/arm64
IMAGE_VERSION ?= dev
IMAGE_REPO ?=
IMAGE_OUTPUT ?=
image:
	@if ! command -v docker >/dev/null 2>&1; then echo "==> image: skipped: no docker command (install Docker Engine with its buildx plugin)"; exit 0; fi; \
	if ! docker info >/dev/null 2>&1; then echo "==> image: skipped: no Docker daemon answers (docker info failed)"; exit 0; fi; \
	if ! docker buildx version >/dev/null 2>&1; then echo "==> image: skipped: docker buildx is missing (install the docker-buildx-plugin package)"; exit 0; fi; \
	revision=$$(git rev-parse HEAD 2>/dev/null || echo unknown); mkdir -p bin/images; \
	for spec in Dockerfile:vigil Dockerfile.gateway:vigil-gateway; do \
		file=$${spec%%:*}; name=$${spec##*:}; \
		output="$(IMAGE_OUTPUT)"; [[ -n "$$output" ]] || output="type=oci,dest=bin/images/$$name.oci.tar"; \
		echo "==> image: $$name $(IMAGE_VERSION) for $(IMAGE_PLATFORMS) ($$output)"; \
		docker buildx build --platform "$(IMAGE_PLATFORMS)" --sbom=true --provenance=mode=min \
			--build-arg VERSION="$(IMAGE_VERSION)" --build-arg REVISION="$$revision" \
			-f "deploy/$$file" -t "$(IMAGE_REPO)$$name:$(IMAGE_VERSION)" --output "$$output" . \
			|| { echo "==> image: $$name failed; a multi-platform build needs a builder that exports it (docker buildx create --driver docker-container --use)"; exit 1; }; \
	done

# Each fuzzer runs a fixed number of inputs (-fuzztime Nx), not a fixed time:
# with a duration, go1.26's fuzzing coordinator can report "context deadline
# exceeded" as a failure when a worker is mid-input at the deadline on a
# loaded machine (golang/go#75804, fixed in go1.27), with no failing input.
## fuzz: each fuzz target for a fixed number of inputs.
fuzz:
	@echo "==> fuzz: FuzzDispatch (100000 inputs)"
	$(GO) test -run='^$$' -fuzz='^FuzzDispatch$$' -fuzztime=100000x ./server
	@echo "==> fuzz: FuzzArgsPlan (100000 inputs, differential against the schema validator (santhosh-tekuri/jsonschema): the fast path of argument validation never accepts what the schema refuses)"
	$(GO) test -run='^$$' -fuzz='^FuzzArgsPlan$$' -fuzztime=100000x ./server
	@echo "==> fuzz: FuzzRecursiveSchemas (50000 inputs, recursive and cyclic schemas, arguments of any depth, at most 32 MiB and a 512-byte error a call)"
	$(GO) test -run='^$$' -fuzz='^FuzzRecursiveSchemas$$' -fuzztime=50000x ./server
	@echo "==> fuzz: FuzzDecodeMessage (50000 inputs)"
	$(GO) test -run='^$$' -fuzz='^FuzzDecodeMessage$$' -fuzztime=50000x ./transport
	@echo "==> fuzz: FuzzSplitMembers (100000 inputs, differential against encoding/json)"
	$(GO) test -run='^$$' -fuzz='^FuzzSplitMembers$$' -fuzztime=100000x ./internal/jsonscan
	@echo "==> fuzz: FuzzValidJSON (250000 inputs, differential against json.Valid)"
	$(GO) test -run='^$$' -fuzz='^FuzzValidJSON$$' -fuzztime=250000x ./internal/jsonscan
	@echo "==> fuzz: FuzzPOST (120000 inputs, the Streamable HTTP POST path)"
	$(GO) test -run='^$$' -fuzz='^FuzzPOST$$' -fuzztime=120000x ./transport/streamable
	@echo "==> fuzz: FuzzPOSTMemory (500 inputs, initialize and name bombs of megabytes: the heap the server keeps stays within budget)"
	$(GO) test -run='^$$' -fuzz='^FuzzPOSTMemory$$' -fuzztime=500x ./transport/streamable
	@echo "==> fuzz: FuzzTextHandlerQuoting (50000 inputs, differential against log/slog's TextHandler)"
	$(GO) test -run='^$$' -fuzz='^FuzzTextHandlerQuoting$$' -fuzztime=50000x ./internal/slogtext
	@echo "==> fuzz: FuzzBearerToken (100000 inputs, the Authorization header of the auth guard)"
	$(GO) test -run='^$$' -fuzz='^FuzzBearerToken$$' -fuzztime=100000x ./middleware/oauth
	@echo "==> fuzz: FuzzParseChallenge (120000 inputs, WWW-Authenticate challenges round-trip)"
	$(GO) test -run='^$$' -fuzz='^FuzzParseChallenge$$' -fuzztime=120000x ./middleware/oauth
	@echo "==> fuzz: FuzzFixedArgumentSpellings (20000 inputs, differential against encoding/json: no member it decodes into a catalog's fixed argument reaches the upstream)"
	$(GO) test -run='^$$' -fuzz='^FuzzFixedArgumentSpellings$$' -fuzztime=20000x ./gateway
	@echo "==> fuzz: FuzzRequestStaysUnderBase (100000 inputs, OpenAPI path, query and header parameters: no request leaves the base URL's origin and path, none carries a header an argument may not set)"
	$(GO) test -run='^$$' -fuzz='^FuzzRequestStaysUnderBase$$' -fuzztime=100000x ./gateway/internal/openapi

## race50: concurrency soak, run by hand.
race50:
	@echo "==> race soak: -race -count=50 (Concurrency|Cancel|Close|Shutdown|Duplicate|Seed)"
	$(GO) test -race -count=50 -run 'Concurrency|Cancel|Close|Shutdown|Duplicate|Seed' ./server/... ./transport/...

## bench: the Go benchmarks; run by hand.
bench:
	@echo "==> go test -bench=. -benchmem ./..."
	$(GO) test -run='^$$' -bench=. -benchmem ./...

# bench-service and bench-idle: flags for cmd/vigil-bench (e.g. BENCH_FLAGS='-round 1s -rounds 1')
# and the number of idle sessions (make bench-idle IDLE_SESSIONS=100000); bench-scale: the sessions
# with streams (make bench-scale SCALE_SESSIONS=2000 BENCH_FLAGS='-scale-phases streams').
BENCH_FLAGS ?=
IDLE_SESSIONS ?= 10000
SCALE_SESSIONS ?= 10000

## bench-service: the shipped cmd/vigil (tracing, metrics, logs, limits on) against a plain net/http floor, each its own process, driven by a third, at full load (BENCH_FLAGS='-rate 200': both held to 200 requests a second); run by hand.
bench-service:
	@echo "==> bench-service: cmd/vigil-bench (about two minutes)"
	$(GO) run ./cmd/vigil-bench -go "$(GO)" $(BENCH_FLAGS)

## bench-footprint: what the README's first program links, weighs and takes to build from an empty cache against go-sdk's and mcp-go's one-tool servers (cmd/vigil-bench -weight, a few minutes on 2 cores),
## then what one request costs vigil's handler and the floor's, in process, under cachegrind (instructions, L1 cache misses, mispredicted branches: counts that do not vary from run to run); installs valgrind when missing; run by hand.
bench-footprint:
	@echo "==> bench-footprint: cmd/vigil-bench -weight (cold builds: a few minutes)"
	$(GO) run ./cmd/vigil-bench -go "$(GO)" -weight $(BENCH_FLAGS)
	@command -v valgrind >/dev/null || { echo "==> apt-get install valgrind"; $$( [[ $$(id -u) -ne 0 ]] && echo sudo ) apt-get install -y --no-install-recommends valgrind; }
	@echo "==> bench-footprint: cmd/vigil-bench -footprint (about a minute)"
	$(GO) run ./cmd/vigil-bench -go "$(GO)" -footprint $(BENCH_FLAGS)

## bench-idle: open IDLE_SESSIONS idle 2025 sessions on the shipped vigil, report its memory per session, then call echo in 1,000 of them; run by hand.
bench-idle:
	@echo "==> bench-idle: cmd/vigil-bench -idle $(IDLE_SESSIONS)"
	$(GO) run ./cmd/vigil-bench -go "$(GO)" -idle $(IDLE_SESSIONS) $(BENCH_FLAGS)

## bench-auth: the shipped vigil with JWT authorization (a cached valid token per client), then with DPoP-bound tokens (a proof per request), against the same vigil without auth; then vigil with JWT against the same with -auth-policy; run by hand.
bench-auth:
	@echo "==> bench-auth: cmd/vigil-bench -auth (about four minutes)"
	$(GO) run ./cmd/vigil-bench -go "$(GO)" -auth $(BENCH_FLAGS)

## bench-redis: the shipped vigil with -redis (one replica, on a redis-server it starts) against the same vigil in memory; run by hand.
bench-redis:
	@echo "==> bench-redis: cmd/vigil-bench -redis (about two minutes)"
	$(GO) run ./cmd/vigil-bench -go "$(GO)" -redis $(BENCH_FLAGS)

## bench-hop: what a hop between two vigil -redis replicas adds (an elicitation answer, a cancel, a DELETE posted to the other replica); run by hand.
bench-hop:
	@echo "==> bench-hop: cmd/vigil-bench -hop"
	$(GO) run ./cmd/vigil-bench -go "$(GO)" -hop $(BENCH_FLAGS)

## bench-gateway: what a gateway hop costs: vigil called through vigil -upstream (HTTP, then stdio) against vigil called directly at full load;
## then gateways at fixed rates (server-everything over stdio at 50 calls/s, HTTP at 200 and 1,000): vigil, vigil -upstream-shared and
## TBXark/mcp-proxy built from TBXARK_SRC (a git checkout: the module proxy refuses it), CPU, latency, context switches and system calls
## per call, resident memory after a minute of quiet; over stdio, each one's p50 over the upstream called directly and over the floor's
## relay (the least a gateway does); needs make everything-deps for the stdio upstream; run by hand.
TBXARK_SRC ?=
bench-gateway:
	@echo "==> bench-gateway: cmd/vigil-bench -gateway"
	$(GO) run ./cmd/vigil-bench -go "$(GO)" -gateway $(BENCH_FLAGS)
	@echo "==> bench-gateway: cmd/vigil-bench -rates$(if $(TBXARK_SRC), -tbxark $(TBXARK_SRC), (no TBXARK_SRC: TBXark/mcp-proxy not measured))"
	$(GO) run ./cmd/vigil-bench -go "$(GO)" -rates $(if $(TBXARK_SRC),-tbxark "$(TBXARK_SRC)") $(BENCH_FLAGS)

## bench-scale: SCALE_SESSIONS 2025 sessions with open GET streams and 20 list_changed fan-outs (vigil-everything against the floor), overload at 32, 512 and 2,048 clients (each server's levels back to back, three reps honoring Retry-After, each level against the same rep's 32-client peak) and a 1 MiB echo (the shipped vigil against the floor), four heavy callers and a light one at once (the shipped vigil with its quotas: the light one is not shed), printed as ratios with the PASS/FAIL of issue 45's acceptance; raises its file-descriptor limit; run by hand.
bench-scale:
	@echo "==> bench-scale: cmd/vigil-bench -scale -scale-sessions $(SCALE_SESSIONS) (a few minutes)"
	$(GO) run ./cmd/vigil-bench -go "$(GO)" -scale -scale-sessions $(SCALE_SESSIONS) $(BENCH_FLAGS)

## api: regenerate api/, the exported API of every public package, which internal/housecheck's TestAPI compares with the code (a new or changed exported name is a decision: review it, then run this and commit api/).
api:
	@echo "==> api: VIGIL_API_UPDATE=1 go test -run '^TestAPI$$' ./internal/housecheck"
	VIGIL_API_UPDATE=1 $(GO) test -count=1 -run '^TestAPI$$' ./internal/housecheck

## lint-install: install golangci-lint $(GOLANGCI_LINT_VERSION) if missing or a different version.
lint-install:
	@if [[ -x "$(GOLANGCI_LINT)" && "$$("$(GOLANGCI_LINT)" version --short 2>/dev/null)" == "$(GOLANGCI_LINT_VERSION:v%=%)" ]]; then \
		echo "==> golangci-lint $(GOLANGCI_LINT_VERSION) already installed at $(GOLANGCI_LINT)"; \
	else \
		echo "==> installing golangci-lint $(GOLANGCI_LINT_VERSION) into $(GOPATH_BIN)"; \
		GOBIN="$(GOPATH_BIN)" $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION); \
	fi

## lint: golangci-lint run ./..., installed first when missing.
lint: lint-install
	@echo "==> golangci-lint run ./..."
	"$(GOLANGCI_LINT)" run ./...

## tidy-check: go.mod and go.sum are tidy (go mod tidy -diff).
tidy-check:
	@echo "==> go mod tidy -diff"
	$(GO) mod tidy -diff

## check: everything: test, lint, and go.mod/go.sum tidiness.
check: test lint tidy-check

## fresh-clone: CI=true bash .ci/run in a fresh clone of HEAD with an empty GOPATH, GOCACHE and npm cache, as a new machine has them (slow: it downloads and builds everything, Jaeger included); run by hand.
fresh-clone:
	@bash .ci/fresh-clone
