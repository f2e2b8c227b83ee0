#!/usr/bin/python3
"""bench/pack_rows: what a small durable PUT into a pack file costs in
metadata work, for one or more cairnd builds side by side (issue 24, "pack
index rows in batches"; docs/performance.md).  CPU per PUT is the point:
wall-clock rates on a shared machine are noise.

usage: bench/pack_rows.py [--puts N] [--conns C] [--rounds R] [--engine sqlite|pg|both]
                          [--strace] BUILD [BUILD...]

Each BUILD needs BUILD/cairnd and BUILD/bench/bench_jay.  For each round and
engine the builds run in turn (interleaved A/B), each on a fresh data
directory (and on PostgreSQL a fresh database of one throwaway cluster from
tests/fleet/pgharness.py, log_statement = all) with `[store] pack_max_bytes`
set, so every 4 KiB body is packed.  `bench_jay --small N --only put --conns
C --pid` writes N distinct bodies; printed per PUT: cairnd's CPU (utime +
stime from /proc/PID/stat, bench_jay's _cpu line), on PostgreSQL also the
cluster's CPU (every process of it) and the statements it logged during the
phase (and of them the INSERTs into store_pack_blob).  --strace adds one run
per build under `strace -f -y` counting, per PUT, the fdatasync/fsync calls
and the pwrite calls by file (pack, meta.db-wal): counts only, since strace
slows the server."""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "fleet"))
import pgharness  # noqa: E402
from proc_cpu import cpu  # noqa: E402

TOKEN = "bench:" + os.urandom(16).hex()


def pg_pids(pg):
    """Every process of the cluster: the postmaster and its children."""
    with open(os.path.join(pg.data, "postmaster.pid")) as f:
        root = int(f.readline())
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(root)], capture_output=True, text=True)
    return [root] + [int(x) for x in out.stdout.split()]


def start(build, data, meta, wrap=()):
    os.makedirs(data)
    cfg = os.path.join(data, "..", os.path.basename(data) + ".toml")
    with open(cfg, "w") as f:
        f.write("[store]\npack_max_bytes = 65536\n")
    args = list(wrap) + [os.path.join(build, "cairnd"), "--data", data, "--jay", "127.0.0.1:0",
                         "--scribe", "off", "--http", "off", "--config", cfg]
    if meta:
        args += ["--meta", meta]
    log = open(data + ".log", "wb")
    env = dict(os.environ, CAIRN_ADMIN_TOKEN=TOKEN)
    proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env)
    deadline = time.time() + 60
    while time.time() < deadline:
        with open(data + ".log", "rb") as f:
            m = re.search(rb"listening jay on (\S+)", f.read())
        if m:
            return proc, m.group(1).decode()
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    sys.exit("cairnd did not start: see %s.log" % data)


def server_pid(proc, wrapped):
    if not wrapped:
        return proc.pid
    out = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True)
    return int(out.stdout.split()[0])


def put_phase(build, addr, pid, a):
    out = subprocess.run([os.path.join(build, "bench", "bench_jay"), "--endpoint", addr,
                          "--token", TOKEN, "--pid", str(pid), "--small", str(a.puts), "--only",
                          "put", "--conns", str(a.conns)], capture_output=True, text=True)
    if out.returncode:
        sys.exit("bench_jay failed: %s" % out.stderr)
    vals = dict(re.findall(r"^(jay_put_4k_c\d+(?:_cpu|_csw)?) ([\d.]+)", out.stdout, re.M))
    c = a.conns
    return (float(vals["jay_put_4k_c%d" % c]), float(vals["jay_put_4k_c%d_cpu" % c]),
            float(vals.get("jay_put_4k_c%d_csw" % c, "nan")))


def statements(pg, since):
    with open(os.path.join(pg.dir, "log"), "rb") as f:
        f.seek(since)
        text = f.read().decode(errors="replace")
    every = [ln for ln in text.splitlines() if "LOG:  statement:" in ln or "LOG:  execute" in ln]
    return len(every), sum("INSERT INTO store_pack_blob" in ln for ln in every)


def one_run(build, tmp, tag, a, pg=None):
    meta = None
    if pg:
        db = "pr_" + tag
        meta = pg.create_db(db)
        pg.psql("ALTER DATABASE %s SET log_statement = 'all'" % db)
        pg.psql("ALTER DATABASE %s SET log_parameter_max_length = 0" % db)
    proc, addr = start(build, os.path.join(tmp, tag), meta)
    try:
        since = os.path.getsize(os.path.join(pg.dir, "log")) if pg else 0
        pids = pg_pids(pg) if pg else []
        c0 = cpu(pids)
        rate, us, csw = put_phase(build, addr, proc.pid, a)
        pg_us = (cpu(pids) - c0) * 1e6 / a.puts
        row = "%-28s %8.0f/s  cairnd %6.1f us/PUT  %5.2f csw/PUT" % (tag, rate, us, csw)
        if pg:
            n, ins = statements(pg, since)
            row += "  postgres %6.1f us/PUT  %5.2f statements/PUT (%d INSERTs into" \
                   " store_pack_blob for %d PUTs)" % (pg_us, n / a.puts, ins, a.puts)
        print(row, flush=True)
    finally:
        proc.terminate()
        proc.wait()


def strace_run(build, tmp, tag, a):
    trace = os.path.join(tmp, tag + ".strace")
    wrap = ["strace", "-f", "-y", "-qq", "-e", "trace=fdatasync,fsync,pwrite64", "-o", trace]
    proc, addr = start(build, os.path.join(tmp, tag), None, wrap)
    pid = server_pid(proc, True)
    try:
        put_phase(build, addr, pid, a)
    finally:
        os.kill(pid, 15)  # cairnd, not strace: strace stays while its tracee runs
        proc.wait()
    n = {}
    with open(trace) as f:
        for ln in f:
            m = re.match(r"\d+\s+(\w+)\(\d+<([^>]*)>", ln)
            if not m:
                continue
            path = m.group(2)
            kind = "wal" if path.endswith("-wal") else "pack" if path.endswith(".pack") else \
                "db" if path.endswith("meta.db") else "other"
            n[(m.group(1), kind)] = n.get((m.group(1), kind), 0) + 1
    print("%-28s per PUT (whole run, start-up included): %s" % (tag, "  ".join(
        "%s %s %.3f" % (k[0], k[1], v / a.puts) for k, v in sorted(n.items()))), flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--puts", type=int, default=4000)
    p.add_argument("--conns", type=int, default=64)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--engine", default="both", choices=("sqlite", "pg", "both"))
    p.add_argument("--strace", action="store_true")
    p.add_argument("builds", nargs="+")
    a = p.parse_args()
    builds = [os.path.abspath(b) for b in a.builds]
    tmp = tempfile.mkdtemp(prefix="cn-packrows-")
    pg = pgharness.PgCluster().start() if a.engine != "sqlite" else None
    try:
        for r in range(a.rounds):
            for i, b in enumerate(builds):
                if a.engine != "pg":
                    one_run(b, tmp, "sqlite_r%d_b%d" % (r, i), a)
                if pg:
                    one_run(b, tmp, "pg_r%d_b%d" % (r, i), a, pg)
        if a.strace:
            for i, b in enumerate(builds):
                strace_run(b, tmp, "strace_b%d" % i, a)
    finally:
        if pg:
            pg.stop()
        subprocess.run(["rm", "-rf", tmp])


if __name__ == "__main__":
    main()
