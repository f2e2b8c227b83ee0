#!/usr/bin/python3
"""bench/http_idle: the server memory an idle keep-alive HTTP connection
costs (issue 16's target row: 4,096 held, the default connection limit, at
most 16 KiB of server memory each).

cairnd serves HTTP only, with its default limits unless --conns N is below
4,096 (then the limit is set to N, so the refusal is still exercised).  The
bench warms the server with 256 served-then-closed connections, reads its
RSS, then opens N connections from 127.0.0.1, 16 at a time (well under the
HTTP listener's per-source pending share, 256), each served one GET
/_cairn/health and then left idle, and
reads the RSS again.  It checks that one connection more is refused with
503 before it sends anything and that a held connection is still served.
Memory is not a rate: the figure holds on a loaded machine too (the load is
printed anyway).

usage: bench/http_idle.py BUILD [--conns N]
Prints one "name value unit" line per figure (scripts/bench.sh's format);
"skip_http_idle 0 - <reason>" when the descriptor limit cannot be raised.
Binds 127.0.0.1 on an ephemeral port; the data directory is a scratch
directory removed at the end.
"""
import os
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

BUILD = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else "build"
CONNS = int(sys.argv[sys.argv.index("--conns") + 1]) if "--conns" in sys.argv else 4096
DEFAULT_LIMIT = 4096
REQ = b"GET /_cairn/health HTTP/1.1\r\nHost: x\r\n\r\n"


def say(name, value, unit):
    print("%s %s %s" % (name, value, unit), flush=True)


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def response(s):
    """Status of one response read from s (0 when the peer closed first)."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(65536)
        if not chunk:
            return 0
        buf += chunk
    head, _, body = buf.partition(b"\r\n\r\n")
    n = int(re.search(rb"(?im)^content-length:\s*(\d+)", head).group(1))
    while len(body) < n:
        chunk = s.recv(65536)
        if not chunk:
            return 0
        body += chunk
    return int(head.split(b" ", 2)[1])


def served(addr, count):
    out = []
    for _ in range(count // 16):
        batch = [socket.create_connection(addr, timeout=30) for _ in range(16)]
        for s in batch:
            s.sendall(REQ)
        for s in batch:
            if response(s) != 200:
                raise RuntimeError("a connection was not served")
        out += batch
    return out


def start(work):
    data = os.path.join(work, "data")
    args = [os.path.join(BUILD, "cairnd"), "--data", data, "--jay", "off", "--scribe", "off",
            "--http", "127.0.0.1:0"]
    if CONNS < DEFAULT_LIMIT:
        conf = os.path.join(work, "cairnd.toml")
        with open(conf, "w") as f:
            f.write("[http]\nmax_connections = %d\n" % CONNS)
        args += ["--config", conf]
    log = open(os.path.join(work, "cairnd.log"), "wb")
    proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 30
    while time.time() < deadline and proc.poll() is None:
        m = re.search(r"listening http on 127\.0\.0\.1:(\d+)",
                      open(os.path.join(work, "cairnd.log")).read())
        if m:
            return proc, ("127.0.0.1", int(m.group(1)))
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError("cairnd did not start")


def main():
    want = 2 * CONNS + 512
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
    if resource.getrlimit(resource.RLIMIT_NOFILE)[0] < want:
        print("skip_http_idle 0 - RLIMIT_NOFILE_below_%d" % want, flush=True)
        return 0
    if CONNS % 16 or CONNS < 256:
        sys.exit("--conns: a multiple of 16, at least 256")
    work = tempfile.mkdtemp(prefix="cairn-bench-idle.", dir=os.environ.get("TMPDIR", "/var/tmp"))
    proc = None
    try:
        proc, addr = start(work)
        say("http_idle_load", "%.2f" % os.getloadavg()[0], "load1")
        for s in served(addr, 256):
            s.close()
        time.sleep(0.5)
        rss0 = rss_kib(proc.pid)
        held = served(addr, CONNS)
        time.sleep(0.2)
        rss1 = rss_kib(proc.pid)
        extra = socket.create_connection(addr, timeout=30)
        refused = response(extra)
        extra.close()
        held[0].sendall(REQ)
        again = response(held[0])
        say("http_idle_conns", len(held), "conns")
        say("http_idle_rss_base", rss0, "KiB")
        say("http_idle_rss_held", rss1, "KiB")
        say("http_idle_per_conn", "%.0f" % ((rss1 - rss0) * 1024.0 / len(held)), "bytes")
        say("http_idle_next_refused", refused, "status")
        say("http_idle_held_served", again, "status")
        say("http_idle_load_end", "%.2f" % os.getloadavg()[0], "load1")
        for s in held:
            s.close()
    finally:
        if proc and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
