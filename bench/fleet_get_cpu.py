#!/usr/bin/python3
"""bench/fleet_get_cpu: what one cached 4 KiB GET and HEAD cost on a fleet node
against the embedded engine, in server CPU and in PostgreSQL statements (issue
24; docs/performance.md, "Fleet small GET/HEAD").  Wall-clock rates are printed
too, but on a shared machine they are noise: the CPU figures are the point.

usage: bench/fleet_get_cpu.py BUILD [REQUESTS]

One embedded cairnd, then one fleet node (--meta on a throwaway PostgreSQL 15
from tests/fleet/pgharness.py, its blobs on a second embedded cairnd as the S3
tier).  Each gets 500 public-read 4 KiB objects; every key is read twice (so
every head is cached), then REQUESTS (3,000) GETs, then as many HEADs, over 8
keep-alive connections.  Printed per request: cairnd's utime+stime and the sum
over the PostgreSQL server's processes (/proc/PID/stat, 10 ms ticks: use a few
thousand requests), then the same again with log_statement = all, counting the
statements the server logged per request, by text.  Before those, right
after the fill, each key is HEAD'd once in order over one connection: every
one a miss of the head cache (printed as "uncached HEAD", wall time and CPU
per request; docs/performance.md, Stop 36)."""
import http.client
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "fleet"))
import pgharness  # noqa: E402
from proc_cpu import cpu  # noqa: E402

BUILD = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else "build"
N = int(sys.argv[2]) if len(sys.argv) > 2 else 3000
KEYS = 500
THREADS = 8
TOKEN = "bench:" + os.urandom(16).hex()


class Node:
    def __init__(self, work, name, args):
        self.dir = os.path.join(work, name)
        os.makedirs(self.dir)
        self.log = os.path.join(self.dir, "log")
        env = dict(os.environ, CAIRN_ADMIN_TOKEN=TOKEN)
        with open(self.log, "wb") as log:
            self.p = subprocess.Popen([os.path.join(BUILD, "cairnd"), "--data", self.dir + "/data",
                                       "--jay", "off", "--scribe", "off",
                                       "--http", "127.0.0.1:0"] + args,
                                      stdout=log, stderr=subprocess.STDOUT, env=env)
        deadline = time.time() + 60
        while time.time() < deadline and self.p.poll() is None:
            m = re.search(r"listening http on 127\.0\.0\.1:(\d+)", open(self.log).read())
            if m:
                self.port = int(m.group(1))
                return
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("cairnd %s did not start: %s" % (name, open(self.log).read()[-500:]))

    def stop(self):
        self.p.terminate()
        self.p.wait()


def s3(port):
    import boto3
    from botocore.config import Config
    k, sec = TOKEN.split(":")
    return boto3.client("s3", endpoint_url="http://127.0.0.1:%d" % port, aws_access_key_id=k,
                        aws_secret_access_key=sec, region_name="us-east-1",
                        config=Config(s3={"addressing_style": "path"}, signature_version="s3v4"))


def fill(port):
    s3(port).create_bucket(Bucket="bkt", ACL="public-read-write")
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    pad = os.urandom(4096 - 8)
    for i in range(KEYS):
        c.request("PUT", "/bkt/k%06d" % i, body=b"v%06d\n" % i + pad,
                  headers={"x-amz-acl": "public-read"})
        r = c.getresponse()
        r.read()
        if r.status != 200:
            raise RuntimeError("PUT answered %d" % r.status)


def run(port, method, n):
    def worker(t):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        for j in range(n // THREADS):
            c.request(method, "/bkt/k%06d" % ((t * 7919 + j) % KEYS))
            r = c.getresponse()
            r.read()
            if r.status != 200:
                raise RuntimeError("%s answered %d" % (method, r.status))
    ts = [threading.Thread(target=worker, args=(t,)) for t in range(THREADS)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


def statements(text):
    by = {}
    for m in re.finditer(r"LOG:  (?:statement|execute [^:]*): (.*)", text):
        by[m.group(1)[:100]] = by.get(m.group(1)[:100], 0) + 1
    return by


def uncached_heads(label, node, pgpids=None):
    """Each key HEAD'd once, in order, over one connection (all misses)."""
    c = http.client.HTTPConnection("127.0.0.1", node.port, timeout=60)
    c0, p0, t0 = cpu([node.p.pid]), cpu(pgpids()) if pgpids else 0, time.time()
    for i in range(KEYS):
        c.request("HEAD", "/bkt/k%06d" % i)
        r = c.getresponse()
        r.read()
        if r.status != 200:
            raise RuntimeError("HEAD answered %d" % r.status)
    c1, p1, t1 = cpu([node.p.pid]), cpu(pgpids()) if pgpids else 0, time.time()
    print("%s uncached HEAD: %.0f us/req wall, cairnd %.1f us/req, postgres %.1f us/req" % (
        label, (t1 - t0) / KEYS * 1e6, (c1 - c0) / KEYS * 1e6, (p1 - p0) / KEYS * 1e6),
        flush=True)


def measure(label, node, method, pgpids=None, pglog=None):
    run(node.port, method, 2 * KEYS)  # every head cached
    at = os.path.getsize(pglog) if pglog else 0
    c0, p0, t0 = cpu([node.p.pid]), cpu(pgpids()) if pgpids else 0, time.time()
    run(node.port, method, N)
    c1, p1, t1 = cpu([node.p.pid]), cpu(pgpids()) if pgpids else 0, time.time()
    print("%s %s: cairnd %.1f us/req, postgres %.1f us/req, %.0f req/s" % (
        label, method, (c1 - c0) / N * 1e6, (p1 - p0) / N * 1e6, N / (t1 - t0)), flush=True)
    if pglog:
        with open(pglog, errors="replace") as f:
            f.seek(at)
            by = statements(f.read())
        print("  statements per request: %.2f" % (sum(by.values()) / N))
        for sql, k in sorted(by.items(), key=lambda x: -x[1]):
            print("    %.2f  %s" % (k / N, sql))


def main():
    work = tempfile.mkdtemp(prefix="fleet-get-cpu-")
    emb = Node(work, "embedded", [])
    try:
        fill(emb.port)
        uncached_heads("embedded", emb)
        for m in ("GET", "HEAD"):
            measure("embedded", emb, m)
    finally:
        emb.stop()
    with pgharness.PgCluster() as pg:
        backend = Node(work, "backend", [])
        node = None
        try:
            s3(backend.port).create_bucket(Bucket="tier")
            creds = os.path.join(work, "creds")
            with open(creds, "w") as f:
                f.write(TOKEN + "\n")
            key = os.path.join(work, "key")
            fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            os.write(fd, (os.urandom(32).hex() + "\n").encode())
            os.close(fd)
            node = Node(work, "n0", ["--meta", pg.create_db("fget"), "--identity-key", key,
                                     "--node-id", "n0", "--blob-store", "s3://tier/blobs",
                                     "--blob-endpoint", "http://127.0.0.1:%d" % backend.port,
                                     "--blob-credentials", creds])
            fill(node.port)
            uncached_heads("fleet", node, pg.server_pids)
            for m in ("GET", "HEAD"):
                measure("fleet", node, m, pg.server_pids)
            pg.psql("ALTER SYSTEM SET log_statement = 'all'")
            pg.psql("SELECT pg_reload_conf()")
            time.sleep(1)  # the reload reaches every backend
            for m in ("GET", "HEAD"):
                measure("fleet, statements logged", node, m, pg.server_pids,
                        os.path.join(pg.dir, "log"))
        finally:
            for n in (node, backend):
                if n:
                    n.stop()
    subprocess.run(["rm", "-rf", work])


if __name__ == "__main__":
    main()
