# kubeslow — the two commands a new user needs:
#   make demo   installs and builds what it needs, starts the lab and runs `kubeslow run --lab` against it
#   make test   unit tests, then integration tests against the real lab (needs root) with lint and fuzzing beside
SHELL := /bin/bash
export PATH := /usr/local/go/bin:$(PATH)
GO ?= go
BIN := bin/kubeslow
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/kubeslow/kubeslow/internal/version.Version=$(VERSION)
DEMO_NODES ?= 50
# A fault for the demo to diagnose (`bin/kubeslow lab scenarios` lists them; "healthy" for none).
DEMO_SCENARIO ?= conflict-storm
# One build configuration for the binary, vet, the tests and fuzzing: static (the lab's images have no C library)
# and -trimpath. The tests' dependencies (client-go, …) then compile once, in `make build`, where with Go's
# defaults the tests compiled them again (~120 s of a cold run's foreground before the first integration test).
export CGO_ENABLED := 0
GOFLAGS += -trimpath
export GOFLAGS
# The compiler's GOGC for builds (not for tests: their processes, and the lab's components they start, would
# inherit it): a fifth less CPU on a cold build (measured at internal/lab/build's compileGOGC).
COMPILE_GOGC ?= 400

.PHONY: all deps build lint unit fuzz integration integration-labfree test lab-build demo demo-down clean

all: build

deps:
	@hack/deps.sh test

# Static: the same binary runs in the lab's images (no C library there).
build:
	CGO_ENABLED=0 GOGC=$(COMPILE_GOGC) $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/kubeslow

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

# The lab's components, cached under the XDG cache (~/.cache/kubeslow): the tests' lab also builds flanneld
# (the flannel lab's test); a demo builds only what its lab uses.
LAB_BUILD_WITH ?= --with flanneld
lab-build: build
	$(BIN) lab build $(LAB_BUILD_WITH)

# Integration tests run one package at a time: there is one lab per machine. Only the packages that have
# integration tests are built for it (go test -p 1 also builds one package at a time: linking every package's
# test binary cost ~110 s of the run of 2026-11-29). LABFREE_PKGS need no lab (and touch nothing a lab uses):
# `make test` runs them beside the lab's, as `make integration-labfree`: the report in headless Chromium, netlab's
# paths (network namespaces of their own, ksnet-*, and addresses no lab uses) and the eBPF tracers (their events
# filtered to the test's own process and cgroups).
INTEGRATION_PKGS = $(sort $(patsubst %/,./%,$(dir $(shell grep -rl --include='*_test.go' '^func TestIntegration' cmd internal pkg 2>/dev/null))))
LABFREE_PKGS := ./internal/report ./internal/lab/netlab ./internal/source/ebpf
integration: lab-build
	@mkdir -p out
	KUBESLOW_INTEGRATION=1 $(GOTESTSUM) --jsonfile out/integration.json -- -p 1 -count=1 -timeout 60m -run '^TestIntegration' \
	  $(filter-out $(LABFREE_PKGS),$(INTEGRATION_PKGS))

integration-labfree: build
	@mkdir -p out
	KUBESLOW_INTEGRATION=1 $(GOTESTSUM) --jsonfile out/integration-labfree.json -- -count=1 -timeout 20m -run '^TestIntegration' $(LABFREE_PKGS)

# First, side by side: the Debian packages (hack/deps.sh: apt's download and install, ~25 s on a fresh machine),
# kubeslow's go build (~90 s cold) and the lab's build (go run ./hack/labbuild: only internal/lab/build to compile
# before it starts; ~7 min cold on 2 cores, a second warm; out/lab-build.log), none needing another. Then, in the
# background at nice 19 (the lab's tests come first; what has timing of its own, as dnsload's tests, bounds by what
# it measured, not by a schedule kept: docs/testing.md, CI of 2a8fa26): lint, then every fuzz
# target (one worker; out/lint.log, out/fuzz.log); and the unit tests, which need no lab, then the integration
# tests that need none either (out/unit.log, out/integration-labfree.log). In the foreground: the integration
# tests on the lab, while flanneld, which only the flannel lab's test uses (in the third package), builds in the
# background at nice 19 (out/lab-build-flannel.log; a lab that needs it before it is done waits for the cache's
# build lock); then the summary with the slowest tests (out/test-times.txt). A failure of any part fails the run
# with its log's tail (a failed lab build ends it once the rest is done; Ctrl-C stops them all: one process group).
test:
	@mkdir -p out; date +%s > out/.start
	@echo "Debian packages (hack/deps.sh test) and the lab's build (go run ./hack/labbuild) beside kubeslow's go build (logs: out/deps.log, out/lab-build.log)"; \
	  hack/deps.sh test > out/deps.log 2>&1 & dp=$$!; \
	  GOGC=$(COMPILE_GOGC) $(GO) run ./hack/labbuild > out/lab-build.log 2>&1 & lb=$$!; \
	  brc=0; $(MAKE) --no-print-directory build || brc=$$?; \
	  drc=0; wait $$dp || drc=$$?; cat out/deps.log; \
	  lrc=0; wait $$lb || lrc=$$?; \
	  if [ $$drc != 0 ]; then echo "hack/deps.sh failed"; exit 1; fi; \
	  if [ $$lrc != 0 ]; then echo "lab build failed:"; tail -n 40 out/lab-build.log; exit 1; fi; \
	  tail -n 1 out/lab-build.log; echo "lab build: $$(( $$(date +%s) - $$(cat out/.start) ))s"; exit $$brc
	@start=$$(cat out/.start); rc=0; \
	  echo "lint and fuzzing in the background, nice 19 (logs: out/lint.log, out/fuzz.log)"; \
	  ( lrc=0; nice -n 19 $(MAKE) --no-print-directory lint > out/lint.log 2>&1 || lrc=$$?; \
	    FUZZWORKERS=1 nice -n 19 hack/fuzz.sh > out/fuzz.log 2>&1 || lrc=1; exit $$lrc ) & bg=$$!; \
	  echo "unit tests, then the lab-free integration tests, in the background, nice 19 (logs: out/unit.log, out/integration-labfree.log)"; \
	  ( urc=0; nice -n 19 $(MAKE) --no-print-directory unit > out/unit.log 2>&1 || urc=1; \
	    echo "unit tests: $$(( $$(date +%s) - start ))s" >> out/unit.log; \
	    nice -n 19 $(MAKE) --no-print-directory integration-labfree > out/integration-labfree.log 2>&1 || urc=1; exit $$urc ) & ut=$$!; \
	  if ! $(MAKE) --no-print-directory lab-build LAB_BUILD_WITH= >> out/lab-build.log 2>&1; then \
	    echo "lab build failed:"; tail -n 40 out/lab-build.log; wait $$ut; wait $$bg; exit 1; fi; \
	  echo "flanneld's build in the background, nice 19 (log: out/lab-build-flannel.log)"; \
	  nice -n 19 $(BIN) lab build $(LAB_BUILD_WITH) > out/lab-build-flannel.log 2>&1 & fl=$$!; \
	  $(MAKE) --no-print-directory integration LAB_BUILD_WITH= || rc=$$?; \
	  echo "integration tests on the lab: $$(( $$(date +%s) - start ))s"; \
	  if ! wait $$fl; then echo "flanneld's build failed:"; tail -n 40 out/lab-build-flannel.log; rc=1; fi; \
	  if ! wait $$ut; then echo "unit or lab-free integration tests failed:"; tail -n 60 out/unit.log; tail -n 30 out/integration-labfree.log; rc=1; \
	  else tail -n 2 out/unit.log; tail -n 1 out/integration-labfree.log; fi; \
	  if ! wait $$bg; then echo "lint or fuzzing failed:"; tail -n 30 out/lint.log; grep -v '^ok ' out/fuzz.log | tail -n 60; rc=1; \
	  else tail -n 1 out/fuzz.log; fi; \
	  echo "all of it: $$(( $$(date +%s) - start ))s"; \
	  hack/summary.sh out/unit.json out/integration.json out/integration-labfree.json || rc=1; exit $$rc

# Installs only what the demo's lab needs, builds it, starts it with DEMO_SCENARIO and runs kubeslow on it;
# ends with the time of each phase (hack/demo.sh).
demo:
	@DEMO_NODES=$(DEMO_NODES) DEMO_SCENARIO=$(DEMO_SCENARIO) COMPILE_GOGC=$(COMPILE_GOGC) GO=$(GO) BIN=$(BIN) LDFLAGS="$(LDFLAGS)" hack/demo.sh

demo-down: build
	$(BIN) lab down

clean:
	rm -rf bin
