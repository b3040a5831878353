# probeactor — every command a user or CI needs. Only Go is required; `go` fetches everything else.
GO      ?= go
GOFILES  = $(shell find . -name '*.go' -not -path './.git/*')

# The differential suite against upstream kubelet (tests/upstream) is a nested module; its binary needs
# kubelet's version stamped as kubelet's build does (upstream's probe User-Agent reads it).
UPSTREAM_DIR     = tests/upstream
UPSTREAM_LDFLAGS = -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37

.PHONY: all build run test test-upstream vet fmt fmt-check bench bench-node plots bench-fleet soak clean proto proto-check protoc browser screenshot

all: build

## build: compile every package and the node binary into ./bin
build:
	$(GO) build ./...
	$(GO) build -o bin/node ./cmd/node

## run: the embedded demo — a pod of demo containers probed, restarted and served on 127.0.0.1:10255
run:
	@$(GO) build -o bin/node ./cmd/node
	./bin/node run

## test: formatting, vet, and the whole suite under the race detector (CI runs exactly this); the
## status page's test drives a real headless Chromium (make browser installs it)
test: fmt-check vet browser
	$(GO) test -race -shuffle=on -count=1 -timeout 20m ./...
	$(MAKE) --no-print-directory test-upstream

## test-upstream: only the differential suite against upstream kubelet's probe code
test-upstream:
	cd $(UPSTREAM_DIR) && $(GO) test -race -shuffle=on -count=1 -timeout 10m -ldflags '$(UPSTREAM_LDFLAGS)' ./...

vet:
	$(GO) vet ./...
	cd $(UPSTREAM_DIR) && $(GO) vet ./...

fmt:
	gofmt -w $(GOFILES)

fmt-check:
	@out=$$(gofmt -l $(GOFILES)); if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

## bench: the architecture study (actor vs kubelet-style), benchstat-friendly output, also kept in
## $(BENCH_OUT) (which make plots reads)
BENCH_OUT ?= docs/bench/bench.txt
bench:
	@mkdir -p $(dir $(BENCH_OUT))
	bash -o pipefail -c "$(GO) test -run '^$$' -bench . -benchmem -timeout 60m ./tests/bench/ 2>&1 | tee $(BENCH_OUT)"

## bench-node: node's real binary against a bare Go client (one goroutine + ticker per probe), in turns in one
## sitting, each probing one target process: NODEBENCH_PODS (500) pods x (HTTP readiness + TCP liveness) at 1 s;
## CPU per probe of each over NODEBENCH_DURATION (30s) after NODEBENCH_WARMUP (10s), NODEBENCH_ROUNDS (3)
## bare/node pairs; NODEBENCH_PROFILE=DIR adds CPU and allocation profiles (tests/nodebench/doc.go). Prints
## node and bare µs/probe, their ratio and probes/s (invalid unless both ≈ 2 x pods a second), also kept in
## $(NODEBENCH_OUT). Not part of make test.
NODEBENCH_OUT ?= docs/bench/nodebench.txt
bench-node:
	$(GO) build -o bin/node ./cmd/node
	$(GO) build -o bin/nodebench ./tests/nodebench
	@mkdir -p $(dir $(NODEBENCH_OUT))
	bash -o pipefail -c "./bin/nodebench -node bin/node | tee $(NODEBENCH_OUT)"

## plots: the study's charts (PNG, in $(dir $(BENCH_OUT))) from the output of the last make bench
plots:
	$(GO) run ./tests/bench/benchplot -in $(BENCH_OUT) -out $(dir $(BENCH_OUT))

## bench-scaling: ProbeLoop (both designs) at GOMAXPROCS $(SCALING_CPUS) and $(SCALING_WORKERS) workers, from one
## prebuilt test binary (bin/bench.test: copy it and run the same line on a bigger machine), kept in
## $(SCALING_OUT); make plots-scaling draws probes/s, CPU per probe and lateness p99 against procs
SCALING_CPUS    ?= 2,4,8,16
SCALING_WORKERS ?= 100000,1000000
SCALING_OUT     ?= docs/bench/scaling.txt
.PHONY: bench-scaling plots-scaling
bench-scaling:
	$(GO) test -c -o bin/bench.test ./tests/bench/
	@mkdir -p $(dir $(SCALING_OUT))
	cd tests/bench && bash -o pipefail -c "PROBEACTOR_BENCH_WORKERS=$(SCALING_WORKERS) ../../bin/bench.test -test.run '^$$' -test.bench 'BenchmarkProbeLoop$$' -test.cpu $(SCALING_CPUS) -test.timeout 120m 2>&1 | tee ../../$(SCALING_OUT)"

plots-scaling:
	$(GO) run ./tests/bench/benchplot -scaling -in $(SCALING_OUT) -out $(dir $(SCALING_OUT))

## soak: node with SOAK_PODS (300) churning pods for SOAK_DURATION (10m); prints the growth line and
## writes soak.png, samples.csv and profiles to SOAK_OUT (soak-out). Not part of make test.
soak:
	$(GO) build -o bin/node ./cmd/node
	$(GO) build -o bin/soak ./tests/soak
	./bin/soak -node bin/node

## bench-fleet: simulated nodes x 1,000 flipping keys through an aggregator process (changes/s, p99, B/key)
bench-fleet:
	$(GO) test -run '^$$' -bench Fleet -benchtime 1x -timeout 20m ./tests/fleetbench/

## cluster-failover: three test members x 60 pods on loopback; SIGKILL and restart one, 10 rounds in a row,
## holding failover to the failure timeout + 2 s and rebalance to twice it; prints the measured times
.PHONY: cluster-failover
cluster-failover:
	PROBEACTOR_CLUSTER_ROUNDS=10 $(GO) test -race -count=1 -run TestFailoverAndRebalanceWithRealProcesses -v -timeout 30m ./cluster/internal/testmember/

## cluster-failover-node: three `node run --cluster --fleet` members x 60 pods with HTTP probes and an aggregator;
## SIGKILL and restart one, 10 rounds, failover within the fencing bound + 2 s and rebalance within twice the
## failure timeout, no overlap on the hand-back
## (without the race detector: node's own speed; make test runs one round under it)
.PHONY: cluster-failover-node
cluster-failover-node:
	PROBEACTOR_CLUSTER_ROUNDS=10 $(GO) test -count=1 -run TestClusterFailoverWithRealNodes -v -timeout 30m ./cmd/node/

## cluster-fence-node: three `node run --cluster` members x 12 pods; SIGSTOP one member's node process (not
## its containers) past the fencing bound, then SIGCONT; 10 rounds, the process table sampled every 100 ms: no pod
## ever has two live containers, fenced by lease + grace, failover within the bound + 5 s, settled within 15 s
.PHONY: cluster-fence-node
cluster-fence-node:
	PROBEACTOR_FENCE_ROUNDS=10 $(GO) test -count=1 -run TestAFrozenMemberIsFencedAndNoPodRunsTwice -v -timeout 30m ./cmd/node/

## cluster-partition-node: three `node run --cluster` members in their own network namespaces (veth, bridge,
## mutual TLS; needs root); cut one member's link past the fencing bound, then restore it; 10 rounds, the process
## table sampled every 100 ms: no pod ever has two live containers, failover within the bound + 5 s, settled in 15 s
.PHONY: cluster-partition-node
cluster-partition-node:
	PROBEACTOR_PARTITION_ROUNDS=10 $(GO) test -count=1 -run TestAMemberCutOffByTheNetworkIsFencedAndNoPodRunsTwice -v -timeout 30m ./cmd/node/

## cluster-blackbox: three members share PODS pods x 2 HTTP probes every PERIOD s against one loopback server
## (default 336 x 2 / 1 s = 672 probes/s, the rate of 20,160 checks every 30 s); probes/s and CPU per member
PODS   ?= 336
PERIOD ?= 1
WINDOW ?= 30
.PHONY: cluster-blackbox
cluster-blackbox:
	PROBEACTOR_BLACKBOX_PODS=$(PODS) PROBEACTOR_BLACKBOX_PERIOD=$(PERIOD) PROBEACTOR_BLACKBOX_WINDOW=$(WINDOW) \
		$(GO) test -run '^$$' -bench ClusterBlackbox -benchtime 1x -v -timeout 30m ./cmd/node/

## restart-bench: node with PODS pods (default 500: one `sleep` each, HTTP readiness and TCP liveness
## probes every 1-2 s); SIGKILL node, start it again on the same --root-dir; seconds until /pods lists
## every pod, until every container is adopted and ready and probed again, and the containers
## restarted (goal 0); then a graceful stop that must leave no process (without the race detector)
# PODS is shared with cluster-blackbox (336 there): 500 here unless PODS came from the command line or
# the environment.
.PHONY: restart-bench
restart-bench: PODS := $(if $(filter file,$(origin PODS)),500,$(PODS))
restart-bench:
	PROBEACTOR_RESTART_PODS=$(PODS) $(GO) test -run '^$$' -bench NodeRestart -benchtime 1x -v -timeout 20m ./cmd/node/

clean:
	rm -rf bin

# The fleet wire protocol (wire/fleetv1): protoc from Debian's protobuf-compiler (installed here when
# missing) drives protoc-gen-go at the version go.mod pins; the generated code is committed.
PROTOS      = wire/fleetv1/fleet.proto wire/clusterv1/cluster.proto
PROTOC_GEN  = bin/protoc-gen-go
SUDO       := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

## browser: install Debian's chromium when missing (the status page's test drives it headless)
browser:
	@command -v chromium >/dev/null || { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq chromium; }

## screenshot: docs/statuspage.png, the status page with the demo pod running, taken by headless Chromium
screenshot: browser
	PROBEACTOR_SCREENSHOT=$(CURDIR)/docs/statuspage.png $(GO) test -count=1 -run TestStatusPageInChromium -timeout 5m ./tests/e2e/

## protoc: install Debian's protobuf-compiler when protoc is missing
protoc:
	@command -v protoc >/dev/null || { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq protobuf-compiler; }

$(PROTOC_GEN): go.mod go.sum
	$(GO) build -o $@ google.golang.org/protobuf/cmd/protoc-gen-go

## proto: regenerate the committed Go code of every .proto file
proto: protoc $(PROTOC_GEN)
	protoc --plugin=protoc-gen-go=$(PROTOC_GEN) -I . --go_out=. --go_opt=module=github.com/probeactor/probeactor $(PROTOS)

## proto-check: fail when the committed generated code differs from what `make proto` produces
## (the protoc version line of the header is ignored: it names the Debian release, not the code)
proto-check: protoc $(PROTOC_GEN)
	@tmp=$$(mktemp -d) && trap 'rm -rf $$tmp' EXIT && \
	protoc --plugin=protoc-gen-go=$(PROTOC_GEN) -I . --go_out=$$tmp --go_opt=module=github.com/probeactor/probeactor $(PROTOS) && \
	for f in $$(cd $$tmp && find . -name '*.pb.go'); do \
		diff -u -I '^// 	protoc  ' "$$f" "$$tmp/$$f" >/dev/null || { echo "$$f is stale: run make proto"; diff -u -I '^// 	protoc  ' "$$f" "$$tmp/$$f" | head -40; exit 1; }; \
	done && echo "generated protobuf code is up to date"
