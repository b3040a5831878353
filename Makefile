# probeactor — every command a user or CI needs. Only Go is required; `go` fetches everything else.
GO      ?= go
GOFILES  = $(shell find . -name '*.go' -not -path './.git/*')

.PHONY: all build run test vet fmt fmt-check bench clean

all: build

## build: compile every package and the node binary into ./bin
build:
	$(GO) build ./...
	$(GO) build -o bin/node ./cmd/node

## run: the embedded demo — a pod of demo containers probed, restarted and served on 127.0.0.1:10255
run:
	@$(GO) build -o bin/node ./cmd/node
	./bin/node run

## test: formatting, vet, and the whole suite under the race detector (CI runs exactly this)
test: fmt-check vet
	$(GO) test -race -shuffle=on -count=1 -timeout 20m ./...

vet:
	$(GO) vet ./...

fmt:
	gofmt -w $(GOFILES)

fmt-check:
	@out=$$(gofmt -l $(GOFILES)); if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

## bench: the architecture study (actor vs kubelet-style), benchstat-friendly output
bench:
	$(GO) test -run '^$$' -bench . -benchmem -timeout 60m ./tests/bench/...

clean:
	rm -rf bin
