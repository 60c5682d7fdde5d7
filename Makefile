# mutatis — see README.md. Every target works on a fresh machine with Go
# installed; modules come from the Go module proxy.
GO       ?= go
BIN      := bin/mutatis
PKGS     := ./...
FUZZTIME ?= 10s

.PHONY: all build test run lint bench fuzz clean

all: lint build test

build:
	$(GO) build -o $(BIN) ./cmd/mutatis

# Unit and differential tests, race detector on.
test:
	$(GO) test -race -count=1 $(PKGS)

# The main job on an embedded default: lint the example policies and show
# the static cost of every expression (no cluster needed).
run: build
	./$(BIN) lint examples/

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

bench:
	$(GO) test -run='^$$' -bench=. -benchmem $(PKGS)

# Short runs of every fuzz target (FUZZTIME each).
fuzz:
	@set -e; for pkg in $$($(GO) list $(PKGS)); do \
	  dir=$$($(GO) list -f '{{.Dir}}' $$pkg); \
	  for f in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go 2>/dev/null | sed 's/func //'); do \
	    echo "== $$pkg $$f"; $(GO) test -run='^$$' -fuzz="^$$f$$" -fuzztime=$(FUZZTIME) $$pkg; \
	  done; \
	done

clean:
	rm -rf bin
