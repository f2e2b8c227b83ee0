"""One set of Prometheus metrics for every face, through the real cairnd.

Traffic on every face (Jay put/get and an error, S3 through boto3, a blob
put through the blob operations, a Scribe submit), a connection refused per
source, a request refused by the memory budget, a connection dropped at its
handshake deadline and a sweep that frees an object's blob; /_cairn/metrics
is scraped before and after, each scrape must parse as Prometheus text
exposition (a strict parser below; prometheus_client's too when it is
installed), and every family the server reports must have moved.

The limits that provoke the refusals come from a --config file; the only
waits are bounded polls for something the server does on its own (the
handshake deadline, the periodic sweep), never assertions on time."""
import math
import os
import re
import socket
import sys
import time

import boto3
import pytest
import requests
from botocore.config import Config

from conftest import ADMIN_TOKEN, Server, assert_no_sanitizer

HERE = os.path.dirname(os.path.abspath(__file__))
for sub in ("jay", "scribe", "blobops"):
    sys.path.insert(0, os.path.join(HERE, "..", sub))

import jayclient  # noqa: E402
from blobsclient import Ops, make_token  # noqa: E402
from scribe_wire import CHANGESET, CHUNK, MANIFEST, ADD  # noqa: E402
from scribe_wire import Conn as ScribeConn  # noqa: E402
from scribe_wire import ScribeError  # noqa: E402
from scribe_wire import changeset_encode, changeset_id, chunk_id, file_objects  # noqa: E402
import fleetmode  # noqa: E402

CONFIG = """
[jay]
max_pending_per_source = 1
body_budget_per_connection = 1024

[scribe]
handshake_timeout_ms = 3000
"""

# ---- a strict reader of the text exposition format (0.0.4) -------------------------------
NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"'
SAMPLE = re.compile(r"^(%s)(?:\{((?:%s)(?:,%s)*)?,?\})? (\S+)(?: -?\d+)?$" % (NAME, LABEL, LABEL))
TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}


def parse_exposition(text):
    """Returns {family: {"type", "help", "samples": {(name, labels): value}}};
    raises AssertionError on anything the format does not allow."""
    assert text.endswith("\n"), "the text must end with a line feed"
    fams, current = {}, None
    seen = set()
    for line in text[:-1].split("\n"):
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            kind, name, rest = line[2:6], *(line[7:].split(" ", 1) + [""])[:2]
            assert re.fullmatch(NAME, name), line
            f = fams.setdefault(name, {"type": None, "help": None, "samples": {}})
            key = "help" if kind == "HELP" else "type"
            assert f[key] is None, "second %s line for %s" % (kind, name)
            if key == "type":
                assert rest in TYPES, line
                assert not f["samples"], "TYPE after samples of %s" % name
            f[key] = rest
            current = name
            continue
        assert not line.startswith("#") or line.startswith("# "), line
        if line.startswith("#") or not line:
            assert line, "empty line"
            continue
        m = SAMPLE.match(line)
        assert m, "not a sample line: %r" % line
        name, labels, value = m.group(1), m.group(2) or "", m.group(3)
        try:
            v = float(value)  # "+Inf", "NaN" and exponents are floats too
        except ValueError:
            raise AssertionError("not a number: %r" % line)
        fam = family_of(name, fams, current)
        assert fam, "sample %s outside its family (after %s)" % (name, current)
        key = (name, tuple(sorted(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"',
                                             labels))))
        assert key not in seen, "duplicate sample %r" % line
        seen.add(key)
        fams[fam]["samples"][key] = v
    for name, f in fams.items():
        if f["type"] == "histogram":
            check_histogram(name, f["samples"])
        if f["type"] == "counter":
            assert all(v >= 0 for v in f["samples"].values()), name
    return fams


def family_of(sample, fams, current):
    """The family a sample name belongs to: the one being read (samples of
    a family are contiguous), directly or through a histogram suffix."""
    if current is None:
        return None
    t = fams[current]["type"]
    if sample == current and t != "histogram":
        return current
    if t == "histogram" and sample in (current + "_bucket", current + "_sum", current + "_count"):
        return current
    return None


def check_histogram(name, samples):
    series = {}
    for (n, labels), v in samples.items():
        rest = tuple(kv for kv in labels if kv[0] != "le")
        s = series.setdefault(rest, {"buckets": [], "sum": None, "count": None})
        if n.endswith("_bucket"):
            le = dict(labels)["le"]
            s["buckets"].append((math.inf if le == "+Inf" else float(le), v))
        elif n.endswith("_sum"):
            s["sum"] = v
        else:
            s["count"] = v
    for rest, s in series.items():
        b = sorted(s["buckets"])
        assert b and b[-1][0] == math.inf, (name, rest)
        assert all(b[i][1] <= b[i + 1][1] for i in range(len(b) - 1)), (name, rest, b)
        assert s["count"] == b[-1][1] and s["sum"] is not None, (name, rest)


def scrape(srv):
    host, port = srv.addrs["http"]
    r = requests.get("http://%s:%d/_cairn/metrics" % (host, port), timeout=30)
    assert r.status_code == 200
    assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    fams = parse_exposition(r.text)
    try:
        from prometheus_client.parser import text_string_to_metric_families
    except ImportError:
        pass
    else:
        assert {f.name for f in text_string_to_metric_families(r.text)}
    return fams


def value(fams, family, suffix="", **labels):
    """Sum of the samples of family(+suffix) whose labels include labels."""
    f = fams.get(family)
    if not f:
        return 0
    want = set(labels.items())
    return sum(v for (n, ls), v in f["samples"].items()
               if n == family + suffix and want <= set(ls))


def count(fams, family, **labels):
    return value(fams, family, "_count", **labels)


def wait_for(cond, what, limit=60):
    """Polls cond() (something the server does on its own schedule)."""
    end = time.monotonic() + limit
    while not cond():
        assert time.monotonic() < end, "never happened: " + what
        time.sleep(0.2)


# ---- the server and the traffic ------------------------------------------------------------
@pytest.fixture
def srv(tmp_path):
    cfg = tmp_path / "cairnd.toml"
    cfg.write_text(CONFIG)
    s = Server(tmp_path / "data",
               args=["--jay", "127.0.0.1:0", "--scribe", "127.0.0.1:0", "--http", "127.0.0.1:0",
                     "--config", str(cfg)],
               env={"CAIRN_ADMIN_TOKEN": ADMIN_TOKEN, "CAIRN_SWEEP_INTERVAL_SECONDS": "1",
                    "CAIRN_SWEEP_GRACE_SECONDS": "1"})
    s.start(wait_for=("jay", "scribe", "http"))
    yield s
    s.stop()
    out = s.output()
    assert_no_sanitizer(out)


def s3_client(srv):
    host, port = srv.addrs["http"]
    key, secret = ADMIN_TOKEN.split(":", 1)
    return boto3.client("s3", endpoint_url="http://%s:%d" % (host, port),
                        aws_access_key_id=key, aws_secret_access_key=secret,
                        region_name="us-east-1",
                        config=Config(s3={"addressing_style": "path"},
                                      retries={"max_attempts": 0}, signature_version="s3v4"))


def jay_traffic(srv, jc):
    jc.create_bucket("metrics")
    jc.put_object("metrics", "a", os.urandom(100000))
    assert len(jc.get_object("metrics", "a")[1]) == 100000
    with pytest.raises(jayclient.JayError) as ei:
        jc.get_object("metrics", "missing")
    assert ei.value.code == "NoSuchKey"
    # Metadata over the connection's 1 KiB body budget: refused, retryably.
    with pytest.raises(jayclient.JayError) as ei:
        jc.call("Ping", meta=b"\0" * 2000)
    assert ei.value.code == "RateLimitExceeded"


def s3_traffic(srv):
    s3 = s3_client(srv)
    body = os.urandom(50000)
    s3.put_object(Bucket="metrics", Key="s3/b", Body=body)
    assert s3.get_object(Bucket="metrics", Key="s3/b")["Body"].read() == body
    # The blob of this object is unreferenced once it is deleted: the sweeper frees it.
    s3.delete_object(Bucket="metrics", Key="s3/b")


def blob_traffic(srv):
    cred = make_token(srv, "alice", grants=[("team/m", "read"), ("team/m", "write")])
    status, body = Ops(srv, cred).put("team/m", os.urandom(30000))
    assert status == 200, body


def scribe_traffic(srv):
    with ScribeConn(srv.addrs["scribe"]) as c:
        info = c.repo_create("art")
        rid, main, inc = info["id"], info["main"], info["incarnation"]
        chunks, enc, mid = file_objects(b"scribe file\n" * 1000)
        objs = [(CHUNK, chunk_id(ch), ch) for ch in chunks] + [(MANIFEST, mid, enc)]
        cs = changeset_encode([(ADD, "f.txt", mid, 0, None)])
        objs.append((CHANGESET, changeset_id(cs), cs))
        c.put_objects(rid, objs)
        o = c.submit(rid, inc, os.urandom(16), main, os.urandom(16), 0, changeset_id(cs), "ann",
                     "first")
        assert o["outcome"] == 1, o
        # A repository that does not exist: a client error (4xx class).
        with pytest.raises(ScribeError):
            c.repo_info(name="no-such-repository")


def refused_per_source(srv):
    """Two silent connections from 127.0.0.2: the second is over the
    source's share of pending connections (1) and is closed unread."""
    first = socket.socket()
    first.bind(("127.0.0.2", 0))
    first.connect(srv.addrs["jay"])
    second = socket.socket()
    second.settimeout(30)
    second.bind(("127.0.0.2", 0))
    second.connect(srv.addrs["jay"])
    data = b""
    while True:  # the busy reply, if any, then the close
        chunk = second.recv(4096)
        if not chunk:
            break
        data += chunk
    second.close()
    first.close()


def dropped_at_deadline(srv):
    """A silent Scribe connection: closed at its handshake deadline (3 s)."""
    s = socket.socket()
    s.settimeout(60)
    s.bind(("127.0.0.3", 0))
    s.connect(srv.addrs["scribe"])
    try:
        assert s.recv(4096) == b""
    except ConnectionResetError:
        pass
    s.close()


FAMILIES = [
    "cairn_connections_open", "cairn_connections_accepted_total",
    "cairn_connections_refused_total", "cairn_received_bytes_total", "cairn_sent_bytes_total",
    "cairn_request_duration_seconds", "cairn_store_blobs_written_total",
    "cairn_store_written_bytes_total", "cairn_store_fsync_duration_seconds",
    "cairn_store_commit_batch_blobs", "cairn_store_sweeps_total",
    "cairn_store_sweep_freed_bytes_total", "cairn_meta_transaction_duration_seconds",
    "cairn_meta_busy_retries_total", "cairn_scribe_submits_total", "cairn_jay_operations_total",
    "cairn_http_requests_total", "cairn_http_request_duration_seconds", "cairn_requests_total",
]


def test_every_family_moves_with_traffic_on_every_face(srv):
    before = scrape(srv)
    # Every family is declared once, with HELP and TYPE, before any traffic
    # of this test (the scrape itself is HTTP traffic, and the server's
    # start ran metadata transactions).
    for f in ["cairn_connections_accepted_total", "cairn_meta_busy_retries_total",
              "cairn_meta_transaction_duration_seconds"]:
        assert before[f]["help"] and before[f]["type"], f

    jc = jayclient.Conn(srv.addrs["jay"], ADMIN_TOKEN)
    jay_traffic(srv, jc)
    s3_traffic(srv)
    blob_traffic(srv)
    scribe_traffic(srv)
    refused_per_source(srv)
    dropped_at_deadline(srv)
    swept = value(before, "cairn_store_sweep_freed_bytes_total")
    wait_for(lambda: value(scrape(srv), "cairn_store_sweep_freed_bytes_total") > swept,
             "a sweep freeing the deleted object's blob")

    after = scrape(srv)  # the Jay connection jc is still open
    for f in FAMILIES:
        assert after.get(f) and after[f]["help"] and after[f]["type"], f

    def moved(fam, suffix="", **labels):
        a, b = value(after, fam, suffix, **labels), value(before, fam, suffix, **labels)
        assert a > b, "%s%s %s did not move: %s -> %s" % (fam, suffix, labels, b, a)

    # per listener, counted once in the network layer for every face
    for ls in ("jay", "scribe", "http"):
        moved("cairn_connections_accepted_total", listener=ls)
        moved("cairn_received_bytes_total", listener=ls)
        moved("cairn_sent_bytes_total", listener=ls)
    moved("cairn_connections_open", listener="jay")
    moved("cairn_connections_refused_total", listener="jay", reason="per_source")
    moved("cairn_connections_refused_total", listener="jay", reason="memory_budget")
    moved("cairn_connections_refused_total", listener="scribe", reason="deadline")
    assert value(after, "cairn_connections_refused_total", reason="limit") >= 0
    # request durations by face and operation
    moved("cairn_request_duration_seconds", "_count", face="jay", op="PutObject")
    moved("cairn_request_duration_seconds", "_count", face="jay", op="GetObject")
    moved("cairn_request_duration_seconds", "_count", face="scribe", op="submit")
    moved("cairn_request_duration_seconds", "_count", face="http", op="blobs")
    moved("cairn_request_duration_seconds", "_count", face="http")
    # outcomes
    moved("cairn_jay_operations_total", op="PutObject", outcome="ok")
    moved("cairn_jay_operations_total", op="GetObject", outcome="NoSuchKey")
    moved("cairn_jay_operations_total", outcome="RateLimitExceeded")
    moved("cairn_scribe_submits_total", op="submit", outcome="ok")
    # status classes of every face (docs/architecture.md): Jay's OK 2xx,
    # NoSuchKey 4xx, RateLimitExceeded (busy) 5xx; Scribe's answers 2xx,
    # repository_not_found 4xx
    for face, st in [("http", "2xx"), ("jay", "2xx"), ("jay", "4xx"), ("jay", "5xx"),
                     ("scribe", "2xx"), ("scribe", "4xx")]:
        moved("cairn_requests_total", face=face, status=st)
    # the store
    moved("cairn_store_blobs_written_total")
    moved("cairn_store_written_bytes_total")
    moved("cairn_store_fsync_duration_seconds", "_count")
    if not (fleetmode.active() and fleetmode.BLOBS == "s3"):
        # the group committer; the S3 tier has none (each writer uploads)
        moved("cairn_store_commit_batch_blobs", "_count")
    moved("cairn_store_sweeps_total")
    moved("cairn_store_sweep_freed_bytes_total")
    # meta
    moved("cairn_meta_transaction_duration_seconds", "_count", kind="read")
    moved("cairn_meta_transaction_duration_seconds", "_count", kind="write")
    # Busy retries need two writers racing for the database: declared at
    # zero or more, never asserted to move here (tests/meta covers retries).
    assert value(after, "cairn_meta_busy_retries_total") >= 0
    # the HTTP listener's own families keep their names
    moved("cairn_http_requests_total")
    moved("cairn_http_request_duration_seconds", "_count")
    jc.close()


def test_parser_refuses_malformed_text():
    """The strict reader above can fail: each of these breaks the format."""
    good = ("# HELP cairn_x_total X.\n# TYPE cairn_x_total counter\n"
            "cairn_x_total{a=\"1\"} 3\n")
    assert parse_exposition(good)["cairn_x_total"]["samples"]
    bad = [
        good + "# TYPE cairn_x_total counter\n",                      # TYPE twice
        good.replace("} 3", "} three"),                                 # not a number
        good.replace('a="1"', "a=1"),                                   # unquoted label
        good + 'cairn_x_total{a="1"} 4\n',                              # duplicate series
        good + "cairn_y 1\n",                                           # outside a family
        good[:-1],                                                      # no final newline
        "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\n"
        "h_sum 1\nh_count 1\n",                                         # not cumulative
        "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 1\n",  # count != +Inf
    ]
    for text in bad:
        with pytest.raises(AssertionError):
            parse_exposition(text)
