"""The blob tier's backend stopped under load, seen through Jay and Scribe
(issue 24, "Tests": "the backend stopped under load -> bounded failures with
the right codes, no hang, recovery when it returns, nothing acknowledged
lost"; docs/fleet.md "Faults").  test_fleet_faults.py checks this through
S3 only; the faces map the store's CN_E_UNAVAILABLE each through their own
table, so each needs its own check:

* Jay (src/jay/server.c, cn__jay_code_of): the table has no unavailable
  code, so a backend fault is `InternalError` (status ST_INTERNAL) --
  docs/protocol/jay.md's "anything else" row, and the issue's "Jay
  InternalError".  Never `NoSuchKey` for bytes the node could not fetch.
* Scribe (src/scribe/server.c): CN_E_UNAVAILABLE is `storage_failure`
  (code 10, docs/protocol/scribe.md's error table), for an upload
  (put_objects), a submit and a clone's reads (get_objects).

Two nodes on one PostgreSQL database and a backend cairnd (fleetutil.Fleet),
CAIRN_BLOB_DEADLINE_MS=3000 so a refused request is answered in seconds, not
the 30 s default.  Jay writers and Scribe submitters run on both nodes while
the backend is stopped; explicit probes go through node 1, which never read
the bytes node 0 wrote (so they are in no cache it has).  Started again,
both faces serve on both nodes, every acknowledged Jay PUT and Scribe change
reads back exactly, and no refused write left anything behind."""
import os
import sys
import threading
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "scribe"))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "jay"))
from fleetutil import Fleet, body_of, needs_pg  # noqa: E402
from jayclient import ST_INTERNAL, JayError  # noqa: E402
from scribe_wire import CHUNK, ERR, Conn, ScribeError, chunk_id, file_objects  # noqa: E402
import pgharness  # noqa: E402

pytestmark = needs_pg

BLOB_DEADLINE_MS = 3000
# A refused request is answered after the blob client's retries within its
# deadline (about 3 s measured for S3); twice that plus slack for ASan on a
# loaded 2-core machine, and far below a hang (the clients wait 60 s).
REQUEST_BOUND_S = 2 * BLOB_DEADLINE_MS / 1000 + 6
RECOVER_S = 15.0  # both faces serve on both nodes within this of the backend's start
BUCKET = "jfaults"
REPO = "sfaults"
STORAGE_FAILURE = ERR["storage_failure"]


@pytest.fixture(scope="module")
def pg():
    # synchronous_commit=on: a commit PostgreSQL acknowledged is kept, so a
    # lost write would be cairn's (as in test_fleet_faults.py).
    with pgharness.PgCluster(settings={"synchronous_commit": "on"}) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def fleet(pg, tmp_path_factory):
    f = Fleet(pg, tmp_path_factory.mktemp("faces"), "faces", count=2,
              env={"CAIRN_BLOB_DEADLINE_MS": str(BLOB_DEADLINE_MS)})
    try:
        yield f
    finally:
        bad = f.stop()
        assert not bad, bad[0][-4000:]


def size_of(tag, i):
    return 300 + (i * 7919 + len(tag) * 104729) % 30000


def scribe_repo(fleet, i):
    """node i's Scribe connection and the repository's ids."""
    from test_fleet_three import ScribeRepo
    c = Conn(fleet.scribe_addr(i), timeout=60)
    return ScribeRepo(c, c.repo_info(name=REPO))


class FaceLoad:
    """One Jay writer and one Scribe submitter per node, each request timed.
    jay_acked {key: size}, jay_failed {key: (node, code, status or repr, s)};
    scribe_acked {path: size}, scribe_failed [(node, step, code, s, op,
    path, size)].  A writer whose connection breaks (never expected) records it
    as a failure with code None, which the checks refuse."""

    def __init__(self, fleet, tag):
        self.fleet, self.tag = fleet, tag
        self.jay_acked, self.jay_failed = {}, {}
        self.scribe_acked, self.scribe_failed = {}, []
        self.lock = threading.Lock()
        self.stop_ev = threading.Event()
        n = len(fleet.nodes)
        self.threads = [threading.Thread(target=self.jay_writer, args=(i,), daemon=True)
                        for i in range(n)]
        self.threads += [threading.Thread(target=self.scribe_writer, args=(i,), daemon=True)
                         for i in range(n)]

    def jay_writer(self, node):
        j = self.fleet.nodes[node].jay()
        i = 0
        while not self.stop_ev.is_set():
            key = "%s/j%d/%05d" % (self.tag, node, i)
            size = size_of(key, i)
            t0 = time.monotonic()
            try:
                j.put_object(BUCKET, key, body_of(key, size))
                with self.lock:
                    self.jay_acked[key] = size
            except JayError as e:
                with self.lock:
                    self.jay_failed[key] = (node, e.code, e.status, time.monotonic() - t0)
                time.sleep(0.05)
            except OSError as e:
                with self.lock:
                    self.jay_failed[key] = (node, None, repr(e), time.monotonic() - t0)
                j.close()
                time.sleep(0.2)
                j = self.fleet.nodes[node].jay()
            i += 1
        j.close()

    def scribe_writer(self, node):
        r = scribe_repo(self.fleet, node)
        base, i = 0, 0
        while not self.stop_ev.is_set():
            path = "%s/s%d/%05d.bin" % (self.tag, node, i)
            op = os.urandom(16)
            t0 = time.monotonic()
            step = "upload"
            size = size_of(path, i)
            try:
                payload = r.submit_payload({path: body_of(path, size)}, base, op)
                step = "submit"
                o = r.send(payload)
                assert o["outcome"] == 1, o  # disjoint paths: a stale base is rebased
                base = o["change"]
                with self.lock:
                    self.scribe_acked[path] = size
            except ScribeError as e:
                with self.lock:
                    self.scribe_failed.append((node, step, e.code, time.monotonic() - t0, op,
                                               path, size))
                time.sleep(0.05)
            except OSError as e:
                with self.lock:
                    self.scribe_failed.append((node, step, None, repr(e), op, path, size))
                r.c.close()
                time.sleep(0.2)
                r = scribe_repo(self.fleet, node)
            i += 1
        r.c.close()

    def start(self):
        for t in self.threads:
            t.start()
        return self

    def wait(self, what, timeout):
        deadline = time.monotonic() + timeout
        while not what():
            assert time.monotonic() < deadline, (len(self.jay_acked), len(self.scribe_acked),
                                                 list(self.jay_failed.values())[:5],
                                                 self.scribe_failed[:5])
            time.sleep(0.05)

    def failed_nodes(self):
        with self.lock:
            return ({v[0] for v in self.jay_failed.values()},
                    {v[0] for v in self.scribe_failed})

    def finish(self):
        self.stop_ev.set()
        for t in self.threads:
            t.join(REQUEST_BOUND_S + 60)
        assert not any(t.is_alive() for t in self.threads), "a writer hung"


def jay_refused(node, fn):
    """fn(jay connection) through node is refused with Jay's InternalError
    within REQUEST_BOUND_S; the seconds it took."""
    with node.jay() as j:
        t0 = time.monotonic()
        with pytest.raises(JayError) as e:
            fn(j)
        took = time.monotonic() - t0
    assert (e.value.code, e.value.status) == ("InternalError", ST_INTERNAL), e.value
    assert took < REQUEST_BOUND_S, took
    return took


def scribe_refused(fn):
    """fn() is refused with Scribe's storage_failure within REQUEST_BOUND_S."""
    t0 = time.monotonic()
    with pytest.raises(ScribeError) as e:
        fn()
    took = time.monotonic() - t0
    assert e.value.code == STORAGE_FAILURE, e.value
    assert took < REQUEST_BOUND_S, took
    return took


def both_faces_serve(fleet, n):
    """One Jay PUT and GET, and one Scribe upload and submit, through every
    node succeed (n: a probe number, for unique names)."""
    for i, node in enumerate(fleet.nodes):
        key = "probe/%d/%d" % (i, n)
        data = os.urandom(2000)
        try:
            with node.jay() as j:
                j.put_object(BUCKET, key, data)
                if j.get_object(BUCKET, key)[1] != data:
                    return False
            r = scribe_repo(fleet, i)
            try:
                head = r.c.repo_info(rid=r.id)["head"]
                if r.submit({key: data}, base=head)["outcome"] != 1:
                    return False
            finally:
                r.c.close()
        except (JayError, ScribeError):
            return False
    return True


def test_backend_stop_under_load_jay_and_scribe(fleet):
    n0, n1 = fleet.nodes
    with n0.jay() as j:
        j.create_bucket(BUCKET)
    c0 = Conn(fleet.scribe_addr(0), timeout=60)
    c0.repo_create(REPO)
    c0.close()
    # Written through node 0 only: node 1 has none of these bytes cached.
    cold_jay = {"cold/%d" % i: 5000 + 7001 * i for i in range(3)}
    with n0.jay() as j:
        for k, size in cold_jay.items():
            j.put_object(BUCKET, k, body_of(k, size))
    r0 = scribe_repo(fleet, 0)
    cold_file = body_of("cold.bin", 300000)  # several chunks (check_scribe's rule)
    o = r0.submit({"cold.bin": cold_file}, base=0)
    assert o["outcome"] == 1, o
    cold_change = o["change"]
    chunks = [(CHUNK, chunk_id(ch)) for ch in file_objects(cold_file)[0]]
    # A changeset uploaded through node 0 before the stop, submitted through
    # node 1 during it (node 1 must read it, and write the commit).
    late = os.urandom(16)
    late_payload = r0.submit_payload({"late.bin": body_of("late.bin", 40000)}, cold_change,
                                     late)
    r0.c.close()

    load = FaceLoad(fleet, "load").start()
    try:
        load.wait(lambda: len(load.jay_acked) >= 6 and len(load.scribe_acked) >= 4, 90)
        jay_before, scribe_before = len(load.jay_acked), len(load.scribe_acked)
        bad = fleet.stop_backend()
        assert bad is None, bad[-4000:]
        t_down = time.monotonic()
        # Every writer on every node meets the outage.
        both = set(range(len(fleet.nodes)))
        load.wait(lambda: load.failed_nodes() == (both, both), 3 * REQUEST_BOUND_S)

        # ---- probes through node 1 ----
        times = {}
        times["jay get"] = jay_refused(n1, lambda j: j.get_object(BUCKET, "cold/1"))
        times["jay range"] = jay_refused(n1, lambda j: j.get_range(BUCKET, "cold/2", 100, 50))
        fresh = os.urandom(25000)
        times["jay put"] = jay_refused(n1, lambda j: j.put_object(BUCKET, "fresh", fresh))
        r1 = scribe_repo(fleet, 1)
        try:
            times["scribe clone"] = scribe_refused(lambda: r1.c.get_objects(r1.id, chunks))
            times["scribe upload"] = scribe_refused(
                lambda: r1.upload({"fresh.bin": body_of("fresh.bin", 30000)}))
            times["scribe submit"] = scribe_refused(lambda: r1.send(late_payload))
        finally:
            r1.c.close()
        # Node 0 still serves what it cached, on both faces.
        with n0.jay() as j:
            assert j.get_object(BUCKET, "cold/0")[1] == body_of("cold/0", cold_jay["cold/0"])
        r0 = scribe_repo(fleet, 0)
        try:
            got = r0.c.get_objects(r0.id, chunks)
            assert b"".join(g[2] for g in got) == cold_file
        finally:
            r0.c.close()
        print("refused in (s):", {k: round(v, 2) for k, v in times.items()})

        # ---- the backend returns ----
        fleet.start_backend()
        t_up = time.monotonic()
        n = 0
        while not both_faces_serve(fleet, n):
            n += 1
            assert time.monotonic() - t_up < RECOVER_S, "not serving %.1f s after the start" % (
                time.monotonic() - t_up)
            time.sleep(0.1)
        took = time.monotonic() - t_up
        # The load's own writers are taken again too (not only the probes).
        load.wait(lambda: len(load.jay_acked) >= jay_before + 4
                  and len(load.scribe_acked) >= scribe_before + 2, 60)
        load.finish()
        print("down %.1f s; back on both faces and nodes in %.2f s; jay %d acked (%d before), "
              "%d failed; scribe %d acked (%d before), %d failed" % (
                  t_up - t_down, took, len(load.jay_acked), jay_before, len(load.jay_failed),
                  len(load.scribe_acked), scribe_before, len(load.scribe_failed)))
        print("jay failures:", sorted({(v[1], v[2]) for v in load.jay_failed.values()}))
        print("scribe failures:", sorted({(v[1], v[2]) for v in load.scribe_failed}))

        # Bounded failures with the right codes only.
        odd = [v for v in load.jay_failed.values()
               if (v[1], v[2]) != ("InternalError", ST_INTERNAL) or v[3] > REQUEST_BOUND_S]
        assert not odd, odd[:10]
        odd = [v[:4] for v in load.scribe_failed if v[2] != STORAGE_FAILURE
               or v[3] > REQUEST_BOUND_S]
        assert not odd, odd[:10]
    finally:
        load.finish()  # idempotent; no writer outlives the test, even when it fails

    # ---- nothing acknowledged lost, nothing refused left behind ----
    jay_all = dict(load.jay_acked, **cold_jay)
    for node in fleet.nodes:
        with node.jay() as j:
            for key, size in sorted(jay_all.items()):
                assert j.get_object(BUCKET, key)[1] == body_of(key, size), key
            for key in list(load.jay_failed) + ["fresh"]:
                with pytest.raises(JayError) as e:
                    j.get_object(BUCKET, key)
                assert e.value.code == "NoSuchKey", (key, e.value)
    scribe_all = dict(load.scribe_acked)
    with Conn(fleet.scribe_addr(1), timeout=60) as c:
        rid = c.repo_info(name=REPO)["id"]
        for _, _, _, _, op, path, size in load.scribe_failed:
            kind, got = c.operation_outcome(rid, op)
            assert kind in (0, 1), (path, kind, got)
            if kind == 1:  # applied, its answer lost: then it must read back too
                scribe_all[path] = size
        assert c.operation_outcome(rid, late)[0] == 0  # the refused submit was not applied
    check_scribe(fleet, dict(scribe_all, **{"cold.bin": len(cold_file)}))
    # The refused submit goes through now, and the clone reads through node 1.
    r1 = scribe_repo(fleet, 1)
    try:
        assert r1.send(late_payload)["outcome"] == 1
        got = r1.c.get_objects(r1.id, chunks)
        assert b"".join(g[2] for g in got) == cold_file
    finally:
        r1.c.close()


def check_scribe(fleet, files):
    """Every path of files {path: size} is in the head's tree through every
    node, naming the manifest of body_of(path, size) (cold.bin's is
    body_of("cold.bin", 300000), the same rule), and its chunks read back
    exactly."""
    for i in range(len(fleet.nodes)):
        r = scribe_repo(fleet, i)
        try:
            head = r.c.repo_info(rid=r.id)["head"]
            tree, after = {}, None
            while True:
                page, more, _, _ = r.c.tree_page(r.id, r.main, head, limit=100, after=after)
                tree.update({t["path"]: t for t in page})
                if not more:
                    break
                after = page[-1]["path"]
            missing = [p for p in files if p not in tree]
            assert not missing, ("node %d" % i, missing[:10])
            for path, size in sorted(files.items()):
                want = body_of(path, size)
                chunks, _, mid = file_objects(want)
                assert (tree[path]["size"], tree[path]["manifest"]) == (size, mid), (i, path)
                got = r.c.get_objects(r.id, [(CHUNK, chunk_id(ch)) for ch in chunks])
                assert b"".join(g[2] or b"" for g in got) == want, (i, path)
        finally:
            r.c.close()
