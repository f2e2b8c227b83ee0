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
a missing reference."""
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
