"""The S3 blob tier (issue 24, docs/fleet.md "Bytes") through real servers: a
second cairnd on its embedded engine is the S3 backend, and the cairnd under
test keeps its blobs there (--blob-store s3://tier/blobs) behind its local
cache.  Round trips through the S3 face (4 KiB, and 80 MiB which takes the
multipart path to the backend) and the blob operations, dedup counted on
the backend, a cold cache, a corrupted cache file, the backend stopped (503
ServiceUnavailable, no hang, /_cairn/ready 503, nothing acknowledged without
its backend write) and recovery."""
import hashlib
import http.client
import http.server
import os
import shutil
import signal
import sys
import threading
import time

import pytest
import requests
from botocore.exceptions import ClientError

from conftest import ADMIN_TOKEN, Server, assert_no_sanitizer, free_port, small_fs

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "s3"))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "blobops"))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "jay"))
import jayclient  # noqa: E402
from s3fixtures import S3Server, s3_args  # noqa: E402
from blobsclient import Ops, b3  # noqa: E402
from fleetutil import ProxyHandler, forward  # noqa: E402

BUCKET = "tier"
PREFIX = "blobs"
DEADLINE_MS = 3000  # the node's retry deadline for backend requests (CAIRN_BLOB_DEADLINE_MS)
# A request that meets a hung backend costs about the deadline (3.0 s
# measured; 9 s, then 16 s, before each attempt's stall was bounded by it).
HUNG_BOUND_S = 2 * DEADLINE_MS / 1000



class Tier:
    """The backend cairnd and the node under test, restartable."""

    def __init__(self, tmp_path):
        self.tmp = tmp_path
        self.backend_port = free_port()
        self.backend = None
        self.node = None
        self.creds = tmp_path / "blob.creds"
        self.creds.write_text(ADMIN_TOKEN + "\n")  # KEY_ID:SECRET, newline allowed
        self.node_data = tmp_path / "node"

    def start_backend(self, env=None):
        srv = Server(self.tmp / "backend", args=["--jay", "127.0.0.1:0", "--scribe", "off",
                                                  "--http", "127.0.0.1:%d" % self.backend_port],
                     env=env)
        self.backend = S3Server(srv.start(wait_for=("http", "jay")))
        return self.backend

    def start_node(self, extra=(), env=None):
        args = s3_args() + ["--blob-store", "s3://%s/%s" % (BUCKET, PREFIX),
                            "--blob-endpoint", self.backend_endpoint(),
                            "--blob-credentials", str(self.creds)] + list(extra)
        env = dict(env or {}, CAIRN_BLOB_DEADLINE_MS=str(DEADLINE_MS))
        srv = Server(self.node_data, args=args, env=env)
        self.node = S3Server(srv.start(wait_for=("http", "jay")))
        return self.node

    def start_behind(self, make_proxy):
        """The backend with its bucket, make_proxy(backend port) in front of
        it, and the node (with its bucket "front") reaching it through that
        proxy, which is returned."""
        self.start_backend()
        self.backend.client().create_bucket(Bucket=BUCKET)
        proxy = make_proxy(self.backend_port)
        self.backend_endpoint = lambda: "http://127.0.0.1:%d" % proxy.port
        self.start_node()
        self.node.client().create_bucket(Bucket="front")
        return proxy

    def backend_endpoint(self):
        return "http://127.0.0.1:%d" % self.backend_port

    def stop(self):
        for s in (self.node, self.backend):
            if s:
                s.server.stop()
                out = s.server.output()
                assert_no_sanitizer(out)

    def backend_keys(self):
        """Every object of the backend bucket under PREFIX/, paginated."""
        c = self.backend.client()
        keys, token = [], None
        while True:
            kw = dict(Bucket=BUCKET, Prefix=PREFIX + "/", MaxKeys=1000)
            if token:
                kw["ContinuationToken"] = token
            r = c.list_objects_v2(**kw)
            keys += [o["Key"] for o in r.get("Contents", [])]
            if not r.get("IsTruncated"):
                return keys
            token = r["NextContinuationToken"]

    def cache_file(self, digest):
        return self.node_data / "cache" / digest


@pytest.fixture
def tier(tmp_path):
    t = Tier(tmp_path)
    t.start_backend()
    t.backend.client().create_bucket(Bucket=BUCKET)
    t.start_node()
    t.node.client().create_bucket(Bucket="front")
    yield t
    t.stop()


def put(t, key, data):
    return t.node.client().put_object(Bucket="front", Key=key, Body=data)


def get(t, key):
    return t.node.client().get_object(Bucket="front", Key=key)["Body"].read()


def test_round_trips_small_and_multipart(tier):
    small = os.urandom(4096)
    big = os.urandom(80 << 20)
    put(tier, "small", small)
    put(tier, "big", big)
    assert get(tier, "small") == small
    got = get(tier, "big")
    assert hashlib.sha256(got).digest() == hashlib.sha256(big).digest()
    keys = set(tier.backend_keys())
    for data in (small, big):
        assert "%s/%s" % (PREFIX, b3(data)) in keys
    # Each blob is one backend object with its form in its metadata; the
    # large one went as a multipart upload (its ETag counts its parts:
    # 80 MiB in 16 MiB parts), and no upload was left behind.
    head = tier.backend.client().head_object(Bucket=BUCKET, Key="%s/%s" % (PREFIX, b3(big)))
    assert head["ContentLength"] == len(big)
    assert head["Metadata"].get("cairn-form") == "raw"
    assert head["ETag"].strip('"').endswith("-5")
    ups = tier.backend.client().list_multipart_uploads(Bucket=BUCKET)
    assert not ups.get("Uploads")
    # The node's own data dir holds no blob file: only its cache.
    assert not (tier.node_data / "blobs").exists() or not any(
        f for _, _, fs in os.walk(tier.node_data / "blobs") for f in fs)


def test_blob_ops_put_fetch_and_dedup(tier):
    ops = Ops(tier.node.server)
    data = os.urandom(200000)
    d = b3(data)
    st, body = ops.put("fleet/a", data)
    assert st == 200, body
    assert body["digest"] == d
    before = tier.backend_keys()
    assert before.count("%s/%s" % (PREFIX, d)) == 1
    # The same bytes again, through two faces: still one backend object.
    st, body = ops.put("fleet/b", data)
    assert st == 200, body
    put(tier, "same", data)
    after = tier.backend_keys()
    assert sorted(after) == sorted(before)
    r = ops.fetch("fleet/a", d)
    assert r.status_code == 200 and r.content == data
    # Cold: a stat is a HEAD on the backend (nothing downloaded); a fetch fills.
    tier.node.server.stop()
    shutil.rmtree(tier.node_data / "cache")
    tier.start_node()
    ops = Ops(tier.node.server)
    st, body = ops.call("blobs/stat", {"namespace": "fleet/a", "digest": d})
    assert st == 200 and body["len"] == len(data), body
    assert not tier.cache_file(d).exists()
    r = ops.fetch("fleet/a", d)
    assert r.status_code == 200 and r.content == data
    assert tier.cache_file(d).exists()


def test_re_put_refreshes_the_backend_mtime(tier):
    """A dedup put restarts the blob's grace window on the backend (the
    self-copy of touch), as a local re-publish restarts its mtime."""
    data = os.urandom(5000)
    key = "%s/%s" % (PREFIX, b3(data))
    put(tier, "one", data)
    first = tier.backend.client().head_object(Bucket=BUCKET, Key=key)["LastModified"]
    time.sleep(1.2)
    put(tier, "two", data)
    head = tier.backend.client().head_object(Bucket=BUCKET, Key=key)
    assert head["LastModified"] > first
    assert head["Metadata"].get("cairn-form") == "raw"
    assert tier.backend_keys().count(key) == 1


def test_sweeper_removes_only_unreferenced_backend_objects(tmp_path):
    t = Tier(tmp_path)
    try:
        t.start_backend()
        t.backend.client().create_bucket(Bucket=BUCKET)
        t.start_node(env={"CAIRN_SWEEP_INTERVAL_SECONDS": "1", "CAIRN_SWEEP_GRACE_SECONDS": "1"})
        t.node.client().create_bucket(Bucket="front")
        kept, dropped = os.urandom(7000), os.urandom(8000)
        put(t, "kept", kept)
        put(t, "dropped", dropped)
        t.node.client().delete_object(Bucket="front", Key="dropped")
        gone = "%s/%s" % (PREFIX, b3(dropped))
        deadline = time.time() + 30
        while gone in t.backend_keys() and time.time() < deadline:
            time.sleep(0.5)
        keys = t.backend_keys()
        assert gone not in keys
        assert "%s/%s" % (PREFIX, b3(kept)) in keys
        assert not t.cache_file(b3(dropped)).exists()  # evicted with it
        assert get(t, "kept") == kept
    finally:
        t.stop()


def test_cold_cache_serves_from_backend(tier):
    data = os.urandom(300000)
    put(tier, "cold", data)
    d = b3(data)
    assert tier.cache_file(d).exists()  # the uploaded file became the cache entry
    tier.node.server.stop()
    shutil.rmtree(tier.node_data / "cache")
    tier.start_node()
    assert get(tier, "cold") == data
    assert tier.cache_file(d).read_bytes() == data  # filled again


def test_cold_head_fetches_nothing(tier):
    """HeadObject is metadata: on a cold cache it fetches no blob from the
    backend (it did: the GET path opened the object's blobs, so a HEAD of an
    uncached object downloaded it whole, and failed while the backend was
    away), whole, with a range or with a part number."""
    data = os.urandom(300000)
    put(tier, "cold-head", data)
    d = b3(data)
    tier.node.server.stop()
    shutil.rmtree(tier.node_data / "cache")
    tier.start_node()
    c = tier.node.client()
    assert c.head_object(Bucket="front", Key="cold-head")["ContentLength"] == len(data)
    r = c.head_object(Bucket="front", Key="cold-head", Range="bytes=10-19")
    assert (r["ContentLength"], r["ResponseMetadata"]["HTTPHeaders"]["content-range"]) \
        == (10, "bytes 10-19/%d" % len(data))
    assert c.head_object(Bucket="front", Key="cold-head", PartNumber=1)["ContentLength"] \
        == len(data)
    assert not tier.cache_file(d).exists()
    assert get(tier, "cold-head") == data  # a GET still fills the cache
    assert tier.cache_file(d).exists()


def test_cold_conditional_get_fetches_only_what_it_sends(tier):
    """A conditional GET answered 304 or 412 on a cold cache fetches no blob
    (it fetched the object whole before judging); one whose conditions
    hold reads it as any GET."""
    data = os.urandom(200000)
    etag = tier.node.client().put_object(Bucket="front", Key="cond", Body=data)["ETag"]
    d = b3(data)
    tier.node.server.stop()
    shutil.rmtree(tier.node_data / "cache")
    tier.start_node()
    c = tier.node.client()
    for kw, status in (({"IfNoneMatch": etag}, 304), ({"IfMatch": '"0000"'}, 412),
                       ({"IfModifiedSince": "2100-01-01T00:00:00Z"}, 304)):
        try:
            c.get_object(Bucket="front", Key="cond", **kw)
            assert False, kw
        except ClientError as e:
            assert e.response["ResponseMetadata"]["HTTPStatusCode"] == status, (kw, e.response)
        assert not tier.cache_file(d).exists(), kw
    assert c.get_object(Bucket="front", Key="cond", IfMatch=etag)["Body"].read() == data
    assert tier.cache_file(d).exists()


@pytest.fixture
def small_cache_tier(tmp_path):
    """A node whose cache is a 32 MiB tmpfs (the default 4 GiB budget), with
    20 MiB objects "a" and "b" and an 80 MiB "big" already written through
    it, restarted on that cache: every GET starts cold."""
    with small_fs(tmp_path / "smallcache", "32m") as cache:
        t = Tier(tmp_path)
        try:
            t.start_backend()
            t.backend.client().create_bucket(Bucket=BUCKET)
            t.start_node()
            t.node.client().create_bucket(Bucket="front")
            t.bodies = {"a": os.urandom(20 << 20), "b": os.urandom(20 << 20),
                        "big": os.urandom(80 << 20)}
            for k, b in t.bodies.items():
                put(t, k, b)
            st, body = Ops(t.node.server).put("fleet/big", t.bodies["big"])  # the same blob
            assert st == 200, body
            t.node.server.stop()
            t.start_node(extra=["--cache-dir", str(cache)])
            t.small_cache = cache
            yield t
        finally:
            t.stop()


def test_cache_on_a_small_file_system(small_cache_tier):
    """Cold GETs of 20 MiB objects evict the least recently used files to
    make room (store/cache.c K5) and are served whole; an object larger than
    the whole file system is relayed (store/s3_fill.c F7): served whole and
    by ranges through a window of the file system, never cached.  Before,
    the second 20 MiB GET was cut short mid-body when the disk filled ("No
    space left on device"), and then the 80 MiB one was answered 500."""
    t, bodies = small_cache_tier, small_cache_tier.bodies
    for k in ("a", "b", "a"):
        assert get(t, k) == bodies[k], k
    assert get(t, "big") == bodies["big"]
    c = t.node.client()
    for lo, hi in ((0, 99), (50 << 20, (60 << 20) - 1), ((80 << 20) - 5, (80 << 20) - 1)):
        got = c.get_object(Bucket="front", Key="big", Range="bytes=%d-%d" % (lo, hi))
        assert got["Body"].read() == bodies["big"][lo:hi + 1], (lo, hi)
    # The other faces, each in parts that go on with one relay: one
    # download each (before, a Jay GET started a relay per part it sent).
    srv, relays = t.node.server, t.node.server.output().count("relayed, not cached")
    r = Ops(srv).fetch("fleet/big", b3(bodies["big"]))
    assert r.status_code == 200 and r.content == bodies["big"]
    with jayclient.Conn(srv.addrs["jay"], ADMIN_TOKEN) as jay:
        assert jay.get_object("front", "big")[1] == bodies["big"]
    assert srv.output().count("relayed, not cached") - relays == 2
    assert get(t, "b") == bodies["b"]
    assert not (t.small_cache / b3(bodies["big"])).exists()
    assert not [p for p in os.listdir(t.small_cache) if p.startswith("tmp-")]
    assert "relayed, not cached" in t.node.server.output()


def read_big(t, pause_at=0, pause=0):
    """The body of "big" through a presigned GET, read in 1 MiB pieces with
    a pause after pause_at bytes; what arrived when the body ended or broke
    (a cut-short body is an error, or, as urllib3 1.26 does not count, a
    short one)."""
    url = t.node.client().generate_presigned_url(
        "get_object", Params={"Bucket": "front", "Key": "big"}, ExpiresIn=600)
    got = bytearray()
    try:
        with requests.get(url, stream=True, timeout=120) as r:
            assert r.status_code == 200
            for piece in r.iter_content(1 << 20):
                got += piece
                if pause and len(got) == pause_at:
                    time.sleep(pause)
    except requests.exceptions.RequestException:
        pass
    return bytes(got)


def test_relay_serves_slow_and_concurrent_readers(small_cache_tier):
    """Eight readers of an object larger than the cache's file system at
    once, one of them pausing mid-body longer than the relay's download
    takes to fill its window: each relay holds only a window of the file
    system (at most 1/16 of it, smaller when the others leave no room for
    that) and each reader gets every byte.  Before windows were sized so,
    the fourth relay at once found no room and its GET was answered 500."""
    t, big = small_cache_tier, small_cache_tier.bodies["big"]
    results = {}

    def read(name, pause):
        results[name] = read_big(t, 4 << 20, pause)

    names = [("slow", 3)] + [("fast%d" % i, 0) for i in range(7)]
    threads = [threading.Thread(target=read, args=np) for np in names]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for n, _ in names:
        assert results.get(n) == big, n
    assert "not served" not in t.node.server.output()
    assert get(t, "a") == t.bodies["a"]


def test_relay_reader_back_after_its_relay_ended(small_cache_tier):
    """A reader that pauses longer than its relay waits for it
    (CAIRN_RELAY_IDLE_MS, 1 s here, 10 s by default) still gets its whole
    body: its next part starts a relay of its own, which downloads and
    hashes the blob from its start again and serves from where it is."""
    t, big = small_cache_tier, small_cache_tier.bodies["big"]
    t.node.server.stop()
    t.start_node(extra=["--cache-dir", str(t.small_cache)], env={"CAIRN_RELAY_IDLE_MS": "1000"})
    assert read_big(t, 16 << 20, 4) == big
    assert t.node.server.output(t.node.server.log_offset).count("relayed, not cached") >= 2


def test_relayed_bytes_that_do_not_hash_are_never_served_whole(small_cache_tier):
    """Backend bytes of an oversize object that do not hash to its name:
    the relay's reader never receives the whole body (F3 holds for relays)."""
    t, big = small_cache_tier, small_cache_tier.bodies["big"]
    t.backend.client().put_object(Bucket=BUCKET, Key="%s/%s" % (PREFIX, b3(big)),
                                  Body=os.urandom(len(big)))
    assert len(read_big(t)) < len(big)
    assert "does not hash to its name" in t.node.server.output()


def test_corrupted_cache_file_is_refetched(tier):
    data = os.urandom(100000)
    put(tier, "rot", data)
    d = b3(data)
    tier.node.server.stop()
    path = tier.cache_file(d)
    os.chmod(path, 0o600)
    bad = bytearray(path.read_bytes())
    bad[5000] ^= 0xFF  # same size, other bytes
    path.write_bytes(bytes(bad))
    tier.start_node()
    assert get(tier, "rot") == data
    assert path.read_bytes() == data
    assert "does not hash to its name" in tier.node.server.output(tier.node.server.log_offset)


def ready(t):
    r = requests.get(t.node.endpoint + "/_cairn/ready", timeout=30)
    return r.status_code, r.json()


def test_backend_down_answers_unavailable_then_recovers(tier):
    cached = os.urandom(50000)
    uncached = os.urandom(60000)
    put(tier, "cached", cached)
    put(tier, "uncached", uncached)
    assert ready(tier) == (200, {"ready": True})
    tier.node.server.stop()
    shutil.rmtree(tier.node_data / "cache")
    tier.start_node()
    assert get(tier, "cached") == cached  # fills the cache again

    tier.backend.server.stop()
    fresh = os.urandom(70000)
    t0 = time.time()
    with pytest.raises(ClientError) as e:
        put(tier, "fresh", fresh)
    assert e.value.response["Error"]["Code"] == "ServiceUnavailable"
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 503
    with pytest.raises(ClientError) as e:
        get(tier, "uncached")  # never a NoSuchKey for a backend fault
    assert e.value.response["Error"]["Code"] == "ServiceUnavailable"
    assert time.time() - t0 < 4 * DEADLINE_MS / 1000 + 10  # bounded: no hang
    assert get(tier, "cached") == cached  # the cache still serves
    st, body = ready(tier)
    assert st == 503 and body["ready"] is False and body["component"] == "blob_backend"
    st, body = Ops(tier.node.server).put("fleet/a", fresh)
    assert st == 503 and body["error"]["code"] == "unavailable", body

    tier.start_backend()
    assert ready(tier) == (200, {"ready": True})
    assert get(tier, "uncached") == uncached
    # The refused PUT stored nothing anywhere: no object, no backend blob.
    with pytest.raises(ClientError) as e:
        tier.node.client().head_object(Bucket="front", Key="fresh")
    assert e.value.response["Error"]["Code"] in ("404", "NoSuchKey")
    assert "%s/%s" % (PREFIX, b3(fresh)) not in tier.backend_keys()
    put(tier, "fresh", fresh)
    assert get(tier, "fresh") == fresh
    assert "%s/%s" % (PREFIX, b3(fresh)) in tier.backend_keys()


def test_backend_hung_answers_unavailable_then_recovers(tier):
    """The backend keeps its connections and answers nothing (its process
    stopped with SIGSTOP: the kernel still accepts and acknowledges, as for
    a hung server or a proxy that holds the socket).  A PUT and a GET of an
    uncached object are answered 503 ServiceUnavailable within about the
    retry deadline (an attempt's stall time is what is left of it, and a
    small exchange ends whole within that), the cache still serves, readiness
    says blob_backend; continued, the backend takes the PUT again."""
    cached = os.urandom(40000)
    uncached = os.urandom(45000)
    put(tier, "cached", cached)
    put(tier, "uncached", uncached)
    tier.node.server.stop()
    shutil.rmtree(tier.node_data / "cache")
    tier.start_node()
    assert get(tier, "cached") == cached  # fills the cache again
    pid = tier.backend.server.proc.pid
    fresh = os.urandom(47000)
    os.kill(pid, signal.SIGSTOP)
    try:
        c = tier.node.client(read_timeout=HUNG_BOUND_S + 30)
        t0 = time.time()
        with pytest.raises(ClientError) as e:
            c.put_object(Bucket="front", Key="fresh", Body=fresh)
        put_s = time.time() - t0
        assert e.value.response["Error"]["Code"] == "ServiceUnavailable"
        t0 = time.time()
        with pytest.raises(ClientError) as e:
            c.get_object(Bucket="front", Key="uncached")
        get_s = time.time() - t0
        assert e.value.response["Error"]["Code"] == "ServiceUnavailable"
        print("hung backend: PUT answered 503 in %.1f s, GET in %.1f s" % (put_s, get_s))
        assert put_s < HUNG_BOUND_S and get_s < HUNG_BOUND_S, (put_s, get_s)
        assert get(tier, "cached") == cached  # the cache still serves
        st, body = ready(tier)
        assert st == 503 and body["component"] == "blob_backend", body
    finally:
        os.kill(pid, signal.SIGCONT)
    deadline = time.time() + 30
    while ready(tier)[0] != 200:
        assert time.time() < deadline, "not ready after the backend continued"
        time.sleep(0.2)
    put(tier, "fresh", fresh)
    assert get(tier, "fresh") == fresh
    assert get(tier, "uncached") == uncached


def test_bad_configuration_refuses_to_start(tmp_path):
    srv = Server(tmp_path / "n", args=s3_args() + ["--blob-store", "s3://tier",
                                                    "--blob-endpoint", "http://127.0.0.1:9"],
                 env={"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": ""})
    with pytest.raises(RuntimeError) as e:
        srv.start(wait_for=("http",), timeout=15)
    assert "AWS_ACCESS_KEY_ID" in str(e.value)
    srv.stop()


class FlakyProxy:
    """Forwards every request to the backend, except that it answers the
    next `fail` requests itself with 503 SlowDown (or 500), as a throttling
    or ailing S3 service would."""

    def __init__(self, backend_port):
        proxy = self
        self.fail = 0
        self.status = 503
        self.failed = 0
        self.forwarded = 0

        class Handler(ProxyHandler):
            def relay(self):
                body = self.read_body()
                if proxy.fail > 0:
                    proxy.fail -= 1
                    proxy.failed += 1
                    err = b"<Error><Code>SlowDown</Code></Error>"
                    self.send_response(proxy.status)
                    self.send_header("Content-Length", str(len(err)))
                    self.end_headers()
                    self.wfile.write(err)
                    return
                proxy.forwarded += 1
                forward(self, backend_port, body)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = relay

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def test_throttling_and_5xx_are_retried(tmp_path):
    t = Tier(tmp_path)
    proxy = None
    try:
        proxy = t.start_behind(FlakyProxy)
        data = os.urandom(9000)
        proxy.fail = 3  # SlowDown three times: within the deadline, the PUT goes through
        put(t, "k", data)
        assert proxy.failed == 3
        assert "%s/%s" % (PREFIX, b3(data)) in t.backend_keys()
        t.node.server.stop()
        shutil.rmtree(t.node_data / "cache")
        t.start_node()
        proxy.status, proxy.fail = 500, 2
        assert get(t, "k") == data
        assert proxy.failed == 5
        proxy.status, proxy.fail = 503, 10 ** 6  # throttled past the deadline
        with pytest.raises(ClientError) as e:
            put(t, "k2", os.urandom(9000))
        assert e.value.response["Error"]["Code"] == "ServiceUnavailable"
    finally:
        if proxy:
            proxy.fail = 0
        t.stop()
        if proxy:
            proxy.close()


def test_backend_bytes_that_do_not_hash_are_never_served(tier):
    data = os.urandom(40000)
    put(tier, "b", data)
    tier.node.server.stop()
    shutil.rmtree(tier.node_data / "cache")
    garbage = os.urandom(40000)
    tier.backend.client().put_object(Bucket=BUCKET, Key="%s/%s" % (PREFIX, b3(data)),
                                     Body=garbage)
    tier.start_node()
    with pytest.raises(ClientError) as e:
        get(tier, "b")
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] >= 500
    assert not tier.cache_file(b3(data)).exists()
    assert "does not hash to its name" in tier.node.server.output(tier.node.server.log_offset)


def test_virtual_host_addressing(tmp_path):
    """--blob-virtual-host: requests go to BUCKET.HOST (libcurl resolves
    *.localhost to the loopback address; the backend serves virtual hosts of
    CAIRN_S3_DOMAIN=localhost)."""
    t = Tier(tmp_path)
    try:
        t.start_backend(env={"CAIRN_S3_DOMAIN": "localhost"})
        t.backend.client().create_bucket(Bucket=BUCKET)
        t.backend_endpoint = lambda: "http://localhost:%d" % t.backend_port
        t.start_node(extra=["--blob-virtual-host"])
        assert ("at http://%s.localhost:%d (virtual-host style)" % (BUCKET, t.backend_port)
                in t.node.server.output(t.node.server.log_offset))
        t.node.client().create_bucket(Bucket="front")
        data = os.urandom(12345)
        put(t, "v", data)
        assert "%s/%s" % (PREFIX, b3(data)) in t.backend_keys()
        t.node.server.stop()
        shutil.rmtree(t.node_data / "cache")
        t.start_node(extra=["--blob-virtual-host"])
        assert get(t, "v") == data
    finally:
        t.stop()


def test_missing_bucket_refuses_to_start(tmp_path):
    """A bucket that does not exist would make every blob look absent: the
    node refuses to start rather than answer NoSuchKey for everything."""
    t = Tier(tmp_path)
    try:
        t.start_backend()
        with pytest.raises(RuntimeError) as e:
            t.start_node()
        assert "no such bucket" in str(e.value)
    finally:
        t.stop()
