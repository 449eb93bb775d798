# kubeslow — the two commands a new user needs:
#   make demo   installs and builds what it needs, starts the lab and runs `kubeslow run --lab` against it
#   make test   lint + unit tests + integration tests against the real lab (needs root)
SHELL := /bin/bash
export PATH := /usr/local/go/bin:$(PATH)
GO ?= go
BIN := bin/kubeslow
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/kubeslow/kubeslow/internal/version.Version=$(VERSION)
DEMO_NODES ?= 50
# A fault for the demo to diagnose (`bin/kubeslow lab scenarios` lists them; "healthy" for none).
DEMO_SCENARIO ?= conflict-storm

.PHONY: all deps build lint unit fuzz integration test lab-build demo demo-down clean

all: build

deps:
	@hack/deps.sh

# Static: the same binary runs in the lab's images (no C library there).
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/kubeslow

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) tool staticcheck ./...

GOTESTSUM := $(GO) tool gotestsum --format pkgname-and-test-fails

unit:
	@mkdir -p out
	$(GOTESTSUM) --jsonfile out/unit.json -- -count=1 ./...

# Every fuzz target for FUZZTIME (default 3s) each; a crash fails (hack/fuzz.sh).
fuzz:
	@hack/fuzz.sh

lab-build: build
	$(BIN) lab build

# Integration tests run one package at a time: there is one lab per machine.
integration: lab-build
	@mkdir -p out
	KUBESLOW_INTEGRATION=1 $(GOTESTSUM) --jsonfile out/integration.json -- -p 1 -count=1 -timeout 60m -run '^TestIntegration' ./...

test: deps build lint unit fuzz integration
	@hack/summary.sh out/unit.json out/integration.json

demo: deps lab-build
	$(BIN) lab down
	$(BIN) lab up --nodes $(DEMO_NODES) --scenario $(DEMO_SCENARIO)
	$(BIN) run --lab -o text --out-dir out/demo || test $$? -eq 1
	@echo "the lab is still up: kubectl --kubeconfig \"$$($(BIN) lab kubeconfig)\" get nodes; 'make demo-down' stops it"

demo-down: build
	$(BIN) lab down

clean:
	rm -rf bin
