"""Small blobs' bytes kept in the store's memory (src/store/hot.c), through
the real cairnd: a small object's bytes come in on its second GET and the
third is answered from memory, whole and ranged, through S3 and Jay alike;
a blob read once never comes in (a scan does not push the hot set out);
a blob over 16 KiB never does; an LZ4-stored blob comes in decoded; and an
overwritten key serves its new bytes at once.

The counters cairn_store_hot_fills_total and cairn_store_hot_hits_total say
which path answered; every answer is checked byte for byte."""
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "jay"))

from conftest import ADMIN_TOKEN, metrics_text  # noqa: E402
from cairnutil import repo as cairn_repo, s3_client  # noqa: E402
import jayclient  # noqa: E402

FILLS, HITS = "cairn_store_hot_fills_total", "cairn_store_hot_hits_total"


@pytest.fixture
def srv(server_factory):
    return server_factory(args=["--jay", "127.0.0.1:0", "--http", "127.0.0.1:0",
                                "--scribe", "127.0.0.1:0"], wait_for=("jay", "http", "scribe"))


def counters(srv):
    """(fills, hits) from the server's metrics."""
    got = {}
    for line in metrics_text(srv.addrs["http"]).splitlines():
        name, _, value = line.partition(" ")
        if name in (FILLS, HITS):
            got[name] = float(value)
    assert set(got) == {FILLS, HITS}, "the server does not report its hot bytes"
    return got[FILLS], got[HITS]


def body(seed, n):
    return bytes((k * 131 + seed * 17 + k // 97) & 0xFF for k in range(n))


def get(s3, b, k, rng=None):
    kw = {"Range": rng} if rng else {}
    return s3.get_object(Bucket=b, Key=k, **kw)["Body"].read()


def test_second_look_brings_bytes_in_and_later_gets_are_served_from_memory(srv):
    s3 = s3_client(srv)
    s3.create_bucket(Bucket="hot")
    data = body(1, 4200)
    s3.put_object(Bucket="hot", Key="k", Body=data)
    f0, h0 = counters(srv)
    assert get(s3, "hot", "k") == data
    assert counters(srv) == (f0, h0), "a first look must not bring the bytes in"
    assert get(s3, "hot", "k") == data
    assert counters(srv) == (f0 + 1, h0)
    assert get(s3, "hot", "k") == data
    assert counters(srv) == (f0 + 1, h0 + 1)
    for rng, want in (("bytes=0-0", data[:1]), ("bytes=100-2099", data[100:2100]),
                      ("bytes=-500", data[-500:]), ("bytes=4199-", data[4199:])):
        assert get(s3, "hot", "k", rng) == want, rng
    assert counters(srv) == (f0 + 1, h0 + 5)
    with jayclient.Conn(srv.addrs["jay"], ADMIN_TOKEN) as jc:
        assert jc.get_object("hot", "k")[1] == data
        assert jc.get_range("hot", "k", 333, 3000)[1] == data[333:3333]
    assert counters(srv) == (f0 + 1, h0 + 7)
    # Another key with the same bytes is the same blob: already in memory.
    s3.put_object(Bucket="hot", Key="twin", Body=data)
    assert get(s3, "hot", "twin") == data
    assert counters(srv) == (f0 + 1, h0 + 8)
    # An overwrite is another digest: its bytes, never the old ones.
    new = body(2, 4200)
    s3.put_object(Bucket="hot", Key="k", Body=new)
    for _ in range(3):
        assert get(s3, "hot", "k") == new
    assert counters(srv) == (f0 + 2, h0 + 9)


def test_blobs_read_once_and_large_blobs_stay_out(srv):
    s3 = s3_client(srv)
    s3.create_bucket(Bucket="scan")
    small = {"s%d" % i: body(10 + i, 1000 + i) for i in range(20)}
    large = body(99, 16 * 1024 + 1)
    for k, b in small.items():
        s3.put_object(Bucket="scan", Key=k, Body=b)
    s3.put_object(Bucket="scan", Key="large", Body=large)
    f0, h0 = counters(srv)
    for k, b in small.items():
        assert get(s3, "scan", k) == b
    for _ in range(3):
        assert get(s3, "scan", "large") == large
    assert counters(srv) == (f0, h0)
    assert get(s3, "scan", "s7") == small["s7"]
    assert counters(srv) == (f0 + 1, h0)


def test_an_lz4_stored_small_blob_comes_in_decoded(srv, tmp_path):
    # A file under the chunker's minimum is one chunk; compressible, so a
    # repository with LZ4 storage keeps it in the envelope, and an S3 PUT of
    # the same bytes refers to that blob.
    data = b"".join(b"line %05d of a small compressible body\n" % i for i in range(250))
    assert len(data) <= 16 * 1024
    ep = "%s:%d" % srv.addrs["scribe"]
    cairn_repo(ep, "create", "z", "--lz4-storage", env={"CAIRN_TOKEN": ADMIN_TOKEN})
    ws = tmp_path / "ws"
    cairn_repo(ep, "clone", "z", str(ws), env={"CAIRN_TOKEN": ADMIN_TOKEN})
    (ws / "f.txt").write_bytes(data)
    cairn_repo(ep, "submit", str(ws), "-m", "one", env={"CAIRN_TOKEN": ADMIN_TOKEN})
    lz4 = [f for _, _, fs in os.walk(os.path.join(srv.data_dir, "blobs")) for f in fs
           if f.endswith(".lz4")]
    assert len(lz4) == 1, "the chunk is not stored in the LZ4 envelope"
    s3 = s3_client(srv)
    s3.create_bucket(Bucket="lz4")
    s3.put_object(Bucket="lz4", Key="same-bytes", Body=data)
    f0, h0 = counters(srv)
    for _ in range(3):
        assert get(s3, "lz4", "same-bytes") == data
    assert counters(srv) == (f0 + 1, h0 + 1)
    assert get(s3, "lz4", "same-bytes", "bytes=1000-1999") == data[1000:2000]
    with jayclient.Conn(srv.addrs["jay"], ADMIN_TOKEN) as jc:
        assert jc.get_object("lz4", "same-bytes")[1] == data
    assert counters(srv) == (f0 + 1, h0 + 3)
