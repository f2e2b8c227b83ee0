"""Failover to a real streaming standby, and the in-request retry on a lost
server (issue 24; docs/fleet.md "A standby is promoted"; src/meta/run.c
R5-R7, engine_pg.c invariants 8-9).

One module-scoped setup: a primary PostgreSQL 15 and a streaming standby of
it made with `pg_basebackup -R` (pgharness), with synchronous replication
(`synchronous_standby_names='*'`, `synchronous_commit=on`: a COMMIT the
primary acknowledged is on the standby), and two cairnd nodes and a backend
(fleetutil.Fleet) whose `--meta` names both hosts with
`target_session_attrs=read-write`:

* test_backends_terminated_under_load: every cairn session of the database
  terminated (pg_terminate_backend) every 150 ms under S3 writers and
  Scribe submitters on both nodes: no request fails (a body that lost its
  session is run again on a new one), the failover-repeat counter moves,
  every PUT reads back.
* test_submits_under_session_kills: the same every 20 ms under Scribe
  uploads and submits alone: every submit is accepted (its phase 1, the
  plan's read transaction, repeats on a lost session).
* test_promote_under_load: the primary stopped with `pg_ctl -m immediate`
  under S3 writers on both nodes, held down GAP_S, the standby promoted:
  every PUT answered 200 reads back with its bytes through both nodes; a
  failure is only a 503 (the server keeps the client's connection and
  answers: a request waits for a primary, up to 2 x the busy timeout, or
  gets ServiceUnavailable); both nodes take writes again within RECOVER_S
  of the promotion; the requests in flight at the stop are counted and
  printed, and most of them succeed.

Both run readers (Reads) beside the writers: S3 ListBuckets, ListParts and
ListMultipartUploads (objects' bucket, part and upload listings), the
console's accounts, tokens, namespaces and repos (identity's account, token
and grant listings, repos' listing), and Scribe's log, path log, merge-aware
log, lock list, tree page, changed paths, note history and merge chains of
a repository with a move, two locks and a note (repos' list walks), each a
read run that collects its rows in its body and hands them out after the
run, so it is repeated on a lost session (CN_META_RETRY) and hands every
row once.  Every read answers 200 with exactly the rows it answered before
the load: before the reads audit (and, for the upload listing and the
Scribe reads, before their walks collected deep copies of their rows), a
read that met a lost session answered 503 (Scribe: storage_failure,
"backend unavailable").

Ports are loopback ones chosen at run time, data in pytest's temp dirs, and
every process is stopped by the fixtures."""
import json
import os
import sys
import threading
import time

import pytest
import requests

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "console"))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "scribe"))
import pgharness  # noqa: E402
from conftest import ADMIN_TOKEN  # noqa: E402
from fleetutil import Fleet, needs_pg  # noqa: E402
from scribe_wire import ADD, MODIFY, MOVE, Conn, ScribeError  # noqa: E402
from test_console_session import API, Console  # noqa: E402
from test_fleet_faults import Load, check_all, warnings_of  # noqa: E402
from test_scribe_locks import acquire, lock_page  # noqa: E402
from test_scribe_server import Repo  # noqa: E402

pytestmark = needs_pg

DB = "promote"
WRITERS = 4  # threads, alternating over the two nodes
READERS = 2  # threads, alternating over the two nodes
GAP_S = 1.0  # no primary at all for this long (stopped, standby not promoted yet)
RECOVER_S = 10.0  # both nodes take writes again within this of the promotion
REQUEST_BOUND_S = 25.0  # 2 x the 5 s busy timeout, slack for a loaded machine
FAILOVER_REPEATS = "cairn_meta_failover_retries_total"
SUBMIT_FILES = 32  # per change of Submits: a phase 1 long enough to meet the kills
KILL_FAST_S = 0.02  # test_submits_under_session_kills: sessions terminated this often


@pytest.fixture(scope="module")
def primary():
    with pgharness.PgCluster(settings={"synchronous_commit": "on"}) as pg:
        yield pg


@pytest.fixture(scope="module")
def standby(primary):
    """The standby, streaming; the primary waits for it at every COMMIT from
    here on (PgCluster.make_synchronous)."""
    with pgharness.PgCluster(settings={"synchronous_commit": "on"}, primary=primary) as sb:
        primary.make_synchronous()
        yield sb


@pytest.fixture(scope="module")
def fleet(primary, standby, tmp_path_factory):
    primary.create_db(DB)  # replicated to the standby
    uri = "postgresql:///%s?host=%s,%s&user=%s&target_session_attrs=read-write" % (
        DB, primary.sockdir, standby.sockdir, pgharness.ROLE)
    f = Fleet(primary, tmp_path_factory.mktemp("promote"), DB, count=2, uri=uri)
    try:
        f.nodes[0].client().create_bucket(Bucket="load")
        yield f
    finally:
        bad = f.stop()
        assert not bad, bad[0][-4000:]


class Workers:
    """Load threads (self.threads, each watching self.stop_ev) that record
    into self.done under self.lock: the stop both kinds share."""

    def stop_all(self, what):
        """Stops the threads; fails when one is still held (what: their name)."""
        self.stop_ev.set()
        for t in self.threads:
            t.join(REQUEST_BOUND_S + 30)
        assert not any(t.is_alive() for t in self.threads), "a %s hung" % what


class Reads(Workers):
    """readers threads, reader t through node t % the node count, each
    running READS in turn, timed.  An answer is good when it is exactly the
    one the same read gave before the load (so a row handed twice by a
    repeated body is a failure too).  done: every read in the order
    answered: (what, node, start, end, None when good else what came)."""

    READS = ("ListBuckets", "ListParts", "ListMultipartUploads", "accounts", "tokens",
             "namespaces", "repos", "log", "log path", "log follow", "locks", "tree", "changed",
             "notes", "chains")
    SCRIBE = ("log", "log path", "log follow", "locks", "tree", "changed", "notes", "chains")

    def __init__(self, fleet, readers=READERS):
        self.fleet = fleet
        self.done, self.lock = [], threading.Lock()
        self.stop_ev = threading.Event()
        s3 = fleet.nodes[0].client()
        self.key = "reads/upload"
        self.upload = s3.create_multipart_upload(Bucket="load", Key=self.key)["UploadId"]
        s3.upload_part(Bucket="load", Key=self.key, UploadId=self.upload, PartNumber=1,
                       Body=b"r" * 1024)
        for i in range(3):
            s3.create_multipart_upload(Bucket="load", Key="reads/open/%d" % i)
        self.repo = self.history(fleet)
        self.consoles = []
        for n in fleet.nodes:
            c = Console(n.server.addrs["http"])
            assert c.login(ADMIN_TOKEN)[0] == 200
            self.consoles.append(c)
        scribe = {}
        self.want = {what: self.answer(what, 0, s3, scribe) for what in self.READS}
        self.close_scribe(scribe)
        self.threads = [threading.Thread(target=self.reader, args=(t,), daemon=True)
                        for t in range(readers)]

    @staticmethod
    def history(fleet):
        """A repository of three changes (adds, a modification, a move) with
        two locks and a note on change 1: (its id, its main branch)."""
        c = Conn(fleet.scribe_addr(0), timeout=60)
        try:
            r = Repo(c, "reads" + os.urandom(4).hex())
            mids = r.upload({"a.txt": b"one\n", "d/b.txt": b"two\n", "d/e.txt": b"three\n"})
            outcomes = [r.submit([(ADD, p, m, 0, None) for p, m in mids.items()], "first")]
            m = r.upload({"a.txt": b"one, again\n"})["a.txt"]
            outcomes.append(r.submit([(MODIFY, "a.txt", m, 0, None)], "second"))
            outcomes.append(r.submit([(MOVE, "c.txt", m, 0, "a.txt")], "moved"))
            assert [o["outcome"] for o in outcomes] == [1, 1, 1], outcomes
            assert acquire(c, r.id, r.ws, r.main, ["c.txt", "d/b.txt"]) == 2
            c.describe(r.id, 1, 0, "ann", "the first change")
            return r.id, r.main
        finally:
            c.close()

    @staticmethod
    def close_scribe(scribe):
        if scribe.get("conn"):
            scribe.pop("conn").close()

    def scribe_answer(self, what, node, scribe):
        """A Scribe read through node's connection in scribe (made when
        absent; dropped after a failure that is no Scribe error reply)."""
        if not scribe.get("conn"):
            scribe["conn"] = Conn(self.fleet.scribe_addr(node), timeout=60)
        try:
            return self.scribe_rows(what, scribe["conn"])
        except ScribeError:
            raise
        except Exception:
            self.close_scribe(scribe)
            raise

    def scribe_rows(self, what, c):
        rid, main = self.repo
        if what == "locks":
            rows, more = lock_page(c, rid)
            return [(r["path"], r["workspace"], r["since"]) for r in rows], more
        if what == "tree":
            rows, more, _, revision = c.tree_page(rid, main, 3)
            return [(r["path"], r["size"], r["last_change"]) for r in rows], more, revision
        if what == "changed":
            return c.changed_paths(rid, main, 0, 3)
        if what == "notes":
            return c.note_history(rid, 1)
        if what == "chains":
            return c.merge_chains(rid, 3, 1)
        path = None if what == "log" else "c.txt"
        rows = c.log(rid, main, path=path, follow=what == "log follow")
        return [(r["change"], r["branch_name"], r["path"], r.get("from"), r["author"],
                 r["message"]) for r in rows]

    def answer(self, what, node, s3, scribe):
        """The rows the read answered (a comparable value); raises on a failure."""
        if what == "ListBuckets":
            return sorted(b["Name"] for b in s3.list_buckets()["Buckets"])
        if what == "ListParts":
            r = s3.list_parts(Bucket="load", Key=self.key, UploadId=self.upload)
            return [(p["PartNumber"], p["Size"]) for p in r.get("Parts", [])]
        if what == "ListMultipartUploads":
            r = s3.list_multipart_uploads(Bucket="load", Prefix="reads/")
            return [(u["Key"], u["UploadId"]) for u in r.get("Uploads", [])]
        if what in self.SCRIBE:
            return self.scribe_answer(what, node, scribe)
        st, _, body = self.consoles[node].request("GET", API + what)
        if st != 200:
            raise RuntimeError("%s: %d %s" % (what, st, body[:200]))
        rows = json.loads(body)[what]
        if what == "repos":  # Submits' repositories change under the load
            rows = [r for r in rows if not r["name"].startswith("submits")]
        return json.dumps(rows, sort_keys=True)

    def reader(self, t):
        node = t % len(self.fleet.nodes)
        s3 = self.fleet.nodes[node].client(connect_timeout=5, read_timeout=60)
        scribe = {}
        i = t
        while not self.stop_ev.is_set():
            what = self.READS[i % len(self.READS)]
            t0 = time.monotonic()
            try:
                got = self.answer(what, node, s3, scribe)
                out = None if got == self.want[what] else "answered %r" % (got,)
            except Exception as e:  # noqa: BLE001 - any failure is a failed read
                out = repr(e)[:200]
            with self.lock:
                self.done.append((what, node, t0, time.monotonic(), out))
            i += 1
        self.close_scribe(scribe)

    def start(self):
        for t in self.threads:
            t.start()
        return self

    def finish(self):
        """Stops the readers; returns the failed reads."""
        self.stop_all("reader")
        return [d for d in self.done if d[4] is not None]

    def summary(self):
        failed = [d[0] for d in self.done if d[4] is not None]
        return "reads %d (%s), failed %d (%s)" % (
            len(self.done), ", ".join("%s %d" % (w, sum(d[0] == w for d in self.done))
                                      for w in self.READS),
            len(failed), ", ".join("%s %d" % (w, failed.count(w)) for w in sorted(set(failed))))


class Submits(Workers):
    """submitters threads, submitter t through node t % the node count, each
    with a repository of its own: upload a new version of its SUBMIT_FILES
    files, submit them, again, until stopped.  done: (node, start, end, None when accepted
    else what came)."""

    def __init__(self, fleet, submitters=3, files=SUBMIT_FILES):
        self.fleet = fleet
        self.files = files
        self.stop_ev = threading.Event()
        self.lock = threading.Lock()
        self.done = []
        self.ready = threading.Semaphore(0)
        self.threads = [threading.Thread(target=self.submitter, args=(t,), daemon=True)
                        for t in range(submitters)]

    def submitter(self, t):
        node = t % len(self.fleet.nodes)
        c = Conn(self.fleet.scribe_addr(node), timeout=60)
        try:
            r = Repo(c, "submits%d-%s" % (t, os.urandom(4).hex()))
            paths = ["d%d/f%d.txt" % (k % 4, k) for k in range(self.files)]
            mids = r.upload({p: b"0 %s\n" % p.encode() for p in paths})
            assert r.submit([(ADD, p, m, 0, None) for p, m in mids.items()])["outcome"] == 1
            self.ready.release()
            i = 0
            while not self.stop_ev.is_set():
                i += 1
                t0 = time.monotonic()
                step = "upload"
                try:
                    mids = r.upload({p: b"%d %s\n" % (i, p.encode()) for p in paths})
                    step = "submit"
                    o = r.submit([(MODIFY, p, m, 0, None) for p, m in mids.items()],
                                 "change %d" % i)
                    out = None if o["outcome"] == 1 else "outcome %r" % (o,)
                except Exception as e:  # noqa: BLE001 - any failure is a failed submit
                    out = "%s: %r" % (step, e)
                with self.lock:
                    self.done.append((node, t0, time.monotonic(), out))
        finally:
            c.close()

    def start(self):
        """Starts the submitters; returns once each has its repository."""
        for t in self.threads:
            t.start()
        for _ in self.threads:
            assert self.ready.acquire(timeout=120), "a submitter did not get ready"
        return self

    def finish(self):
        """Stops the submitters; returns the failed submits."""
        self.stop_all("submitter")
        return [d for d in self.done if d[3] is not None]


def failover_repeats(node):
    text = requests.get(node.endpoint + "/_cairn/metrics", timeout=30).text
    return sum(float(line.split()[-1]) for line in text.splitlines()
               if line.startswith(FAILOVER_REPEATS))


def readable_everywhere(fleet, acked):
    for i, node in enumerate(fleet.nodes):
        bad = check_all(node, "load", acked)
        assert not bad, ("node %d" % i, len(bad), list(bad.items())[:10])


def terminate_sessions(pg):
    """Terminates every client session on DB but the watchers' (so the
    topics and leases stay) and this one; returns how many."""
    return int(pg.psql("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                       " WHERE datname = '%s' AND backend_type = 'client backend'"
                       " AND pid <> pg_backend_pid()"
                       " AND application_name NOT LIKE 'cairn-watch%%'" % DB).strip())


def test_backends_terminated_under_load(fleet, primary):
    """Sessions killed under the writers, idle or in the middle of a
    transaction: every PUT is answered 200, none 503.  Before the in-request
    retry, a session lost mid-transaction answered 503."""
    before = sum(failover_repeats(n) for n in fleet.nodes)
    reads = Reads(fleet)
    load = Load(fleet, "load", "kill", writers=WRITERS).start()
    reads.start()
    submits = Submits(fleet).start()
    load.wait_acked(2 * WRITERS)
    killed, t_end = 0, time.monotonic() + 3.0
    while time.monotonic() < t_end:
        killed += terminate_sessions(primary)
        time.sleep(0.15)
    load.wait_acked(len(load.acked) + 2 * WRITERS)
    load.finish()
    bad_reads = reads.finish()
    bad_submits = submits.finish()
    done = load.done
    repeats = sum(failover_repeats(n) for n in fleet.nodes) - before
    failed = [(k, out) for k, _, _, _, out in done if out]
    print("sessions terminated: %d; PUTs %d, failed %d; %s; submits %d, failed %d; "
          "transactions repeated after a lost session: %d"
          % (killed, len(done), len(failed), reads.summary(), len(submits.done),
             len(bad_submits), repeats))
    assert killed > 0
    assert not failed, failed[:10]
    assert not bad_reads, bad_reads[:10]
    assert submits.done and not bad_submits, bad_submits[:10]
    assert repeats > 0
    readable_everywhere(fleet, load.acked)


def test_submits_under_session_kills(fleet, primary):
    """Scribe submits (upload, then submit) on both nodes while every
    session is terminated every KILL_FAST_S: each one is accepted.  Before
    the submit's phase 1 (the plan's read transaction) was repeated on a
    lost session, a submit that met a kill there failed storage_failure
    "backend unavailable"."""
    submits = Submits(fleet, files=4).start()
    killed, t_end = 0, time.monotonic() + 4.0
    while time.monotonic() < t_end:
        killed += terminate_sessions(primary)
        time.sleep(KILL_FAST_S)
    bad = submits.finish()
    print("sessions terminated: %d; submits %d, failed %d" % (killed, len(submits.done), len(bad)))
    assert killed > 0 and len(submits.done) >= 4
    assert not bad, bad[:10]


def until_both_write(fleet, tag, bound):
    """Seconds until every node answers a PUT 200; fails past bound."""
    t0, pending, n = time.monotonic(), set(range(len(fleet.nodes))), 0
    while pending:
        assert time.monotonic() - t0 < bound, "nodes %s take no writes" % sorted(pending)
        for i in sorted(pending):
            n += 1
            try:
                fleet.nodes[i].client().put_object(
                    Bucket="load", Key="%s/probe/%d" % (tag, n), Body=b"p")
                pending.discard(i)
            except Exception:  # noqa: BLE001 - not yet
                pass
        time.sleep(0.05)
    return time.monotonic() - t0


def test_promote_under_load(fleet, primary, standby):
    """The primary stopped (immediate) under writers on both nodes, the
    standby promoted GAP_S later.  Before the in-request retry every request
    that met the switch answered 503."""
    before = sum(failover_repeats(n) for n in fleet.nodes)
    reads = Reads(fleet)
    load = Load(fleet, "load", "promote", writers=WRITERS).start()
    reads.start()
    load.wait_acked(4 * WRITERS)
    t_stop = time.monotonic()
    primary.stop_server("immediate")
    t_down = time.monotonic()
    time.sleep(GAP_S)
    standby.promote()
    t_promoted = time.monotonic()
    took = until_both_write(fleet, "promote", RECOVER_S)
    load.wait_acked(len(load.acked) + 2 * WRITERS)
    load.finish()
    bad_reads = reads.finish()
    done = load.done
    repeats = sum(failover_repeats(n) for n in fleet.nodes) - before

    acked = {k: size for k, size, _, _, out in done if out is None}
    failed = [(k, t1 - t0, out) for k, _, t0, t1, out in done if out]
    # Caught by the switch: in flight at the stop, or sent before the
    # promotion returned (no primary, or one not yet found).
    at_stop = [out for _, _, t0, t1, out in done if t0 < t_stop < t1]
    sent_down = [out for _, _, t0, t1, out in done if t_stop <= t0 < t_promoted]
    caught = at_stop + sent_down
    print("promotion: the primary down %.2f s (stop %.2f s, then %.1f s with no primary) before "
          "promote returned; both nodes took writes %.2f s after it" % (
              t_promoted - t_stop, t_down - t_stop, GAP_S, took))
    print("caught by the switch: %d PUTs, %d succeeded (in flight at the stop %d, %d succeeded;"
          " sent before the promotion %d, %d succeeded); transactions repeated: %d; all: %d PUTs,"
          " %d acked, %d failed %s" % (
              len(caught), caught.count(None), len(at_stop), at_stop.count(None),
              len(sent_down), sent_down.count(None), repeats, len(done), len(acked),
              len(failed), sorted({f[2] for f in failed})))
    print("%s; caught by the switch: %d" % (
        reads.summary(), sum(t0 < t_promoted and t1 > t_stop for _, _, t0, t1, _ in reads.done)))
    assert not [f for f in failed if f[2][0] != 503], (failed[:10], warnings_of(fleet)[:10])
    assert not [f for f in failed if f[1] > REQUEST_BOUND_S], failed[:10]
    assert took < RECOVER_S, took
    # A read has no unknown COMMIT: every one caught by the switch waits for
    # the new primary and succeeds.
    assert not bad_reads, bad_reads[:10]
    # Most requests caught by the switch wait for the new primary and
    # succeed; only a COMMIT whose answer was lost with the old primary
    # (at most one per writer connection: four per node, meta.c's
    # MAX_WRITERS) is answered 503, its outcome unknowable on a new timeline.
    assert caught and caught.count(None) >= len(caught) - 4 * len(fleet.nodes), caught
    assert repeats > 0
    readable_everywhere(fleet, acked)
