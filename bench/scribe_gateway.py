#!/usr/bin/python3
"""bench/scribe_gateway: cairn's Scribe gateway (docs/protocol/
scribe-gateway.md) against the storage server behind it, in the same run.

  (a) a 1 GiB put (`cairn submit` of one file of distinct random bytes) and
      get (`cairn clone` of it), through the gateway and directly: MiB/s of
      each, the gateway/direct ratios (target >= 0.9x), and the gateway's
      CPU seconds per transfer;
  (b) small reads: get_objects of one 4 KiB chunk, back to back on four
      connections (four client processes) for a few seconds, through the
      gateway and directly: requests/s and the ratio, and CPU microseconds
      per request (user + system from /proc/PID/stat, the lower of the two
      rounds) of the gateway, of storage and of the clients on each path —
      the figure a loaded machine does not blur as much as requests/s —
      and the ratio those CPU figures allow when the shared cores are the
      limit (cpu_bound).

One storage cairnd and one gateway cairnd in front of it (protocol 2,
plaintext, loopback).  Puts and gets alternate between the two paths, best
of two each, each path first in one of the two rounds, so that neither pays
alone for a cold cache or for going first.

usage: bench/scribe_gateway.py BUILD [--quick] [--small-only]
(--small-only: part (b) alone.)
Prints one "name value unit" line per figure (scripts/bench.sh collects
them); a part that cannot run prints "skip_<part> 0 - <reason>".  Binds
127.0.0.1 only; everything lives in a scratch directory removed at the end.
The load average is printed beside the figures: on a loaded machine the
ratios, taken in the same run, mean more than the absolute rates.
"""
import multiprocessing
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

BUILD = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else "build"
QUICK = "--quick" in sys.argv[2:] or os.environ.get("BENCH_QUICK") == "1"
SMALL_ONLY = "--small-only" in sys.argv[2:]
MIB = 64 if QUICK else 1024
READ_SECS = 3 if QUICK else 10
READERS = 4
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "scribe"))
# bench/scribe.py's helpers (the same BUILD from the same argv)
from scribe import cairn, cpu_of, say, skip  # noqa: E402


class Cairnd:
    """A cairnd on loopback with Scribe on an ephemeral port (more: extra args)."""

    def __init__(self, work, name, more=()):
        self.data = os.path.join(work, name)
        self.log = os.path.join(work, name + ".log")
        with open(self.log, "wb") as lf:
            self.proc = subprocess.Popen(
                [os.path.join(BUILD, "cairnd"), "--data", self.data, "--jay", "off", "--http",
                 "off", "--scribe", "127.0.0.1:0"] + list(more),
                stdout=lf, stderr=subprocess.STDOUT)
        deadline = time.time() + 30
        self.ep = None
        while time.time() < deadline and not self.ep:
            with open(self.log, "rb") as f:
                m = re.search(rb"listening scribe on (\S+)", f.read())
            if m:
                self.ep = m.group(1).decode()
            elif self.proc.poll() is not None:
                raise RuntimeError("cairnd exited: see " + self.log)
            else:
                time.sleep(0.05)
        if not self.ep:
            raise RuntimeError("cairnd did not listen")

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(30)


def paths(storage, gw, rnd):
    """The two paths in the order of round rnd: each goes first once."""
    both = [("direct", storage.ep), ("gateway", gw.ep)]
    return both if rnd % 2 == 0 else both[::-1]


def put_get(ep, work, name, gw_pid):
    """One put and one get of MIB distinct bytes: (put s, get s, gateway
    CPU s of the put, of the get)."""
    ws = os.path.join(work, name)
    cairn(ep, "repo", "create", name)
    cairn(ep, "clone", name, ws, "--quiet")
    with open(os.path.join(ws, "big.bin"), "wb") as f:
        for _ in range(MIB // 64):
            f.write(os.urandom(64 << 20))
    subprocess.run(["sync"], check=True)
    c0, t0 = cpu_of(gw_pid), time.time()
    cairn(ep, "submit", ws, "-m", "big", "--quiet")
    t_put, c_put = time.time() - t0, cpu_of(gw_pid) - c0
    shutil.rmtree(ws)
    clone = ws + "-clone"
    c0, t0 = cpu_of(gw_pid), time.time()
    cairn(ep, "clone", name, clone, "--quiet")
    t_get, c_get = time.time() - t0, cpu_of(gw_pid) - c0
    if os.path.getsize(os.path.join(clone, "big.bin")) != MIB << 20:
        raise RuntimeError("the clone of %s is short" % name)
    shutil.rmtree(clone)
    return t_put, t_get, c_put, c_get


def transfers(storage, gw, work):
    best = {}
    for rnd in range(2):
        for path, ep in paths(storage, gw, rnd):
            r = put_get(ep, work, "big-%s-%d" % (path, rnd), gw.proc.pid)
            old = best.get(path)
            best[path] = r if old is None else tuple(min(a, b) for a, b in zip(old, r))
    say("scribe_gw_mib", MIB, "MiB")
    for path in ("direct", "gateway"):
        say("scribe_gw_put_%s" % path, "%.1f" % (MIB / best[path][0]), "MiB/s")
        say("scribe_gw_get_%s" % path, "%.1f" % (MIB / best[path][1]), "MiB/s")
    say("scribe_gw_put_ratio", "%.2f" % (best["direct"][0] / best["gateway"][0]), "x")
    say("scribe_gw_get_ratio", "%.2f" % (best["direct"][1] / best["gateway"][1]), "x")
    say("scribe_gw_put_gateway_cpu", "%.2f" % best["gateway"][2], "s")
    say("scribe_gw_get_gateway_cpu", "%.2f" % best["gateway"][3], "s")


def reader(args):
    """One client process: get_objects of one small chunk, back to back,
    until the deadline; returns the requests answered and the CPU seconds
    the process spent on them."""
    from scribe_wire import CHUNK, Conn
    ep, rid, cid, deadline = args
    host, port = ep.rsplit(":", 1)
    n = 0
    c0 = time.process_time()
    with Conn((host, int(port))) as c:
        while time.time() < deadline:
            got = c.get_objects(rid, [(CHUNK, cid)])
            if got[0][2] is None:
                raise RuntimeError("the chunk is missing")
            n += 1
    return n, time.process_time() - c0


def small_reads(storage, gw):
    from scribe_wire import CHUNK, Conn, chunk_id
    host, port = gw.ep.rsplit(":", 1)
    data = os.urandom(4096)
    with Conn((host, int(port))) as c:  # placed by the gateway, on the one server
        rid = c.repo_create("small")["id"]
        c.put_objects(rid, [(CHUNK, chunk_id(data), data)])
    rates, cpu = {}, {}
    with multiprocessing.Pool(READERS) as pool:
        for rnd in range(2):
            for path, ep in paths(storage, gw, rnd):
                deadline = time.time() + READ_SECS
                t0 = time.time()
                c0 = (cpu_of(gw.proc.pid), cpu_of(storage.proc.pid))
                got = pool.map(reader, [(ep, rid, chunk_id(data), deadline)] * READERS)
                n = sum(g[0] for g in got)
                rate = n / (time.time() - t0)
                # CPU per request: the gateway's on its path, storage's and
                # the clients' on both
                us = [(cpu_of(p.proc.pid) - c) / n * 1e6 for p, c in zip((gw, storage), c0)]
                us.append(sum(g[1] for g in got) / n * 1e6)
                rates[path] = max(rates.get(path, 0), rate)
                cpu[path] = [min(a, b) for a, b in zip(cpu.get(path, us), us)]
    say("scribe_gw_small_read_connections", READERS, "connections")
    say("scribe_gw_small_read_direct", "%.0f" % rates["direct"], "req/s")
    say("scribe_gw_small_read_gateway", "%.0f" % rates["gateway"], "req/s")
    say("scribe_gw_small_read_ratio", "%.2f" % (rates["gateway"] / rates["direct"]), "x")
    say("scribe_gw_small_read_gateway_cpu", "%.1f" % cpu["gateway"][0], "us/req")
    say("scribe_gw_small_read_storage_cpu_gateway", "%.1f" % cpu["gateway"][1], "us/req")
    say("scribe_gw_small_read_storage_cpu_direct", "%.1f" % cpu["direct"][1], "us/req")
    say("scribe_gw_small_read_client_cpu_gateway", "%.1f" % cpu["gateway"][2], "us/req")
    say("scribe_gw_small_read_client_cpu_direct", "%.1f" % cpu["direct"][2], "us/req")
    # Client, gateway and storage share the machine's cores: when they are
    # the limit, the ratio cannot pass (client + storage) / (client +
    # storage + gateway), the CPU a request costs on each path.
    direct = cpu["direct"][1] + cpu["direct"][2]
    say("scribe_gw_small_read_cpu_bound", "%.2f" % (direct / (direct + cpu["gateway"][0])), "x")


def main():
    if not os.path.exists(os.path.join(BUILD, "cairnd")):
        skip("scribe_gw", "cairnd_not_built")
        return 0
    if not shutil.which("b3sum"):
        skip("scribe_gw", "b3sum_not_installed")
        return 0
    work = tempfile.mkdtemp(prefix="cairn-bench-gw.", dir=os.environ.get("TMPDIR", "/var/tmp"))
    storage = gw = None
    try:
        storage = Cairnd(work, "storage")
        cfg = os.path.join(work, "gateway.toml")
        with open(cfg, "w") as f:
            f.write('[[storage]]\naddress = "%s"\nnamespace = ""\n' % storage.ep)
        gw = Cairnd(work, "gateway", ["--gateway", cfg])
        say("scribe_gw_load", "%.2f" % os.getloadavg()[0], "load1")
        if not SMALL_ONLY:
            transfers(storage, gw, work)
        small_reads(storage, gw)
        say("scribe_gw_load_end", "%.2f" % os.getloadavg()[0], "load1")
    finally:
        for p in (gw, storage):
            if p:
                p.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
