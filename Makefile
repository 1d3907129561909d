# lessim: `make demo` runs the main job on embedded defaults; `make test` runs
# everything the project tests (the pure-Go simulator and the cgo llama.cpp
# runtime). Both set themselves up: Go modules come from the module proxy and
# llama.cpp's C/C++ sources from the pinned github.com/ollama/ollama module.

GO      ?= go
BIN     := bin
export PATH := /usr/local/go/bin:$(PATH)

# The llama.cpp/ggml headers live in the ollama module directory; nothing
# third-party is copied into this repository.
LLAMA_ENV = OD=$$($(GO) list -m -f '{{.Dir}}' github.com/ollama/ollama) && \
	export CGO_ENABLED=1 CGO_CPPFLAGS="-I$$OD/llama/llama.cpp/include -I$$OD/ml/backend/ggml/ggml/include"

STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: all build build-sim demo test test-sim test-runtime bench bench-runtime lint fmt deps clean

all: build

deps:
	$(GO) mod download

# build: the full tool, with the llama.cpp runtime (first build ~5 minutes, then cached).
build: deps
	$(LLAMA_ENV) && $(GO) build -tags llamacpp -o $(BIN)/lessim ./cmd/lessim

# build-sim: the pure-Go tool (everything but record/live), builds in seconds.
build-sim: deps
	$(GO) build -o $(BIN)/lessim-sim ./cmd/lessim

# demo: the main job on the embedded defaults (no files needed): the stock
# baseline and each LES step for MiniCPM-V 4.7 35B-A3B on an iPhone 17 Pro Max.
demo: build-sim
	@bash scripts/demo.sh $(BIN)/lessim-sim

test: lint test-sim test-runtime

test-sim: deps
	$(GO) test -count=1 ./...

test-runtime: deps
	$(LLAMA_ENV) && $(GO) test -count=1 -tags llamacpp ./runtime/... ./cmd/...

bench: deps
	$(GO) test -run '^$$' -bench . -benchtime 3x ./sim/ ./policies/ ./traces/

bench-runtime: deps
	$(LLAMA_ENV) && $(GO) test -tags llamacpp -run '^$$' -bench . -benchtime 1x ./runtime/...

lint: deps
	@test -z "$$(gofmt -l .)" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	$(LLAMA_ENV) && $(GO) vet -tags llamacpp ./runtime/... ./cmd/... && $(GO) run $(STATICCHECK) -tags llamacpp ./runtime/... ./cmd/...

fmt:
	gofmt -w .

clean:
	rm -rf $(BIN)
