"""cairnd on PostgreSQL metadata (issue 24, docs/fleet.md "Metadata"): the
harness (pgharness.py) starts a throwaway PostgreSQL 15 whose default
collation is ICU en-US; cairnd nodes run with --meta postgres://... and local
blobs.  A put/get round trip through the S3 face; a second node on the same
database sees the first node's buckets and keys (metadata is shared, not
copied); listing in byte order with a delimiter and continuation; two nodes
starting together on an empty database (one migrates, the other waits); a
restart keeps everything; no meta.db is written to the data dir."""
import os
import sys
import threading

import pytest

from conftest import Server

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "s3"))
import pgharness  # noqa: E402
from s3fixtures import S3Server, s3_args  # noqa: E402

pytestmark = pytest.mark.skipif(not pgharness.available(),
                                reason="PostgreSQL 15 server binaries not installed")

ORDER_KEYS = ["Foo", "bar", "a-b", "ab", "a/b", "a.b", "\u00e9", "\U0001F600"]


@pytest.fixture(scope="module")
def pg():
    with pgharness.PgCluster() as cluster:
        yield cluster


def node(tmp_path, name, uri, key_from=None):
    """A cairnd on uri.  Token secrets are sealed with DATA/identity.key, a
    file of the node, so the nodes of one fleet share it (key_from: a data
    dir holding the fleet's key; docs/fleet.md, "left")."""
    data = tmp_path / name
    if key_from is not None:
        data.mkdir(mode=0o700)
        key = (key_from / "identity.key").read_bytes()
        fd = os.open(str(data / "identity.key"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, key)
        os.close(fd)
    return Server(data, args=s3_args(["--meta", uri]))


def fleet_key(tmp_path):
    """A data dir holding a fresh identity.key: one start of a node on its
    embedded engine, stopped again."""
    srv = Server(tmp_path / "keygen", args=s3_args())
    srv.start(wait_for=("http", "jay"))
    srv.stop()
    return tmp_path / "keygen"


def test_round_trip_and_shared_metadata(pg, tmp_path):
    uri = pg.create_db("rt")
    a = S3Server(node(tmp_path, "a", uri).start(wait_for=("http", "jay")))
    b = None
    try:
        assert not os.path.exists(os.path.join(a.data_dir, "meta.db"))
        s3 = a.client()
        s3.create_bucket(Bucket="fleet")
        body = os.urandom(4096)
        s3.put_object(Bucket="fleet", Key="one", Body=body)
        assert s3.get_object(Bucket="fleet", Key="one")["Body"].read() == body

        # A second node on the same database: the same bucket and key.
        b = S3Server(node(tmp_path, "b", uri, key_from=tmp_path / "a")
                     .start(wait_for=("http", "jay")))
        listed = b.client().list_objects_v2(Bucket="fleet")
        assert [(o["Key"], o["Size"]) for o in listed["Contents"]] == [("one", 4096)]
        assert "fleet" in [x["Name"] for x in b.client().list_buckets()["Buckets"]]

        # A restart of the first node keeps everything (it is all in PostgreSQL).
        a.server.stop()
        a = S3Server(a.server.start(wait_for=("http", "jay")))
        assert a.client().get_object(Bucket="fleet", Key="one")["Body"].read() == body
    finally:
        if b:
            b.server.stop()
        a.server.stop()


def test_listing_in_byte_order(pg, tmp_path):
    a = S3Server(node(tmp_path, "a", pg.create_db("order")).start(wait_for=("http", "jay")))
    try:
        s3 = a.client()
        s3.create_bucket(Bucket="order")
        for k in ORDER_KEYS:
            s3.put_object(Bucket="order", Key=k, Body=k.encode())
        want = sorted(ORDER_KEYS, key=lambda k: k.encode())
        got, token = [], None
        while True:
            kw = {"ContinuationToken": token} if token else {}
            r = s3.list_objects_v2(Bucket="order", MaxKeys=3, **kw)
            got += [o["Key"] for o in r.get("Contents", [])]
            if not r["IsTruncated"]:
                break
            token = r["NextContinuationToken"]
        assert got == want
        r = s3.list_objects_v2(Bucket="order", Prefix="a", Delimiter="/")
        assert [o["Key"] for o in r["Contents"]] == ["a-b", "a.b", "ab"]
        assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["a/"]
    finally:
        a.server.stop()


def test_two_nodes_migrate_together(pg, tmp_path):
    uri = pg.create_db("race")
    key = fleet_key(tmp_path)
    nodes = [node(tmp_path, "n%d" % i, uri, key_from=key) for i in range(2)]
    errors = []

    def start(n):
        try:
            n.start(wait_for=("http", "jay"), timeout=60)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=start, args=(n,)) for n in nodes]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert errors == []
        versions = pg.psql("SELECT component || '=' || version FROM cn_schema ORDER BY 1",
                           db="race").split()
        assert any(v.startswith("objects=") for v in versions)
        s3 = S3Server(nodes[1]).client()
        s3.create_bucket(Bucket="raced")
        assert "raced" in [x["Name"] for x in S3Server(nodes[0]).client()
                           .list_buckets()["Buckets"]]
    finally:
        for n in nodes:
            if n.proc:
                n.stop()


def test_schema_newer_than_binary(pg, tmp_path):
    """A database migrated by a later cairnd: this one refuses to start and
    says why, and changes nothing."""
    uri = pg.create_db("newer")
    first = node(tmp_path, "first", uri)
    first.start(wait_for=("http", "jay"))
    first.stop()
    pg.psql("UPDATE cn_schema SET version = 999 WHERE component = 'objects'", db="newer")
    late = node(tmp_path, "late", uri, key_from=tmp_path / "first")
    with pytest.raises(RuntimeError) as err:
        late.start(wait_for=("http", "jay"), timeout=30)
    # 1 is cairnd's "cannot start" status (its --help, src/cmd/cairnd.c; 2 is
    # a usage error), and the message names the service and the reason.
    assert late.proc.returncode == 1, str(err.value)[-2000:]
    assert ("error cairnd: cannot open the objects service: not supported"
            " (the metadata schema is newer than this cairnd)") in str(err.value), \
        str(err.value)[-2000:]
    assert pg.psql("SELECT version FROM cn_schema WHERE component = 'objects'",
                   db="newer").strip() == "999"


def test_meta_flag(tmp_path):
    """--meta: a usage error for anything but postgres://, postgresql:// or
    sqlite:PATH; sqlite:PATH puts the database there, not in DATA; an
    unreachable server stops cairnd with the metadata named."""
    from conftest import binary, run
    r = run([binary("cairnd"), "--data", str(tmp_path / "d0"), "--meta", "mysql://x"])
    assert r.returncode == 2 and "--meta wants" in r.stderr
    db = tmp_path / "elsewhere.db"
    srv = Server(tmp_path / "d1", args=s3_args(["--meta", "sqlite:%s" % db]))
    srv.start(wait_for=("http", "jay"))
    try:
        assert db.exists()
        assert not (tmp_path / "d1" / "meta.db").exists()
    finally:
        srv.stop()
    gone = Server(tmp_path / "d2",
                  args=s3_args(["--meta", "postgresql:///x?host=%s" % (tmp_path / "nopg")]))
    with pytest.raises(RuntimeError) as err:
        gone.start(wait_for=("http", "jay"), timeout=30)
    assert "cannot open the metadata service" in str(err.value)


def test_migrate_only(pg, tmp_path):
    """cairnd --migrate-only applies every schema step to an empty database
    and exits 0 without listening; a node started after it migrates
    nothing."""
    from conftest import binary, run
    uri = pg.create_db("mig")
    r = run([binary("cairnd"), "--data", str(tmp_path / "m"), "--meta", uri, "--migrate-only"],
            env={"CAIRN_ADMIN_TOKEN": "cnadmin:test-admin-secret-0123456789"}, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "listening" not in r.stdout + r.stderr
    versions = dict(v.split("=") for v in pg.psql(
        "SELECT component || '=' || version FROM cn_schema", db="mig").split())
    assert {"objects", "repos", "identity", "blobs", "store"} <= set(versions)
    later = node(tmp_path, "later", uri, key_from=tmp_path / "m")
    later.start(wait_for=("http", "jay"))
    try:
        assert "version 0 ->" not in later.output()
    finally:
        later.stop()
