"""Repository object lookups in batches on PostgreSQL metadata (issue 24,
"`= ANY($1)` batch lookups"): a cairnd on --meta postgres://... validates a
manifest of 1,000 chunks put earlier with one lookup statement, not one per
chunk, and answers a get_objects of 1,000 references (chunks, a manifest,
absent ids, a chunk asked twice, an id asked under the wrong kind) exactly
and in order with one lookup statement (the database runs with
log_statement = all); the membership rows of a put of 1,000 chunks are 7
multi-row INSERTs, not 1,000, with the stored flags a row per object gave.  The batched validation keeps its rules: a reference
is satisfied only by an object earlier in the same put, and the object
blamed is the first failing one by index whether it fails by parsing or by
a missing reference.  A submit of 300 paths is about 56 statements, not
1,876, with the same outcomes (a case-fold alias refused); a listing reads
a level of the tree per statement, a tree proof a node's children; a lock
request of 1,000 paths is about fifteen statements."""
import os
import subprocess
import sys

import pytest

from conftest import Server

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "scribe"))
from fleetutil import needs_pg, pg  # noqa: E402,F401
from scribe_wire import CHUNK, ERR, MANIFEST, Conn, ScribeError  # noqa: E402
from scribe_wire import manifest_id  # noqa: E402

pytestmark = needs_pg

FACES = ["--jay", "off", "--scribe", "127.0.0.1:0", "--http", "127.0.0.1:0"]


def log_end(pg):
    return os.path.getsize(os.path.join(pg.dir, "log"))


def lookups_since(pg, since):
    """The logged statements reading repos_object since byte offset since."""
    with open(os.path.join(pg.dir, "log"), "rb") as f:
        f.seek(since)
        text = f.read().decode(errors="replace")
    return [ln for ln in text.splitlines()
            if "SELECT" in ln and "repos_object" in ln and "INSERT" not in ln]


def inserts_since(pg, since):
    """The logged statements inserting into repos_object since byte offset
    since, and every logged statement (a "statement:" or "execute" line)."""
    with open(os.path.join(pg.dir, "log"), "rb") as f:
        f.seek(since)
        text = f.read().decode(errors="replace")
    every = [ln for ln in text.splitlines()
             if "LOG:  statement:" in ln or "LOG:  execute" in ln]
    return [ln for ln in every if "INSERT INTO repos_object" in ln], every


def kinds(lines):
    """Logged statements counted by text, most frequent first."""
    n = {}
    for ln in lines:
        t = ln.split("LOG:  ", 1)[1][:110]
        n[t] = n.get(t, 0) + 1
    return sorted(n.items(), key=lambda kv: -kv[1])


def chunk_ids(tmp, chunks):
    """BLAKE3 of each chunk, with one b3sum run."""
    names = []
    for i, c in enumerate(chunks):
        p = tmp / ("c%d" % i)
        p.write_bytes(c)
        names.append(str(p))
    out = subprocess.run(["b3sum", "--no-names"] + names, capture_output=True, check=True)
    return [bytes.fromhex(ln) for ln in out.stdout.decode().split()]


def manifest(ids_lens):
    enc = bytes([1]) + sum(n for _, n in ids_lens).to_bytes(8, "little")
    enc += len(ids_lens).to_bytes(4, "little")
    for cid, n in ids_lens:
        enc += cid + n.to_bytes(4, "little")
    return manifest_id(enc), enc


@pytest.fixture(scope="module")
def node(pg, tmp_path_factory):
    uri = pg.create_db("rbatch")
    # Every statement of every new session is logged, without parameters.
    pg.psql("ALTER DATABASE rbatch SET log_statement = 'all'")
    pg.psql("ALTER DATABASE rbatch SET log_parameter_max_length = 0")
    srv = Server(tmp_path_factory.mktemp("rbatch") / "n", args=FACES + ["--meta", uri])
    srv.start(wait_for=("scribe",))
    try:
        yield srv
    finally:
        srv.stop()


def put_error(c, rid, objs):
    with pytest.raises(ScribeError) as e:
        c.put_objects(rid, objs)
    return e.value


def test_manifest_and_get_of_1000_are_one_statement_each(pg, node, tmp_path):
    c = Conn(node.addrs["scribe"])
    rid = c.repo_create("big")["id"]
    chunks = [b"chunk %d " % i * 3 for i in range(1000)]
    ids = chunk_ids(tmp_path, chunks)
    since = log_end(pg)
    assert c.put_objects(rid, [(CHUNK, i, d) for i, d in zip(ids, chunks)]) == [1] * 1000
    # The membership rows go as multi-row INSERTs of up to 256 rows, in
    # power-of-two sizes: 1,000 = 3 * 256 + 128 + 64 + 32 + 8.
    # (The blob store's own pack index rows, store_pack_blob, are not the
    # repository's: only the statements naming repos_ tables are bounded.)
    ins, every = inserts_since(pg, since)
    repos = [ln for ln in every if "repos_" in ln]
    assert len(ins) == 7, ins[:3]
    assert len(repos) <= 9, kinds(repos)
    print("put_objects of 1,000 chunks: %d INSERT(s) into repos_object, %d statement(s) on"
          " repos_ tables, %d in all: %s" % (len(ins), len(repos), len(every), kinds(every)))

    mid, menc = manifest([(i, len(d)) for i, d in zip(ids, chunks)])
    since = log_end(pg)
    assert c.put_objects(rid, [(MANIFEST, mid, menc)]) == [1]
    got = lookups_since(pg, since)
    assert len(got) == 1, got[:5]
    assert "unnest" in got[0]
    print("put_objects of a 1,000-chunk manifest: %d lookup statement(s)" % len(got))

    # 1,000 references: 995 chunks, the manifest, an absent id, a chunk
    # repeated, a chunk's id under the manifest kind, the manifest's id under
    # the chunk kind.
    absent = bytes(32)
    refs = [(CHUNK, i) for i in ids[:995]]
    refs += [(MANIFEST, mid), (CHUNK, absent), (CHUNK, ids[7]), (MANIFEST, ids[8]), (CHUNK, mid)]
    since = log_end(pg)
    items = c.get_objects(rid, refs)
    got = lookups_since(pg, since)
    assert len(got) == 1, got[:5]
    assert "unnest" in got[0]
    print("get_objects of 1,000 references: %d lookup statement(s)" % len(got))
    assert [(k, i) for k, i, _ in items] == refs
    want = chunks[:995] + [menc, None, chunks[7], None, None]
    assert [d for _, _, d in items] == want
    c.close()


def test_stored_flags_of_batched_inserts(node, tmp_path):
    """A row per distinct object: a repeat in the same put and an object held
    already answer 0, the first of a repeat and a new object 1; more than
    one statement's rows (600: 512 + 64 + 16 + 8) keep the positions."""
    c = Conn(node.addrs["scribe"])
    rid = c.repo_create("flags")["id"]
    chunks = [b"flag chunk %d " % i * 2 for i in range(600)]
    ids = chunk_ids(tmp_path, chunks)
    objs = [(CHUNK, i, d) for i, d in zip(ids, chunks)]
    assert c.put_objects(rid, objs[:3]) == [1, 1, 1]
    batch = [objs[5], objs[0], objs[5], objs[4], objs[2], objs[4]] + objs[6:] + [objs[3]]
    want = [1, 0, 0, 1, 0, 0] + [1] * len(objs[6:]) + [1]
    assert c.put_objects(rid, batch) == want
    assert c.put_objects(rid, objs) == [0] * 600
    got = c.get_objects(rid, [(CHUNK, i) for i in ids])
    assert [d for _, _, d in got] == chunks
    c.close()


def test_batched_validation_keeps_its_rules(node, tmp_path):
    c = Conn(node.addrs["scribe"])
    rid = c.repo_create("rules")["id"]
    chunks = [b"rule chunk %d" % i for i in range(3)]
    a, b, late = chunk_ids(tmp_path, chunks)
    assert c.put_objects(rid, [(CHUNK, a, chunks[0])]) == [1]
    m_ok = manifest([(a, len(chunks[0]))])
    m_b = manifest([(a, len(chunks[0])), (b, len(chunks[1]))])
    m_late = manifest([(late, len(chunks[2]))])
    garbage = (manifest_id(b"not a manifest"), b"not a manifest")

    # A chunk put earlier in the same batch satisfies a manifest; one later
    # does not (the `before` rule).
    assert c.put_objects(rid, [(CHUNK, b, chunks[1]), (MANIFEST,) + m_b]) == [1, 1]
    e = put_error(c, rid, [(MANIFEST,) + m_late, (CHUNK, late, chunks[2])])
    assert (e.code, e.message) == (ERR["object_missing"], "object 0: the manifest names a "
                                   "chunk the repository lacks")
    # The first failing object by index is blamed, missing before invalid...
    e = put_error(c, rid, [(MANIFEST,) + m_ok, (MANIFEST,) + m_late, (MANIFEST,) + garbage])
    assert (e.code, e.message) == (ERR["object_missing"], "object 1: the manifest names a "
                                   "chunk the repository lacks")
    # ... and invalid before missing.
    e = put_error(c, rid, [(MANIFEST,) + garbage, (MANIFEST,) + m_late])
    assert (e.code, e.message) == (ERR["object_invalid"],
                                   "object 0: not a canonical manifest")
    # Nothing of a failed put is kept.
    assert c.presence(rid, [(MANIFEST, m_late[0]), (CHUNK, late)]) == [False, False]
    c.close()


def statements_since(pg, since):
    """Every statement logged since byte offset since."""
    return inserts_since(pg, since)[1]


def of(lines, *words):
    return [ln for ln in lines if all(w in ln for w in words)]


def test_submit_and_listing_of_300_paths_are_a_few_statements(pg, node):
    """A submit's plan reads the tree nodes its paths descend through one
    level at a time, the manifests' sizes and the new paths' case folds in
    one statement each, and writes its rows as multi-row INSERTs; a listing
    reads a node's children in one statement: a few dozen statements where
    a statement per node, row and path made about 5.7 per path."""
    from scribe_wire import ADD, CHANGESET, MODIFY, changeset_encode, changeset_id, \
        chunk_id, file_objects
    c = Conn(node.addrs["scribe"])
    info = c.repo_create("paths300")
    rid, main, inc = info["id"], info["main"], info["incarnation"]
    objs, mids = [], []
    for content in (b"first\n", b"second, longer\n"):
        chunks, enc, mid = file_objects(content)
        objs += [(CHUNK, chunk_id(ch), ch) for ch in chunks] + [(MANIFEST, mid, enc)]
        mids.append(mid)
    paths = sorted("d%02d/f%03d.txt" % (i % 10, i) for i in range(300))
    sets = [[(ADD, p, mids[0], 0, None) for p in paths],
            [(MODIFY, p, mids[1], 0, None) for p in paths],
            # "D00/f000.txt" folds as the live "d00/f000.txt": the whole set fails
            [(ADD, "D00/f000.txt", mids[0], 0, None), (ADD, "zz/new.txt", mids[0], 0, None)]]
    cids = []
    for s in sets:
        enc = changeset_encode(s)
        objs.append((CHANGESET, changeset_id(enc), enc))
        cids.append(changeset_id(enc))
    c.put_objects(rid, objs)
    ws, head = os.urandom(16), 0
    for cid in cids[:2]:
        since = log_end(pg)
        o = c.submit(rid, inc, os.urandom(16), main, ws, head, cid, "t", "300 paths")
        assert o["outcome"] == 1, o
        head = o["change"]
        every = statements_since(pg, since)
        nodes = of(every, "SELECT", "repos_tree_node")
        rows = [of(every, "INSERT INTO repos_" + t) for t in ("tree_node", "event", "lineage")]
        print("submit of 300 paths: %d statements, %d node reads, inserts %s: %s"
              % (len(every), len(nodes), [len(r) for r in rows], kinds(every)[:6]))
        assert len(nodes) <= 8, kinds(nodes)
        # 256, 32, 4 or 1 rows each: at most 18 for < 512 rows
        assert all(len(r) <= 18 for r in rows), [kinds(r) for r in rows]
        assert len(every) <= 80, kinds(every)
    o = c.submit(rid, inc, os.urandom(16), main, ws, head, cids[2], "t", "alias")
    assert o["outcome"] == 2 and o["paths"] == ["D00/f000.txt"], o
    since, got, after, more = log_end(pg), [], None, True
    while more:
        rows, more, _, _ = c.tree_page(rid, main, head, limit=100, after=after)
        got += rows
        after = rows[-1]["path"] if rows else None
    assert [r["path"] for r in got] == paths
    assert {r["size"] for r in got} == {len(b"second, longer\n")}
    nodes = of(statements_since(pg, since), "SELECT", "repos_tree_node")
    print("a listing of 300 paths in pages of 100: %d node reads" % len(nodes))
    # three pages, each read a level of the tree per statement (a statement
    # per node it enters was 56; per node read, more than one per path)
    assert len(nodes) <= 30, kinds(nodes)
    # A proof of the whole tree: a pushed node's entered children are read
    # in one statement.
    from scribe_wire import OP
    from test_scribe_proof import LIVE, nodes_of, page_req, proof_req
    since = log_end(pg)
    page = page_req(type("R", (), {"id": rid, "main": main}), head, limit=4096)
    _, sent = nodes_of(c.call(OP["tree_proof"], proof_req(page, LIVE)))
    reads = of(statements_since(pg, since), "SELECT", "repos_tree_node")
    print("a proof of 300 paths: %d nodes sent, %d node reads" % (len(sent), len(reads)))
    assert len(sent) > len(paths) and len(reads) <= len(sent) // 4, kinds(reads)
    c.close()


def test_lock_request_of_1000_paths_is_a_few_statements(pg, node):
    """A lock request reads the locks of all its paths in one statement and
    inserts the new ones as multi-row INSERTs: 1,000 paths are a handful of
    statements, not 2,000; a path another workspace holds still fails the
    whole request, named."""
    from test_scribe_locks import all_locks
    c = Conn(node.addrs["scribe"])
    info = c.repo_create("locks1000")
    rid, main = info["id"], info["main"]
    ws, other = os.urandom(16), os.urandom(16)
    paths = ["art/%04d.psd" % i for i in range(1000)]
    since = log_end(pg)
    assert c.lock_acquire(rid, ws, main, paths) == 1000
    every = statements_since(pg, since)
    print("a lock request of 1,000 paths: %d statements: %s" % (len(every), kinds(every)[:5]))
    # one batch read, INSERTs of 256, 32, 4 or 1 rows (12 for 1,000), the
    # workspace check
    assert len(of(every, "repos_lock")) <= 16, kinds(every)
    with pytest.raises(ScribeError) as e:
        c.lock_acquire(rid, other, main, ["free.txt", "ART/0500.PSD"])
    assert e.value.code == ERR["lock_held"] and "art/0500.psd" in e.value.message
    assert len(all_locks(c, rid)) == 1000
    since = log_end(pg)
    assert c.lock_release(rid, ws, paths) == 1000
    assert len(of(statements_since(pg, since), "SELECT", "repos_lock")) <= 2
    assert all_locks(c, rid) == []
    c.close()
