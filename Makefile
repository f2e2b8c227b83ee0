# cairn — the two commands are `make run` and `make test`; `make` builds.
# Meson + Ninja do the work; this file installs what is missing and wraps them.
PREFIX ?= /usr/local
BUILD  ?= build
ASAN   ?= build-asan
PY     := /usr/bin/python3
MESON_OPTS ?=

.PHONY: all build deps asan run test test-unit test-integration fuzz bench test-crash install clean

all: build

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
	@scripts/deps.sh test
	$(MAKE) build asan
	meson test -C $(BUILD) --suite unit --print-errorlogs
	CN_FUZZ_SEED=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
	  meson test -C $(ASAN) --suite unit --suite fuzz-short --print-errorlogs
	CAIRN_BUILD=$(ASAN) $(PY) -m pytest -q -x tests

fuzz: asan
	scripts/fuzz.sh $(ASAN) 300

bench: build
	@scripts/deps.sh bench
	scripts/bench.sh $(BUILD)

test-crash: asan
	CAIRN_BUILD=$(ASAN) CAIRN_CRASH_CYCLES=20 $(PY) -m pytest -q tests -k crash

install: build
	meson configure $(BUILD) -Dprefix=$(PREFIX)
	meson install -C $(BUILD)

clean:
	rm -rf $(BUILD) $(ASAN)
