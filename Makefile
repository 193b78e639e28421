# The two commands of the README, a thin layer over CMake and scripts/.
#   make demo   install what is missing, build, run the seed lab end to end
#   make test   install what is missing, build, run the whole suite (ctest)
# the recursive makes of CMake's build say nothing about directories
MAKEFLAGS += --no-print-directory
BUILD   ?= build
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=

.PHONY: all deps build demo test test-unit test-integration asan clean format

all: build

deps:
	@bash scripts/deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

demo: build
	@SAGA_BIN_DIR=$(abspath $(BUILD))/bin bash scripts/demo.sh

test: build
	@cd $(BUILD) && ctest --output-on-failure -j 2 $(CTEST_ARGS)

test-unit: build
	@cd $(BUILD) && ctest --output-on-failure -L unit

test-integration: build
	@cd $(BUILD) && ctest --output-on-failure -L integration

# The ASan/UBSan build and suite, in its own build folder.
asan:
	@$(MAKE) test BUILD=build-asan CMAKE_FLAGS="-DSAGA_SANITIZER=address,undefined"

# The long deterministic simulation run of docs/testing.md ("Simulation").
.PHONY: sim-long
sim-long: build
	@cmake --build $(BUILD) --target sim-long

# Fuzzing (docs/testing.md, "Fuzzing"): the fuzz targets built with clang
# for libFuzzer under ASan and UBSan in build-fuzz, each run FUZZ_SECS
# seconds (CI: 40). fuzz-corpus rewrites the seed corpus.
FUZZ_SECS ?= 300
.PHONY: fuzz fuzz-corpus
fuzz:
	@bash scripts/deps.sh fuzz
	@cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DSAGA_FUZZ=ON -DSAGA_SANITIZER=address,undefined -DSAGA_WERROR=OFF >/dev/null
	@cmake --build build-fuzz -j $(JOBS) --target fuzz_targets
	@bash tests/fuzz/run.sh build-fuzz $(FUZZ_SECS)

fuzz-corpus: build
	@rm -rf tests/fuzz/corpus && $(BUILD)/bin/fuzz_seeds tests/fuzz/corpus

format:
	@clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD) build-asan build-fuzz

# The benchmark of docs/benchmarks.md: pgbench's limit L on a durable
# throwaway cluster, then sagabench at C=1, C=64 and half the peak rate
# (bench/compare.sh; about 4 minutes). Knobs: RUNS, BENCH_SECS, PGB_SECS, MIX.
# Then bench/tls.sh: plain against mutual TLS, alternating (about 3 minutes),
# bench/metrics.sh: scraped once a second against not (about 3 minutes),
# bench/feed.sh: the console and a feed follower against neither (about 3
# minutes), bench/retention.sh: a retention pass running against none
# (about 5 minutes), and bench/listing.sh: each listing filter's p99 and
# StartSaga's, quiet and while 8 clients list, on 1 M sagas
# (LISTING_SAGAS=10000000 for 10 M; about 3 minutes at 1 M).
.PHONY: bench bench-tls bench-metrics bench-feed bench-retention bench-listing
bench: build
	@SAGA_BIN_DIR=$(abspath $(BUILD))/bin bash bench/compare.sh
	@SAGA_BIN_DIR=$(abspath $(BUILD))/bin bash bench/tls.sh
	@SAGA_BIN_DIR=$(abspath $(BUILD))/bin bash bench/metrics.sh
	@SAGA_BIN_DIR=$(abspath $(BUILD))/bin bash bench/feed.sh
	@SAGA_BIN_DIR=$(abspath $(BUILD))/bin bash bench/retention.sh
	@SAGA_BIN_DIR=$(abspath $(BUILD))/bin bash bench/listing.sh

bench-listing: build
	@SAGA_BIN_DIR=$(abspath $(BUILD))/bin bash bench/listing.sh

bench-retention: build
	@SAGA_BIN_DIR=$(abspath $(BUILD))/bin bash bench/retention.sh

bench-feed: build
	@SAGA_BIN_DIR=$(abspath $(BUILD))/bin bash bench/feed.sh

bench-metrics: build
	@SAGA_BIN_DIR=$(abspath $(BUILD))/bin bash bench/metrics.sh

bench-tls: build
	@SAGA_BIN_DIR=$(abspath $(BUILD))/bin bash bench/tls.sh

# The compose stack for real on podman (tests/compose/run.sh, as root):
# builds the images, runs the seed lab and an orchestrator kill through
# docker-compose, tears everything down. Skips only where containers cannot run.
.PHONY: test-compose
test-compose: deps
	@bash tests/compose/run.sh
