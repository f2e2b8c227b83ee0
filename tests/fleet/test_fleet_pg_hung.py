"""PostgreSQL keeps the connection and stops answering (issue 24; docs/fleet.md
"PostgreSQL stops answering"; src/meta/engine_pg.c invariant 12, pg_wait.c).

A hung server (here every process of the cluster stopped with SIGSTOP: the
kernel still takes the bytes and answers TCP, as for a server whose disk
stalled or a proxy that holds the socket) is not a lost connection to libpq,
whose blocking calls would wait for it for ever.  cairnd bounds every wait for
an answer by `[meta] round_trip_timeout` (ROUND_TRIP_S here):

* test_hung_server_answers_503: a PUT and a GET on a node whose only server
  is stopped are answered 503 ServiceUnavailable in bounded time, while the
  node's liveness endpoint answers at once; continued, the server takes the
  next PUT, and everything acknowledged reads back.
* test_node_hung_in_write_transaction: the other way round, a node stopped
  (SIGSTOP, by the commit fault hook) inside a write transaction, its rows
  locked: the server ends that session after `[meta] idle_write_timeout`,
  so another node's PUT of the same key waits that long, not for ever, and
  the stopped node, continued, finds its transaction lost and answers
  consistently with what the database holds.
* test_hung_primary_promoted_standby: a streaming standby (synchronous
  replication) promoted while the primary is stopped: the node, whose
  `--meta` names both hosts with target_session_attrs=read-write, takes
  writes on the standby within RECOVER_S, and every PUT it acknowledged
  before and after reads back from the standby.  Without the bound, the
  requests held by the stopped primary never returned.

Ports are loopback ones chosen at run time, data in pytest's temp dirs; the
clusters are continued and stopped by the fixtures whatever happens."""
import hashlib
import os
import signal
import sys
import threading
import time

import pytest
import requests
from botocore.exceptions import ClientError

from conftest import Server, sanitizer_report

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "s3"))
import pgharness  # noqa: E402
from fleetutil import key_file, needs_pg, proc_stopped  # noqa: E402
from s3fixtures import S3Server, s3_args  # noqa: E402

pytestmark = needs_pg

ROUND_TRIP_S = 2
# A request caught by the hang: the cut (ROUND_TRIP_S), reconnects that wait
# connect_timeout (5 s) each within the retry window (2 x the 5 s busy
# timeout), slack for a loaded machine.
ANSWER_BOUND_S = 40.0
RECOVER_S = 30.0  # writes land on the promoted standby within this


def stopped(pg, sig):
    """sig to every process of pg (SIGSTOP: the server hangs; SIGCONT)."""
    for pid in pg.server_pids():
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


class Hung:
    """pg stopped for the with block, continued at its end whatever happens."""

    def __init__(self, pg):
        self.pg = pg

    def __enter__(self):
        stopped(self.pg, signal.SIGSTOP)
        return self

    def __exit__(self, *exc):
        stopped(self.pg, signal.SIGCONT)


def start_node(data, uri, idle=None, env=None, key=None):
    """A node on uri; idle: its [meta] idle_write_timeout (the default's
    60 s when None); key: the --identity-key file nodes of one database
    share."""
    conf = data.parent / (data.name + ".toml")
    text = "[meta]\nround_trip_timeout = %d\n" % ROUND_TRIP_S
    if idle is not None:
        text += "idle_write_timeout = %d\n" % idle
    conf.write_text(text)
    args = s3_args(["--meta", uri, "--config", str(conf)] +
                   (["--identity-key", key] if key else []))
    return S3Server(Server(data, args=args, env=env).start(wait_for=("http", "jay")))


def stop_clean(node):
    node.server.stop()
    out = node.server.output()
    assert sanitizer_report(out) is None, out[-4000:]
    return out


def timed(fn):
    """(seconds, HTTP status, S3 error code or None) of fn()."""
    t0 = time.monotonic()
    try:
        fn()
        status, code = 200, None
    except ClientError as e:
        r = e.response
        status, code = r["ResponseMetadata"]["HTTPStatusCode"], r["Error"]["Code"]
    return time.monotonic() - t0, status, code


def health_ms(node):
    host, port = node.server.addrs["http"]
    t0 = time.monotonic()
    r = requests.get("http://%s:%d/_cairn/health" % (host, port), timeout=10)
    assert r.status_code == 200
    return (time.monotonic() - t0) * 1000


@pytest.fixture
def pg():
    with pgharness.PgCluster() as cluster:
        yield cluster


def test_hung_server_answers_503(pg, tmp_path):
    pg.create_db("hung")
    node = start_node(tmp_path / "n", pg.uri_for("hung"))
    try:
        # read_timeout well past the bound: the client must not be the one
        # that gives up.
        s3 = node.client(read_timeout=ANSWER_BOUND_S + 30)
        s3.create_bucket(Bucket="hung")
        s3.put_object(Bucket="hung", Key="before", Body=b"kept")
        with Hung(pg):
            put = {}

            def one_put():
                try:
                    put["r"] = timed(lambda: s3.put_object(Bucket="hung", Key="during", Body=b"x"))
                except Exception as e:  # the client's own timeout: no answer at all
                    put["err"] = repr(e)

            t = threading.Thread(target=one_put)
            t.start()
            time.sleep(0.5)
            assert health_ms(node) < 2000  # the node itself is not wedged
            t.join(ANSWER_BOUND_S + 60)
            assert not t.is_alive() and "r" in put, put.get("err", "the PUT never returned")
            secs, status, code = put["r"]
            print("PUT caught by the hang: %.1f s, %d %s" % put["r"])
            assert (status, code) == (503, "ServiceUnavailable"), put
            assert secs < ANSWER_BOUND_S, put
            secs, status, code = timed(lambda: s3.get_object(Bucket="hung", Key="before"))
            assert (status, code) == (503, "ServiceUnavailable")
            assert secs < ANSWER_BOUND_S
        deadline = time.monotonic() + RECOVER_S
        while timed(lambda: s3.put_object(Bucket="hung", Key="after", Body=b"y"))[1] != 200:
            assert time.monotonic() < deadline, "no write after the server continued"
            time.sleep(0.2)
        assert s3.get_object(Bucket="hung", Key="before")["Body"].read() == b"kept"
        assert s3.get_object(Bucket="hung", Key="after")["Body"].read() == b"y"
    finally:
        out = stop_clean(node)
    assert "no answer within %d ms" % (ROUND_TRIP_S * 1000) in out


IDLE_S = 4  # the hung node's write idle bound


def idle_in_txn(pg, db):
    """Sessions of db idle inside a transaction, and those of them holding a
    lock on the object versions table."""
    out = pg.psql("SELECT count(DISTINCT a.pid), count(DISTINCT a.pid) FILTER (WHERE"
                  " l.relation = 'obj_version'::regclass) FROM pg_stat_activity a"
                  " LEFT JOIN pg_locks l ON l.pid = a.pid WHERE a.datname = '%s'"
                  " AND a.state = 'idle in transaction'" % db, db=db)
    return tuple(int(x) for x in out.strip().split("|"))


def etag(s3, key):
    return s3.head_object(Bucket="idle", Key=key)["ETag"].strip('"')


def md5(b):
    return hashlib.md5(b).hexdigest()


def test_node_hung_in_write_transaction(pg, tmp_path):
    pg.create_db("idle")
    trigger = tmp_path / "stop-trigger"
    # no heartbeat write to take the fault meant for the PUT
    env = {"CAIRN_TEST_PG_COMMIT_FAULT": str(trigger), "CAIRN_NODE_HEARTBEAT_MS": "3600000"}
    key = key_file(tmp_path / "fleet.key")
    a = start_node(tmp_path / "a", pg.uri_for("idle"), idle=IDLE_S, env=env, key=key)
    nodes, pid = [a], a.server.proc.pid
    try:
        nodes.append(start_node(tmp_path / "b", pg.uri_for("idle"), key=key))
        hung_copy_and_put(pg, trigger, a, nodes[1])
    finally:
        if a.server.proc.poll() is None:
            os.kill(pid, signal.SIGCONT)
        for n in nodes:
            stop_clean(n)


def hung_copy_and_put(pg, trigger, a, b):
    """test_node_hung_in_write_transaction's steps: a stopped in its copy's
    COMMIT, b's PUT of the same key, a continued."""
    pid = a.server.proc.pid
    sa = a.client(read_timeout=ANSWER_BOUND_S + 30)
    sb = b.client(read_timeout=ANSWER_BOUND_S + 30)
    sa.create_bucket(Bucket="idle")
    sa.put_object(Bucket="idle", Key="k", Body=b"first")
    trigger.write_text("stop")
    put = {}
    # A copy onto itself writes version rows and no blob (a blob's own
    # pack index commit would take the fault first).
    t = threading.Thread(target=lambda: put.update(r=timed(lambda: sa.copy_object(
        Bucket="idle", Key="k", CopySource={"Bucket": "idle", "Key": "k"},
        MetadataDirective="REPLACE", Metadata={"by": "a"}))))
    t.start()
    deadline = time.monotonic() + 20
    while not proc_stopped(pid):
        assert time.monotonic() < deadline, "the node never stopped in its COMMIT"
        time.sleep(0.02)
    t_stop = time.monotonic()
    # the copy's transaction, written and not committed, holds its rows
    assert idle_in_txn(pg, "idle") == (1, 1)
    secs, status, code = timed(lambda: sb.put_object(Bucket="idle", Key="k", Body=b"from-b"))
    held = time.monotonic() - t_stop
    print("a PUT of the same key through the other node: %d after %.1f s, %.1f s after"
          " the stop (bound %d s)" % (status, secs, held, IDLE_S))
    assert (status, code) == (200, None)
    assert held > IDLE_S - 1, "the key was not held by the hung transaction"
    assert idle_in_txn(pg, "idle") == (0, 0)
    assert etag(sb, "k") == md5(b"from-b")
    os.kill(pid, signal.SIGCONT)
    t.join(ANSWER_BOUND_S + 60)
    assert not t.is_alive(), "the hung node's copy never returned"
    secs, status, code = put["r"]
    print("the hung node's copy, continued: %d %s" % (status, code))
    # Lost with its session: failed, or run again after b's PUT (run.c R5),
    # which the metadata the copy replaces tells.
    meta = sb.head_object(Bucket="idle", Key="k")["Metadata"]
    if status == 200:
        assert meta == {"by": "a"}
    else:
        assert (status, code) == (503, "ServiceUnavailable")
        assert meta == {}
    assert etag(sb, "k") == md5(b"from-b")  # the copy's source was b's bytes or b came after
    sa.put_object(Bucket="idle", Key="after", Body=b"z")  # the node writes on
    assert etag(sb, "after") == md5(b"z")


@pytest.fixture
def primary():
    with pgharness.PgCluster(settings={"synchronous_commit": "on"}) as p:
        yield p


@pytest.fixture
def standby(primary):
    """A synchronous streaming standby of primary (as test_fleet_promote.py
    makes it): a COMMIT the primary acknowledged is on the standby."""
    with pgharness.PgCluster(settings={"synchronous_commit": "on"}, primary=primary) as sb:
        primary.make_synchronous()
        yield sb


def promote_while(cut, standby, node, db):
    """The failover both kinds of lost primary share: node's PUTs before,
    standby promoted inside the with block of cut (the primary lost to the
    node), then PUTs until the first succeeds within RECOVER_S (a refusal
    only ever 503 ServiceUnavailable) and a few more; every acknowledged
    PUT reads back, and the standby (database db) holds exactly them."""
    acked = {}
    s3 = node.client(read_timeout=ANSWER_BOUND_S + 30)
    s3.create_bucket(Bucket="promo")
    for i in range(5):
        body = os.urandom(1000 + i)
        s3.put_object(Bucket="promo", Key="before-%d" % i, Body=body)
        acked["before-%d" % i] = body
    with cut:
        t_cut = time.monotonic()
        standby.promote()
        t0 = time.monotonic()
        i = 0
        while True:
            body = os.urandom(2000 + i)
            key = "after-%d" % i
            _, status, code = timed(lambda: s3.put_object(Bucket="promo", Key=key, Body=body))
            if status == 200:
                acked[key] = body
                print("first write on the standby %.1f s after the promotion, %.1f s after the "
                      "primary was lost (%d refused)"
                      % (time.monotonic() - t0, time.monotonic() - t_cut, i))
                break
            assert (status, code) == (503, "ServiceUnavailable")
            assert time.monotonic() - t0 < RECOVER_S, "no write on the promoted standby"
            i += 1
        for j in range(3):
            body = os.urandom(3000 + j)
            s3.put_object(Bucket="promo", Key="later-%d" % j, Body=body)
            acked["later-%d" % j] = body
        for key, body in acked.items():
            assert s3.get_object(Bucket="promo", Key=key)["Body"].read() == body, key
        got = standby.psql("SELECT count(*) FROM obj_version v JOIN obj_bucket b USING"
                           " (bucket_id) WHERE b.name = 'promo'", db=db).strip()
        assert int(got) == len(acked)


def test_hung_primary_promoted_standby(primary, standby, tmp_path):
    primary.create_db("hungp")  # replicated to the standby
    uri = "postgresql:///hungp?host=%s,%s&user=%s&target_session_attrs=read-write" % (
        primary.sockdir, standby.sockdir, pgharness.ROLE)
    node = start_node(tmp_path / "n", uri)
    try:
        promote_while(Hung(primary), standby, node, "hungp")
    finally:
        stop_clean(node)
