#!/bin/sh
# Runs one libFuzzer harness for SECONDS over a scratch copy of its seed
# corpus, so the committed corpus is never written.  A crash leaves its input
# in $FUZZ_ARTIFACTS (default ./fuzz-artifacts): copy it to
# fuzz/regress/<harness>/ so it replays in the unit suite forever after.
# usage: fuzz/run.sh HARNESS CORPUS_DIR SECONDS [libFuzzer flags...]
set -eu
[ $# -ge 3 ] || { echo "usage: $0 HARNESS CORPUS_DIR SECONDS [flags]" >&2; exit 2; }
harness=$1 corpus=$2 seconds=$3
shift 3
name=$(basename "$harness")
artifacts=${FUZZ_ARTIFACTS:-$PWD/fuzz-artifacts}/$name
work=$(mktemp -d "${TMPDIR:-/tmp}/cn-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
mkdir -p "$work/corpus" "$artifacts"
if [ -d "$corpus" ]; then
  cp -R "$corpus"/. "$work/corpus/"
fi
echo "fuzz $name: ${seconds}s over $(ls "$work/corpus" | wc -l) seeds"
rc=0
# CN_FUZZ_SEED (make test sets it) fixes libFuzzer's mutation sequence, so the
# short runs inside make test explore the same inputs each time; make fuzz
# leaves it unset and explores afresh.
"$harness" ${CN_FUZZ_SEED:+-seed="$CN_FUZZ_SEED"} -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$artifacts/" "$@" "$work/corpus" || rc=$?
if [ $rc -ne 0 ]; then
  echo "fuzz $name FAILED (exit $rc); crashing inputs:" >&2
  ls -l "$artifacts" >&2 || true
fi
exit $rc
