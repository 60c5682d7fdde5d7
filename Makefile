# mutatis — see README.md. Every target works on a fresh machine with Go
# installed; modules come from the Go module proxy.
GO       ?= go
BIN      := bin/mutatis
PKGS     := ./...
FUZZTIME ?= 10s
FUZZFLAGS ?=
FUZZCORPUS ?= 200

.PHONY: all build test test-long run lint bench fuzz fuzz-long fuzz-corpus clean e2e load dist image release-test cross convert-oracle vsix screenshots

all: lint build test

# The release being prepared: the tag of the image (`make image`), of
# deploy/ and of the chart (TestReleaseVersionIsEverywhere checks they
# agree). The commit and its time are stamped into the binary beside it
# (`mutatis version`); the commit's time is also SOURCE_DATE_EPOCH, the
# time of every archive entry and image timestamp, so that a commit always
# gives the same archives and image digest (docs/release.md).
VERSION ?= v0.1.0
IMAGE_REPO ?= ghcr.io/mutatis-dev/mutatis
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)$(shell git diff --quiet HEAD -- 2>/dev/null || echo -dirty)
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
BUILD_DATE := $(shell TZ=UTC git log -1 --date=format-local:%Y-%m-%dT%H:%M:%SZ --format=%cd 2>/dev/null || echo unknown)
STAMPS := -X github.com/mutatis-dev/mutatis/internal/buildinfo.version=$(VERSION) \
	-X github.com/mutatis-dev/mutatis/internal/buildinfo.commit=$(COMMIT) \
	-X github.com/mutatis-dev/mutatis/internal/buildinfo.date=$(BUILD_DATE)

build:
	$(GO) build -ldflags "$(STAMPS)" -o $(BIN) ./cmd/mutatis

# Unit and differential tests, race detector on; then the chart's test,
# a module of its own (deploy/charttest: Helm's dependencies stay out of
# mutatis' go.mod, docs/release.md). -timeout 20m: the scheme package's
# tests take about 5 minutes under -race on 2 quiet cores and passed go
# test's default 10-minute bound once on a loaded machine (docs/ci.md).
test:
	$(GO) test -race -count=1 -timeout 20m $(PKGS)
	cd deploy/charttest && $(GO) test -race -count=1 ./...

# The source engines' answers on `mutatis convert`'s corpus, recorded into
# convert/testdata/oracle (docs/migrate.md, "The proof"): the inputs (the
# corpus objects as admission webhooks receive them), then Gatekeeper
# v3.23's mutation system in a module of its own (convert/oracle: the
# engines' dependencies stay out of mutatis' go.mod), then Kyverno v1.19's
# `kyverno apply` engine in a second one (convert/oracle/kyverno: Kyverno's
# module graph, with its replace of k8s.io/pod-security-admission), then the
# check CI runs. Not part of CI: it builds the engines from the module proxy
# (Kyverno's first build takes about half an hour on 2 cores).
convert-oracle:
	$(GO) test -count=1 -run '^TestOracleInputs$$' ./convert/ -update
	cd convert/oracle && $(GO) run ./gatekeeper ../testdata
	cd convert/oracle/kyverno && $(GO) run . ../../testdata
	$(GO) test -count=1 -run '^TestOracle$$' ./convert/

# `make test` with MUTATIS_LONG=1: the oracle sweeps (every kind ×
# perturbations, randomized patches and objects) at their full sizes rather
# than the default run's, which proves each property on every kind once
# (docs/ci.md, "Time").
test-long:
	MUTATIS_LONG=1 $(MAKE) test

# Release archives for every platform in DIST (static, trimmed, stripped,
# stamped), with SHA256SUMS (docs/release.md).
DIST      ?= dist
PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64
RELEASE   := $(GO) run ./internal/release/cmd/release
# DIST_SCRATCH_CACHE=1: `make dist` builds each platform that `make image`
# does not rebuild with a Go build cache of its own, removed once its binary
# is built, so that the disk holds one such platform's compiled packages
# (about 2 GB) at a time rather than all of them (.ci/run; docs/release.md).
DIST_SCRATCH_CACHE ?=
# BUILD_FOR builds the binary of each platform of $$platforms into
# $(DIST)/build/<os>_<arch>/; with $$scratch=1, those not in
# IMAGE_PLATFORMS are built with a scratch build cache, removed after.
BUILD_FOR = for p in $$platforms; do os=$${p%/*}; arch=$${p\#*/}; ext=; [ $$os != windows ] || ext=.exe; \
	  cache=; case " $(IMAGE_PLATFORMS) " in *" $$p "*) ;; *) [ "$$scratch" != 1 ] || cache=$(abspath $(DIST))/.gocache-$${os}_$${arch};; esac; \
	  echo "go build $$os/$$arch$${cache:+ (scratch build cache)}"; \
	  env $${cache:+GOCACHE=$$cache} CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags "-s -w $(STAMPS)" \
	    -o $(DIST)/build/$${os}_$${arch}/mutatis$$ext ./cmd/mutatis; rc=$$?; \
	  [ -z "$$cache" ] || rm -rf $$cache; [ $$rc = 0 ] || exit 1; \
	done
dist:
	rm -f $(DIST)/mutatis_*.tar.gz $(DIST)/mutatis_*.zip
	@platforms="$(PLATFORMS)"; scratch="$(DIST_SCRATCH_CACHE)"; $(BUILD_FOR)
	$(RELEASE) archives -dist $(DIST) -version $(VERSION) -source-date-epoch $(SOURCE_DATE_EPOCH) \
	  -platforms $$(echo $(PLATFORMS) | tr ' ' ,) LICENSE README.md

# A compile check of cmd/mutatis for CROSS_PLATFORMS with the release's
# flags, the binary discarded: what CI builds of the platforms whose
# archives only `make dist` builds, at release time (.ci/run, docs/release.md).
CROSS_PLATFORMS ?= windows/amd64
cross:
	@for p in $(CROSS_PLATFORMS); do os=$${p%/*}; arch=$${p#*/}; echo "go build $$os/$$arch (checked, not kept)"; \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags "-s -w $(STAMPS)" -o /dev/null ./cmd/mutatis || exit 1; \
	done

# The OCI image $(IMAGE_REPO):$(VERSION) for IMAGE_PLATFORMS, built without
# a container daemon into $(DIST)/image (an OCI layout) and tarballs
# (docs/deploy.md says how to push it or load it into kind).
IMAGE_PLATFORMS ?= linux/amd64 linux/arm64
image:
	@platforms="$(IMAGE_PLATFORMS)"; scratch=; $(BUILD_FOR)
	$(RELEASE) image -dist $(DIST) -version $(VERSION) -revision $(COMMIT) -source-date-epoch $(SOURCE_DATE_EPOCH) \
	  -repository $(IMAGE_REPO) -platforms $$(echo $(IMAGE_PLATFORMS) | tr ' ' ,)

# What `make dist` and `make image` wrote, checked: the host's archive
# extracted and its binary run, SHA256SUMS, the image read back and its
# binary run (internal/release, TestDist*).
release-test:
	MUTATIS_DIST=$(abspath $(DIST)) MUTATIS_VERSION=$(VERSION) MUTATIS_PLATFORMS="$(PLATFORMS)" \
	  MUTATIS_IMAGE_PLATFORMS="$(IMAGE_PLATFORMS)" $(GO) test -count=1 -run 'TestDist' -v ./internal/release/

# End-to-end tests against a real kube-apiserver v1.37.1 and etcd, built from
# the Go module proxy into .cache/e2e (cold build: see docs/e2e.md; reused
# afterwards). MUTATIS_E2E_CACHE moves the cache.
e2e:
	bash test/e2e/build.sh
	MUTATIS_E2E=1 $(GO) test -race -count=1 -timeout 40m ./test/e2e/ -v

# The main job on an embedded default: serve the example policies as an
# admission webhook on 127.0.0.1:8443 (no cluster needed; a CA and serving
# certificate are made in .run/certs). Send it a Pod from another terminal:
#   bin/mutatis review -f webhook/testdata/pod.yaml
run: build
	@echo "mutatis serves the example policies on https://127.0.0.1:8443 (Ctrl-C stops it)."
	@echo "Next, in another terminal, send it a Pod and see the patch:"
	@echo "  $(BIN) review -f webhook/testdata/pod.yaml"
	./$(BIN) serve --policies examples/ --resources examples/ --self-signed-dir .run/certs --listen 127.0.0.1:8443

# The VS Code extension (editors/vscode, docs/editors.md): type-checked
# with tsc, bundled with esbuild and packed by vsce into
# editors/vscode/mutatis.vsix. It needs npm (the npm registry); without it
# the target says so and succeeds, as CI's step does.
vsix:
	@if ! command -v npm >/dev/null 2>&1; then echo "vsix: npm not found, the VS Code extension is not built (docs/editors.md)"; exit 0; fi; \
	cd editors/vscode && npm ci --no-audit --no-fund && npm run check && npm run package

# The screenshots of docs/editors.md (docs/images/lsp-*.svg), captured from
# a real session: Neovim's LSP client and `mutatis lsp` in a tmux pane
# (editors/screenshots/capture.sh). Needs nvim and tmux (apt-get install
# neovim tmux); not run by CI.
screenshots:
	./editors/screenshots/capture.sh

# vet with -race: it compiles every package it checks and their
# dependencies, and with the flags of `make test` those compiles are the
# ones `make test` then reuses (no file of mutatis has a race build tag, so
# vet checks the same files; docs/ci.md).
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet -race $(PKGS)
	$(GO) mod tidy -diff
	cd deploy/charttest && $(GO) mod tidy -diff

# Side-by-side benchmarks of k8s.io/apiserver and mutatis (test/bench,
# benchstat-ready output in bin/bench.txt), then the tables of
# docs/performance.md (medians of BENCHCOUNT runs, ratios, targets).
# Component benchmarks: go test -run='^$$' -bench=. -benchmem ./...
BENCHCOUNT ?= 5
BENCHTIME  ?= 300ms
BENCHNOTE  ?=
bench:
	@mkdir -p bin
	{ $(GO) test -run='^$$' -bench=. -benchmem -count=$(BENCHCOUNT) -benchtime=$(BENCHTIME) -timeout=60m ./test/bench; \
	  echo $$? > bin/bench.rc; } | tee bin/bench.txt; exit $$(cat bin/bench.rc)
	$(GO) run ./test/bench/cmd/perfdoc -in bin/bench.txt -doc docs/performance.md \
	  -command "make bench BENCHCOUNT=$(BENCHCOUNT) BENCHTIME=$(BENCHTIME)" -note "$(BENCHNOTE)"

# The webhook under load (test/load): AdmissionReviews over loopback TLS at
# fixed rates against test/load/testdata/policies (20 policies) served by
# `bin/mutatis serve` as its own process (loadgen --serve-binary: the
# server's CPU reported apart from the generator's), then the table of
# docs/performance.md, "Webhook under load".
# Not part of `make test` (about 1.5 minutes); its unit tests and a short
# smoke run are. LOADNOTE describes the conditions (other load…).
LOADRATES    ?= 500,1000,2000
LOADDURATION ?= 20s
LOADNOTE     ?=
load: build
	$(GO) run ./test/load/cmd/loadgen --serve-binary $(BIN) --rates $(LOADRATES) --duration $(LOADDURATION) \
	  --doc docs/performance.md --command "make load LOADRATES=$(LOADRATES) LOADDURATION=$(LOADDURATION)" --note "$(LOADNOTE)"

# FOR_EACH_FUZZ ... ; done; done runs its body once per fuzz target, with
# $$pkg (import path), $$dir (its directory) and $$f (the target) set.
FOR_EACH_FUZZ = for pd in $$($(GO) list -f '{{.ImportPath}}:{{.Dir}}' $(PKGS)); do \
	  pkg=$${pd%%:*}; dir=$${pd\#*:}; \
	  for f in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go 2>/dev/null | sed 's/func //'); do

# Short runs of every fuzz target (FUZZTIME each). FUZZFLAGS is passed on to
# go test, e.g. FUZZFLAGS=-parallel=1 for one fuzzing worker on a shared
# machine.
fuzz:
	@set -e; $(FOR_EACH_FUZZ) \
	    echo "== $$pkg $$f"; $(GO) test -run='^$$' -fuzz="^$$f$$" -fuzztime=$(FUZZTIME) $(FUZZFLAGS) $$pkg; \
	  done; \
	done

# Every fuzz target for FUZZTIME each (10 minutes by default: about three
# hours for all of them). New crashers are written by go test under the
# package's testdata/fuzz/<Target>/, to be committed with the fix (they
# then run in every `make test`). The inputs the fuzzer found interesting
# stay in $(go env GOCACHE)/fuzz; `make fuzz-corpus` then copies them into
# testdata/fuzz, to be committed (docs/reliability.md, "Fuzzing").
fuzz-long:
	$(MAKE) fuzz FUZZTIME=$(if $(filter 10s,$(FUZZTIME)),10m,$(FUZZTIME))

# Refreshes the committed corpora: copies the smallest inputs the fuzzer
# kept in $(go env GOCACHE)/fuzz/<import path>/<Target>/ into the package's
# testdata/fuzz/<Target>/, where they run as seeds in every `go test`, until
# a target has FUZZCORPUS files there (committed files are never removed).
# Inputs of an older signature of the target (a different list of types
# than the newest input's) are left out: go test refuses them.
# Check the time of `make test` before committing.
fuzz-corpus:
	@cache=$$($(GO) env GOCACHE)/fuzz; $(FOR_EACH_FUZZ) \
	    src=$$cache/$$pkg/$$f; dst=$$dir/testdata/fuzz/$$f; [ -d $$src ] || continue; \
	    have=$$(ls $$dst 2>/dev/null | wc -l); n=0; mkdir -p $$dst; \
	    shape=$$(sed -n '2,$$s/(.*//p' $$src/$$(ls -t $$src | head -1)); \
	    for c in $$(ls -Sr $$src); do \
	      [ $$((have + n)) -lt $(FUZZCORPUS) ] || break; \
	      [ -e $$dst/$$c ] || [ "$$(sed -n '2,$$s/(.*//p' $$src/$$c)" != "$$shape" ] || \
	        { cp $$src/$$c $$dst/; n=$$((n + 1)); }; \
	    done; \
	    echo "$$pkg $$f: $$n copied, $$((have + n)) in testdata"; \
	  done; \
	done

clean:
	rm -rf bin $(DIST)
