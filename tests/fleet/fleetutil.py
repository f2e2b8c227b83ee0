"""What the fleet tests of issue 24 share: the import paths of the S3 and
fleet helpers, the PostgreSQL cluster fixture (one per module, started and
removed by pgharness) with its skip when the server binaries are missing,
a fresh identity key file as an operator makes one, a paginated key
listing, Fleet: N nodes on one database and one blob tier, a one-node fleet
on a primary and its synchronous standby, and whether a process is stopped
(SIGSTOP, as the commit fault hook's "stop" words leave it)."""
import hashlib
import http.client
import http.server
import os
import signal
import sys
import time

import pytest
from botocore.exceptions import ClientError

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "s3"))
import pgharness  # noqa: E402
from conftest import free_port  # noqa: E402,F401 (the fleet tests import it from here)
from conftest import sanitizer_report  # noqa: E402

needs_pg = pytest.mark.skipif(not pgharness.available(),
                              reason="PostgreSQL 15 server binaries not installed")


@pytest.fixture(scope="module")
def pg():
    with pgharness.PgCluster() as cluster:
        yield cluster


def key_file(path):
    """A fresh key (`openssl rand -hex 32`: 64 hex digits and a newline), 0600."""
    fd = os.open(str(path), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, (os.urandom(32).hex() + "\n").encode())
    os.close(fd)
    return str(path)



def list_keys(s3, bucket, prefix=""):
    """Every key of bucket under prefix, through ListObjectsV2's pages."""
    keys, token = [], None
    while True:
        kw = dict(Bucket=bucket, Prefix=prefix, MaxKeys=1000)
        if token:
            kw["ContinuationToken"] = token
        r = s3.list_objects_v2(**kw)
        keys += [o["Key"] for o in r.get("Contents", [])]
        if not r.get("IsTruncated"):
            return keys
        token = r["NextContinuationToken"]


class Fleet:
    """N cairnd nodes on one PostgreSQL database and one blob tier (issue 24's
    "three nodes on loopback"): a backend cairnd on its embedded engine is the
    S3 store (its administrator token is the blob credential), and every node
    runs --meta on the database, --identity-key on one shared key and
    --blob-store at the backend, with all three faces (Jay, Scribe plaintext,
    HTTP) on ephemeral loopback ports.  Nodes are named n0, n1, ... (also
    their --node-id); kill9(i) and start(i) act on one of them, and
    stop_backend() and start_backend() on the backend (on a fixed port, so
    the nodes find it again)."""

    BUCKET = "tier"
    PREFIX = "blobs"

    def __init__(self, pg, base, db, count=3, env=None, uri=None, extra=()):
        """uri: the nodes' --meta when not pg's database db (made here), e.g.
        a multi-host URI whose database the caller made; extra: more cairnd
        arguments for every node (e.g. --config FILE)."""
        self.extra = list(extra)
        from conftest import ADMIN_TOKEN, Server
        from s3fixtures import S3Server
        self._server, self._s3server = Server, S3Server
        self.base = base
        self.env = dict(env or {})
        self.backend_port = free_port()  # fixed, so the backend can come back
        self.start_backend()
        self.backend.client().create_bucket(Bucket=self.BUCKET)
        self.creds = base / "blob.creds"
        self.creds.write_text(ADMIN_TOKEN + "\n")
        self.key = key_file(base / "fleet.key")
        self.nodes = [None] * count
        self.killed = set()
        try:
            self.uri = uri or pg.create_db(db)
            for i in range(count):
                self.start(i)
        except BaseException:
            self.stop()  # a node that cannot start leaves no process behind
            raise

    def args(self, i):
        return ["--jay", "127.0.0.1:0", "--scribe", "127.0.0.1:0", "--http", "127.0.0.1:0",
                "--meta", self.uri, "--identity-key", self.key, "--node-id", "n%d" % i,
                "--blob-store", "s3://%s/%s" % (self.BUCKET, self.PREFIX),
                "--blob-endpoint", self.backend.endpoint,
                "--blob-credentials", str(self.creds)] + self.extra

    def start_backend(self):
        """(Re)starts the backend cairnd on its data dir and port."""
        args = ["--jay", "127.0.0.1:0", "--scribe", "off",
                "--http", "127.0.0.1:%d" % self.backend_port]
        self.backend = self._s3server(self._server(self.base / "backend", args=args)
                                      .start(wait_for=("http", "jay")))
        return self.backend

    def stop_backend(self):
        """Stops the backend cairnd cleanly; returns its sanitizer report, if any."""
        self.backend.server.stop()
        out = self.backend.server.output()
        return sanitizer_report(out)

    def start(self, i, env=None):
        """(Re)starts node i; env adds to the fleet's environment for this run."""
        srv = self._server(self.base / ("n%d" % i), args=self.args(i),
                           env=dict(self.env, **(env or {})))
        self.nodes[i] = self._s3server(srv.start(wait_for=("http", "jay", "scribe")))
        self.killed.discard(i)
        return self.nodes[i]

    def kill9(self, i):
        self.nodes[i].server.kill9()
        self.killed.add(i)

    def scribe_addr(self, i):
        return self.nodes[i].server.addrs["scribe"]

    def backend_keys(self):
        """Every object of the backend bucket under PREFIX/."""
        return list_keys(self.backend.client(), self.BUCKET, self.PREFIX + "/")

    def stop(self):
        """Stops every process; returns the sanitizer reports of the nodes
        that were not killed (a killed node's log ends where it died)."""
        bad = []
        for i, n in enumerate(self.nodes + [self.backend]):
            if n is None:
                continue
            n.server.stop()
            out = n.server.output()
            if i not in self.killed and sanitizer_report(out):
                bad.append(out)
        return bad


def accepted(node, cred):
    """Whether node takes the S3 credential cred (a list_buckets); a refusal
    must be InvalidAccessKeyId or AccessDenied, nothing else."""
    try:
        node.client(*cred).list_buckets()
        return True
    except ClientError as e:
        code = e.response["Error"]["Code"]
        assert code in ("InvalidAccessKeyId", "AccessDenied"), code
        return False


def promoted_pair_fleet(pair, tmp_path, db, env=None):
    """A one-node Fleet whose --meta names the pair's primary and standby
    (pgharness.synchronous_pair), read-write wanted: it follows a promotion.
    env: the node's environment."""
    primary, standby = pair
    primary.create_db(db)  # replicated to the standby
    uri = "postgresql:///%s?host=%s,%s&user=%s&target_session_attrs=read-write" % (
        db, primary.sockdir, standby.sockdir, pgharness.ROLE)
    return Fleet(primary, tmp_path, db, count=1, uri=uri, env=env)


def proc_stopped(pid):
    """Whether process pid is stopped (state T)."""
    with open("/proc/%d/stat" % pid) as fh:
        return fh.read().rsplit(")", 1)[1].split()[0] == "T"


def promote_and_resume(pair, proc, fault, landed):
    """For a process held at its COMMIT by the commit fault hook's word fault
    ("stop" or "after-stop"): once landed() holds on the standby for
    "after-stop" (the COMMIT it sent is there), the primary is stopped
    (immediate) and the standby promoted, and proc goes on.  proc must end
    well having found its COMMIT's outcome unknown, and have run its write
    again exactly after "stop".  Returns (stdout, stderr)."""
    primary, standby = pair
    deadline = time.monotonic() + 60
    while fault == "after-stop" and not landed():
        assert time.monotonic() < deadline, "the COMMIT never reached the standby"
        time.sleep(0.01)
    primary.stop()
    standby.promote()
    os.kill(proc.pid, signal.SIGCONT)
    out, err = proc.communicate(timeout=300)
    print(err)
    assert not sanitizer_report(err), err
    assert proc.returncode == 0, err
    assert "outcome unknown" in err, err
    assert ("running it again" in err) == (fault == "stop"), err
    return out, err


def end_held(proc, fleet):
    """The end of a test that held proc with the commit fault hook: proc, if
    it still runs, continued and killed; the fleet (if any) stopped, and
    none of its processes' logs with a sanitizer report."""
    if proc and proc.poll() is None:
        os.kill(proc.pid, signal.SIGCONT)
        proc.kill()
        proc.wait()
    if fleet is None:
        return
    bad = fleet.stop()
    assert not bad, bad[0][-4000:]


def body_of(key, size):
    """Deterministic bytes of key, size long (so a check needs only the key)."""
    seed = hashlib.sha256(key.encode()).digest()
    out = bytearray()
    while len(out) < size:
        seed = hashlib.sha256(seed).digest()
        out += seed
    return bytes(out[:size])


class ProxyHandler(http.server.BaseHTTPRequestHandler):
    """The base of the test proxies in front of a backend cairnd: quiet,
    keep-alive, and read_body() for the request's body."""
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""


def forward(handler, port, body):
    """Relays handler's request (an http.server handler; body already read)
    to 127.0.0.1:port and its answer back: the fault and recording proxies
    in front of a backend cairnd."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request(handler.command, handler.path, body=body, headers=dict(handler.headers))
    r = c.getresponse()
    data = r.read()
    handler.send_response(r.status)
    for k, v in r.getheaders():
        if k.lower() not in ("content-length", "connection", "transfer-encoding"):
            handler.send_header(k, v)
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    if handler.command != "HEAD":
        handler.wfile.write(data)
    c.close()
