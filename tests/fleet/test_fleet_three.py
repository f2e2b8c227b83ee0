"""Three cairnd nodes on loopback (issue 24, "Tests": three nodes; kill -9
under 32 writers): one PostgreSQL database, one blob tier (a fourth cairnd
on its embedded engine as the S3 backend), three stateless nodes serving
every face (fleetutil.Fleet).

* A write through one node is read through the others, on every face: S3
  (PUT, GET, LIST, DELETE), Jay, the blob operations, Scribe (submit
  through one node, log, tree and objects through another).
* Multipart: parts uploaded through three nodes, completed through one,
  read through another (S3 and Jay).
* Concurrent Scribe submits through three nodes (3 nodes x 2 connections
  x 5, disjoint paths, stale bases) are all accepted with gap-free change
  numbers 1..30.
* Dedup across nodes: the same bytes through two (and, at once, three)
  nodes and two faces make one backend object.
* kill -9 of a node under 32 writer threads spread over the nodes: every
  acknowledged PUT reads back exactly through the survivors (and the
  restarted node); an unacknowledged one is absent or exact, never corrupt.
* A submit whose node is killed right after the request was sent resolves
  through operation_outcome on another node, and resending the same
  operation there never applies it twice.

The fleet is one per module (its start dominates under ASan); each test
uses its own bucket, namespace or repository."""
import hashlib
import os
import sys
import threading
import time

import pytest
from botocore.exceptions import ClientError

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "blobops"))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "scribe"))
from fleetutil import Fleet, list_keys, needs_pg, pg  # noqa: E402,F401
from blobsclient import Ops, b3  # noqa: E402
from scribe_wire import ADD, CHANGESET, CHUNK, ERR, OP, Conn, ScribeError  # noqa: E402
from scribe_wire import changeset_encode, changeset_id, chunk_id, file_objects  # noqa: E402
from test_scribe_server import Repo  # noqa: E402

pytestmark = needs_pg

MiB = 1 << 20


@pytest.fixture(scope="module")
def fleet(pg, tmp_path_factory):
    f = Fleet(pg, tmp_path_factory.mktemp("three"), "three")
    try:
        yield f
    finally:
        bad = f.stop()
        assert not bad, bad[0][-4000:]


def clients(fleet):
    return [n.client() for n in fleet.nodes]


def not_found(fn, *a, **kw):
    with pytest.raises(ClientError) as err:
        fn(*a, **kw)
    return err.value.response["Error"]["Code"]


# ---- every face ----------------------------------------------------------------------------
def test_s3_write_one_read_others(fleet):
    a, b, c = clients(fleet)
    a.create_bucket(Bucket="faces")
    data = {"k/%d" % i: os.urandom(1000 + 977 * i) for i in range(5)}
    for k, v in data.items():
        a.put_object(Bucket="faces", Key=k, Body=v, ContentType="text/x-" + k[-1])
    for s3 in (b, c):
        assert "faces" in [x["Name"] for x in s3.list_buckets()["Buckets"]]
        listed = s3.list_objects_v2(Bucket="faces", Prefix="k/")
        assert [(o["Key"], o["Size"]) for o in listed["Contents"]] == \
            sorted((k, len(v)) for k, v in data.items())
        for k, v in data.items():
            r = s3.get_object(Bucket="faces", Key=k)
            assert r["Body"].read() == v and r["ContentType"] == "text/x-" + k[-1]
    # A delete through the third node is seen by the other two at once.
    c.delete_object(Bucket="faces", Key="k/0")
    for s3 in (a, b):
        assert not_found(s3.get_object, Bucket="faces", Key="k/0") == "NoSuchKey"
        assert "k/0" not in [o["Key"] for o in s3.list_objects_v2(Bucket="faces")["Contents"]]
    # An overwrite through b is what a and c answer next.
    b.put_object(Bucket="faces", Key="k/1", Body=b"second")
    for s3 in (a, c):
        assert s3.get_object(Bucket="faces", Key="k/1")["Body"].read() == b"second"


def test_jay_write_one_read_others(fleet):
    n0, n1, n2 = fleet.nodes
    with n1.jay() as j1, n2.jay() as j2, n0.jay() as j0:
        j1.create_bucket("jayfaces")
        body = os.urandom(300000)
        put = j1.put_object("jayfaces", "obj", body, content_type="application/x-jay",
                            metadata={"who": "n1"})
        for j in (j2, j0):
            info, got = j.get_object("jayfaces", "obj")
            assert got == body
            assert info["etag"] == put["etag"] and info["metadata"] == {"who": "n1"}
            assert j.get_range("jayfaces", "obj", 1000, 500)[1] == body[1000:1500]
            assert [o["key"] for o in j.list_objects("jayfaces")["contents"]] == ["obj"]
        # Jay and S3 are faces of the same objects, on every node.
        assert n0.client().get_object(Bucket="jayfaces", Key="obj")["Body"].read() == body
        j2.delete_object("jayfaces", "obj")
        with pytest.raises(Exception) as err:
            j0.get_object("jayfaces", "obj")
        assert getattr(err.value, "code", None) == "NoSuchKey", err.value


def test_blob_ops_write_one_read_others(fleet):
    ops = [Ops(n.server) for n in fleet.nodes]
    data = os.urandom(150000)
    d = b3(data)
    st, body = ops[2].put("three/blobs", data)
    assert st == 200 and body["digest"] == d, body
    for o in (ops[0], ops[1]):
        assert o.have("three/blobs", [d]) == [True]
        st, body = o.call("blobs/stat", {"namespace": "three/blobs", "digest": d})
        assert st == 200 and body["len"] == len(data), body
        r = o.fetch("three/blobs", d)
        assert r.status_code == 200 and r.content == data
    # A digest nobody put is absent everywhere.
    assert ops[1].have("three/blobs", [b3(b"never put")]) == [False]


class ScribeRepo(Repo):
    """One repository seen through one node's Scribe connection (an existing
    one: Repo's upload, without its repo_create)."""

    def __init__(self, conn, info):  # not Repo.__init__, which creates one
        self.c, self.info = conn, info
        self.id, self.main, self.inc = info["id"], info["main"], info["incarnation"]
        self.ws = os.urandom(16)
        self.head = 0

    def submit_payload(self, files, base, op, message="m"):
        mids = self.upload(files)
        enc = changeset_encode([(ADD, p, mids[p], 0, None) for p in files])
        cid = changeset_id(enc)
        self.c.put_objects(self.id, [(CHANGESET, cid, enc)])
        return self.c.submit_payload(self.id, self.inc, op, self.main, self.ws, base, cid,
                                     "ann", message)

    def send(self, payload):
        """One submit request; its outcome."""
        d = self.c.dec(self.c.call(OP["submit"], payload))
        o = self.c.outcome_dec(d)
        d.end()
        return o

    def submit(self, files, base=0, op=None, message="m"):
        return self.send(self.submit_payload(files, base, op or os.urandom(16), message))


def open_repo(fleet, i, name, create=False):
    c = Conn(fleet.scribe_addr(i))
    info = c.repo_create(name) if create else c.repo_info(name=name)
    return ScribeRepo(c, info)


def test_scribe_submit_one_read_others(fleet):
    r0 = open_repo(fleet, 0, "faces", create=True)
    r1, r2 = open_repo(fleet, 1, "faces"), open_repo(fleet, 2, "faces")
    try:
        assert r1.id == r0.id and r2.inc == r0.inc
        files = {"a.txt": b"alpha\n" * 100, "big.bin": os.urandom(MiB + 12345)}
        o = r0.submit(files, message="first")
        assert o["outcome"] == 1 and o["change"] == 1, o
        for r in (r1, r2):
            assert [(x["change"], x["message"]) for x in r.c.log(r.id, r.main)] == \
                [(1, "first")]
            assert [x["change"] for x in r.c.log(r.id, r.main, path="a.txt")] == [1]
            tree, more, _, _ = r.c.tree_page(r.id, r.main, 1)
            assert not more
            assert {t["path"]: t["size"] for t in tree} == {p: len(v) for p, v in files.items()}
            # A clone's reads: the manifests and chunks the tree names.
            mid = {t["path"]: t["manifest"] for t in tree}["big.bin"]
            chunks, _, m = file_objects(files["big.bin"])
            assert m == mid
            got = r.c.get_objects(r.id, [(CHUNK, chunk_id(ch)) for ch in chunks])
            assert b"".join(g[2] for g in got) == files["big.bin"]
        # A second submit through node 2 on top of the first; seen by node 0.
        o = r2.submit({"b.txt": b"beta"}, base=1, message="second")
        assert o["outcome"] == 1 and o["change"] == 2, o
        assert r0.c.repo_info(rid=r0.id)["head"] == 2
        assert [x["message"] for x in r0.c.log(r0.id, r0.main, path="b.txt")] == ["second"]
    finally:
        for r in (r0, r1, r2):
            r.c.close()


# ---- multipart through three nodes -----------------------------------------------------
def test_s3_multipart_parts_through_three_nodes(fleet):
    s3 = clients(fleet)
    s3[0].create_bucket(Bucket="mpu")
    parts = [os.urandom(5 * MiB), os.urandom(5 * MiB), os.urandom(300000)]
    uid = s3[1].create_multipart_upload(Bucket="mpu", Key="big")["UploadId"]
    etags = []
    for n, data in enumerate(parts):
        r = s3[n].upload_part(Bucket="mpu", Key="big", UploadId=uid, PartNumber=n + 1, Body=data)
        etags.append(r["ETag"])
    # Every node lists every part, whichever node took it.
    for c in s3:
        listed = c.list_parts(Bucket="mpu", Key="big", UploadId=uid)["Parts"]
        assert [(p["PartNumber"], p["Size"], p["ETag"]) for p in listed] == \
            [(n + 1, len(d), etags[n]) for n, d in enumerate(parts)]
    s3[2].complete_multipart_upload(
        Bucket="mpu", Key="big", UploadId=uid,
        MultipartUpload={"Parts": [{"PartNumber": n + 1, "ETag": e} for n, e in enumerate(etags)]})
    whole = b"".join(parts)
    for c in (s3[0], s3[1]):
        r = c.get_object(Bucket="mpu", Key="big")
        got = r["Body"].read()
        assert len(got) == len(whole)
        assert hashlib.sha256(got).digest() == hashlib.sha256(whole).digest()
        assert r["ETag"].strip('"').endswith("-3")
        # A range across the first part boundary.
        lo, hi = 5 * MiB - 10, 5 * MiB + 9
        rng = c.get_object(Bucket="mpu", Key="big", Range="bytes=%d-%d" % (lo, hi))
        assert rng["Body"].read() == whole[lo:hi + 1]
    assert not s3[0].list_multipart_uploads(Bucket="mpu").get("Uploads")


def test_jay_multipart_parts_through_three_nodes(fleet):
    conns = [n.jay() for n in fleet.nodes]
    try:
        conns[0].create_bucket("jmpu")
        parts = [os.urandom(5 * MiB), os.urandom(5 * MiB), os.urandom(4321)]
        uid = conns[2].create_multipart("jmpu", "obj")
        for n, data in enumerate(parts):
            conns[n].upload_part("jmpu", "obj", uid, n + 1, data)
        assert [p["size"] for p in conns[1].list_parts("jmpu", "obj", uid)] == \
            [len(p) for p in parts]
        done = conns[0].complete_multipart("jmpu", "obj", uid, [1, 2, 3])
        assert done["size"] == sum(len(p) for p in parts)
        info, got = conns[1].get_object("jmpu", "obj")
        assert got == b"".join(parts) and info["etag"] == done["etag"]
    finally:
        for c in conns:
            c.close()


# ---- concurrent submits ----------------------------------------------------------------
PER_WRITER = 5
CONNS_PER_NODE = 2  # a node's next submit is always waiting: more races between nodes
TOTAL = 3 * CONNS_PER_NODE * PER_WRITER


def send_until_decided(r, payload, busies, tries=30):
    """The outcome of a submit, resent under its operation id should the
    server answer `busy` (retry later; a resend is applied at most once).
    On a shared engine a submit that loses the race to other nodes plans
    again for up to 30 s (service_submit.c, FLEET_RETRY_MS), so the test
    below expects none."""
    for _ in range(tries):
        try:
            return r.send(payload)
        except ScribeError as e:
            if e.code != ERR["busy"]:
                raise
            busies.append(e.message)
    raise AssertionError("still busy after %d sends" % tries)


def test_concurrent_submits_gap_free(fleet):
    """3 nodes x 2 connections x 5 submits on one branch at once.  On
    PostgreSQL two nodes' submits race for one change number; the loser must
    plan again (PostgreSQL reports some of these races as a duplicate key,
    which the submit once answered as `internal: already exists`)."""
    open_repo(fleet, 0, "race", create=True).c.close()
    repos = [open_repo(fleet, i % 3, "race") for i in range(3 * CONNS_PER_NODE)]
    results, errors, busies = [[] for _ in repos], [], []
    start = threading.Barrier(len(repos))

    def run(i):
        r = repos[i]
        try:
            start.wait()
            for j in range(PER_WRITER):
                # Base 0 is stale after the first commit; the paths are the
                # writer's own, so every submit must be accepted.
                payload = r.submit_payload({"w%d/f%02d" % (i, j): b"%d.%d\n" % (i, j)}, 0,
                                           os.urandom(16), "w%d-%d" % (i, j))
                results[i].append(send_until_decided(r, payload, busies))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append((i, repr(e)))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(repos))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    try:
        assert not errors, errors
        outcomes = [o for rs in results for o in rs]
        assert all(o["outcome"] == 1 for o in outcomes), [o for o in outcomes if o["outcome"] != 1]
        changes = sorted(o["change"] for o in outcomes)
        assert changes == list(range(1, TOTAL + 1))
        print("concurrent submits: %d busy answers resent" % len(busies))
        # Losers plan again until they win: no submit gives up under this load.
        assert not busies, busies
        # Each writer's own changes rise in the order it submitted them.
        for rs in results:
            assert [o["change"] for o in rs] == sorted(o["change"] for o in rs)
        # The history agrees on every node: 30 commits, each path once.
        for r in repos[:3]:
            assert r.c.repo_info(rid=r.id)["head"] == TOTAL
            tree, more, _, _ = r.c.tree_page(r.id, r.main, TOTAL, limit=100)
            assert not more and len(tree) == TOTAL
            rows = r.c.log(r.id, r.main, limit=100)
            assert sorted({x["change"] for x in rows}) == changes
    finally:
        for r in repos:
            r.c.close()


# ---- dedup across nodes ------------------------------------------------------------------
def test_dedup_across_nodes(fleet):
    s3 = clients(fleet)
    s3[0].create_bucket(Bucket="dedup")
    data = os.urandom(70000)
    key = "%s/%s" % (Fleet.PREFIX, b3(data))
    s3[0].put_object(Bucket="dedup", Key="one", Body=data)
    s3[1].put_object(Bucket="dedup", Key="two", Body=data)
    st, body = Ops(fleet.nodes[2].server).put("three/dedup", data)
    assert st == 200, body
    assert fleet.backend_keys().count(key) == 1
    # The same new bytes through three nodes at once: still one object.
    same = os.urandom(90000)
    key2 = "%s/%s" % (Fleet.PREFIX, b3(same))
    errs = []

    def put(i):
        try:
            s3[i].put_object(Bucket="dedup", Key="at-once-%d" % i, Body=same)
        except Exception as e:  # noqa: BLE001
            errs.append(repr(e))

    ts = [threading.Thread(target=put, args=(i,)) for i in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert not errs, errs
    assert fleet.backend_keys().count(key2) == 1
    for i in range(3):
        for c in s3:
            assert c.get_object(Bucket="dedup", Key="at-once-%d" % i)["Body"].read() == same


# ---- kill -9 under load --------------------------------------------------------------------
WRITERS = 32
VICTIM = 0


def body_of(key, n):
    """The bytes a writer puts under key: n bytes derived from the key, so a
    read can tell exact bytes from any other."""
    seed = hashlib.sha256(key.encode()).digest()
    out = bytearray()
    while len(out) < n:
        seed = hashlib.sha256(seed).digest()
        out += seed
    return bytes(out[:n])


class Load:
    """WRITERS threads putting unique keys through the nodes (writer t
    starts on node t % 3 and moves to the next live node after a failure)."""

    def __init__(self, fleet, bucket):
        self.fleet, self.bucket = fleet, bucket
        self.acked, self.failed = {}, {}
        self.lock = threading.Lock()
        self.stop = threading.Event()
        # One client per node, made here: botocore clients are safe to share
        # between threads, but making them from many threads at once is not.
        self.clients = [n.client(connect_timeout=5, read_timeout=30,
                                 max_pool_connections=WRITERS) for n in fleet.nodes]

    def writer(self, t):
        node = t % len(self.fleet.nodes)
        s3 = self.clients[node]
        i = 0
        while not self.stop.is_set():
            key = "w%02d/%04d" % (t, i)
            size = 512 + (t * 7919 + i * 104729) % 12000
            try:
                s3.put_object(Bucket=self.bucket, Key=key, Body=body_of(key, size))
                with self.lock:
                    self.acked[key] = size
            except Exception as e:  # noqa: BLE001 - any failure is "not acknowledged"
                with self.lock:
                    self.failed[key] = (node, size, repr(e)[:200])
                node = (node + 1) % len(self.fleet.nodes)
                while node in self.fleet.killed:
                    node = (node + 1) % len(self.fleet.nodes)
                s3 = self.clients[node]
            i += 1


def check_key(jay, bucket, key, size):
    """"ok" (exact bytes), "absent" (NoSuchKey), or what else it answered.
    Read through Jay: many reads, and far cheaper for the client than boto3."""
    try:
        _, got = jay.get_object(bucket, key)
    except Exception as e:  # noqa: BLE001 - a JayError's code, else the failure
        code = getattr(e, "code", None)
        return "absent" if code == "NoSuchKey" else repr(e)
    return "ok" if got == body_of(key, size) else "corrupt(%d bytes)" % len(got)


def check_all(node, bucket, keys, conns=4):
    """{key: status} of every key of keys {key: size} not read back exactly
    through node, over conns Jay connections."""
    bad, items = {}, sorted(keys.items())

    def run(part):
        with node.jay() as j:
            for key, size in part:
                st = check_key(j, bucket, key, size)
                if st != "ok":
                    bad[key] = st

    ts = [threading.Thread(target=run, args=(items[i::conns],)) for i in range(conns)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    return bad


def test_kill9_under_32_writers(fleet):
    clients(fleet)[1].create_bucket(Bucket="load")
    load = Load(fleet, "load")
    threads = [threading.Thread(target=load.writer, args=(t,), daemon=True)
               for t in range(WRITERS)]
    for t in threads:
        t.start()
    # Let the load build until every writer has landed writes, then kill.
    deadline = time.monotonic() + 30
    while len(load.acked) < 3 * WRITERS and time.monotonic() < deadline:
        time.sleep(0.1)
    before = len(load.acked)
    fleet.kill9(VICTIM)
    time.sleep(2.0)
    load.stop.set()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads)
    acked, failed = dict(load.acked), dict(load.failed)
    print("kill9: %d acked before the kill, %d after, %d failed" %
          (before, len(acked) - before, len(failed)))
    assert before >= WRITERS, before
    assert len(acked) > before  # the survivors kept taking writes after the kill
    # Failures are writes that were in flight on the victim (or redirected
    # from it); the survivors refused nothing.
    assert all(node == VICTIM for node, _, _ in failed.values()), \
        [v for v in failed.values() if v[0] != VICTIM][:5]

    survivors = [fleet.nodes[i] for i in range(3) if i != VICTIM]
    for node in survivors:
        bad = check_all(node, "load", acked)
        assert not bad, list(bad.items())[:10]
    unacked = {k: size for k, (_, size, _) in failed.items()}
    bad = check_all(survivors[0], "load", unacked)
    assert all(st == "absent" for st in bad.values()), bad
    # The listing holds exactly the acknowledged keys and, of the rest, only
    # ones whose bytes are whole.
    listed = set(list_keys(survivors[1].client(), "load"))
    assert set(acked) <= listed
    assert listed <= set(acked) | set(failed)

    # The victim comes back on its own data dir and serves everything.
    fleet.start(VICTIM)
    back = fleet.nodes[VICTIM]
    assert check_all(back, "load", acked) == {}
    back.client().put_object(Bucket="load", Key="after", Body=b"back")
    assert survivors[0].client().get_object(Bucket="load", Key="after")["Body"].read() == b"back"


# ---- a submit whose node died --------------------------------------------------------------
@pytest.mark.parametrize("when", ["at_once", "after_commit"])
def test_submit_node_killed_resolves_elsewhere(fleet, when):
    """The submit's node is killed with the request sent and its answer never
    read: at once (the submit may or may not have committed), or once its
    commit is visible through another node (committed, acknowledgement
    lost).  operation_outcome through another node tells which, and
    resending the same operation there applies it exactly once."""
    victim, other = 2, 1
    name = "killed-" + when.replace("_", "-")
    r = open_repo(fleet, victim, name, create=True)
    o = r.submit({"first": b"one"}, base=0)
    assert o["outcome"] == 1 and o["change"] == 1
    op = os.urandom(16)
    payload = r.submit_payload({"second": b"two"}, 1, op)
    s = open_repo(fleet, other, name)
    try:
        r.c.send_frame(OP["submit"], payload)
        if when == "after_commit":
            deadline = time.monotonic() + 30
            while s.c.repo_info(rid=s.id)["head"] < 2 and time.monotonic() < deadline:
                time.sleep(0.01)
        fleet.kill9(victim)
        r.c.close()
        kind, out = s.c.operation_outcome(s.id, op)
        # Committed before the kill (its outcome recorded) or never (kind 0
        # unknown); nothing in between.
        if when == "after_commit":
            assert kind == 1, kind
        assert kind in (0, 1), kind
        if kind == 1:
            assert out["outcome"] == 1 and out["change"] == 2, out
            assert s.c.repo_info(rid=s.id)["head"] == 2
        else:
            assert s.c.repo_info(rid=s.id)["head"] == 1
        again = s.send(payload)
        assert again["outcome"] == 1 and again["change"] == 2, again
        if kind == 1:
            assert again["commit"] == out["commit"]
        kind, out = s.c.operation_outcome(s.id, op)
        assert kind == 1 and out["change"] == 2 and out["commit"] == again["commit"]
        assert s.c.repo_info(rid=s.id)["head"] == 2
        assert [x["change"] for x in s.c.log(s.id, s.main)] == [2, 1]
    finally:
        s.c.close()
        fleet.start(victim)
