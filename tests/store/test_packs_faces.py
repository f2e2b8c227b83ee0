"""Packed small blobs served through every face of the real cairnd, with
`[store] pack_max_bytes` set in its config (docs/store.md, "Reads of packed
blobs"): Jay GET and ranged GET, S3 GET with ranges (inline bodies and
bodies sent by sendfile from the pack at the record's offset), blob fetch
whole and ranged, byte-exact; GETs racing the sweeper's compaction, which
moves the surviving records and deletes their old packs under them; and an
LZ4-stored blob (never packed) still decoded on GET with packs on.

That the bytes come from the pack's descriptor at an offset, with no copy,
is proven in the unit tests (tests/objects, tests/blobs, tests/store
test_pack.c): they compare the descriptor's inode with the pack file's."""
import os
import subprocess
import sys
import threading
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
for _face in ("jay", "blobops"):
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), _face))

from conftest import ADMIN_TOKEN, binary, run  # noqa: E402
from cairnutil import s3_client  # noqa: E402
import jayclient  # noqa: E402
from blobsclient import Ops, b3, make_token  # noqa: E402

PACK_MAX = 65536
NS = "media"


def body(i, n):
    return bytes((k * 31 + i * 7 + k // 251) & 0xFF for k in range(n))


def files_under(path):
    return [os.path.join(r, f) for r, _, fs in os.walk(path) for f in fs]


def packs(data):
    d = os.path.join(data, "packs")
    return sorted(f for f in os.listdir(d) if f.endswith(".pack"))


@pytest.fixture
def packed_server(server_factory, tmp_path):
    def make(env=None, live=50, scribe=False):
        cfg = tmp_path / "cairnd.toml"
        cfg.write_text("[store]\npack_max_bytes = %d\npack_compact_live_percent = %d\n"
                       % (PACK_MAX, live))
        args = ["--jay", "127.0.0.1:0", "--http", "127.0.0.1:0",
                "--scribe", "127.0.0.1:0" if scribe else "off", "--config", str(cfg)]
        wait = ("jay", "http", "scribe") if scribe else ("jay", "http")
        return server_factory(args=args, env=env, wait_for=wait)
    return make


# Sizes: empty, one byte, inline (≤ 16 KiB), sent by sendfile (> 16 KiB),
# exactly the threshold (packed), one over it (a file).
SIZES = [0, 1, 4200, 16 * 1024 + 1, 40000, PACK_MAX, PACK_MAX + 1]


def test_jay_and_s3_get_packed_byte_exact(packed_server):
    srv = packed_server()
    s3 = s3_client(srv)
    s3.create_bucket(Bucket="packed")
    bodies = {"k%d" % n: body(n, n) for n in SIZES}
    for k, b in bodies.items():
        s3.put_object(Bucket="packed", Key=k, Body=b)
    # Only the blob over the threshold is a file; the others are in the pack.
    blob_files = files_under(os.path.join(srv.data_dir, "blobs"))
    assert len(blob_files) == 1, blob_files
    assert b3(bodies["k%d" % (PACK_MAX + 1)]) in blob_files[0]
    assert len(packs(srv.data_dir)) == 1
    pack_size = os.path.getsize(os.path.join(srv.data_dir, "packs", packs(srv.data_dir)[0]))
    assert pack_size >= sum(n for n in SIZES if n <= PACK_MAX)
    for _ in range(2):  # the first read of a record hashes it, the next ones do not
        for k, b in bodies.items():
            got = s3.get_object(Bucket="packed", Key=k)
            assert got["ContentLength"] == len(b) and got["Body"].read() == b, k
    for n in (4200, 40000, PACK_MAX):
        b, k = bodies["k%d" % n], "k%d" % n
        for rng, want in (("bytes=0-0", b[:1]), ("bytes=100-2099", b[100:2100]),
                          ("bytes=-500", b[-500:]), ("bytes=%d-" % (n - 17), b[n - 17:]),
                          ("bytes=1000-%d" % (n + 50), b[1000:])):
            got = s3.get_object(Bucket="packed", Key=k, Range=rng)
            assert got["Body"].read() == want, (k, rng)
    with jayclient.Conn(srv.addrs["jay"], ADMIN_TOKEN) as jc:
        for k, b in bodies.items():
            assert jc.get_object("packed", k)[1] == b, k
        for n in (4200, 40000, PACK_MAX):
            b, k = bodies["k%d" % n], "k%d" % n
            for off, ln in ((0, 1), (333, 3000), (n - 10, 10)):
                assert jc.get_range("packed", k, off, ln)[1] == b[off:off + ln], (k, off, ln)


def test_blob_fetch_of_packed_blobs(packed_server):
    srv = packed_server()
    ops = Ops(srv, make_token(srv, "alice", grants=[(NS, "read"), (NS, "write")]))
    for n in (1, 4200, 40000, PACK_MAX):
        data = body(n + 3, n)
        d = b3(data)
        status, res = ops.put(NS, data, digest=d, length=n)
        assert status == 200, res
        assert not files_under(os.path.join(srv.data_dir, "blobs"))  # packed
        r = ops.fetch(NS, d)
        assert r.status_code == 200 and r.ack == {"source": "store", "len": n}
        assert r.content == data and b3(r.content) == d
        ranges = [[0, 1], [n // 3, 1000], [max(0, n - 5), 100]]
        r = ops.fetch(NS, d, ranges=ranges)
        assert r.status_code == 200, r.text
        served = [data[o:o + ln] for o, ln in ranges]
        assert r.ack["slice_digests"] == [b3(s) for s in served]
        assert r.content == b"".join(served)


def test_gets_racing_compaction(packed_server):
    """The sweeper (every second, 1 s grace) drops the deleted objects' index
    rows and compacts every pack under 50 % live while threads GET the
    survivors through S3 and Jay without pause: every answer is byte-exact,
    and the packs the GETs started on are deleted under them."""
    env = {"CAIRN_TEST_PACK_FILE_MAX": "65536", "CAIRN_SWEEP_INTERVAL_SECONDS": "1",
           "CAIRN_SWEEP_GRACE_SECONDS": "1"}
    srv = packed_server(env=env)
    s3 = s3_client(srv)
    s3.create_bucket(Bucket="race")
    sizes = [4200 if i % 2 else 20000 for i in range(120)]
    for i, n in enumerate(sizes):
        s3.put_object(Bucket="race", Key="k%d" % i, Body=body(i, n))
    before = packs(srv.data_dir)
    assert len(before) > 10, before
    keep = [i for i in range(120) if i % 10 == 0]
    stop = threading.Event()
    errors, counts = [], {"s3": 0, "jay": 0}

    def s3_loop():
        c = s3_client(srv)
        while not stop.is_set():
            for i in keep:
                try:
                    got = c.get_object(Bucket="race", Key="k%d" % i)["Body"].read()
                    if got != body(i, sizes[i]):
                        errors.append(("s3 bytes", i))
                    counts["s3"] += 1
                except Exception as e:  # noqa: BLE001 (any failure is the finding)
                    errors.append(("s3", i, repr(e)))

    def jay_loop():
        with jayclient.Conn(srv.addrs["jay"], ADMIN_TOKEN) as jc:
            while not stop.is_set():
                for i in keep:
                    try:
                        if jc.get_object("race", "k%d" % i)[1] != body(i, sizes[i]):
                            errors.append(("jay bytes", i))
                        counts["jay"] += 1
                    except Exception as e:  # noqa: BLE001
                        errors.append(("jay", i, repr(e)))

    threads = [threading.Thread(target=f) for f in (s3_loop, jay_loop)]
    for t in threads:
        t.start()
    try:
        time.sleep(0.5)
        for i in range(120):
            if i % 10:
                s3.delete_object(Bucket="race", Key="k%d" % i)
        deadline = time.time() + 60
        while time.time() < deadline:
            gone = set(before) - set(packs(srv.data_dir))
            if len(gone) >= len(before) // 2:
                break
            time.sleep(0.2)
        mid = dict(counts)
        time.sleep(1.5)  # a further pass closes the retired packs' descriptors
    finally:
        stop.set()
        for t in threads:
            t.join(60)
    assert not errors, errors[:5]
    gone = set(before) - set(packs(srv.data_dir))
    assert len(gone) >= len(before) // 2, (before, packs(srv.data_dir))
    assert mid["s3"] > 0 and mid["jay"] > 0 and counts["s3"] > mid["s3"], (mid, counts)
    for i in keep:
        assert s3.get_object(Bucket="race", Key="k%d" % i)["Body"].read() == body(i, sizes[i])
    with pytest.raises(s3.exceptions.NoSuchKey):
        s3.get_object(Bucket="race", Key="k1")


def test_lz4_blob_with_packs_on(packed_server, tmp_path):
    """LZ4-enveloped blobs are never packed: a chunk Scribe stores in the
    envelope stays a .lz4 file beside the packs and S3 GETs decode it."""
    srv = packed_server(scribe=True)
    data = b"".join(b"line %06d of a compressible object body\n" % i for i in range(500))
    ep = "%s:%d" % srv.addrs["scribe"]

    def repo(*args):
        r = run([binary("cairn"), "repo"] + list(args) + ["--endpoint", ep],
                env={"CAIRN_TOKEN": ADMIN_TOKEN}, timeout=120)
        assert r.returncode == 0, (args, r.stdout, r.stderr)

    repo("create", "z", "--lz4-storage")
    ws = tmp_path / "ws"
    repo("clone", "z", str(ws))
    (ws / "f.txt").write_bytes(data)
    repo("submit", str(ws), "-m", "one chunk")
    d = b3(data)
    lz4 = os.path.join(srv.data_dir, "blobs", d[:2], d[2:4], d + ".lz4")
    assert os.path.exists(lz4)
    s3 = s3_client(srv)
    s3.create_bucket(Bucket="lz4")
    s3.put_object(Bucket="lz4", Key="same", Body=data)
    s3.put_object(Bucket="lz4", Key="small", Body=b"packed beside it")
    assert os.path.exists(lz4)
    got = s3.get_object(Bucket="lz4", Key="same")
    assert got["ContentLength"] == len(data) and got["Body"].read() == data
    got = s3.get_object(Bucket="lz4", Key="same", Range="bytes=20000-20099")
    assert got["Body"].read() == data[20000:20100]
    assert s3.get_object(Bucket="lz4", Key="small")["Body"].read() == b"packed beside it"
    with jayclient.Conn(srv.addrs["jay"], ADMIN_TOKEN) as jc:
        assert jc.get_object("lz4", "same")[1] == data


def test_admin_store_pack_moves_old_files(server_factory, tmp_path):
    """A data directory written with packs off (small objects as files):
    `cairn admin --data D store pack` moves them into packs with the server
    stopped; the restarted server, packs on, serves every object byte-exact
    through S3 and Jay, and a second run has nothing left to move."""
    off = tmp_path / "off.toml"
    off.write_text("[store]\npack_max_bytes = 0\n")  # whatever the default: files
    srv = server_factory(args=["--jay", "127.0.0.1:0", "--http", "127.0.0.1:0",
                               "--scribe", "off", "--config", str(off)], wait_for=("jay", "http"))
    s3 = s3_client(srv)
    s3.create_bucket(Bucket="old")
    sizes = [1, 4200, 20000, PACK_MAX, PACK_MAX + 1]
    for n in sizes:
        s3.put_object(Bucket="old", Key="k%d" % n, Body=body(n, n))
    blobs = os.path.join(srv.data_dir, "blobs")
    assert len(files_under(blobs)) == len(sizes)
    srv.stop()
    out = subprocess.run([binary("cairn"), "admin", "--data", srv.data_dir, "store", "pack"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.startswith("packed %d of %d " % (len(sizes) - 1, len(sizes) - 1)), out.stdout
    left = files_under(blobs)
    assert len(left) == 1 and b3(body(PACK_MAX + 1, PACK_MAX + 1)) in left[0], left
    assert packs(srv.data_dir)
    again = subprocess.run([binary("cairn"), "admin", "--data", srv.data_dir, "store", "pack"],
                           capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and again.stdout.startswith("packed 0 of 0 "), again.stdout
    bad = subprocess.run([binary("cairn"), "admin", "--data", srv.data_dir, "store", "pack",
                          "--max", "300000"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2, bad.stdout + bad.stderr
    cfg = tmp_path / "on.toml"
    cfg.write_text("[store]\npack_max_bytes = %d\n" % PACK_MAX)
    srv.args[-1] = str(cfg)
    srv.start(wait_for=("jay", "http"))
    s3 = s3_client(srv)
    for n in sizes:
        assert s3.get_object(Bucket="old", Key="k%d" % n)["Body"].read() == body(n, n), n
    with jayclient.Conn(srv.addrs["jay"], ADMIN_TOKEN) as jc:
        for n in sizes:
            assert jc.get_object("old", "k%d" % n)[1] == body(n, n), n
