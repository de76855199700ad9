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

GO       ?= go
BIN      ?= bin/waitroom
ARGS     ?=
FUZZTIME ?= 10s

.PHONY: all build run deps test layout bench fuzz fmt clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/waitroom

run: build
	./$(BIN) serve $(ARGS)

# deps installs what the tests need and the machine lacks (as root on Debian;
# elsewhere it says what is missing). The list lives in .ci/deps.
deps:
	@bash .ci/deps

test: deps
	$(GO) vet ./...
	$(GO) test -race -count=1 ./...

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
	rm -rf bin
