"""A --meta URI naming several PostgreSQL hosts (issue 24, "partition /
target_session_attrs untested"; docs/fleet.md "Several hosts in --meta").
libpq tries the hosts of a multi-host URI in order and, with
target_session_attrs=read-write, skips a server that is read-only; cairn
hands the URI to libpq whole (engine_pg.c connect_uri), so these tests run
the real server against two throwaway clusters of this module's own (A and
B, pgharness) and a host that does not exist:

* a dead host first, the live cluster second: the node starts and serves an
  S3 PUT/GET, and the rows are in the live cluster;
* A read-only (default_transaction_read_only=on by ALTER SYSTEM and a
  reload, standing in for a standby) and target_session_attrs=read-write:
  the node's writes land on B (queried there), A's database stays empty;
* A turned read-only while a node is connected to it: a write is answered
  503 (retryable), never a 500, and the node's next connection reaches B,
  where the writes then land; the node's readers and its watcher (topics,
  job leases) move to B too.

A host stopped and started while a node runs is test_fleet_faults.py's."""
import os
import subprocess
import sys
import tempfile
import time

import pytest
from botocore.exceptions import ClientError

from conftest import Server, sanitizer_report

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "s3"))
import pgharness  # noqa: E402
from fleetutil import needs_pg  # noqa: E402
from s3fixtures import S3Server, s3_args  # noqa: E402

pytestmark = needs_pg

SWITCH_S = 20.0  # writes reach B within this of A turning read-only


@pytest.fixture(scope="module")
def pga():
    with pgharness.PgCluster() as cluster:
        yield cluster


@pytest.fixture(scope="module")
def pgb():
    with pgharness.PgCluster() as cluster:
        yield cluster


def psql(pg, sql, db="postgres"):
    """sql on pg as its role, in a session that may write even when the
    cluster's default is read-only."""
    argv = [os.path.join(pg.bin, "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", pg.dir,
            "-U", pgharness.ROLE, "-d", db, "-At", "-c", sql]
    env = dict(os.environ, PGOPTIONS="-c default_transaction_read_only=off")
    return subprocess.run(argv, check=True, capture_output=True, text=True, env=env).stdout


def set_read_only(pg, on):
    """The cluster's default_transaction_read_only, by ALTER SYSTEM and a
    reload (sessions open now follow it at their next transaction)."""
    psql(pg, "ALTER SYSTEM SET default_transaction_read_only = %s" % ("on" if on else "off"))
    psql(pg, "SELECT pg_reload_conf()")
    deadline = time.monotonic() + 30
    want = "on" if on else "off"
    while time.monotonic() < deadline:
        # A new session with the cluster's own default (pgharness's psql).
        if pg.psql("SHOW default_transaction_read_only").strip() == want:
            return
        time.sleep(0.05)
    raise AssertionError("reload did not apply default_transaction_read_only=%s" % want)


def hosts_uri(db, *hosts, attrs=None):
    """A multi-host libpq URI: the unix socket dirs hosts, in order."""
    uri = "postgresql:///%s?host=%s&user=%s" % (db, ",".join(hosts), pgharness.ROLE)
    if attrs:
        uri += "&target_session_attrs=" + attrs
    return uri


def keys_in(pg, db, bucket):
    """The object keys of bucket in pg's database db (none when cairn never
    created its tables there)."""
    have = psql(pg, "SELECT to_regclass('obj_version') IS NOT NULL", db=db).strip()
    if have != "t":
        return None
    out = psql(pg, "SELECT convert_from(v.okey, 'UTF8') FROM obj_version v JOIN obj_bucket b"
                   " USING (bucket_id) WHERE b.name = '%s' ORDER BY 1" % bucket, db=db)
    return [k for k in out.split("\n") if k]


def watchers(pg, db):
    """How many watcher sessions of cairn's (application_name cairn-watch…:
    the connection that LISTENs for topics and holds the job leases) pg has
    on db."""
    return int(psql(pg, "SELECT count(*) FROM pg_stat_activity WHERE datname = '%s'"
                        " AND application_name LIKE 'cairn-watch%%'" % db).strip())


def wait_for(pred, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.1)
    return pred()


def start_node(data, uri):
    return S3Server(Server(data, args=s3_args(["--meta", uri])).start(wait_for=("http", "jay")))


def stop_clean(node):
    node.server.stop()
    out = node.server.output()
    assert sanitizer_report(out) is None, out[-4000:]
    return out


def test_dead_first_host(pgb, tmp_path):
    """The first host has no server (a socket dir with nothing listening):
    libpq goes on to the second; the node starts and serves."""
    pgb.create_db("hostsdead")
    dead = tempfile.mkdtemp(prefix="cn-pg-dead-")
    try:
        node = start_node(tmp_path / "n", hosts_uri("hostsdead", dead, pgb.sockdir))
        try:
            s3 = node.client()
            s3.create_bucket(Bucket="multi")
            body = os.urandom(5000)
            s3.put_object(Bucket="multi", Key="k", Body=body)
            assert s3.get_object(Bucket="multi", Key="k")["Body"].read() == body
            assert keys_in(pgb, "hostsdead", "multi") == ["k"]
        finally:
            stop_clean(node)
    finally:
        os.rmdir(dead)


def test_read_only_first_host_skipped(pga, pgb, tmp_path):
    """A is read-only before the node starts; with target_session_attrs=
    read-write every connection of the node is B's: the schema, the bucket
    and the object are there, A's database has no table of cairn's."""
    pga.create_db("hostsro")
    pgb.create_db("hostsro")
    set_read_only(pga, True)
    try:
        uri = hosts_uri("hostsro", pga.sockdir, pgb.sockdir, attrs="read-write")
        node = start_node(tmp_path / "n", uri)
        try:
            s3 = node.client()
            s3.create_bucket(Bucket="rwonly")
            body = os.urandom(3000)
            s3.put_object(Bucket="rwonly", Key="on-b", Body=body)
            assert s3.get_object(Bucket="rwonly", Key="on-b")["Body"].read() == body
            assert keys_in(pgb, "hostsro", "rwonly") == ["on-b"]
            assert keys_in(pga, "hostsro", "rwonly") is None
        finally:
            stop_clean(node)
    finally:
        set_read_only(pga, False)


def s3_status(fn):
    """(HTTP status, S3 error code) of fn(): (200, None) when it succeeds."""
    try:
        fn()
        return 200, None
    except ClientError as e:
        r = e.response
        return r["ResponseMetadata"]["HTTPStatusCode"], r["Error"]["Code"]


def test_primary_turns_read_only_under_a_node(pga, pgb, tmp_path):
    """A node connected to A (read-write, first host) when A turns
    read-only: a write is answered 503 while its connection is A's, never a
    500 (25006 read_only_sql_transaction is retryable), and the writes
    reach B on the node's next connection, with no restart of the node.
    B was set up as a standby promoted after a failover would hold it:
    the same schema and bucket (a node on B alone, the same data dir)."""
    pga.create_db("hostsflip")
    pgb.create_db("hostsflip")
    data = tmp_path / "n"
    only_b = start_node(data, hosts_uri("hostsflip", pgb.sockdir))
    only_b.client().create_bucket(Bucket="flip")
    stop_clean(only_b)

    uri = hosts_uri("hostsflip", pga.sockdir, pgb.sockdir, attrs="read-write")
    node = start_node(data, uri)
    try:
        s3 = node.client()
        s3.create_bucket(Bucket="flip")
        s3.put_object(Bucket="flip", Key="before", Body=b"a")
        assert keys_in(pga, "hostsflip", "flip") == ["before"]
        assert wait_for(lambda: watchers(pga, "hostsflip") == 1, SWITCH_S)
        # A reader connection of A's (the node's readers open on demand).
        assert s3.get_object(Bucket="flip", Key="before")["Body"].read() == b"a"

        set_read_only(pga, True)
        answers, deadline, i = [], time.monotonic() + SWITCH_S, 0
        while time.monotonic() < deadline:
            st = s3_status(lambda: s3.put_object(Bucket="flip", Key="after%d" % i, Body=b"b"))
            answers.append(st)
            if st[0] == 200:
                break
            i += 1
            time.sleep(0.1)  # a client's backoff between retries
        assert answers[-1][0] == 200, answers[:10]
        assert all(st[0] == 503 for st in answers[:-1]), answers[:10]
        assert keys_in(pgb, "hostsflip", "flip") == ["after%d" % i]
        assert keys_in(pga, "hostsflip", "flip") == ["before"]

        # The node's readers follow: a reader reports the change with its
        # next transaction (one more snapshot of A's) and is reset at the one
        # after, so the key written to B is read back within the bound.
        key, got, deadline = "after%d" % i, None, time.monotonic() + SWITCH_S
        while time.monotonic() < deadline:
            try:
                got = s3.get_object(Bucket="flip", Key=key)["Body"].read()
                break
            except ClientError as e:
                assert e.response["Error"]["Code"] in ("NoSuchKey", "ServiceUnavailable"), e
                time.sleep(0.1)
        assert got == b"b"

        # The watcher follows too: its session leaves A and opens on B, so
        # the topics it polls and the leases it holds are the primary's.
        assert wait_for(lambda: watchers(pga, "hostsflip") == 0 and
                        watchers(pgb, "hostsflip") == 1, SWITCH_S), \
            (watchers(pga, "hostsflip"), watchers(pgb, "hostsflip"))
    finally:
        try:
            stop_clean(node)
        finally:
            set_read_only(pga, False)
