# waitroom: build, run, test and fuzz.
#
#   make build   build bin/waitroom
#   make run     build and run `waitroom serve` (pass flags with ARGS="--addr :9090")
#   make test    install missing tools (as root on Debian), go vet, go test -race
#                (with the Node tests of web/jstest, which need node)
#   make layout  check the package layout alone (part of make test)
#   make bench   run `waitroom bench` (the table in docs/BENCHMARKS.md) and the Go benchmarks
#   make fuzz    run every fuzz target for FUZZTIME (default 10s) each
#   make fmt     format the code
#   make release cross-build static binaries for linux/darwin x amd64/arm64
#                into dist/, with dist/SHA256SUMS
#   make image   build the container image (podman, else docker)

GO       ?= go
BIN      ?= bin/waitroom
ARGS     ?=
FUZZTIME ?= 10s

.PHONY: all build run deps test layout bench fuzz fmt clean release image

# Release stamps. REVISION is the commit with +dirty when git sees changes;
# VERSION is the exact tag of HEAD, else v0.0.0-<commit time>-<commit>, the
# pseudo-version `go install …@<commit>` reports while no tag precedes the
# commit (after a tag vX.Y.Z Go reports vX.Y.(Z+1)-0.<time>-<commit>; set
# VERSION to match if it matters); BUILD_TIME is now, in UTC.
# All three are set with -ldflags -X: Go records VCS information only in a
# plain checkout (not a git worktree, not with GOFLAGS=-buildvcs=false), and
# `waitroom version` prefers what Go recorded where it exists.
GIT_DIRTY  := $(shell git status --porcelain 2>/dev/null | grep -q . && echo +dirty)
REVISION   ?= $(shell git rev-parse HEAD 2>/dev/null)$(GIT_DIRTY)
VERSION    ?= $(shell git describe --tags --exact-match 2>/dev/null || TZ=UTC git log -1 --format='v0.0.0-%cd-%h' --abbrev=12 --date=format-local:%Y%m%d%H%M%S 2>/dev/null)$(GIT_DIRTY)
BUILD_TIME ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
STAMP      := -X main.version=$(VERSION) -X main.revision=$(REVISION) -X main.buildTime=$(BUILD_TIME)
LDFLAGS    := -s -w $(STAMP)
DIST       ?= dist
PLATFORMS  ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64

all: build

build:
	$(GO) build -ldflags '$(STAMP)' -o $(BIN) ./cmd/waitroom

run: build
	./$(BIN) serve $(ARGS)

# deps installs what the tests need and the machine lacks (as root on Debian;
# elsewhere it says what is missing). The list lives in .ci/deps.
deps:
	@bash .ci/deps

# test ends with a summary (internal/testsum): packages passed and failed,
# and every skipped test with its reason, those CI would fail named as such.
# The go test output streams through it as go test prints it. The timeout
# is 30 minutes per package, not go test's 10: cmd/waitroom's tests (real
# processes, browsers, Redis) take about 5 minutes on two idle cores and
# over 10 beside a CPU hog, and CI's machine is shared.
test: deps
	$(GO) vet ./...
	$(GO) build -o bin/testsum ./internal/testsum
	bin/testsum $(GO) test -race -count=1 -timeout 30m -json ./...

# layout checks the house's shape alone (internal/layout: at most nine
# public packages, one assembly in server/, one admission path, one
# trusted-proxy parser, one session cookie, a short serve); make test runs
# it with everything else.
layout:
	$(GO) test -count=1 ./internal/layout

# bench runs the whole suite: first `waitroom bench`, the table of
# docs/BENCHMARKS.md (engine, durable store, HTTP and Redis rows, each next to
# its baseline, measured in the same run; about three minutes on two cores; it
# starts redis-server itself when that is on PATH and reports the Redis rows
# as skipped otherwise), then every package's Go benchmarks (go test -bench .
# at the default 1s per benchmark; about 2.5 minutes more). BENCH_ARGS go to
# `waitroom bench`, e.g. BENCH_ARGS="--json bench.json" or BENCH_ARGS="--quick".
BENCH_ARGS ?=
bench:
	$(GO) run ./cmd/waitroom bench $(BENCH_ARGS)
	$(GO) test -run '^$$' -bench . -benchmem ./...

# fuzz finds the packages whose tests define fuzz targets, asks go test for
# the exact names, and fuzzes each target in turn. A failing target does not
# stop the others; the run fails at the end if any failed. Go 1.26's fuzz
# coordinator can fail a target with a bare "context deadline exceeded" as
# -fuzztime runs out on a busy machine (go.dev/issue/75804, fixed in Go
# 1.27): such a failure, with no failing input written, is run once more.
fuzz:
	@n=0; failed=""; \
	dirs=$$(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -r -n1 dirname | sort -u); \
	for dir in $$dirs; do \
		targets=$$($(GO) test -list '^Fuzz' "$$dir" | grep '^Fuzz' || true); \
		for target in $$targets; do \
			echo "fuzz: $$dir $$target for $(FUZZTIME)"; \
			n=$$((n+1)); \
			log=$$(mktemp); \
			$(GO) test -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME) "$$dir" >"$$log" 2>&1; st=$$?; cat "$$log"; \
			if [ $$st -ne 0 ]; then \
				if grep -q 'context deadline exceeded' "$$log" && ! grep -q 'Failing input written' "$$log"; then \
					echo "fuzz: $$target stopped on Go's fuzztime deadline race (go.dev/issue/75804), not on an input; once more"; \
					$(GO) test -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME) "$$dir" || failed="$$failed $$dir:$$target"; \
				else \
					failed="$$failed $$dir:$$target"; \
				fi; \
			fi; \
			rm -f "$$log"; \
		done; \
	done; \
	echo "fuzz: $$n targets, $(FUZZTIME) each"; \
	if [ -n "$$failed" ]; then echo "fuzz: FAILED:$$failed" >&2; exit 1; fi

fmt:
	$(GO) fmt ./...

clean:
	rm -rf bin $(DIST)

# release cross-builds a static binary per platform (CGO_ENABLED=0: the
# SQLite driver is pure Go; -trimpath: no build machine paths) stamped with
# the version, revision and build time, checks each with `go version -m`
# (platform, CGO_ENABLED=0, -trimpath; -trimpath leaves -ldflags out of the
# build information, so the revision stamp is looked for in the binary) and,
# for linux, `file`
# (statically linked), runs the one this machine can run, and writes
# $(DIST)/SHA256SUMS (check with `sha256sum -c SHA256SUMS`).
release:
	@mkdir -p $(DIST)
	@set -e; names=""; \
	for p in $(PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; out=$(DIST)/waitroom-$$os-$$arch; \
		echo "release: $$out ($(VERSION))"; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $$out ./cmd/waitroom; \
		info=$$($(GO) version -m $$out); \
		for want in "GOOS=$$os" "GOARCH=$$arch" "CGO_ENABLED=0" "-trimpath=true"; do \
			echo "$$info" | grep -qF -- "$$want" || { echo "release: $$out: go version -m lacks $$want" >&2; exit 1; }; \
		done; \
		grep -qaF -- "$(REVISION)" $$out || { echo "release: $$out lacks the revision stamp $(REVISION)" >&2; exit 1; }; \
		if [ $$os = linux ] && command -v file >/dev/null; then \
			file -b $$out | grep -q 'statically linked' || { echo "release: $$out is not statically linked: $$(file -b $$out)" >&2; exit 1; }; \
		fi; \
		if [ $$os = $$($(GO) env GOHOSTOS) ] && [ $$arch = $$($(GO) env GOHOSTARCH) ]; then \
			case $$out in /*) bin=$$out;; *) bin=./$$out;; esac; \
			$$bin version | grep -qF "revision:  $(REVISION)" || { echo "release: $$out version does not name $(REVISION)" >&2; $$bin version >&2; exit 1; }; \
		fi; \
		names="$$names $${out##*/}"; \
	done; \
	cd $(DIST) && sha256sum $$names > SHA256SUMS && sha256sum -c --quiet SHA256SUMS && echo "release: $(DIST)/SHA256SUMS"

# image builds the container image $(IMAGE) from Containerfile with podman
# (or docker where podman is missing). The context is $(DIST)/image: the
# linux binary built here (no registry or RUN step needed; see
# Containerfile), the CA certificates of this machine and the passwd and
# group files of deploy/image/. podman gets --format docker, as HEALTHCHECK
# exists only in that format. CONTAINER_FLAGS go to podman/docker itself
# (e.g. "--storage-driver vfs --root /tmp/store" for a throwaway store).
IMAGE           ?= localhost/waitroom:latest
IMAGE_ARCH      ?= $(shell $(GO) env GOARCH)
CA_CERTS        ?= /etc/ssl/certs/ca-certificates.crt
CONTAINER       ?= $(shell command -v podman >/dev/null 2>&1 && echo podman || (command -v docker >/dev/null 2>&1 && echo docker))
CONTAINER_FLAGS ?=
image:
	@[ -n "$(CONTAINER)" ] || { echo "image: neither podman nor docker is installed (apt-get install podman)" >&2; exit 1; }
	@[ -f "$(CA_CERTS)" ] || { echo "image: no CA certificates at $(CA_CERTS) (apt-get install ca-certificates, or set CA_CERTS)" >&2; exit 1; }
	rm -rf $(DIST)/image && mkdir -p $(DIST)/image/datafs/data/keys && chmod 0700 $(DIST)/image/datafs/data $(DIST)/image/datafs/data/keys
	CGO_ENABLED=0 GOOS=linux GOARCH=$(IMAGE_ARCH) $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(DIST)/image/waitroom ./cmd/waitroom
	cp $(CA_CERTS) $(DIST)/image/ca-certificates.crt
	cp deploy/image/passwd deploy/image/group $(DIST)/image/
	$(CONTAINER) $(CONTAINER_FLAGS) build $(if $(filter podman,$(notdir $(CONTAINER))),--format docker) \
		--platform linux/$(IMAGE_ARCH) --build-arg VERSION=$(VERSION) --build-arg REVISION=$(REVISION) \
		-f Containerfile -t $(IMAGE) $(DIST)/image
