#!/bin/sh
# Runs every libFuzzer harness built in BUILD for SECONDS each (`make fuzz`),
# or only those whose name contains one of the given words.  Harnesses are
# built by `meson setup -Dfuzzers=true` with clang (the Makefile's ASan
# build).  Crashing inputs land in BUILD/fuzz-artifacts/<harness>/ (copy each
# to fuzz/regress/<name>/ once fixed, so the unit suite replays it); each
# run's log is BUILD/fuzz-logs/<harness>.log; a summary table ends the run.
# usage: scripts/fuzz.sh BUILD SECONDS [NAME...]
set -eu
[ $# -ge 2 ] || { echo "usage: $0 BUILD SECONDS [NAME...]" >&2; exit 2; }
build=$1 seconds=$2
shift 2
root=$(cd "$(dirname "$0")/.." && pwd)
logs="$build/fuzz-logs"
mkdir -p "$logs"
found=0 failed=0 summary=""
for h in "$build"/fuzz/fuzz_*; do
  [ -x "$h" ] && [ -f "$h" ] || continue
  name=$(basename "$h" | sed 's/^fuzz_//')
  if [ $# -gt 0 ]; then
    want=0
    for w in "$@"; do
      case $name in *"$w"*) want=1 ;; esac
    done
    [ $want -eq 1 ] || continue
  fi
  found=1
  log="$logs/fuzz_$name.log"
  status=ok
  FUZZ_ARTIFACTS="$build/fuzz-artifacts" \
    "$root/fuzz/run.sh" "$h" "$root/fuzz/corpus/$name" "$seconds" >"$log" 2>&1 ||
    { status=CRASH; failed=1; }
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | sed 's/cov: //')
  line=$(printf '%-22s %-6s %12s execs  %6s edges' "$name" "$status" "${execs:-?}" "${cov:-?}")
  echo "$line"
  summary="$summary$line
"
done
if [ $found -eq 0 ]; then
  echo "no fuzz harnesses in $build/fuzz (configure with CC=clang -Dfuzzers=true)" >&2
  exit 1
fi
printf '\n%s' "$summary"
[ $failed -eq 0 ] || echo "crashing inputs: $build/fuzz-artifacts/; logs: $logs/" >&2
exit $failed
