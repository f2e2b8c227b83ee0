# cairn — the two commands are `make run` and `make test`; `make` builds.
# Meson + Ninja do the work; this file installs what is missing and wraps them.
PREFIX ?= /usr/local
BUILD  ?= build
ASAN   ?= build-asan
PY     := /usr/bin/python3
MESON_OPTS ?=

.PHONY: all help build deps asan run test test-unit test-integration fuzz bench test-crash test-slow test-fleet \
        install clean format test-console console-npm console-shots console-golden

all: build

help:
	@echo 'make                    build build/cairnd, build/cairn and libcairn (same as make build)'
	@echo 'make run                build, then run cairnd in the foreground on ./data, loopback only'
	@echo 'make test               test-unit, then test-integration, then test-console'
	@echo 'make test-unit          format and function-length checks, C unit tests on both builds, fuzz harnesses briefly on the ASan one'
	@echo 'make test-integration   pytest against the ASan build'"'"'s real cairnd'
	@echo 'make test-console       the web console in headless Chromium against the ASan build'"'"'s cairnd'
	@echo 'make console-shots      the console'"'"'s screenshots compared with tests/console/golden/'
	@echo 'make console-golden     re-record those goldens (and the Chromium version)'
	@echo 'make test-crash         the long crash-durability run'
	@echo 'make test-fleet         the pytest tree on PostgreSQL and the S3 tier (tests/fleetmode.py)'
	@echo 'make test-slow          the integration tests too slow for make test (CAIRN_SLOW_TESTS=1)'
	@echo 'make asan               the ASan+UBSan build (clang) in $(ASAN)/, with the fuzz harnesses'
	@echo 'make fuzz               every libFuzzer harness for 300 s'
	@echo 'make bench              benchmarks and the machine'"'"'s limits, into docs/performance.md'
	@echo 'make install            install into PREFIX (now $(PREFIX))'
	@echo 'make deps               install the build dependencies with apt-get'
	@echo 'make clean              remove $(BUILD)/ and $(ASAN)/'
	@echo 'make format             apply .clang-format to every C file (test-unit checks it)'

deps:
	@scripts/deps.sh build

$(BUILD)/build.ninja:
	@scripts/deps.sh build
	meson setup $(BUILD) --prefix=$(PREFIX) $(MESON_OPTS)

build: $(BUILD)/build.ninja
	ninja -C $(BUILD)

$(ASAN)/build.ninja:
	@scripts/deps.sh build
	CC=clang meson setup $(ASAN) -Db_sanitize=address,undefined -Db_lundef=false \
	  -Dbuildtype=debug -Dfuzzers=true $(MESON_OPTS)

asan: $(ASAN)/build.ninja
	ninja -C $(ASAN)

run: build
	./$(BUILD)/cairnd --data ./data

# Every test: C unit tests on the normal and the sanitizer build, then the
# integration suite against the sanitizer build's real server.
test:
	$(MAKE) test-unit
	$(MAKE) test-integration
	$(MAKE) test-console

# Unit tests: release, then ASan+UBSan.  The PostgreSQL twins (suite pg, each
# on a throwaway server of tests/fleet/pg.sh) run in the ASan pass only: the
# same code twice would cost minutes of make test's budget and test nothing more.
test-unit:
	@scripts/deps.sh test
	$(MAKE) build asan
	scripts/format.sh
	$(PY) scripts/longfn.py src
	$(PY) scripts/sqlcheck.py src
	meson test -C $(BUILD) --suite unit --no-suite pg --print-errorlogs
	CN_FUZZ_SEED=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
	  meson test -C $(ASAN) --suite unit --suite fuzz-short --print-errorlogs

# The pytest tree on two workers, a file per worker at a time (--dist
# loadfile: a file's module fixtures start once): its tests wait on servers,
# sockets and sleeps more than on the CPU, so two at a time halve its time on
# two cores (docs/development.md).  TEST_WORKERS=0 runs it in one process.
TEST_WORKERS ?= 2
test-integration:
	@scripts/deps.sh test
	$(MAKE) asan
	CAIRN_BUILD=$(ASAN) $(PY) -m pytest -q -x $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) \
	  --dist loadfile) --durations=30 tests --ignore=tests/s3/test_s3_lifecycle.py
	CAIRN_BUILD=$(ASAN) $(PY) -m pytest -q -x -n 4 tests/s3/test_s3_lifecycle.py

# The console suite (tests/console): Node's test runner drives Debian's chromium
# through playwright-core against real cairnd processes of the ASan build.
# `npm ci` runs only when node_modules does not match package-lock.json; no
# step downloads a browser.
CONSOLE_RUN := CAIRN_BUILD=$(ASAN) PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 node --test --test-timeout=300000

console-npm:
	@scripts/deps.sh test
	@cd tests/console && if ! cmp -s package-lock.json node_modules/.cairn-lock; then \
	  PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --ignore-scripts --no-audit --no-fund && \
	  cp package-lock.json node_modules/.cairn-lock; fi

test-console: console-npm
	$(MAKE) asan
	$(CONSOLE_RUN) --test-concurrency=2 tests/console/

# Screenshots compared with the committed goldens (0.5 % of the pixels, dynamic
# text masked); kept out of make test, since Debian's Chromium moves with
# security updates.  console-golden re-records them and golden/VERSION.
console-shots: console-npm
	$(MAKE) asan
	CONSOLE_SHOTS=compare $(CONSOLE_RUN) tests/console/views.test.mjs

console-golden: console-npm
	$(MAKE) asan
	CONSOLE_SHOTS=record $(CONSOLE_RUN) tests/console/views.test.mjs

fuzz: asan
	scripts/fuzz.sh $(ASAN) 300

# The console's first-view row needs its npm packages and Chromium (console-npm).
bench: build console-npm
	@scripts/deps.sh bench
	scripts/bench.sh $(BUILD)

# The whole pytest tree on the fleet engines (issue 24; tests/fleetmode.py):
# every cairnd on a database of its own on one throwaway PostgreSQL 15 cluster,
# its blobs on the S3 tier, the RGW of a throwaway single-node Ceph cluster
# (tests/fleet/cephharness.py); then the RGW round trips of test_fleet_ceph.py.
# tests/fleet itself runs in make test, with its own clusters.
# FLEET_BLOBS=cairnd puts the tier on a backend cairnd instead of Ceph.
FLEET_BLOBS ?= ceph
FLEET_TIER   = $(if $(filter ceph,$(FLEET_BLOBS)),tests/fleet/ceph.sh,)
test-fleet: asan
	@scripts/deps.sh fleet
	CAIRN_BUILD=$(ASAN) CAIRN_TEST_BLOBS=s3 $(FLEET_TIER) tests/fleet/pg.sh $(PY) -m pytest -q \
	  --durations=30 tests --ignore=tests/fleet --ignore=tests/s3/test_s3_lifecycle.py $(PYTEST_ARGS)
	CAIRN_BUILD=$(ASAN) CAIRN_TEST_BLOBS=s3 $(FLEET_TIER) tests/fleet/pg.sh $(PY) -m pytest -q \
	  -n 4 tests/s3/test_s3_lifecycle.py $(PYTEST_ARGS)
	$(if $(FLEET_TIER),CAIRN_BUILD=$(ASAN) CAIRN_SLOW_TESTS=1 $(FLEET_TIER) $(PY) -m pytest -q \
	  tests/fleet/test_fleet_ceph.py,)

test-crash: asan
	CAIRN_BUILD=$(ASAN) CAIRN_CRASH_CYCLES=20 $(PY) -m pytest -q tests -k crash

# Tests that build thousands of commits through the real server (minutes
# each on the ASan build); make test skips them.
test-slow: asan
	CAIRN_BUILD=$(ASAN) CAIRN_SLOW_TESTS=1 $(PY) -m pytest -q tests/scribe/test_scribe_limits.py \
	  tests/scribe/test_gateway_transfers.py tests/scribe/test_repo_sync_mounts_walk.py

format:
	scripts/format.sh --fix

install: build
	meson configure $(BUILD) -Dprefix=$(PREFIX)
	meson install -C $(BUILD)

clean:
	rm -rf $(BUILD) $(ASAN)
