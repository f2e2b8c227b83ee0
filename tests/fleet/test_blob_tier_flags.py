"""The blob tier's flags that test_blob_tier.py never sets (docs/fleet.md
"Bytes: the blob tier" and "The node's cache"), each checked for what the
document says it does:

* `--cache-size BYTES[K|M|G]`: the cache holds whole blobs, "least recently
  used out past the budget" -- after putting and reading more blobs than fit,
  the named cache files stay within the budget, every read is byte-exact
  (the evicted ones fetched again from the backend), and a node restarted
  with a smaller budget than its cache holds evicts down to it at start.
* `--blob-region R` ("Region us-east-1 by default"; requests "signed with
  SigV4 (service s3)"): the region is the one in the credential scope of
  every request the backend receives.  The backend cairnd accepts any
  region (docs/s3.md) and logs none, so a recording proxy in front of it
  reads each request's Authorization header; the backend still verifying
  the signature shows the signing key was derived with the same region.
* Credentials from `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` when no
  `--blob-credentials FILE` is given (src/store/backend_s3.c,
  load_credentials): a node started that way signs with that key id and
  works; a wrong secret there stops it at start (the backend refuses the
  credentials); with a file given, the file wins over the environment.

The backend is a second cairnd on its embedded engine, its administrator
token the blob credential, as in test_blob_tier.py."""
import hashlib
import http.client
import http.server
import os
import re
import shutil
import sys
import threading

import pytest

from conftest import ADMIN_TOKEN, Server, assert_no_sanitizer, free_port

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "s3"))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "blobops"))
from s3fixtures import ADMIN_KEY, ADMIN_SECRET, S3Server, s3_args  # noqa: E402
from blobsclient import b3  # noqa: E402
from fleetutil import ProxyHandler, forward  # noqa: E402

BUCKET = "tier"
PREFIX = "blobs"
SCOPE = re.compile(r"Credential=([^/]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request")


class RecordingProxy:
    """Forwards every request to the backend unchanged and records what the
    backend is sent: (method, path, credential scope tuple or None)."""

    def __init__(self, backend_port):
        proxy = self
        self.seen = []
        self.lock = threading.Lock()

        class Handler(ProxyHandler):
            def relay(self):
                body = self.read_body()
                m = SCOPE.search(self.headers.get("Authorization") or "")
                with proxy.lock:
                    proxy.seen.append((self.command, self.path, m.groups() if m else None))
                forward(self, backend_port, body)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = relay

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.endpoint = "http://127.0.0.1:%d" % self.port
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def mark(self):
        with self.lock:
            return len(self.seen)

    def since(self, mark):
        with self.lock:
            return list(self.seen[mark:])

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class Tier:
    """The backend cairnd behind a RecordingProxy, and one node under test
    (restartable) reaching the backend through the proxy."""

    def __init__(self, tmp_path):
        self.tmp = tmp_path
        self.backend_port = free_port()
        srv = Server(tmp_path / "backend", args=["--jay", "127.0.0.1:0", "--scribe", "off",
                                                  "--http", "127.0.0.1:%d" % self.backend_port])
        self.backend = S3Server(srv.start(wait_for=("http", "jay")))
        self.backend.client().create_bucket(Bucket=BUCKET)
        self.proxy = RecordingProxy(self.backend_port)
        self.creds = tmp_path / "blob.creds"
        self.creds.write_text(ADMIN_TOKEN + "\n")
        self.node_data = tmp_path / "node"
        self.node = None

    def node_server(self, extra=(), env=None, creds=True):
        args = s3_args() + ["--blob-store", "s3://%s/%s" % (BUCKET, PREFIX),
                            "--blob-endpoint", self.proxy.endpoint] + list(extra)
        if creds:
            args += ["--blob-credentials", str(self.creds)]
        # The environment is the test's to set: none inherited from the caller.
        base = {"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": ""}
        return Server(self.node_data, args=args, env=dict(base, **(env or {})))

    def start_node(self, extra=(), env=None, creds=True):
        self.node = S3Server(self.node_server(extra, env, creds).start(wait_for=("http", "jay")))
        return self.node

    def stop_node(self):
        if self.node:
            self.node.server.stop()
            assert_no_sanitizer(self.node.server.output())
            self.node = None

    def stop(self):
        self.stop_node()
        self.backend.server.stop()
        assert_no_sanitizer(self.backend.server.output())
        self.proxy.close()

    def cache_bytes(self):
        """Bytes of the named cache files (a blob's hex digest, or .lz4):
        what the budget bounds; an in-flight fill's tmp-*.part is not one."""
        d = self.node_data / "cache"
        return {f.name: f.stat().st_size for f in d.iterdir()
                if re.fullmatch(r"[0-9a-f]{64}(\.lz4)?", f.name)}


@pytest.fixture
def tier(tmp_path):
    t = Tier(tmp_path)
    yield t
    t.stop()


def body(i, size):
    """Distinct, incompressible-looking bytes per i (a blob each)."""
    out, seed = bytearray(), b"%d" % i
    while len(out) < size:
        seed = hashlib.sha256(seed).digest()
        out += seed
    return bytes(out[:size])


def put(t, key, data):
    t.node.client().put_object(Bucket="front", Key=key, Body=data)


def get(t, key):
    return t.node.client().get_object(Bucket="front", Key=key)["Body"].read()


# ---- --cache-size ---------------------------------------------------------------------------
BUDGET = 1 << 20  # --cache-size 1M
SIZE = 200000  # five blobs fit the budget, not six
COUNT = 12


def blob_gets(seen):
    """The backend GETs of blob objects among proxy records seen."""
    return [p for m, p, _ in seen if m == "GET" and "/%s/%s/" % (BUCKET, PREFIX) in p + "/"
            and "list-type" not in p]


def test_cache_size_bounds_the_cache(tier):
    t = tier
    t.start_node(extra=["--cache-size", "1M"])
    t.node.client().create_bucket(Bucket="front")
    data = {"k%02d" % i: body(i, SIZE) for i in range(COUNT)}
    for k, v in data.items():
        put(t, k, v)  # each upload becomes a cache entry, LRU out past the budget
        held = t.cache_bytes()
        assert sum(held.values()) <= BUDGET, (k, len(held), sum(held.values()))
    # Twice round, in put order: with 5 of 12 held, LRU misses every time.
    mark = t.proxy.mark()
    for _ in range(2):
        for k, v in data.items():
            assert get(t, k) == v, k
            held = t.cache_bytes()
            assert sum(held.values()) <= BUDGET, (k, len(held), sum(held.values()))
    held = t.cache_bytes()
    assert 0 < len(held) <= BUDGET // SIZE, held
    fetched = blob_gets(t.proxy.since(mark))
    print("cache %d files, %d bytes; %d blob GETs for %d reads" % (
        len(held), sum(held.values()), len(fetched), 2 * COUNT))
    assert len(fetched) >= COUNT, len(fetched)  # evicted blobs were fetched again


def test_smaller_cache_size_at_restart_evicts_at_start(tier):
    """Files adopted at start count against the budget: a cache filled under
    the default (4G) is cut to a smaller --cache-size when the node starts."""
    t = tier
    t.start_node()
    t.node.client().create_bucket(Bucket="front")
    data = {"r%02d" % i: body(100 + i, SIZE) for i in range(10)}
    for k, v in data.items():
        put(t, k, v)
    assert sum(t.cache_bytes().values()) == 10 * SIZE  # the default budget keeps all
    t.stop_node()
    t.start_node(extra=["--cache-size", "600K"])
    held = t.cache_bytes()
    assert sum(held.values()) <= 600 << 10, held
    for k, v in data.items():
        assert get(t, k) == v, k
    assert sum(t.cache_bytes().values()) <= 600 << 10


# ---- --blob-region --------------------------------------------------------------------------
def scopes(seen):
    """The distinct (key id, region, service) of the signed requests seen;
    every request must be signed."""
    assert seen and all(s is not None for _, _, s in seen), seen[:5]
    return {(s[0], s[2], s[3]) for _, _, s in seen}


def round_trip(t, key):
    """A PUT and a cold GET (cache emptied by a restart) through the node."""
    data = os.urandom(30000)
    put(t, key, data)
    assert "%s/%s" % (PREFIX, b3(data)) in [
        o["Key"] for o in t.backend.client().list_objects_v2(
            Bucket=BUCKET, Prefix=PREFIX + "/").get("Contents", [])]
    return data


def restart_cold(t, **kw):
    t.stop_node()
    shutil.rmtree(t.node_data / "cache", ignore_errors=True)
    return t.start_node(**kw)


def test_blob_region_is_the_credential_scope(tier):
    t = tier
    mark = t.proxy.mark()
    t.start_node()
    t.node.client().create_bucket(Bucket="front")
    plain = round_trip(t, "plain")
    restart_cold(t)
    assert get(t, "plain") == plain
    assert scopes(t.proxy.since(mark)) == {(ADMIN_KEY, "us-east-1", "s3")}  # the default

    mark = t.proxy.mark()
    restart_cold(t, extra=["--blob-region", "eu-central-1"])
    assert get(t, "plain") == plain  # a cold GET, signed for eu-central-1
    regional = round_trip(t, "regional")
    restart_cold(t, extra=["--blob-region", "eu-central-1"])
    assert get(t, "regional") == regional
    assert scopes(t.proxy.since(mark)) == {(ADMIN_KEY, "eu-central-1", "s3")}


# ---- credentials from the environment -------------------------------------------------------
def test_credentials_from_the_environment(tier):
    t = tier
    env = {"AWS_ACCESS_KEY_ID": ADMIN_KEY, "AWS_SECRET_ACCESS_KEY": ADMIN_SECRET}
    mark = t.proxy.mark()
    t.start_node(env=env, creds=False)
    t.node.client().create_bucket(Bucket="front")
    data = round_trip(t, "env")
    restart_cold(t, env=env, creds=False)
    assert get(t, "env") == data
    assert scopes(t.proxy.since(mark)) == {(ADMIN_KEY, "us-east-1", "s3")}
    t.stop_node()

    # A wrong secret in the environment: the backend refuses the bucket
    # check at start, and cairnd does not start.
    srv = t.node_server(env={"AWS_ACCESS_KEY_ID": ADMIN_KEY,
                             "AWS_SECRET_ACCESS_KEY": "not-the-secret"}, creds=False)
    with pytest.raises(RuntimeError) as e:
        srv.start(wait_for=("http",), timeout=30)
    srv.stop()
    assert "cairnd exited 1" in str(e.value), str(e.value)[-2000:]
    assert "blob tier: bucket tier at %s answers 403: access denied" % t.proxy.endpoint \
        in str(e.value), str(e.value)[-2000:]
    assert_no_sanitizer(srv.output())

    # A file given: the environment is not read (a bogus pair there is harmless).
    mark = t.proxy.mark()
    restart_cold(t, env={"AWS_ACCESS_KEY_ID": "bogus", "AWS_SECRET_ACCESS_KEY": "bogus"})
    assert get(t, "env") == data
    assert scopes(t.proxy.since(mark)) == {(ADMIN_KEY, "us-east-1", "s3")}
