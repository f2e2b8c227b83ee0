"""Object heads across nodes (issue 24, docs/fleet.md "The object-head cache
on PostgreSQL"): two cairnd on one PostgreSQL database and one blob tier (a
third cairnd on its embedded engine as the S3 backend).  A write
acknowledged by one node is what the other node's very next GET and HEAD
answer: overwrites, a changed content type, a delete and a re-create, each
after the reader had just read the key (so a cached head, if one were kept,
would be stale).  A node's own word (the SQLite design, switched on for
PostgreSQL as it is) fails both tests: checked by hand on a scratch build.
The head cache is on for PostgreSQL (its words are cn_obj_gen rows bumped by
each write's own transaction), and the overwrite test checks that both
nodes served reads from it."""
import contextlib
import os
import sys

import pytest
import requests
from botocore.exceptions import ClientError

from conftest import ADMIN_TOKEN, Server

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fleetutil import key_file, needs_pg, pg  # noqa: E402,F401
from s3fixtures import S3Server, s3_args  # noqa: E402

pytestmark = needs_pg

ROUNDS = 30


@contextlib.contextmanager
def two_nodes(pg, tmp_path, db_sql=()):
    """Two nodes on a fresh database (db_sql: statements run on it first,
    each with %s for its name) and one blob tier; stopped at the end."""
    backend = S3Server(Server(tmp_path / "backend", args=s3_args())
                       .start(wait_for=("http", "jay")))
    nodes = []
    try:
        backend.client().create_bucket(Bucket="tier")
        creds = tmp_path / "blob.creds"
        creds.write_text(ADMIN_TOKEN + "\n")
        key = key_file(tmp_path / "fleet.key")
        db = "heads_" + "".join(c for c in tmp_path.name if c.isalnum())
        uri = pg.create_db(db)
        for sql in db_sql:
            pg.psql(sql % db)
        for name in ("a", "b"):
            args = s3_args(["--meta", uri, "--identity-key", str(key),
                            "--blob-store", "s3://tier/blobs",
                            "--blob-endpoint", backend.endpoint,
                            "--blob-credentials", str(creds)])
            nodes.append(S3Server(Server(tmp_path / name, args=args)
                                  .start(wait_for=("http", "jay"))))
        yield nodes
    finally:
        for n in nodes + [backend]:
            n.server.stop()


@pytest.fixture
def fleet(pg, tmp_path):
    with two_nodes(pg, tmp_path) as nodes:
        yield nodes


HITS = "cairn_objects_head_cache_hits_total"


def head_hits(node):
    """The node's head-cache hits; None while the cache is off (no series)."""
    text = requests.get(node.endpoint + "/_cairn/metrics", timeout=30).text
    for line in text.splitlines():
        if line.startswith(HITS + " "):
            return float(line.split()[1])
    return None


def body(s3, key):
    r = s3.get_object(Bucket="heads", Key=key)
    return r["Body"].read(), r["ContentType"]


def test_overwrite_seen_at_once_on_the_other_node(fleet):
    a, b = (n.client() for n in fleet)
    a.create_bucket(Bucket="heads")
    # One node writes and the other only reads (a reader's own writes would
    # move its own word and hide a missing cross-node invalidation), then
    # the other way round.
    for i in range(ROUNDS):
        writer, reader = (a, b) if i < ROUNDS // 2 else (b, a)
        data = ("round %d" % i).encode()
        ctype = "text/x-round-%d" % i
        writer.put_object(Bucket="heads", Key="k", Body=data, ContentType=ctype)
        assert body(reader, "k") == (data, ctype)
        assert reader.head_object(Bucket="heads", Key="k")["ContentLength"] == len(data)
        assert body(reader, "k") == (data, ctype)  # read twice: a cache would hold it now
    # The cache is on (gen.c's rows mode): the rounds must have been served
    # from it on both nodes, else they proved nothing about it.
    for n in fleet:
        hits = head_hits(n)
        assert hits is not None and hits > 0, hits


def test_delete_and_recreate_seen_at_once(fleet):
    a, b = (n.client() for n in fleet)
    a.create_bucket(Bucket="heads")
    for i in range(ROUNDS // 3):
        a.put_object(Bucket="heads", Key="d", Body=b"here %d" % i)
        assert body(b, "d")[0] == b"here %d" % i
        a.delete_object(Bucket="heads", Key="d")
        with pytest.raises(ClientError) as err:
            b.get_object(Bucket="heads", Key="d")
        assert err.value.response["Error"]["Code"] == "NoSuchKey"
        with pytest.raises(ClientError):
            b.head_object(Bucket="heads", Key="d")


def rules(rule_id):
    return {"Rules": [{"ID": rule_id, "Status": "Enabled", "Filter": {"Prefix": ""},
                       "Expiration": {"Days": 1}}]}


def test_lifecycle_change_seen_at_once_by_a_cached_read(fleet):
    """x-amz-expiration of a cached head's answer: the rules are taken under
    the word the head was found under (one read of the row per GET), so a
    rule change through one node is what the other node's next GET and HEAD
    say, cache or not."""
    a, b = (n.client() for n in fleet)
    a.create_bucket(Bucket="heads")
    a.put_object(Bucket="heads", Key="x", Body=b"x")
    for i in range(ROUNDS // 3):
        body(b, "x")  # the head is cached now, and the rules under its word
        rid = "rule-%d" % i
        a.put_bucket_lifecycle_configuration(Bucket="heads", LifecycleConfiguration=rules(rid))
        for _ in range(2):  # the first may fill the caches, the second is served from them
            assert 'rule-id="%s"' % rid in b.get_object(Bucket="heads", Key="x")["Expiration"]
            assert 'rule-id="%s"' % rid in b.head_object(Bucket="heads", Key="x")["Expiration"]
        a.delete_bucket_lifecycle(Bucket="heads")
        for _ in range(2):
            assert "Expiration" not in b.get_object(Bucket="heads", Key="x")
            assert "Expiration" not in b.head_object(Bucket="heads", Key="x")
    hits = head_hits(fleet[1])
    assert hits is not None and hits > 0, hits
    # The rules come under the word the head was found under: a cached GET
    # reads the database once (that word), not twice (a second read of the
    # word for the rules).  Counted in read transactions; the slack takes
    # the node's own background reads.
    a.put_bucket_lifecycle_configuration(Bucket="heads", LifecycleConfiguration=rules("last"))
    for _ in range(2):
        assert 'rule-id="last"' in b.get_object(Bucket="heads", Key="x")["Expiration"]
    before = read_txns(fleet[1])
    for _ in range(GETS):
        assert 'rule-id="last"' in b.get_object(Bucket="heads", Key="x")["Expiration"]
    reads = read_txns(fleet[1]) - before
    print("read transactions for %d cached GETs: %d" % (GETS, reads))
    assert reads < GETS * 1.5, (reads, GETS)


GETS = 40
READS = 'cairn_meta_transaction_duration_seconds_count{kind="read"}'


def metric(node, name):
    """The node's value of metric line name so far (0 when absent)."""
    text = requests.get(node.endpoint + "/_cairn/metrics", timeout=30).text
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return 0.0


def read_txns(node):
    """The node's metadata read transactions so far."""
    return metric(node, READS)


def test_uncached_read_is_one_database_read(fleet):
    """An uncached HEAD or GET on PostgreSQL is one read of the database: the
    key's read also reads its head's stamp (the generation rows) in its own
    snapshot, the head is filed under that, and x-amz-expiration takes the
    rules under its bucket word -- not a read of the words before the key's
    read (two reads), nor a third for the rules.  The answer still names the
    rule, and a rule changed through the other node is what the next miss
    says."""
    a, b = (n.client() for n in fleet)
    a.create_bucket(Bucket="heads")
    a.put_bucket_lifecycle_configuration(Bucket="heads", LifecycleConfiguration=rules("r1"))
    keys = ["k%03d" % i for i in range(GETS)]
    for k in keys:
        a.put_object(Bucket="heads", Key=k, Body=b"x")
    # The rules cached on b under the current word (they would be read once).
    assert 'rule-id="r1"' in b.head_object(Bucket="heads", Key=keys[0])["Expiration"]
    before = read_txns(fleet[1])
    for k in keys[1:]:
        assert 'rule-id="r1"' in b.head_object(Bucket="heads", Key=k)["Expiration"]
    reads = read_txns(fleet[1]) - before
    print("read transactions for %d uncached HEADs: %d" % (len(keys) - 1, reads))
    assert reads < (len(keys) - 1) * 1.5, (reads, len(keys) - 1)
    a.put_bucket_lifecycle_configuration(Bucket="heads", LifecycleConfiguration=rules("r2"))
    a.put_object(Bucket="heads", Key="new", Body=b"x")
    assert 'rule-id="r2"' in b.get_object(Bucket="heads", Key="new")["Expiration"]
    assert 'rule-id="r2"' in b.head_object(Bucket="heads", Key=keys[-1])["Expiration"]

