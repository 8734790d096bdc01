# gpunotes: see README.md. `make demo` runs the main job, `make test` the tests.
SHELL := /bin/bash
GO ?= go
BIN := bin/gpunotes
VENV := .venv
PY := $(VENV)/bin/python
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
CHROMIUM ?= /usr/bin/chromium
# go-nvml's cgo glue uses declarations newer drivers deprecate; the warnings are noise.
export CGO_CFLAGS ?= -O2 -g -Wno-deprecated-declarations

.PHONY: all build demo test test-go fuzz lint venv apt-deps bench bench-kernel bench-kernel-profile bench-gpu test-gpu install generate clean

all: build

build:
	$(GO) build -o $(BIN) .

# The test virtualenv is rebuilt whenever requirements-test.txt changes.
$(VENV)/.stamp: requirements-test.txt
	rm -rf $(VENV)
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements-test.txt
	cp requirements-test.txt $@

# The papermill translator (python/gpunotes-papermill) is reinstalled when it changes.
$(VENV)/.papermill: $(VENV)/.stamp python/gpunotes-papermill/pyproject.toml $(wildcard python/gpunotes-papermill/gpunotes_papermill/*.py)
	$(PY) -m pip install -q --no-deps --force-reinstall ./python/gpunotes-papermill
	touch $@

venv: $(VENV)/.papermill

# Debian's chromium (browser tests) and slurm-wlm + munge (SLURM tests), after one apt-get update.
apt-deps:
	GPUNOTES_CHROMIUM=$(CHROMIUM) ./.ci/apt-deps.sh

lint:
	@$(GO) mod tidy -diff || { echo "go.mod or go.sum is not tidy: run go mod tidy"; exit 1; }
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

# Tests that drive real clients find them through these variables; under CI=true a missing
# client is a failure, never a skip.
TEST_ENV = GPUNOTES_BIN=$(CURDIR)/$(BIN) GPUNOTES_PYTHON=$(CURDIR)/$(PY) GPUNOTES_CHROMIUM=$(CHROMIUM)

test: venv apt-deps build lint
	$(TEST_ENV) $(GO) test -count=1 -timeout 40m ./...
	$(MAKE) fuzz

# Every fuzz target of .ci/fuzz-targets for its count of inputs (about 3 minutes in all).
fuzz:
	$(TEST_ENV) GO=$(GO) ./.ci/fuzz.sh

demo: build
	mkdir -p out
	$(BIN) run notebooks/01-cpu-vs-gpu.ipynb -o out/01-cpu-vs-gpu.ipynb

generate:
	$(GO) generate ./...

install: build
	$(BIN) install --user

bench: venv build
	$(TEST_ENV) ./bench/cpu.sh

# Kernel latency next to ipykernel, three rounds taking turns, appended to bench/RESULTS.md.
bench-kernel: venv build
	$(TEST_ENV) $(PY) bench/kernel_bench.py --gpunotes $(CURDIR)/$(BIN) --repeat 3 --append bench/RESULTS.md

# Where a trivial cell's round trip goes (client send, wire, our handler, client decode).
bench-kernel-profile: venv build
	d=$$(mktemp -d) && JUPYTER_DATA_DIR=$$d $(BIN) install >/dev/null && $(PY) -m ipykernel install --prefix $$d/py >/dev/null && \
	JUPYTER_DATA_DIR=$$d JUPYTER_PATH=$$d/py/share/jupyter GPUNOTES_HISTORY=$$d/history.jsonl $(PY) bench/kernel_profile.py --kernel gpunotes --kernel python3

# Builds what a GPU machine needs (it has no Go) into .devcarry/; there, from the repository root
# with .devcarry/ beside it, `bash bench/gpu.sh all` runs the GPU tests and the benchmarks.
test-gpu bench-gpu:
	./bench/build-gpu.sh

clean:
	rm -rf bin out .devcarry
