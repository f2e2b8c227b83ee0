# Sourced by scripts/bench.sh and bench/*.sh (POSIX sh): starts the cairnd
# that bench_jay drives, the one way both start it.
#
# bench_cairnd_start BUILD DIR TOKEN [TOML]: writes DIR/cairnd.toml (the
# per-principal caps lifted, then TOML's lines), starts BUILD/cairnd on
# DIR/data with Jay alone on 127.0.0.1 and a port the kernel picks, and its
# log in DIR/cairnd.log; sets CPID (its pid) and ADDR (the address it logs,
# empty when it did not come up within 10 s).  The caller stops CPID.

bench_cairnd_start() {
  mkdir -p "$2"
  {
    cat <<'EOF'
# One principal drives every benchmark connection; the per-principal caps
# (connections, body budget, worker share) are lifted so that the benchmark
# measures serving, not admission.
[jay]
max_connections_per_principal = 1000
body_budget_per_principal = 1073741824
worker_share_percent = 0
EOF
    [ -z "${4:-}" ] || printf '\n%s\n' "$4"
  } > "$2/cairnd.toml"
  CAIRN_ADMIN_TOKEN=$3 "$1/cairnd" --data "$2/data" --jay 127.0.0.1:0 --scribe off \
    --http off --config "$2/cairnd.toml" > "$2/cairnd.log" 2>&1 &
  CPID=$!
  ADDR=
  for _ in $(seq 1 200); do
    ADDR=$(sed -n 's/.*listening jay on \([^ ]*\).*/\1/p' "$2/cairnd.log" | head -1)
    [ -n "$ADDR" ] && break
    kill -0 "$CPID" 2>/dev/null || break
    sleep 0.05
  done
}
