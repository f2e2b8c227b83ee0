#!/bin/sh
# Jay PUTs with one [store] setting at two values, in pairs (by default
# direct_io false against true): the tool behind docs/performance.md, Stop
# 30 ("O_DIRECT staging") and Stop 40 (pack_zero_ahead).
#
# usage: bench/jay_put_ab.sh BUILD [--pairs N] [--only large|put] [--small N]
#                            [--store KEY=A,B] [--conns N]
#   BUILD        the build dir (cairnd, bench/bench_jay); a release build
#   --pairs N    how many pairs to run (default 3)
#   --only large one 1 GiB PUT and the GET that follows it (the default)
#   --only put   --small 4 KiB PUTs at 64 connections
#   --small N    how many 4 KiB PUTs (default 20000)
#   --store KEY=A,B  the [store] setting and its two values (default
#                direct_io=false,true)
#   --conns N    connections of the 4 KiB PUTs (default 64)
#
# Each pair starts cairnd twice, KEY = A then B, each time in a
# fresh scratch data dir, on 127.0.0.1 with a port the kernel picks, as
# scripts/bench.sh starts it for bench_jay (the same config, a fresh admin
# token, bench_jay pointed at the address cairnd logs).  One line per run:
# the setting's value, bench_jay's own result lines, cairnd's CPU over the
# bench (utime+stime from /proc/PID/stat, in clock ticks), the voluntary and
# nonvoluntary context switches of its threads over the bench (summed over
# /proc/PID/task/*/status: the process's own status counts only its first
# thread), and the load average at the end.  The CPU and switch figures hold
# on a loaded machine where the rates do not.  Everything it starts is
# stopped, and its scratch dir removed, when it exits.
set -eu

usage() {
  echo "usage: bench/jay_put_ab.sh BUILD [--pairs N] [--only large|put] [--small N]" \
    "[--store KEY=A,B] [--conns N]" >&2
  exit 2
}
BUILD=${1:-}
[ -n "$BUILD" ] || usage
shift
PAIRS=3
ONLY=large
SMALL=20000
SETTING=direct_io=false,true
CONNS=64
while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || usage
  case "$1" in
    --pairs) PAIRS=$2 ;;
    --only) ONLY=$2 ;;
    --small) SMALL=$2 ;;
    --store) SETTING=$2 ;;
    --conns) CONNS=$2 ;;
    *) usage ;;
  esac
  shift 2
done
case "$ONLY" in large | put) ;; *) usage ;; esac
case "$PAIRS$SMALL$CONNS" in *[!0-9]*) usage ;; esac
SKEY=${SETTING%%=*}
SVALS=${SETTING#*=}
SA=${SVALS%%,*}
SB=${SVALS#*,}
case "$SKEY:$SA:$SB" in *[!a-z0-9_:]* | :* | *::* | *:) usage ;; esac
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/scripts/bench_cairnd.sh"
case "$BUILD" in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
for f in "$BUILD/cairnd" "$BUILD/bench/bench_jay"; do
  [ -x "$f" ] || { echo "jay_put_ab: $f not built" >&2; exit 2; }
done
WORK=$(mktemp -d "${TMPDIR:-/var/tmp}/cairn-jay-ab.XXXXXX")
CPID=
BPID=

cleanup() {
  for p in $BPID $CPID; do
    kill "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# utime + stime of PID: fields 14 and 15 of /proc/PID/stat, counted after the
# command name's closing parenthesis (field 3 is the first after it).
ticks() {
  sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'
}

# "VOLUNTARY NONVOLUNTARY": the context switches of PID's live threads.
switches() {
  cat /proc/"$1"/task/*/status 2>/dev/null | awk '
    /^voluntary_ctxt_switches:/ { v += $2 }
    /^nonvoluntary_ctxt_switches:/ { n += $2 }
    END { print v + 0, n + 0 }'
}

# start_cairnd DIR VALUE: starts cairnd as scripts/bench.sh does, with
# [store] SKEY = VALUE, sets CPID and ADDR (empty if it did not come up).
start_cairnd() {
  bench_cairnd_start "$BUILD" "$1" "$TOKEN" "[store]
$SKEY = $2"
}

stop_cairnd() {
  kill "$CPID" 2>/dev/null || true
  wait "$CPID" 2>/dev/null || true
  CPID=
}

# run_one PAIR VALUE: one cairnd, one bench, one line.
run_one() {
  d=$WORK/pair$1-$2
  start_cairnd "$d" "$2"
  if [ -z "$ADDR" ]; then
    echo "jay_put_ab: cairnd did not serve Jay; its log:" >&2
    tail -5 "$d/cairnd.log" >&2
    exit 1
  fi
  if [ "$ONLY" = large ]; then
    args="--only large"
  else
    args="--only put --small $SMALL --conns $CONNS"
  fi
  t0=$(ticks "$CPID")
  s0=$(switches "$CPID")
  # In the background and waited for, so that a signal's trap runs at once
  # (and stops it) rather than after a 1 GiB run.
  # shellcheck disable=SC2086  # $args is a list of words
  "$BUILD/bench/bench_jay" --endpoint "$ADDR" --token "$TOKEN" --pid "$CPID" --dir "$WORK" \
    $args > "$d/bench.txt" &
  BPID=$!
  wait "$BPID"
  BPID=
  t1=$(ticks "$CPID")
  s1=$(switches "$CPID")
  res=$(paste -sd';' "$d/bench.txt" | sed 's/;/; /g')
  echo "$s0 $s1" | awk -v p="$1" -v key="$SKEY" -v val="$2" -v res="$res" \
    -v cpu=$((t1 - t0)) -v load="$(cut -d' ' -f1-3 /proc/loadavg)" '{
      printf "pair %s %s=%s | %s | cpu_ticks %d | vcsw %d nvcsw %d | load %s\n",
        p, key, val, res, cpu, $3 - $1, $4 - $2, load }'
  stop_cairnd
  rm -rf "$d"
}

TOKEN="bench:$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
echo "# jay_put_ab: $ONLY, $PAIRS pair(s), $(date -u +%Y-%m-%dT%H:%M:%SZ), clock ticks of 1/$(getconf CLK_TCK) s"
i=1
while [ "$i" -le "$PAIRS" ]; do
  run_one "$i" "$SA"
  run_one "$i" "$SB"
  i=$((i + 1))
done
