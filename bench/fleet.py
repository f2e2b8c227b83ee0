#!/usr/bin/python3
"""bench/fleet: issue 24's benchmark -- cairn on the fleet engines (PostgreSQL
metadata, an S3 blob tier) beside the embedded engines and beside the engines'
own figures, in one run on this machine.

  (a) metadata ops/s through the services, on SQLite (an embedded node) and on
      PostgreSQL (a node with --meta on the harness's cluster and local blobs,
      so that the blob tier's bytes are not in the figure), at 1, 16 and 64
      clients (wrk for the HTTP rows, Python threads for Scribe):
        commit      a 4 KiB S3 PUT of a new key: the object commit's proxy (the
                    bytes are staged and made durable too, the whole PUT is timed)
        head        S3 HEAD by key, over the keys of the listed bucket
        list1000    one 1,000-key ListObjectsV2 page (start-after a random key)
                    of a 100,000-key bucket (10,000 keys with --quick)
        have10k     blobs/have of 10,000 digests (100 present, the rest not)
        pin_renew   blobs/have of one digest with its pin token (the renewal
                    form; on the embedded engine tokens live in the process)
        submit100   one Scribe submit of 100 paths (each client its own
                    repository, alternating two contents of the same 100 files;
                    the change set objects are uploaded before the timing)
      beside pgbench (-M prepared) select-only and tpcb-like at the same
      clients on the same cluster (the harness's settings: fsync=off,
      synchronous_commit=off -- both sides equally).
  (b) S3 4 KiB PUT/GET (wrk) and 64 MiB PUT/GET (curl, one object per
      connection) at 64 connections (--quick: 8 for 64 MiB) through an
      embedded node, one fleet node (PostgreSQL + the blob tier), and three
      fleet nodes (the connections spread over them); the backend -- a cairnd
      on its embedded engine that is the blob tier -- measured directly beside
      them.  64 MiB GETs through three nodes read each object first through a
      node that did not write it (uncached: streamed from the backend while
      the node's cache fills), then again (cached).
  (c) ratios: PostgreSQL HEAD vs pgbench select-only and commit vs tpcb-like
      (target >= 0.50); cached GETs vs the embedded node (>= 0.90); uncached
      64 MiB GETs vs the backend's own GET (>= 0.80); three nodes vs one
      (overhead on one 2-core machine, not scale).

usage: bench/fleet.py BUILD [--quick] [--part meta|s3|commit|scribe|fill] [--keys N]
--part runs one of (a)/(b) (the ratios of what ran), or only (a)'s commit row
with the metadata layer's repeats per commit, or only the Scribe rows (a's
100-path submit, a whole listing of a 10,000-path tree in pages of 4,096,
and a lock and release of 1,000 paths) with CPU per operation
(scribe_part), or only (b)'s uncached 64 MiB GET with CPU per GiB
(fill_part, which then reads 8 of those objects 4 at once through a node
whose cache is a 48 MiB tmpfs -- each GET relayed, never cached -- and
through a node whose cache holds them, as root; none of those three in a
whole run); --keys N sets the listed
bucket's size (100,000; --quick 10,000).
Prints one "name value unit" line per figure (scripts/bench.sh collects them);
a part that cannot run prints "skip_<part> 0 - <reason>".  Everything binds
127.0.0.1 on ephemeral ports (PostgreSQL: a unix socket only) and lives in a
scratch directory under $TMPDIR removed at the end.  A full run writes about
30 GiB (64 x 64 MiB through each setup, the tier and the caches); --quick
took 5.5 minutes at load average 12-30 on the shared 2-core machine.  The
full run's 100,000-key fill goes at the PostgreSQL node's commit rate (about
300/s there, so 5 minutes of it): on a quiet machine it fits 10 minutes,
on a loaded one --keys N trades the bucket's size for time.
"""
import concurrent.futures
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "fleet"))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "scribe"))
sys.path.insert(0, HERE)
import pgharness  # noqa: E402
from proc_cpu import cpu  # noqa: E402
from s3 import PUT_LUA, Cairnd, lua_str, parse_wrk  # noqa: E402  (bench/s3.py's server, wrk)

BUILD = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else "build"
ARGS = sys.argv[2:]
QUICK = "--quick" in ARGS or os.environ.get("BENCH_QUICK") == "1"
PART = ARGS[ARGS.index("--part") + 1] if "--part" in ARGS else "all"
if QUICK:
    SECS, NKEYS, NPINS, LARGE_CONNS, PGSCALE = 3, 10000, 200, 8, 16
else:
    SECS, NKEYS, NPINS, LARGE_CONNS, PGSCALE = 5, 100000, 1000, 64, 64
if "--keys" in ARGS:
    NKEYS = int(ARGS[ARGS.index("--keys") + 1])
CLIENTS = (1, 16, 64)
SMALL, LARGE = 4096, 64 << 20
LIST_PATHS, LOCK_PATHS = 10000, 1000
TOKEN = "bench:" + os.urandom(16).hex()
KEY_ID, SECRET = TOKEN.split(":")
T0 = time.time()


def say(name, value, unit):
    print("%s %s %s" % (name, value, unit), flush=True)


def skip(part, why):
    print("skip_%s 0 - %s" % (part, why.replace(" ", "_")[:100]), flush=True)


def note(msg):
    sys.stderr.write("bench/fleet: [%5.1f s] %s\n" % (time.time() - T0, msg))
    sys.stderr.flush()


# ---- processes -------------------------------------------------------------------------

class Node(Cairnd):
    """One cairnd with the given arguments; its listeners are parsed from
    "listening FACE on ADDR" (bench/s3.py's Cairnd gives client() and stop())."""

    def __init__(self, work, name, args, faces=("http",), cache=None):
        self.dir = os.path.join(work, name)
        os.makedirs(self.dir)
        self.log = os.path.join(self.dir, "cairnd.log")
        env = dict(os.environ, CAIRN_ADMIN_TOKEN=TOKEN)
        argv = [os.path.join(BUILD, "cairnd"), "--data", os.path.join(self.dir, "data"),
                "--jay", "off", "--http", "127.0.0.1:0",
                "--scribe", "127.0.0.1:0" if "scribe" in faces else "off"] + list(args)
        if cache:
            argv += ["--cache-size", cache]
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env)
        self.addrs = {}
        deadline = time.time() + 60
        while time.time() < deadline and self.proc.poll() is None:
            text = open(self.log, errors="replace").read()
            self.addrs = {m.group(1): m.group(2)
                          for m in re.finditer(r"listening (\w+) on (\S+)", text)}
            if all(f in self.addrs for f in faces):
                break
            time.sleep(0.05)
        if not all(f in self.addrs for f in faces):
            self.stop()
            raise RuntimeError("cairnd %s did not start: %s" % (name, open(self.log).read()[-400:]))
        self.url = "http://" + self.addrs["http"]
        self.key, self.secret = KEY_ID, SECRET

    def scribe(self):
        host, _, port = self.addrs["scribe"].rpartition(":")
        return (host, int(port))


def tier_args(backend, work, uri, node_id):
    creds = os.path.join(work, "blob.creds")
    if not os.path.exists(creds):
        with open(creds, "w") as f:
            f.write(TOKEN + "\n")
    key = os.path.join(work, "fleet.key")
    if not os.path.exists(key):
        fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, (os.urandom(32).hex() + "\n").encode())
        os.close(fd)
    return ["--meta", uri, "--identity-key", key, "--node-id", node_id,
            "--blob-store", "s3://tier/blobs", "--blob-endpoint", backend.url,
            "--blob-credentials", creds]


# ---- wrk -------------------------------------------------------------------------------

# One request shape over random keys: HEAD by key, or a list page after one.
RANDOM_LUA = """local fmt, total, method = %s, %d, %s
math.randomseed(os.time() + (tid or 0))
local nthreads = 0
function setup(thread)
  thread:set("tid", nthreads)
  nthreads = nthreads + 1
end
request = function()
  return wrk.format(method, string.format(fmt, math.random(0, total - 1)))
end
"""

# POST bodies rotating over a list (blobs/have forms), with the bearer token.
POST_LUA = """local path = %s
local hdr = {["Authorization"] = %s, ["Content-Type"] = "application/json"}
local bodies = {
%s
}
local i = 0
request = function()
  i = i %% #bodies + 1
  return wrk.format("POST", path, hdr, bodies[i])
end
"""

GET_LUA = """local prefix, total = %s, %d
local i = 0
request = function()
  i = (i + 1) %% total
  return wrk.format("GET", string.format("%%s%%06d", prefix, i))
end
"""


def script(work, name, text):
    path = os.path.join(work, name + ".lua")
    with open(path, "w") as f:
        f.write(text)
    return path


def wrk_run(url, lua, conns, secs=None, args=()):
    threads = 1 if conns == 1 else 2
    cmd = ["wrk", "-t%d" % threads, "-c%d" % conns, "-d%ds" % (secs or SECS), "--latency",
           "--timeout", "30s", "-s", lua, url + "/"]
    if args:
        cmd += ["--"] + list(args)
    r = subprocess.run(cmd, capture_output=True, text=True)
    return parse_wrk(r.stdout + r.stderr)


def wrk_many(urls, lua, conns):
    """wrk against several nodes at once, the connections spread evenly;
    the sum of their rates and of their bad responses."""
    share = [conns // len(urls) + (1 if i < conns % len(urls) else 0) for i in range(len(urls))]
    with concurrent.futures.ThreadPoolExecutor(len(urls)) as ex:
        rs = list(ex.map(lambda a: wrk_run(a[0], lua, a[1]), zip(urls, share)))
    return {"rps": sum(r["rps"] for r in rs), "bad": sum(r["bad"] for r in rs),
            "n": sum(r["n"] for r in rs)}


def _head_worker(args):
    """One process of head_run: threads each looping HEAD on its own
    keep-alive socket until the deadline; (requests, errors)."""
    import socket
    host, port, total, conns, deadline = args
    counts = [[0, 0] for _ in range(conns)]

    def loop(k):
        rnd = random.Random(os.getpid() * 1000 + k)
        s = socket.create_connection((host, port), timeout=60)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        buf = b""
        while time.time() < deadline:
            s.sendall(b"HEAD /meta/k/%06d HTTP/1.1\r\nHost: b\r\n\r\n" % rnd.randrange(total))
            while b"\r\n\r\n" not in buf:
                chunk = s.recv(65536)
                if not chunk:
                    raise RuntimeError("connection closed")
                buf += chunk
            head, buf = buf.split(b"\r\n\r\n", 1)
            counts[k][0] += 1
            if not head.startswith(b"HTTP/1.1 200"):
                counts[k][1] += 1
        s.close()

    ts = [threading.Thread(target=loop, args=(k,)) for k in range(conns)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return sum(c[0] for c in counts), sum(c[1] for c in counts)


def head_run(node, total, conns):
    """HEAD by random key at conns connections: wrk cannot (it waits for a
    HEAD response's body), so up to 4 Python processes of threads on raw
    keep-alive sockets (the client's cost shares the cores: a floor)."""
    import multiprocessing
    host, _, port = node.addrs["http"].rpartition(":")
    procs = min(conns, 4)
    share = [conns // procs + (1 if i < conns % procs else 0) for i in range(procs)]
    t = time.time()
    deadline = t + SECS
    with multiprocessing.Pool(procs) as pool:
        rs = pool.map(_head_worker, [(host, int(port), total, n, deadline) for n in share])
    secs = time.time() - t
    n = sum(r[0] for r in rs)
    return {"rps": n / secs, "bad": sum(r[1] for r in rs), "n": n}


def report(name, w):
    say(name, "%.1f" % w["rps"], "ops/s")
    if not w["n"]:
        note("%s: no request completed within the run" % name)
    if "p99" in w:
        say(name + "_p99", "%.1f" % w["p99"], "us")
    if w["bad"]:
        say(name + "_bad", w["bad"], "responses")
        note("%s: %d of %d responses were errors" % (name, w["bad"], w["n"]))


def fill(work, node, bucket, prefix, total, size=0):
    """total keys PREFIX%06d (public-read; bodies of size bytes, distinct in
    their first 8, at least 8) into bucket over 16 keep-alive connections;
    seconds taken."""
    pad = os.urandom(max(0, size - 8))
    import http.client
    host, _, port = node.addrs["http"].rpartition(":")
    local = threading.local()

    def put(lo):
        if not hasattr(local, "c"):
            local.c = http.client.HTTPConnection(host, int(port), timeout=60)
        for i in range(lo, min(lo + 100, total)):
            local.c.request("PUT", "/%s/%s%06d" % (bucket, prefix, i), body=b"v%06d\n" % i + pad,
                            headers={"x-amz-acl": "public-read"})
            r = local.c.getresponse()
            r.read()
            if r.status != 200:
                raise RuntimeError("filling %s: PUT answered %d" % (bucket, r.status))

    t = time.time()
    with concurrent.futures.ThreadPoolExecutor(16) as ex:
        list(ex.map(put, range(0, total, 100)))
    return time.time() - t


# ---- (a) metadata through the services ------------------------------------------------

def blob_put(url, ns, data):
    import urllib.request
    req = urllib.request.Request(url + "/_cairn/ops/blobs/put", data=data, method="POST",
                                 headers={"Authorization": "Bearer " + TOKEN,
                                          "Cairn-Offer": json.dumps({"namespace": ns})})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())


def blob_setup(node, ns):
    """NPINS small blobs put in ns: their (digest, pin token) pairs."""
    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        puts = list(ex.map(lambda i: blob_put(node.url, ns, b"blob %d %s" % (i, os.urandom(8))),
                           range(NPINS)))
    return [(p["digest"], p["token"]) for p in puts]


class Submitter:
    """One Scribe connection on its own repository: 100 files added, then
    every op() one submit flipping all 100 between two contents."""

    objs = None

    @classmethod
    def prepare(cls):
        from scribe_wire import (ADD, CHANGESET, CHUNK, MANIFEST, MODIFY, changeset_encode,
                                 changeset_id, chunk_id, file_objects)
        objs, mids = [], []
        for content in (b"content A\n", b"content B\n"):
            chunks, enc, mid = file_objects(content)
            objs += [(CHUNK, chunk_id(ch), ch) for ch in chunks] + [(MANIFEST, mid, enc)]
            mids.append(mid)
        paths = ["dir%02d/file%03d.txt" % (i % 10, i) for i in range(100)]
        sets = [[(ADD, p, mids[0], 0, None) for p in paths],
                [(MODIFY, p, mids[1], 0, None) for p in paths],
                [(MODIFY, p, mids[0], 0, None) for p in paths]]
        cids = []
        for s in sets:
            enc = changeset_encode(s)
            cid = changeset_id(enc)
            objs.append((CHANGESET, cid, enc))
            cids.append(cid)
        cls.objs, cls.cids = objs, cids

    def __init__(self, addr, name):
        from scribe_wire import Conn
        self.c = Conn(addr, timeout=60)
        info = self.c.repo_create(name)
        self.repo, self.main, self.inc = info["id"], info["main"], info["incarnation"]
        self.ws = os.urandom(16)
        self.c.put_objects(self.repo, self.objs)
        self.head, self.n = 0, 0
        self.op()

    def op(self):
        cid = self.cids[0] if self.n == 0 else self.cids[1 + (self.n - 1) % 2]
        o = self.c.submit(self.repo, self.inc, os.urandom(16), self.main, self.ws, self.head,
                          cid, "bench", "flip")
        if o["outcome"] != 1:
            raise RuntimeError("submit refused: %r" % o)
        self.head, self.n = o["change"], self.n + 1


class Lister:
    """One Scribe connection listing one shared repository of LIST_PATHS
    paths whole, in tree pages of 4,096, per op()."""

    repo = None

    @classmethod
    def prepare(cls, addr, name):
        from scribe_wire import ADD, CHANGESET, CHUNK, MANIFEST, Conn, changeset_encode, \
            changeset_id, chunk_id, file_objects
        c = Conn(addr, timeout=120)
        info = c.repo_create(name)
        chunks, enc, mid = file_objects(b"listed\n")
        paths = sorted("d%02d/f%05d.bin" % (i % 50, i) for i in range(LIST_PATHS))
        cs = changeset_encode([(ADD, p, mid, 0, None) for p in paths])
        objs = [(CHUNK, chunk_id(ch), ch) for ch in chunks] + [(MANIFEST, mid, enc),
                                                               (CHANGESET, changeset_id(cs), cs)]
        c.put_objects(info["id"], objs)
        o = c.submit(info["id"], info["incarnation"], os.urandom(16), info["main"],
                     os.urandom(16), 0, changeset_id(cs), "bench", "paths")
        if o["outcome"] != 1:
            raise RuntimeError("submit refused: %r" % o)
        c.close()
        cls.repo, cls.branch, cls.change = info["id"], info["main"], o["change"]

    def __init__(self, addr, name):
        from scribe_wire import Conn
        self.c = Conn(addr, timeout=120)
        self.c.repo_info(self.repo)   # a connection that carried no request is pending

    def op(self):
        n, after, more = 0, None, True
        while more:
            rows, more, _, _ = self.c.tree_page(self.repo, self.branch, self.change, limit=4096,
                                                after=after)
            n += len(rows)
            after = rows[-1]["path"] if rows else None
        if n != LIST_PATHS:
            raise RuntimeError("a listing held %d paths" % n)


class Locker:
    """One Scribe connection on its own repository: per op(), LOCK_PATHS
    paths locked in one request, then released in one."""

    def __init__(self, addr, name):
        from scribe_wire import Conn
        self.c = Conn(addr, timeout=120)
        info = self.c.repo_create(name)
        self.repo, self.main, self.ws = info["id"], info["main"], os.urandom(16)
        self.paths = ["art/%04d.psd" % i for i in range(LOCK_PATHS)]

    def op(self):
        if self.c.lock_acquire(self.repo, self.ws, self.main, self.paths) != LOCK_PATHS:
            raise RuntimeError("a lock request took fewer paths")
        if self.c.lock_release(self.repo, self.ws, self.paths) != LOCK_PATHS:
            raise RuntimeError("a release freed fewer paths")


def scribe_run(node, eng, clients, kind=Submitter, probe=lambda: (0, 0)):
    """(ops/s, ops, probe's change) of clients kind() (Submitter: each on its
    own repository, made, filled and first submitted before the clock
    starts) for SECS; probe() returns a pair read at the clock's start and
    end (CPU times)."""
    subs = []
    with concurrent.futures.ThreadPoolExecutor(min(clients, 16)) as ex:
        subs = list(ex.map(lambda i: kind(node.scribe(), "%s-%s-%d-%d" % (
            kind.__name__.lower(), eng, clients, i)), range(clients)))
    stop, counts = time.time() + SECS, [0] * clients

    def run(i):
        while time.time() < stop:
            subs[i].op()
            counts[i] += 1

    t, p0 = time.time(), probe()
    with concurrent.futures.ThreadPoolExecutor(clients) as ex:
        list(ex.map(run, range(clients)))
    secs, p1 = time.time() - t, probe()
    for s in subs:
        s.c.close()
    return sum(counts) / secs, sum(counts), (p1[0] - p0[0], p1[1] - p0[1])


def ops_call(node, op, params):
    import urllib.request
    req = urllib.request.Request(node.url + "/_cairn/ops/" + op, data=json.dumps(params).encode(),
                                 method="POST", headers={"Authorization": "Bearer " + TOKEN})
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.loads(r.read())


def settle(node):
    """Waits for the requests wrk left in the server (a stopped wrk does not
    cancel them: 64 slow have calls would otherwise be the next row's
    queue): one cheap call through the same workers, answered."""
    ops_call(node, "blobs/have", {"namespace": "bench", "digests": ["00" * 32]})


def sanity(node, s3, have, pair):
    """What the timed requests ask answers what it should: a whole page, 100
    of the 10,000 digests present, a live pin."""
    page = s3.list_objects_v2(Bucket="meta", MaxKeys=1000, StartAfter="k/%06d" % (NKEYS - 1001))
    if len(page.get("Contents", [])) != 1000:
        raise RuntimeError("a list page holds %d keys" % len(page.get("Contents", [])))
    got = ops_call(node, "blobs/have", have)["present"]
    if len(got) != 10000 or sum(got) != 100:
        raise RuntimeError("have: %d of %d present" % (sum(got), len(got)))
    got = ops_call(node, "blobs/have", {"namespace": "bench", "digests": [pair[0]],
                                        "token": pair[1]})["present"]
    if got != [True]:
        raise RuntimeError("pin renewal answered %r" % got)


def meta_engine(work, eng, node):
    """The six metadata rows of one engine at 1, 16 and 64 clients."""
    s3 = node.client()
    s3.create_bucket(Bucket="meta", ACL="public-read-write")
    s3.create_bucket(Bucket="commit", ACL="public-read-write")
    t = fill(work, node, "meta", "k/", NKEYS)
    say("fleet_%s_fill_keys" % eng, NKEYS, "keys")
    say("fleet_%s_fill" % eng, "%.1f" % (NKEYS / t), "ops/s")
    for k in (0, NKEYS - 1):   # the bucket is whole before anything reads it
        s3.head_object(Bucket="meta", Key="k/%06d" % k)
    pairs = blob_setup(node, "bench")
    present = [d for d, _ in pairs[:100]]
    have = {"namespace": "bench",
            "digests": present + [os.urandom(32).hex() for _ in range(10000 - len(present))]}
    sanity(node, s3, have, pairs[0])
    auth = lua_str(("Bearer " + TOKEN).encode())
    scripts = {
        "list1000": script(work, eng + "-list", RANDOM_LUA % (
            '"/meta?list-type=2&max-keys=1000&start-after=k/%06d"', NKEYS - 1000, '"GET"')),
        "have10k": script(work, eng + "-have", POST_LUA % (
            '"/_cairn/ops/blobs/have"', auth, lua_str(json.dumps(have).encode()))),
        "pin_renew": script(work, eng + "-pin", POST_LUA % ('"/_cairn/ops/blobs/have"', auth, ",\n".join(
            lua_str(json.dumps({"namespace": "bench", "digests": [d], "token": tok}).encode())
            for d, tok in pairs))),
    }
    filler = os.urandom(SMALL - 32)
    for c in CLIENTS:
        note("%s: %d clients" % (eng, c))
        lua = script(work, "%s-commit-%d" % (eng, c),
                     PUT_LUA % ('"/commit/"', '"c%d"' % c, lua_str(filler)))
        report("fleet_%s_commit_c%d" % (eng, c), wrk_run(node.url, lua, c))
        settle(node)
        report("fleet_%s_head_c%d" % (eng, c), head_run(node, NKEYS, c))
        for op in ("list1000", "pin_renew", "have10k"):
            settle(node)
            report("fleet_%s_%s_c%d" % (eng, op, c),
                   wrk_run(node.url, scripts[op], c, secs=max(SECS, 5) if op == "have10k" else SECS))
        settle(node)
        try:
            say("fleet_%s_submit100_c%d" % (eng, c), "%.1f" % scribe_run(node, eng, c)[0], "ops/s")
        except Exception as e:   # noqa: BLE001 -- the other rows stand
            note("submit %s c%d: %s" % (eng, c, e))
            skip("fleet_%s_submit100_c%d" % (eng, c), str(e).splitlines()[0] if str(e) else "failed")


def busy_retries(node):
    """cairn_meta_busy_retries_total of node: the transactions the metadata
    layer ran again after a serialization failure, deadlock or busy database."""
    import urllib.request
    with urllib.request.urlopen(node.url + "/_cairn/metrics", timeout=30) as r:
        m = re.search(r"^cairn_meta_busy_retries_total (\d+)$", r.read().decode(), re.M)
    return int(m.group(1)) if m else 0


def commit_part(work, pg):
    """--part commit: the commit row alone on both engines, with the repeats
    per commit beside it -- the measure of writers of one bucket conflicting
    (PostgreSQL runs writes SERIALIZABLE; SQLite has one writer and none) --
    and the CPU of cairnd and of every PostgreSQL server process per commit."""
    filler = os.urandom(SMALL - 32)
    for eng in ("sqlite", "pg"):
        args = ["--meta", pg.create_db("commit")] if eng == "pg" else []
        node = Node(work, "commit-" + eng, args)
        try:
            node.client().create_bucket(Bucket="commit", ACL="public-read-write")
            for c in CLIENTS:
                lua = script(work, "%s-commit-%d" % (eng, c),
                             PUT_LUA % ('"/commit/"', '"c%d"' % c, lua_str(filler)))
                before = busy_retries(node)
                c0, p0 = cpu([node.proc.pid]), cpu(pg.server_pids()) if eng == "pg" else 0
                r = wrk_run(node.url, lua, c)
                c1, p1 = cpu([node.proc.pid]), cpu(pg.server_pids()) if eng == "pg" else 0
                n = max(r["n"], 1)
                name = "fleet_%s_commit_c%d" % (eng, c)
                report(name, r)
                say(name + "_repeats", "%.2f" % ((busy_retries(node) - before) / n), "per_op")
                say(name + "_cairnd_cpu", "%.0f" % ((c1 - c0) / n * 1e6), "us/op")
                if eng == "pg":
                    say(name + "_postgres_cpu", "%.0f" % ((p1 - p0) / n * 1e6), "us/op")
        finally:
            node.stop()
            shutil.rmtree(node.dir, ignore_errors=True)


def scribe_part(work, pg):
    """--part scribe: the 100-path submit row, a whole listing of a
    10,000-path tree and a lock and release of 1,000 paths alone on both
    engines, with the CPU of cairnd and of every PostgreSQL server process
    per operation."""
    Submitter.prepare()
    for eng in ("sqlite", "pg"):
        args = ["--meta", pg.create_db("scribe")] if eng == "pg" else []
        node = Node(work, "scribe-" + eng, args, faces=("http", "scribe"))
        try:
            Lister.prepare(node.scribe(), "listed-" + eng)

            def probe():
                return cpu([node.proc.pid]), cpu(pg.server_pids()) if eng == "pg" else 0
            for kind, row in ((Submitter, "submit100"), (Lister, "list10k"),
                              (Locker, "lock1000")):
                for c in CLIENTS:
                    rate, n, (dc, dp) = scribe_run(node, eng, c, kind, probe)
                    name = "fleet_%s_%s_c%d" % (eng, row, c)
                    say(name, "%.1f" % rate, "ops/s")
                    say(name + "_cairnd_cpu", "%.0f" % (dc / max(n, 1) * 1e6), "us/op")
                    if eng == "pg":
                        say(name + "_postgres_cpu", "%.0f" % (dp / max(n, 1) * 1e6), "us/op")
        finally:
            node.stop()
            shutil.rmtree(node.dir, ignore_errors=True)


def pgbench(pg, c):
    b = pg.bin
    base = ["-h", pg.sockdir, "-U", pgharness.ROLE]
    out = {}
    for mode, extra in (("select", ["-S"]), ("tpcb", [])):
        r = subprocess.run([os.path.join(b, "pgbench")] + base + extra + [
            "-n", "-M", "prepared", "-c", str(c), "-j", str(min(c, 2)), "-T", str(SECS),
            "pgbench"], capture_output=True, text=True)
        m = re.search(r"tps = ([\d.]+) \(without initial connection time\)", r.stdout)
        if not m:
            raise RuntimeError("pgbench: " + (r.stdout + r.stderr)[-300:])
        out[mode] = float(m.group(1))
    return out


def meta_part(work, pg):
    Submitter.prepare()
    pg.create_db("pgbench")
    note("pgbench -i -s %d" % PGSCALE)
    subprocess.run([os.path.join(pg.bin, "pgbench"), "-h", pg.sockdir, "-U", pgharness.ROLE,
                    "-i", "-q", "-s", str(PGSCALE), "pgbench"], check=True, capture_output=True)
    say("fleet_pgbench_scale", PGSCALE, "scale")
    say("fleet_secs_per_run", SECS, "s")
    for c in CLIENTS:
        r = pgbench(pg, c)
        say("fleet_pgbench_select_c%d" % c, "%.1f" % r["select"], "ops/s")
        say("fleet_pgbench_tpcb_c%d" % c, "%.1f" % r["tpcb"], "ops/s")
    for eng in ("sqlite", "pg"):
        args = ["--meta", pg.create_db("meta")] if eng == "pg" else []
        note("metadata on %s" % eng)
        node = Node(work, "meta-" + eng, args, faces=("http", "scribe"))
        try:
            meta_engine(work, eng, node)
        finally:
            node.stop()
            shutil.rmtree(node.dir, ignore_errors=True)


# ---- (b) S3 through the engines -----------------------------------------------------------

def curl(args):
    """(seconds to the first body byte, seconds to the last) of one GET."""
    r = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w",
                        "%{http_code} %{time_starttransfer} %{time_total}"] + args,
                       capture_output=True, text=True)
    parts = r.stdout.split()
    if r.returncode != 0 or len(parts) != 3 or not parts[0].startswith("2"):
        raise RuntimeError("curl %s: %s %s" % (" ".join(args[-1:]), r.stdout, r.stderr))
    return float(parts[1]), float(parts[2])


def small_rows(work, name, urls, bucket):
    """4 KiB PUT (new keys) and GET (1,000 keys) at 64 connections."""
    filler = os.urandom(SMALL - 32)
    lua = script(work, name + "-put", PUT_LUA % ('"/%s/put/"' % bucket, '"%s"' % name[:10],
                                                 lua_str(filler)))
    report("fleet_s3_%s_put_4k_c64" % name, wrk_many(urls, lua, 64))
    lua = script(work, name + "-get", GET_LUA % ('"/%s/small/"' % bucket, 1000))
    report("fleet_s3_%s_get_4k_c64" % name, wrk_many(urls, lua, 64))


BIG = None


def put_large(url, head):
    """One LARGE-byte PUT: 32 bytes of its own, then the shared random bytes
    (no PUT dedups onto an earlier one); sent from memory, no temp file."""
    import http.client
    global BIG
    host, port = url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)
    path = "/" + url.split("//", 1)[1].split("/", 1)[1]
    c = http.client.HTTPConnection(host, int(port), timeout=300)
    c.putrequest("PUT", path)
    c.putheader("Content-Length", str(LARGE))
    c.putheader("x-amz-acl", "public-read")
    c.endheaders()
    c.send(("%-32s" % head).encode()[:32])
    view = memoryview(BIG)[32:]
    for off in range(0, len(view), 1 << 20):
        c.sock.sendall(view[off:off + (1 << 20)])
    r = c.getresponse()
    r.read()
    c.close()
    if r.status != 200:
        raise RuntimeError("PUT %s answered %d" % (url, r.status))


def large_put(work, tag, urls):
    """LARGE_CONNS distinct objects at once, object i through urls[i % len]."""
    global BIG
    if BIG is None:
        BIG = os.urandom(LARGE)
    t = time.time()
    with concurrent.futures.ThreadPoolExecutor(LARGE_CONNS) as ex:
        list(ex.map(lambda i: put_large(urls[i % len(urls)] + "/big/%s-%d" % (tag, i),
                                        "%s-%d-%s" % (tag, i, TOKEN[-8:])),
                    range(LARGE_CONNS)))
    return LARGE_CONNS * (LARGE >> 20) / (time.time() - t)


def large_get(urls, tag, shift=0):
    """(MiB/s over the LARGE_CONNS GETs at once, their slowest first byte in s)."""
    t = time.time()
    with concurrent.futures.ThreadPoolExecutor(LARGE_CONNS) as ex:
        times = list(ex.map(lambda i: curl([urls[(i + shift) % len(urls)] +
                                            "/big/%s-%d" % (tag, i)]), range(LARGE_CONNS)))
    return LARGE_CONNS * (LARGE >> 20) / (time.time() - t), max(f for f, _ in times)


def s3_target(work, name, nodes, tag, bucket="s3b"):
    """The rows of one setup; nodes[0] holds the bucket's settings."""
    urls = [n.url for n in nodes]
    s3 = nodes[0].client()
    s3.create_bucket(Bucket=bucket, ACL="public-read-write")
    fill(work, nodes[0], bucket, "small/", 1000, SMALL)
    small_rows(work, name, urls, bucket)
    burls = ["%s/%s" % (u, bucket) for u in urls]
    say("fleet_s3_%s_put_64m_c%d" % (name, LARGE_CONNS), "%.1f" % large_put(work, tag, burls),
        "MiB/s")
    first, first_ttfb = large_get(burls, tag, shift=1 if len(urls) > 1 else 0)
    again, again_ttfb = large_get(burls, tag, shift=1 if len(urls) > 1 else 0)
    say("fleet_s3_%s_get_64m_c%d" % (name, LARGE_CONNS), "%.1f" % first, "MiB/s")
    say("fleet_s3_%s_get_64m_again_c%d" % (name, LARGE_CONNS), "%.1f" % again, "MiB/s")
    # The slowest first byte: uncached through a fleet node, the backend's
    # answer head (a cold blob is relayed as it lands), not the whole fill.
    say("fleet_s3_%s_get_64m_first_byte_c%d" % (name, LARGE_CONNS), "%.3f" % first_ttfb, "s")
    say("fleet_s3_%s_get_64m_again_first_byte_c%d" % (name, LARGE_CONNS), "%.3f" % again_ttfb,
        "s")


def s3_part(work, pg):
    say("fleet_s3_large_bytes", LARGE, "B")
    say("fleet_s3_large_conns", LARGE_CONNS, "connections")
    cache = "8G" if not QUICK else "2G"
    note("embedded node")
    emb = Node(work, "embedded", [])
    try:
        s3_target(work, "embedded", [emb], "emb")
    finally:
        emb.stop()
        shutil.rmtree(emb.dir, ignore_errors=True)
    note("backend (the blob tier) measured directly")
    backend = Node(work, "backend", [])
    nodes = []
    try:
        backend.client().create_bucket(Bucket="tier")
        s3_target(work, "backend", [backend], "be")
        uri = pg.create_db("fleet")
        note("one fleet node")
        nodes.append(Node(work, "n0", tier_args(backend, work, uri, "n0"), cache=cache))
        s3_target(work, "fleet1", nodes, "f1", bucket="fleet-one")
        note("three fleet nodes")
        for i in (1, 2):
            nodes.append(Node(work, "n%d" % i, tier_args(backend, work, uri, "n%d" % i),
                              cache=cache))
        s3_target(work, "fleet3", nodes, "f3", bucket="fleet-three")
    finally:
        for n in nodes + [backend]:
            n.stop()


def fill_part(work, pg):
    """--part fill: the uncached 64 MiB GET alone -- LARGE_CONNS objects put
    through a fleet node n0, read through n1 (which did not write them: each
    streams from the backend while n1's cache fills), then read again (from
    n1's cache); beside the backend's own GET of the same sizes.  With the CPU
    seconds of n1 and of the backend per GiB read, which hold on a loaded
    machine where the rates do not."""
    say("fleet_s3_large_bytes", LARGE, "B")
    say("fleet_s3_large_conns", LARGE_CONNS, "connections")
    gib = LARGE_CONNS * LARGE / float(1 << 30)
    backend = Node(work, "backend", [])
    nodes = []
    try:
        backend.client().create_bucket(Bucket="tier", ACL="public-read-write")
        burl = ["%s/tier" % backend.url]
        large_put(work, "be", burl)
        large_get(burl, "be")  # cached by the page cache, as the tier's own figure is
        c0 = cpu([backend.proc.pid])
        rate, _ = large_get(burl, "be")
        say("fleet_fill_backend_get_64m_c%d" % LARGE_CONNS, "%.1f" % rate, "MiB/s")
        say("fleet_fill_backend_cpu_per_gib", "%.2f" % ((cpu([backend.proc.pid]) - c0) / gib), "s")
        uri = pg.create_db("fill")
        for i in (0, 1):
            nodes.append(Node(work, "n%d" % i, tier_args(backend, work, uri, "n%d" % i),
                              cache="2G"))
        nodes[0].client().create_bucket(Bucket="fill", ACL="public-read-write")
        large_put(work, "fl", ["%s/fill" % nodes[0].url])
        pids = [nodes[1].proc.pid, backend.proc.pid]
        for name in ("uncached", "cached"):
            c0, b0 = cpu(pids[:1]), cpu(pids[1:])
            rate, ttfb = large_get(["%s/fill" % nodes[1].url], "fl")
            say("fleet_fill_%s_get_64m_c%d" % (name, LARGE_CONNS), "%.1f" % rate, "MiB/s")
            say("fleet_fill_%s_node_cpu_per_gib" % name, "%.2f" % ((cpu(pids[:1]) - c0) / gib),
                "s")
            say("fleet_fill_%s_backend_cpu_per_gib" % name,
                "%.2f" % ((cpu(pids[1:]) - b0) / gib), "s")
            say("fleet_fill_%s_first_byte" % name, "%.3f" % ttfb, "s")
        relay_rows(work, backend, uri, nodes)
    finally:
        for n in nodes + [backend]:
            n.stop()


RELAY_N, RELAY_CONNS, RELAY_FS = 8, 4, "48m"


def relay_rows(work, backend, uri, nodes):
    """The first RELAY_N of fill_part's objects read RELAY_CONNS at once
    through two fresh nodes: one whose cache is a tmpfs smaller than an
    object (each GET relayed through a window, store/s3_fill.c F7), one with
    a cache that holds them (each GET fills it) -- the same uncached work
    with and without a place to keep it.  Needs root (the mount)."""
    if os.geteuid() != 0:
        skip("fleet_fill_relay", "mounting a tmpfs needs root")
        return
    mnt = os.path.join(work, "relaycache")
    os.makedirs(mnt)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=" + RELAY_FS, "tmpfs", mnt]).returncode:
        skip("fleet_fill_relay", "cannot mount a tmpfs")
        return
    try:
        gib = RELAY_N * LARGE / float(1 << 30)
        for name, extra in (("relayed", ["--cache-dir", mnt]), ("filled", [])):
            n = Node(work, "r-" + name, tier_args(backend, work, uri, "r-" + name) + extra)
            nodes.append(n)
            url = "%s/fill/big/fl-" % n.url
            n.client().head_bucket(Bucket="fill")  # its start-up work done, caches warm
            time.sleep(2)
            c0 = cpu([n.proc.pid])
            t = time.time()
            with concurrent.futures.ThreadPoolExecutor(RELAY_CONNS) as ex:
                list(ex.map(lambda i: curl([url + str(i)]), range(RELAY_N)))
            say("fleet_fill_%s_get_64m_c%d" % (name, RELAY_CONNS),
                "%.1f" % (RELAY_N * (LARGE >> 20) / (time.time() - t)), "MiB/s")
            say("fleet_fill_%s_node_cpu_per_gib" % name, "%.2f" % ((cpu([n.proc.pid]) - c0) / gib),
                "s")
            if name == "relayed" and "relayed, not cached" not in open(n.log).read():
                raise RuntimeError("the small-cache node did not relay")
    finally:
        subprocess.run(["umount", "-l", mnt])


# ---- (c) ratios ---------------------------------------------------------------------------

RATIOS = [
    # name, figure, against
    ("fleet_pg_head_c%d_vs_pgbench_select", "fleet_pg_head_c%d", "fleet_pgbench_select_c%d"),
    ("fleet_pg_commit_c%d_vs_pgbench_tpcb", "fleet_pg_commit_c%d", "fleet_pgbench_tpcb_c%d"),
    ("fleet_pg_submit100_c%d_vs_pgbench_tpcb", "fleet_pg_submit100_c%d",
     "fleet_pgbench_tpcb_c%d"),
    ("fleet_pg_head_c%d_vs_sqlite", "fleet_pg_head_c%d", "fleet_sqlite_head_c%d"),
    ("fleet_pg_commit_c%d_vs_sqlite", "fleet_pg_commit_c%d", "fleet_sqlite_commit_c%d"),
]


def ratios(vals):
    def r(name, a, b):
        if vals.get(a) and vals.get(b):
            say(name, "%.2f" % (vals[a] / vals[b]), "x")
    for c in CLIENTS:
        for name, a, b in RATIOS:
            r(name % c, a % c, b % c)
    lc = LARGE_CONNS
    r("fleet_s3_fleet1_get_4k_vs_embedded", "fleet_s3_fleet1_get_4k_c64", "fleet_s3_embedded_get_4k_c64")
    r("fleet_s3_fleet1_put_4k_vs_embedded", "fleet_s3_fleet1_put_4k_c64", "fleet_s3_embedded_put_4k_c64")
    r("fleet_s3_fleet1_get_64m_cached_vs_embedded", "fleet_s3_fleet1_get_64m_again_c%d" % lc,
      "fleet_s3_embedded_get_64m_again_c%d" % lc)
    r("fleet_s3_fleet3_get_64m_uncached_vs_backend", "fleet_s3_fleet3_get_64m_c%d" % lc,
      "fleet_s3_backend_get_64m_again_c%d" % lc)
    r("fleet_fill_uncached_vs_backend", "fleet_fill_uncached_get_64m_c%d" % lc,
      "fleet_fill_backend_get_64m_c%d" % lc)
    r("fleet_fill_relayed_vs_filled", "fleet_fill_relayed_get_64m_c%d" % RELAY_CONNS,
      "fleet_fill_filled_get_64m_c%d" % RELAY_CONNS)
    r("fleet_s3_fleet3_get_64m_cached_vs_embedded", "fleet_s3_fleet3_get_64m_again_c%d" % lc,
      "fleet_s3_embedded_get_64m_again_c%d" % lc)
    for op in ("put_4k_c64", "get_4k_c64", "put_64m_c%d" % lc, "get_64m_again_c%d" % lc):
        r("fleet_s3_fleet3_vs_fleet1_" + op.replace("_c%d" % lc, "").replace("_c64", ""),
          "fleet_s3_fleet3_" + op, "fleet_s3_fleet1_" + op)


class Tee:
    """stdout that also keeps the figures for the ratios."""

    def __init__(self, out):
        self.out, self.vals = out, {}

    def write(self, s):
        for line in s.splitlines():
            p = line.split()
            if len(p) >= 2:
                try:
                    self.vals[p[0]] = float(p[1])
                except ValueError:
                    pass
        return self.out.write(s)

    def flush(self):
        self.out.flush()


def main():
    for tool in ("wrk", "curl"):
        if not shutil.which(tool):
            skip("fleet", tool + " not installed")
            return 0
    if not os.access(os.path.join(BUILD, "cairnd"), os.X_OK):
        skip("fleet", "cairnd not built")
        return 0
    if not pgharness.available():
        skip("fleet", "PostgreSQL 15 server binaries not installed")
        return 0
    tee = Tee(sys.stdout)
    sys.stdout = tee
    say("fleet_load_start", open("/proc/loadavg").read().split()[0], "load")
    work = tempfile.mkdtemp(prefix="cairn-bench-fleet.")
    os.chmod(work, 0o755)
    rc = 0
    try:
        with pgharness.PgCluster() as pg:
            note("PostgreSQL up in %.2f s" % pg.started_in)
            for part, fn in (("meta", meta_part), ("s3", s3_part), ("commit", commit_part),
                             ("scribe", scribe_part), ("fill", fill_part)):
                if PART not in ("all", part) or (part in ("commit", "scribe", "fill")
                                                 and PART != part):
                    continue
                try:
                    fn(work, pg)
                except Exception as e:   # noqa: BLE001 -- the run goes on without this part
                    note("%s failed: %s" % (part, e))
                    skip("fleet_" + part, "failed: " + (str(e).splitlines() or ["?"])[0][:80])
                    rc = 1
        ratios(tee.vals)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        say("fleet_load_end", open("/proc/loadavg").read().split()[0], "load")
    return rc


if __name__ == "__main__":
    sys.exit(main())
