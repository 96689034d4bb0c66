# nodekit: the README's two commands are `make demo` and `make test`.
GO                  ?= go
STATICCHECK_VERSION := v0.8.2
BIN                 := $(CURDIR)/bin
STAGE               := $(CURDIR)/hack/stage
# grpcnotrace: gRPC links golang.org/x/net/trace's debug pages, whose
# html/template reflection keeps every method of every API client in an
# executable (the reference agent: 80 MB without the tag, 53 MB with it).
BUILDTAGS           ?= grpcnotrace
# Every Go file tracked or not yet tracked, minus vendored or generated trees.
GOFILES              = $(shell find . -name '*.go' -not -path './bin/*' -not -path './.git/*')

.PHONY: help build test demo-check faults containerd-test demo bench bench-cluster conformance consumers statuses pins layering fmt-check vet staticcheck unit integration clean

## test: everything CI runs — pins, gofmt, go vet, staticcheck, race tests of
## the library and of the nested test module (real kube-apiserver), and
## the demo's non-interactive check.
test: pins layering fmt-check vet staticcheck unit integration demo-check

## build: the reference agent, virtualnodes and the harness CSI driver in
## bin/ (with -tags $(BUILDTAGS)).
build:
	@$(STAGE) "build (examples)" $(GO) build -tags $(BUILDTAGS) -o $(BIN)/ ./examples/kubelet ./examples/virtualnodes ./examples/csi-hostdir

## help: this list of targets.
help:
	@awk '/^## /{ l = substr($$0, 4); if (!blk && match(l, /^[a-z-]+:/)) { printf "\n  make %s\n", substr(l, 1, RLENGTH - 1); l = substr(l, RLENGTH + 2) } printf "      %s\n", l; blk = 1; next } { blk = 0 }' $(MAKEFILE_LIST)

pins:
	@$(STAGE) pins ./hack/check-pins.sh

layering:
	@$(STAGE) layering ./hack/check-layering.sh

fmt-check:
	@$(STAGE) gofmt sh -c 'out=$$(gofmt -l $(GOFILES)); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi'

vet:
	@$(STAGE) "go vet (library)" $(GO) vet ./...
	@$(STAGE) "go vet (test module)" sh -c 'cd test && $(GO) vet ./...'
	@$(STAGE) "go vet, bash -n (conformance harness)" sh -c 'cd conformance && $(GO) vet ./... && for f in *.sh; do bash -n $$f || exit 1; done'

$(BIN)/staticcheck:
	@$(STAGE) "build staticcheck $(STATICCHECK_VERSION)" env GOBIN=$(BIN) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

staticcheck: $(BIN)/staticcheck
	@$(STAGE) "staticcheck (library)" $(BIN)/staticcheck ./...
	@$(STAGE) "staticcheck (test module)" sh -c 'cd test && $(BIN)/staticcheck ./...'

unit:
	@$(STAGE) "go test -race (library)" $(GO) test -race -count=1 ./...

integration:
	@$(STAGE) "go test -race (test module: kube-apiserver, CRI)" sh -c 'cd test && $(GO) test -race -count=1 ./...'

## faults: the reference agent's fault suite alone (also part of test; the
## containerd restart scenario runs in containerd-test). About 3 minutes.
faults:
	@$(STAGE) "fault suite" sh -c 'cd test && $(GO) test -race -count=1 -run "TestReferenceAgentFault" -v ./integration/ | grep -E "^(=== RUN|--- |ok|FAIL)|_test.go"'

## containerd-test: the PLEG and reference-agent suites against a private
## containerd (root; needs containerd, runc, containernetworking-plugins,
## python3 and busybox-static installed — .ci/run installs them).
containerd-test:
	@$(STAGE) "containerd suite" bash -c 'dir=$$(mktemp -d /tmp/nodekit-containerd.XXXXXX); \
	  ep=$$(hack/containerd-up.sh $$dir) || { cat $$dir/containerd.log; exit 1; }; \
	  (cd test && NODEKIT_CONTAINERD_ENDPOINT=$$ep NODEKIT_CONTAINERD_DIR=$$dir $(GO) test -race -count=1 -run Containerd -v ./integration/ > $$dir/test.log 2>&1); rc=$$?; \
	  grep -E "^(=== RUN|--- |ok|FAIL|panic)|_test.go" $$dir/test.log; [ $$rc -eq 0 ] || tail -50 $$dir/test.log; \
	  kill $$(cat $$dir/containerd.pid) 2>/dev/null; exit $$rc'

## demo: runs the reference agent (examples/kubelet) on its embedded
## defaults: an in-process kube-apiserver, the CRI simulator, a few pods,
## and a live table of what the control plane sees (about a minute).
demo:
	@echo "building the demo (kube-apiserver in-process + the reference agent); the first build takes a few minutes ..."
	@cd test && $(GO) build -tags $(BUILDTAGS) -o $(BIN)/nodekit-demo ./cmd/demo
	@$(BIN)/nodekit-demo

## demo-check: make demo without a screen: exits 1 unless the five promised
## outcomes show in the API within its deadline and no temporary file is
## left behind (part of test).
demo-check:
	@$(STAGE) "demo --check" sh -c 'cd test && $(GO) build -tags $(BUILDTAGS) -o $(BIN)/nodekit-demo ./cmd/demo && tmp=$$(mktemp -d) && \
	  TMPDIR=$$tmp $(BIN)/nodekit-demo --check; rc=$$?; left=$$(ls -A $$tmp); rm -rf $$tmp; \
	  if [ -n "$$left" ]; then echo "demo left in TMPDIR: $$left"; exit 1; fi; exit $$rc'

## conformance: the unmodified upstream e2e suite (v1.36.3: the 290 sig-node
## conformance and NodeConformance specs) against the reference agent on a
## one-node cluster built here, compared with the upstream kubelet's
## baseline (root; the first run builds the cluster, about 30 minutes on 2
## cores; a full run takes about 40). JOIN=1: the node joins with a bootstrap
## token and rotating certificates; AGENT=kubelet: the upstream kubelet;
## FOCUS=regexp: a subset. See conformance/README.md.
conformance:
	@conformance/run.sh

## consumers: metrics-server (kubectl top, a CPU HorizontalPodAutoscaler) and
## Prometheus with kube-prometheus' kubelet job and the kubernetes-mixin
## kubelet queries, against the upstream kubelet and then the reference agent
## on the conformance cluster (root; conformance/ built once; ~15 minutes).
## AGENTS="nodekit": one agent. See conformance/README.md.
consumers:
	@conformance/consumers.sh

## statuses: the pod statuses the reference agent writes, field for field
## against the upstream kubelet's, for the pods of
## test/integration/testdata/statuses (root; conformance/ built once; ~7
## minutes). UPDATE=1 refreshes the kubelet capture make test compares with.
statuses:
	@conformance/statuses.sh

## bench: every benchmark, with allocations.
bench:
	@$(STAGE) "bench (library)" $(GO) test -run '^$$' -bench . -benchmem ./...
	@$(STAGE) "bench (test module)" sh -c 'cd test && $(GO) test -run "^$$" -bench . -benchmem ./...'

## bench-cluster: side-by-side runs on the conformance cluster (root;
## conformance/ built once): the reference agent vs the upstream kubelet,
## virtualnodes vs KWOK, each RUNS times interleaved (default 3; medians and
## ratio ranges), pods created at RATE per second (default 5). About two
## hours with the defaults; not in test.
bench-cluster:
	@hack/bench-cluster.sh

clean:
	rm -rf $(BIN)
