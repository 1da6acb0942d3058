# Drover's build. `make build` puts the drover binary in bin/ and the
# built-in scheduler plugins, compiled to WebAssembly, in bin/plugins/,
# where the binary looks for them.

GO      ?= go
BIN     := bin
PLUGINS := $(patsubst plugins/%/main.go,%,$(wildcard plugins/*/main.go))
ADDR    ?= 127.0.0.1:4646

.PHONY: all build drover plugins goplugins examples test race foreign-abi run clean

all: build

build: drover plugins

drover:
	$(GO) build -o $(BIN)/drover ./cmd/drover

plugins: $(PLUGINS:%=$(BIN)/plugins/%.wasm)

$(BIN)/plugins/%.wasm: FORCE
	@mkdir -p $(BIN)/plugins
	GOOS=wasip1 GOARCH=wasm $(GO) build -buildmode=c-shared -o $@ ./plugins/$*

# The same plugins as native go-plugin executables (drover bench scheduler
# -runtime goplugin looks for them in bin/goplugins).
goplugins: $(PLUGINS:%=$(BIN)/goplugins/%)

$(BIN)/goplugins/%: FORCE
	@mkdir -p $(BIN)/goplugins
	$(GO) build -o $@ ./plugins/$*

FORCE:

# The example plugins, each built both ways: bin/examples/NAME.wasm and the
# go-plugin binary bin/examples/NAME.
EXAMPLES := $(patsubst examples/plugins/%/main.go,%,$(wildcard examples/plugins/*/main.go))

examples:
	@mkdir -p $(BIN)/examples
	@for e in $(EXAMPLES); do \
	  echo "GOOS=wasip1 GOARCH=wasm $(GO) build -buildmode=c-shared -o $(BIN)/examples/$$e.wasm ./examples/plugins/$$e" && \
	  GOOS=wasip1 GOARCH=wasm $(GO) build -buildmode=c-shared -o $(BIN)/examples/$$e.wasm ./examples/plugins/$$e && \
	  echo "$(GO) build -o $(BIN)/examples/$$e ./examples/plugins/$$e" && \
	  $(GO) build -o $(BIN)/examples/$$e ./examples/plugins/$$e || exit 1; \
	done

# Tests use the plugins and binary built here rather than building their own.
# What the tests need to find the built plugins and binary.
TEST_ENV = DROVER_PLUGIN_DIR=$(CURDIR)/$(BIN)/plugins DROVER_BIN=$(CURDIR)/$(BIN)/drover

test: build
	$(TEST_ENV) $(GO) test ./...

# The host's concurrent packages under the race detector (needs cgo and a C
# compiler). Left out: the packages that compile wasm plugins in their
# tests (instrumented, wazero's compiler makes runtime/wasm take 3.5 min
# and runtime/containment 4.5 min) and the end-to-end tests.
RACE_PKGS = ./host/server ./host/broker ./host/blocked ./host/fsm ./host/plan ./host/state ./host/httpapi ./host/telemetry ./host/events ./runtime ./runtime/goplugin
race: build
	$(TEST_ENV) CGO_ENABLED=1 $(GO) test -race $(RACE_PKGS)

# The ABI as a plugin in another language sees it: the Rust example
# (examples/plugins/firstfit-rust), built with rustc for WASI preview 1
# (wasm32-wasi, or wasm32-wasip1 from rustc 1.78), run in the wasm runtime
# and in a dev agent. Needs rustc and that target's std (Debian: rustc
# libstd-rust-dev-wasm32); the tests fail without them.
RUSTC ?= /usr/bin/rustc
foreign-abi: build
	$(TEST_ENV) RUSTC=$(RUSTC) $(GO) test -tags foreignabi -run ForeignABI ./examples/plugins/firstfit-rust/ ./cmd/drover/

# Starts a dev agent with simulated nodes, runs the example jobs, shows
# them, and keeps the agent running until Ctrl-C.
run: build
	@$(BIN)/drover agent -dev -dev-nodes 10 -http-addr $(ADDR) -log-level warn & \
	  agent=$$!; trap 'kill $$agent 2>/dev/null' EXIT INT TERM; \
	  export DROVER_ADDR=http://$(ADDR); \
	  for i in $$(seq 1 100); do $(BIN)/drover node status >/dev/null 2>&1 && break; sleep 0.1; done; \
	  for f in examples/jobs/*.hcl; do echo "==> drover job run $$f"; $(BIN)/drover job run $$f; done; \
	  echo "==> drover job status"; $(BIN)/drover job status; \
	  echo "==> drover job status web"; $(BIN)/drover job status web; \
	  echo "==> drover service info web"; $(BIN)/drover service info web; \
	  echo "==> Dev agent running at http://$(ADDR); Ctrl-C stops it."; wait $$agent || true

clean:
	rm -rf $(BIN)
