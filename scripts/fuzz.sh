#!/bin/sh
# Runs every libFuzzer harness built in BUILD for SECONDS each (`make fuzz`).
# Harnesses are built by `meson setup -Dfuzzers=true` with clang (the
# Makefile's ASan build).  Crashing inputs land in BUILD/fuzz-artifacts/.
# usage: scripts/fuzz.sh BUILD SECONDS
set -eu
[ $# -eq 2 ] || { echo "usage: $0 BUILD SECONDS" >&2; exit 2; }
build=$1 seconds=$2
root=$(cd "$(dirname "$0")/.." && pwd)
found=0 failed=0
for h in "$build"/fuzz/fuzz_*; do
  [ -x "$h" ] && [ -f "$h" ] || continue
  found=1
  name=$(basename "$h" | sed 's/^fuzz_//')
  FUZZ_ARTIFACTS="$build/fuzz-artifacts" \
    "$root/fuzz/run.sh" "$h" "$root/fuzz/corpus/$name" "$seconds" || failed=1
done
if [ $found -eq 0 ]; then
  echo "no fuzz harnesses in $build/fuzz (configure with CC=clang -Dfuzzers=true)" >&2
  exit 1
fi
exit $failed
