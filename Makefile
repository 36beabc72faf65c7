# The two commands: `make demo` and `make test`. Both install what is missing
# first (scripts/bootstrap). Everything else here is a convenience.
#
#   make            build (build/)
#   make test       bootstrap, plain build + all tests (unit, integration with
#                   real servers), sanitizer build (ASan+UBSan) + all tests,
#                   fuzz smoke runs (clang/libFuzzer)
#   make demo       bootstrap, build, run the main job on the embedded defaults
#   make test-cluster  the tests labelled "cluster" against a three-node Cassandra
#                   cluster it starts and stops (scripts/run-cluster-tests); not
#                   part of `make test`
#   make unit       plain build, unit tests only (fast, no servers)
#   make asan       sanitizer build + unit tests
#   make fuzz       fuzz build + smoke runs
#   make bench      build and run the benchmarks
#   make docs       regenerate docs/configuration.md from the config definitions
#   make release    Release builds with gcc and clang (what CI checks besides the suite)

JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?= -G Ninja -DCF_WERROR=ON
CTEST = ctest --output-on-failure -j $(JOBS)

.PHONY: all build test test-cluster demo unit asan fuzz bench docs bootstrap clean servers-start servers-stop release

all: build

bootstrap:
	@scripts/bootstrap

build:
	@cmake -S . -B build $(CMAKE_FLAGS) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build build -j $(JOBS)

build-asan:
	@cmake -S . -B build-asan $(CMAKE_FLAGS) -DCMAKE_BUILD_TYPE=Debug -DCF_SANITIZE=ON >/dev/null
	@cmake --build build-asan -j $(JOBS)

build-fuzz:
	@CC=clang cmake -S . -B build-fuzz $(CMAKE_FLAGS) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCF_FUZZ=ON >/dev/null
	@cmake --build build-fuzz -j $(JOBS)

release:
	@cmake -S . -B build-release $(CMAKE_FLAGS) -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build build-release -j $(JOBS)
	@CC=clang cmake -S . -B build-release-clang $(CMAKE_FLAGS) -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build build-release-clang -j $(JOBS)

unit: build
	cd build && $(CTEST) -L unit

asan: build-asan
	cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 $(CTEST) -L unit

fuzz: build-fuzz
	cd build-fuzz && $(CTEST) -L fuzz

# The whole suite. Servers are started once (scripts/servers) and stopped at
# the end whatever happens; their addresses reach the tests through the
# environment file that scripts/servers writes.
test: bootstrap
	@scripts/run-tests

test-cluster: bootstrap
	@scripts/run-cluster-tests

demo: bootstrap build
	@scripts/demo

bench: build
	@scripts/run-bench

docs: build
	./build/cdcflow config docs > docs/configuration.md

servers-start:
	@scripts/servers start

servers-stop:
	@scripts/servers stop

clean:
	rm -rf build build-asan build-fuzz build-release build-release-clang
