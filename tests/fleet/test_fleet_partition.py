"""A network partition between a node and PostgreSQL: packets dropped, not
refused (issue 24; docs/fleet.md "The network drops PostgreSQL's packets";
src/meta/engine_pg.c connect_uri, invariant 12).

A partition is neither a stopped server (the kernel still answers TCP,
test_fleet_pg_hung.py) nor a refused connection (test_fleet_pg_hosts.py):
no packet comes back, so a sent request is never acknowledged and a new
connection's SYN goes unanswered.  Loopback drops nothing on its own, so
test_partition_cases runs the cases below (the functions named case_*) in
a second pytest inside a network namespace of its own (`unshare -n`), whose
loopback nftables may filter without touching the machine's: PostgreSQL
listens on 127.0.0.1 there and the node reaches it over TCP, and
Partition drops every packet to and from its port for a with block.

* case_partition_answers_503_and_heals: a PUT and a GET on a node cut from
  its only server answer 503 ServiceUnavailable in bounded time (the round
  trip's cut, then reconnects that wait their connect_timeout within the
  retry window), /_cairn/ready answers 503 naming the metadata, the node's
  liveness answers at once; healed, the node takes writes within
  RECOVER_S, and everything acknowledged reads back.
* case_partitioned_primary_promoted_standby: a synchronous streaming
  standby promoted while the primary is cut off from the node (the node's
  `--meta` names both over TCP with target_session_attrs=read-write): the
  node takes writes on the standby within RECOVER_S, although every new
  connection first waits for the primary's unanswered SYN, and every PUT it
  acknowledged reads back from the standby.

* case_partitioned_lease_holder: a node holding the jobs' leases cut off
  while NOTIFYs are sent to its session: the other node runs the jobs in
  bounded time.
* case_partitioned_writer_releases_its_sessions: a node cut off under
  writers: the server ends its sessions (and their open transactions'
  row locks) in bounded time; the other node writes the same keys.
* case_blob_backend_cut_off: the blob tier's backend cut off from a node:
  PUT and uncached GET 503 within the tier's deadline, HEAD 200, healed.
* case_blob_backend_cut_mid_upload: the backend cut off during a large
  PUT: 503 in bounded time, no version; healed, the PUT succeeds.
* case_scribe_submit_cut_off: a Scribe submit through a node cut off from
  PostgreSQL: storage_failure in bounded time; healed, the same operation
  is accepted once.
* case_replication_cut_under_synchronous_commit: the synchronous standby
  cut off from its primary (replication over TCP): a PUT 503 in bounded
  time, reads go on; healed, writes go on, the refused key whole or absent.

The outer test needs root (a network namespace) and nftables; without them
it is skipped with the reason.  Ports are chosen at run time in the
namespace's own port space, data in pytest's temp dirs, and every process
and rule goes with the namespace's fixtures."""
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time

import pytest
import requests
from botocore.exceptions import ClientError

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import pgharness  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "jay"))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "blobops"))
import jayclient  # noqa: E402
from blobsclient import Ops  # noqa: E402
from conftest import ADMIN_TOKEN  # noqa: E402
from fleetutil import Fleet, free_port, key_file, needs_pg  # noqa: E402
from test_fleet_pg_hung import (ANSWER_BOUND_S, RECOVER_S, ROUND_TRIP_S,  # noqa: E402
                                health_ms, promote_while, start_node, stop_clean, timed)

pytestmark = needs_pg

TABLE = "cairn_partition"
INNER_ENV = "CAIRN_TEST_IN_NETNS"
INNER_TIMEOUT_S = 600


def netns_missing():
    """Why this machine cannot run the cases in a network namespace of their
    own with nftables on its loopback, or None when it can."""
    if os.geteuid() != 0:
        return "a private network namespace needs root (CAP_SYS_ADMIN)"
    for tool in ("unshare", "nft", "ip"):
        if not shutil.which(tool):
            return "%s is not installed (scripts/deps.sh test installs nftables and iproute2)" % tool
    probe = subprocess.run(["unshare", "-n", "nft", "add", "table", "inet", TABLE],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        return "nftables refused in a new network namespace: %s" % probe.stderr.strip()
    return None


def test_partition_cases():
    """The case_* functions of this file, in a pytest run inside `unshare -n`:
    passes when every one of them passed (their output is printed)."""
    why = netns_missing()
    if why:
        pytest.skip(why)
    env = dict(os.environ, **{INNER_ENV: str(netns_id())})
    argv = ["unshare", "-n", "--", sys.executable, "-m", "pytest", "-q", "-s",
            "-o", "python_functions=case_*", "-p", "no:xdist", os.path.abspath(__file__)]
    r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=INNER_TIMEOUT_S)
    print(r.stdout[-20000:], r.stderr[-4000:])
    assert r.returncode == 0, r.stdout[-8000:]
    assert re.search(r"^8 passed", r.stdout, re.M), r.stdout[-2000:]


def netns_id():
    """This process's network namespace (its inode number)."""
    return os.stat("/proc/self/ns/net").st_ino


@pytest.fixture(scope="module")
def netns():
    """The namespace's loopback, up; refuses to run outside test_partition_cases."""
    outer = os.environ.get(INNER_ENV)
    if not outer or int(outer) == netns_id():  # nftables rules here would be the machine's
        pytest.fail("the case_* functions run only through test_partition_cases")
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    yield
    subprocess.run(["nft", "delete", "table", "inet", TABLE], capture_output=True)


class Partition:
    """Every packet to or from addr:port dropped in this namespace for the with
    block (nftables on the loopback's input hook), let through again at its
    end whatever happens.  addr None: every address of the loopback."""

    def __init__(self, port, addr=None):
        self.port, self.addr = port, addr

    def __enter__(self):
        to = "ip daddr %s " % self.addr if self.addr else ""
        back = "ip saddr %s " % self.addr if self.addr else ""
        rules = ("table inet %s {\n chain input {\n"
                 "  type filter hook input priority 0; policy accept;\n"
                 "  %stcp dport %d drop\n  %stcp sport %d drop\n }\n}\n"
                 % (TABLE, to, self.port, back, self.port))
        subprocess.run(["nft", "-f", "-"], input=rules, text=True, check=True)
        self.t0 = time.monotonic()
        return self

    def __exit__(self, *exc):
        subprocess.run(["nft", "delete", "table", "inet", TABLE], check=True)


def ready(node):
    """(seconds, status, JSON body) of the node's /_cairn/ready."""
    host, port = node.server.addrs["http"]
    t0 = time.monotonic()
    r = requests.get("http://%s:%d/_cairn/ready" % (host, port), timeout=ANSWER_BOUND_S + 30)
    return time.monotonic() - t0, r.status_code, r.json()


def in_thread(fn, out):
    """fn() on a thread that puts its result (or the exception's repr, when
    the client itself gave up) in out; returns the started thread."""
    def run():
        try:
            out["r"] = fn()
        except Exception as e:
            out["err"] = repr(e)
    t = threading.Thread(target=run)
    t.start()
    return t


@pytest.fixture
def pg(netns):
    with pgharness.PgCluster(port=free_port()) as cluster:
        yield cluster


def case_partition_answers_503_and_heals(pg, tmp_path):
    pg.create_db("part")
    node = start_node(tmp_path / "n", pg.tcp_uri_for("part"))
    try:
        s3 = node.client(read_timeout=ANSWER_BOUND_S + 30)
        s3.create_bucket(Bucket="part")
        s3.put_object(Bucket="part", Key="before", Body=b"kept")
        # The other faces, their credential checked (and cached) before the cut.
        jay = jayclient.Conn(node.jay_addr, ADMIN_TOKEN, timeout=ANSWER_BOUND_S + 30)
        assert jay.get_object("part", "before")[1] == b"kept"
        ops = Ops(node.server, timeout=ANSWER_BOUND_S + 30)
        assert ops.put("part/ns", b"warm")[0] == 200
        with Partition(pg.port):
            put, rd = {}, {}
            t = in_thread(lambda: timed(lambda: s3.put_object(Bucket="part", Key="during",
                                                            Body=b"x")), put)
            time.sleep(0.5)
            assert health_ms(node) < 2000  # the node itself is not wedged
            tr = in_thread(lambda: ready(node), rd)
            t.join(ANSWER_BOUND_S + 60)
            tr.join(ANSWER_BOUND_S + 60)
            assert not t.is_alive() and "r" in put, put.get("err", "the PUT never returned")
            assert not tr.is_alive() and "r" in rd, rd.get("err", "ready never returned")
            print("PUT cut off: %.1f s, %d %s" % put["r"])
            print("ready cut off: %.1f s, %d %s" % rd["r"])
            secs, status, code = put["r"]
            assert (status, code) == (503, "ServiceUnavailable"), put
            assert secs < ANSWER_BOUND_S, put
            secs, status, body = rd["r"]
            assert (status, body.get("component")) == (503, "metadata"), rd
            assert secs < ANSWER_BOUND_S, rd
            secs, status, code = timed(lambda: s3.get_object(Bucket="part", Key="before"))
            print("GET cut off: %.1f s, %d %s" % (secs, status, code))
            assert (status, code) == (503, "ServiceUnavailable")
            assert secs < ANSWER_BOUND_S
            # Jay's unavailable answer is InternalError, the blob operations'
            # 503 unavailable (docs/fleet.md), in the same bound; a Jay GET
            # the head cache cannot answer waits on a worker, never on an
            # event loop (which serves every connection on it: the health
            # checks on fresh connections meanwhile answer at once).
            jo = {}
            t0 = time.monotonic()
            tj = in_thread(lambda: jay.get_object("part", "never-read"), jo)
            time.sleep(0.5)
            slowest = max(health_ms(node) for _ in range(6))
            tj.join(ANSWER_BOUND_S + 60)
            print("Jay GET cut off: %.1f s, %s; health meanwhile, slowest of 6: %.0f ms"
                  % (time.monotonic() - t0, jo, slowest))
            assert "InternalError" in jo.get("err", ""), jo
            assert time.monotonic() - t0 < ANSWER_BOUND_S and slowest < 2000
            t0 = time.monotonic()
            st, body = ops.put("part/ns", os.urandom(100))
            print("blobs/put cut off: %.1f s, %d %s" % (time.monotonic() - t0, st,
                                                        body["error"]["code"]))
            assert (st, body["error"]["code"]) == (503, "unavailable"), (st, body)
            assert time.monotonic() - t0 < ANSWER_BOUND_S
        healed = time.monotonic()
        while timed(lambda: s3.put_object(Bucket="part", Key="after", Body=b"y"))[1] != 200:
            assert time.monotonic() - healed < RECOVER_S, "no write after the partition healed"
            time.sleep(0.2)
        print("first write %.1f s after the partition healed" % (time.monotonic() - healed))
        assert ready(node)[1] == 200
        assert s3.get_object(Bucket="part", Key="before")["Body"].read() == b"kept"
        assert s3.get_object(Bucket="part", Key="after")["Body"].read() == b"y"
        jay.close()
        jay = jayclient.Conn(node.jay_addr, ADMIN_TOKEN, timeout=ANSWER_BOUND_S + 30)
        assert jay.get_object("part", "after")[1] == b"y"
        jay.close()
        assert ops.put("part/ns", b"healed")[0] == 200
    finally:
        out = stop_clean(node)
    assert "no answer within %d ms" % (ROUND_TRIP_S * 1000) in out


@pytest.fixture
def primary(netns):
    with pgharness.PgCluster(settings={"synchronous_commit": "on"}, port=free_port()) as p:
        yield p


@pytest.fixture
def standby(primary):
    """A synchronous streaming standby of primary, on a port of its own; it
    streams over the primary's unix socket, which the partition leaves alone
    (the partition is between the node and the primary)."""
    with pgharness.PgCluster(settings={"synchronous_commit": "on"}, primary=primary,
                             port=free_port()) as sb:
        primary.make_synchronous()
        yield sb


def case_partitioned_primary_promoted_standby(primary, standby, tmp_path):
    primary.create_db("partp")  # replicated to the standby
    uri = "postgresql://%s@127.0.0.1:%d,127.0.0.1:%d/partp?target_session_attrs=read-write" % (
        pgharness.ROLE, primary.port, standby.port)
    node = start_node(tmp_path / "n", uri)
    try:
        promote_while(Partition(primary.port), standby, node, "partp")
    finally:
        stop_clean(node)


def fleet_status(admin):
    """`cairn admin fleet status --json` (admin: the command line of an
    account create, whose last two words are dropped)."""
    r = subprocess.run(admin[:-2] + ["fleet", "status", "--json"], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def fleet_state(admin, node):
    """node's state in fleet_status."""
    return {n["id"]: n["state"] for n in fleet_status(admin)["nodes"]}.get(node)


def holders(pg):
    """The sessions (application names) holding advisory locks, sorted."""
    rows = pg.psql("SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a"
                   " ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted"
                   " ORDER BY 1", db="lease")
    return rows.split()


CUT_ADDR = "127.0.0.2"  # the lease holder's way to the server, the one cut
LEASE_BOUND_S = 15.0  # the server's keepalives or user timeout (9 s), a poll, slack


@pytest.fixture
def pg2(netns):
    """A server on two loopback addresses: a node reaching it on CUT_ADDR can
    be cut off alone (the server sees both nodes come from 127.0.0.1)."""
    with pgharness.PgCluster(port=free_port(), listen=("127.0.0.1", CUT_ADDR)) as cluster:
        yield cluster


def case_partitioned_lease_holder(pg2, tmp_path):
    """The jobs' leases (session advisory locks of each node's watcher) move
    to the other node when their holder is cut off, while identity writes
    through the other side send NOTIFYs to the holder's session, which the
    server cannot deliver: the holder drops them first (its watcher cannot
    read), and the server frees them in bounded time (its session's
    tcp_user_timeout; keepalives alone never fire while a NOTIFY waits for
    its acknowledgement)."""
    from conftest import Server, binary
    from s3fixtures import S3Server, s3_args
    from test_fleet_leases import ENV, JOBS, LEASES, TAKEOVER, runs, wait_for
    key = key_file(tmp_path / "fleet.key")
    pg2.create_db("lease")
    nodes = []
    try:
        for name, host in (("a", CUT_ADDR), ("b", "127.0.0.1")):
            args = s3_args(["--meta", pg2.tcp_uri_for("lease", host), "--identity-key", key,
                            "--node-id", name])
            env = dict(ENV, CAIRN_NODE_HEARTBEAT_MS="1000")  # a's loss seen in seconds
            nodes.append(S3Server(Server(tmp_path / name, args=args, env=env)
                                  .start(wait_for=("http", "jay"))))
            if name == "a":  # a holds every lease before b starts
                assert wait_for(lambda: all(runs(nodes[0].server, j) for j in JOBS),
                                TAKEOVER) is not None
        a, b = (n.server for n in nodes)
        admin = [binary("cairn"), "admin", "--meta", pg2.tcp_uri_for("lease"),
                 "--identity-key", key, "account", "create"]
        with Partition(pg2.port, CUT_ADDR) as cut:
            taken, i = None, 0
            while taken is None:
                r = subprocess.run(admin + ["notify%d" % i], capture_output=True, text=True)
                assert r.returncode == 0, r.stderr
                i += 1
                now = time.monotonic() - cut.t0
                if all(runs(b, j) for j in JOBS):
                    taken = now
                assert now < LEASE_BOUND_S + 30, "the leases never moved (%d NOTIFYs)" % i
            print("holder cut off: its leases taken by the other node %.1f s after the cut "
                  "(%d identity writes meanwhile)" % (taken, i))
            assert taken < LEASE_BOUND_S
            # the lifecycle worker's lease too, asked by its own thread each second
            assert wait_for(lambda: holders(pg2) == ["cairn-watch/b"] * LEASES, 3) is not None, \
                holders(pg2)
            # What an operator sees: the jobs on b, and a lost (its
            # heartbeat stopped with its database).
            doc = fleet_status(admin)
            on = {x["job"]: x["node"] for x in doc["leases"] if x["job"] in JOBS}
            assert on == {j: "b" for j in JOBS}, doc
            assert wait_for(lambda: fleet_state(admin, "a") == "lost", 10) is not None, \
                fleet_state(admin, "a")
            # The holder knew first: its watcher, which cannot read, gave
            # them up (W3) before the server let the other node take them.
            assert wait_for(lambda: all("lease %s lost" % j in a.output(a.log_offset)
                                        for j in JOBS), 10) is not None
        # Healed, the holder finds the leases taken and does not run the jobs.
        assert wait_for(lambda: not any(runs(a, j) for j in JOBS), 20) is not None
        time.sleep(2)
        assert all(runs(b, j) for j in JOBS)
        assert holders(pg2) == ["cairn-watch/b"] * LEASES
    finally:
        for n in nodes:
            stop_clean(n)


KEYS = 8  # overwritten over and over by the cut node's writers


def case_partitioned_writer_releases_its_sessions(pg2, tmp_path):
    """A node cut off under writers: the server ends every session of it in
    bounded time (the keepalives and user timeout cairn sets on the
    server's side of each session, not the watcher's alone), and with them
    any transaction they had open and its row locks; the other node writes
    the same keys throughout.  Before, the server kept a vanished node's
    sessions for its TCP keepalive time (two hours by default): a
    transaction cut between its round trips held its rows that long (seen
    once: every key of the bucket refused through the other node for the
    test's 80 s)."""
    from s3fixtures import S3Server, s3_args
    from conftest import Server
    key = key_file(tmp_path / "fleet.key")
    pg2.create_db("rows")
    nodes = []
    sessions = ("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'node-a'")
    try:
        for name, host in (("a", CUT_ADDR), ("b", "127.0.0.1")):
            uri = pg2.tcp_uri_for("rows", host) + "?application_name=node-" + name
            args = s3_args(["--meta", uri, "--identity-key", key, "--node-id", name])
            nodes.append(S3Server(Server(tmp_path / name, args=args)
                                  .start(wait_for=("http", "jay"))))
        a, b = nodes
        a.client().create_bucket(Bucket="rows")
        stop = threading.Event()
        acked = []

        def writer(t):
            s3 = a.client(read_timeout=ANSWER_BOUND_S + 30)
            i = t
            while not stop.is_set():
                try:
                    s3.put_object(Bucket="rows", Key="k%d" % (i % KEYS), Body=os.urandom(100))
                    acked.append(time.monotonic())
                except Exception:
                    pass
                i += 1
        threads = [threading.Thread(target=writer, args=(t,), daemon=True) for t in range(4)]
        for t in threads:
            t.start()
        time.sleep(1.5)
        try:
            with Partition(pg2.port, CUT_ADDR) as cut:
                before = int(pg2.psql(sessions, db="rows"))
                s3 = b.client(read_timeout=ANSWER_BOUND_S + 30)
                tries, gone, slowest = 0, None, 0.0
                while gone is None:
                    for k in range(KEYS):
                        tries += 1
                        secs, status, code = timed(lambda: s3.put_object(
                            Bucket="rows", Key="k%d" % k, Body=b"b"))
                        assert status == 200, (k, status, code)
                        slowest = max(slowest, secs)
                    now = time.monotonic() - cut.t0
                    if int(pg2.psql(sessions, db="rows")) == 0:
                        gone = now
                    assert now < LEASE_BOUND_S + 30, "the cut node's sessions are still there"
                print("the cut node: %d PUTs before the cut, %d sessions at it, none %.1f s "
                      "after it; the other node wrote every key throughout (%d PUTs, the "
                      "slowest %.1f s)" % (len(acked), before, gone, tries, slowest))
                assert before > 0 and gone < LEASE_BOUND_S and slowest < LEASE_BOUND_S
        finally:
            stop.set()
            for t in threads:
                t.join(ANSWER_BOUND_S + 30)
    finally:
        for n in nodes:
            stop_clean(n)

BLOB_DEADLINE_MS = 3000  # the nodes' blob tier request deadline here


def case_blob_backend_cut_off(pg, tmp_path):
    """The blob tier's backend (a second cairnd over loopback TCP) cut off
    from a fleet node: a PUT and an uncached GET are answered 503
    ServiceUnavailable within the tier's deadline (and its last attempt's
    connect timeout), /_cairn/ready names the blob backend, a HEAD (the
    metadata only) still answers; healed, both work again and nothing
    acknowledged is lost."""
    fleet = Fleet(pg, tmp_path, "tier", count=1,
                  env={"CAIRN_BLOB_DEADLINE_MS": str(BLOB_DEADLINE_MS)})
    try:
        node = fleet.nodes[0]
        s3 = node.client(read_timeout=ANSWER_BOUND_S + 30)
        s3.create_bucket(Bucket="cut")
        body = os.urandom(4096)
        s3.put_object(Bucket="cut", Key="before", Body=body)
        node.server.stop()  # a fresh cache: the GET below must go to the backend
        shutil.rmtree(str(tmp_path / "n0" / "cache"), ignore_errors=True)
        node = fleet.start(0)
        s3 = node.client(read_timeout=ANSWER_BOUND_S + 30)
        bound = BLOB_DEADLINE_MS / 1000 + 10
        with Partition(fleet.backend_port):
            for what, fn in (("PUT", lambda: s3.put_object(Bucket="cut", Key="during",
                                                          Body=os.urandom(4096))),
                             ("GET", lambda: s3.get_object(Bucket="cut", Key="before")
                              ["Body"].read())):
                secs, status, code = timed(fn)
                print("%s with the backend cut off: %.1f s, %d %s" % (what, secs, status, code))
                assert (status, code) == (503, "ServiceUnavailable"), what
                assert secs < bound, what
            secs, status, why = ready(node)
            print("ready with the backend cut off: %.1f s, %d %s" % (secs, status, why))
            assert (status, why.get("component")) == (503, "blob_backend")
            assert secs < bound
            assert s3.head_object(Bucket="cut", Key="before")["ContentLength"] == 4096
        healed = time.monotonic()
        while timed(lambda: s3.put_object(Bucket="cut", Key="after", Body=b"y"))[1] != 200:
            assert time.monotonic() - healed < RECOVER_S, "no write after the partition healed"
            time.sleep(0.2)
        assert s3.get_object(Bucket="cut", Key="before")["Body"].read() == body
        assert s3.get_object(Bucket="cut", Key="after")["Body"].read() == b"y"
        assert ready(node)[1] == 200
    finally:
        bad = fleet.stop()
        assert not bad, bad[0][-4000:]


BIG = 48 << 20  # a PUT long enough to be cut in the middle
CUT_AFTER_S = 0.3


def case_blob_backend_cut_mid_upload(pg, tmp_path):
    """The blob backend cut off CUT_AFTER_S into a large PUT: the PUT is
    answered 503 ServiceUnavailable in bounded time (a stalled transfer is a
    fault of the tier's request), no version of the key appears; healed, the
    same PUT succeeds and reads back whole."""
    fleet = Fleet(pg, tmp_path, "mid", count=1,
                  env={"CAIRN_BLOB_DEADLINE_MS": str(BLOB_DEADLINE_MS)})
    try:
        s3 = fleet.nodes[0].client(read_timeout=ANSWER_BOUND_S + 30)
        s3.create_bucket(Bucket="mid")
        body = os.urandom(BIG)
        out = {}
        t = in_thread(lambda: timed(lambda: s3.put_object(Bucket="mid", Key="big", Body=body)),
                      out)
        time.sleep(CUT_AFTER_S)  # the body on its way
        with Partition(fleet.backend_port) as cut:
            t.join(ANSWER_BOUND_S + 60)
            assert not t.is_alive() and "r" in out, out.get("err", "the PUT never returned")
            print("a %d MiB PUT with the backend cut off: %.1f s, %d %s"
                  % ((BIG >> 20,) + out["r"]))
            secs, status, code = out["r"]
            assert (status, code) == (503, "ServiceUnavailable"), out
            assert time.monotonic() - cut.t0 < ANSWER_BOUND_S
        listed = s3.list_objects_v2(Bucket="mid").get("Contents", [])
        assert listed == [], listed
        healed = time.monotonic()
        while timed(lambda: s3.put_object(Bucket="mid", Key="big", Body=body))[1] != 200:
            assert time.monotonic() - healed < RECOVER_S, "no write after the partition healed"
            time.sleep(0.2)
        assert s3.get_object(Bucket="mid", Key="big")["Body"].read() == body
    finally:
        bad = fleet.stop()
        assert not bad, bad[0][-4000:]


def case_scribe_submit_cut_off(pg, tmp_path):
    """A Scribe submit through a node cut off from PostgreSQL: answered with
    Scribe's storage error in bounded time (never a hang, never a success
    the database does not hold); healed, the same submit (same operation
    key) is accepted exactly once, at the change the repository expected."""
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "scribe"))
    from scribe_wire import ADD, ERR, Conn, ScribeError
    from test_scribe_server import Repo
    pg.create_db("scr")
    (tmp_path / "f").mkdir()
    fleet = Fleet(pg, tmp_path / "f", "scr", count=1, uri=pg.tcp_uri_for("scr"))
    try:
        c = Conn(fleet.scribe_addr(0), timeout=ANSWER_BOUND_S + 30)
        r = Repo(c, "cut")
        mids = r.upload({"a.txt": b"one\n", "b.txt": b"two\n"})
        entries = [(ADD, p, m, 0, None) for p, m in sorted(mids.items())]
        op = os.urandom(16)
        with Partition(pg.port):
            t0 = time.monotonic()
            try:
                r.submit(entries, "cut", op=op)
                got = "accepted"
            except ScribeError as e:
                got = {v: k for k, v in ERR.items()}.get(e.code, e.code)
            secs = time.monotonic() - t0
            print("a submit cut off: %s in %.1f s" % (got, secs))
            assert got in ("storage_failure", "busy"), got
            assert secs < ANSWER_BOUND_S
        c.close()
        healed = time.monotonic()
        while True:
            c = Conn(fleet.scribe_addr(0), timeout=ANSWER_BOUND_S + 30)
            r.c = c
            try:
                o = r.submit(entries, "cut", op=op)
                break
            except ScribeError:
                c.close()
                assert time.monotonic() - healed < RECOVER_S, "no submit after the partition"
                time.sleep(0.2)
        assert (o["outcome"], o["change"]) == (1, 1), o
        assert c.repo_info(rid=r.id)["head"] == 1
        c.close()
    finally:
        bad = fleet.stop()
        assert not bad, bad[0][-4000:]


@pytest.fixture
def streamed_tcp(netns):
    """A primary and its synchronous standby streaming over TCP (so a cut of
    the primary's port cuts the replication alone: the node below reaches
    the primary on its unix socket)."""
    with pgharness.PgCluster(settings={"synchronous_commit": "on"}, port=free_port()) as p:
        with pgharness.PgCluster(settings={"synchronous_commit": "on"}, primary=p,
                                 port=free_port(), stream_tcp=True) as sb:
            p.make_synchronous()
            yield p, sb


def case_replication_cut_under_synchronous_commit(streamed_tcp, tmp_path):
    """The synchronous standby cut off from its primary: a PUT, whose
    commits the primary holds until the standby confirms them, is answered
    503 in bounded time (never a hang, never a 200 the standby does not
    hold; its first commit, the blob's pack index rows, is the one whose
    outcome stays unknown, so the object's own commit is never tried);
    reads go on; healed, writes go on, and the refused PUT's key is whole
    or absent, the standby holding what the primary holds."""
    primary, standby = streamed_tcp
    primary.create_db("sync")  # replicated to the standby
    node = start_node(tmp_path / "n", primary.uri_for("sync"))
    try:
        s3 = node.client(read_timeout=ANSWER_BOUND_S + 30)
        s3.create_bucket(Bucket="sync")
        s3.put_object(Bucket="sync", Key="before", Body=b"kept")
        with Partition(primary.port):
            secs, status, code = timed(lambda: s3.put_object(Bucket="sync", Key="during",
                                                            Body=b"unknown"))
            print("a PUT with the synchronous standby cut off: %.1f s, %d %s"
                  % (secs, status, code))
            assert (status, code) == (503, "ServiceUnavailable")
            assert secs < ANSWER_BOUND_S
            assert s3.get_object(Bucket="sync", Key="before")["Body"].read() == b"kept"
        healed = time.monotonic()
        while timed(lambda: s3.put_object(Bucket="sync", Key="after", Body=b"y"))[1] != 200:
            assert time.monotonic() - healed < RECOVER_S + 30, "no write after the cut healed"
            time.sleep(0.2)
        print("first write %.1f s after the replication came back"
              % (time.monotonic() - healed))
        try:
            got = s3.get_object(Bucket="sync", Key="during")["Body"].read()
        except ClientError as e:
            got = e.response["Error"]["Code"]
        print("the refused PUT's key afterwards: %r" % (got,))
        assert got in (b"unknown", "NoSuchKey"), got
        rows = "SELECT okey FROM obj_version ORDER BY 1"
        want = primary.psql(rows, db="sync")
        deadline = time.monotonic() + 10  # flushed there (synchronous_commit=on), then applied
        while standby.psql(rows, db="sync") != want:
            assert time.monotonic() < deadline, (want, standby.psql(rows, db="sync"))
            time.sleep(0.1)
    finally:
        out = stop_clean(node)
    assert "unknown" in out, out[-3000:]
