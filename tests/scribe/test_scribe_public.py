"""Public reads and mounts through the real cairnd (docs/protocol/scribe.md 16).

get_chunks (30) hands out a chunk only against a witness: a manifest
accepted in the repository (named by an accepted commit's change set, on any
branch, deleted since or not) that lists the chunk.  A staged-only manifest,
a manifest that does not list the chunk, or one the repository never held is
an absent item in the get_objects stream, never an error, on the plaintext
listener too.  repository_mounts (31) answers the [mounts.NAME] declarations
of `.scribe/config.toml` at exactly one branch revision; a submitted config
with more than 64 mounts, a repeated name, a malformed id or pin or a
non-canonical path is invalid_repository_config; `cairn repo mounts` prints
them."""
import os

from conftest import binary, run
from scribe_fixtures import repo, srv  # noqa: F401 (the fixtures)
from scribe_wire import ADD, CHUNK, DELETE, FLAG_STREAM, MODIFY, Conn, chunk_id
from test_scribe_server import Repo, addr, raises

OP_CHUNKS, OP_MOUNTS = 30, 31
CONFIG = ".scribe/config.toml"
RID = "0123456789abcdef0123456789abcdef"
BID = "fedcba9876543210fedcba9876543210"


def chunks_payload(c, repo_id, pairs):
    e = c.enc().raw(repo_id).u32(len(pairs))
    for ch, mf in pairs:
        e.raw(ch).raw(mf)
    return e.bytes()


def get_chunks(c, repo_id, pairs):
    d = c.dec(c.call(OP_CHUNKS, chunks_payload(c, repo_id, pairs)))
    count = d.u32()
    d.end()
    assert c.last_flags & FLAG_STREAM and count == len(pairs)
    items = c.stream_items(count)
    assert [(k, i) for k, i, _ in items] == [(CHUNK, ch) for ch, _ in pairs]
    return [data for _, _, data in items]


def one_file(r, path, data):
    """Uploads one file; returns (its chunk ids, its manifest id)."""
    mid = r.upload({path: data})[path]
    chunks = [chunk_id(data)] if data else []
    return chunks, mid


# ---- get_chunks ---------------------------------------------------------------------------
def test_get_chunks_witnesses(repo):
    r, c = repo, repo.c
    a, ma = one_file(r, "a.txt", b"alpha bytes")
    b, mb = one_file(r, "b.txt", b"beta bytes")
    assert r.submit([(ADD, "a.txt", ma, 0, None), (ADD, "b.txt", mb, 0, None)])["outcome"] == 1
    s, ms = one_file(r, "staged.txt", b"staged only")  # uploaded, never submitted
    nowhere = os.urandom(32)
    got = get_chunks(c, r.id, [
        (a[0], ma),      # valid witness
        (a[0], mb),      # an accepted manifest that does not list the chunk
        (b[0], ma),      # a chunk not in the manifest (held by the repository)
        (s[0], ms),      # a staged-only manifest
        (a[0], nowhere),  # a manifest the repository never held
        (b[0], mb),      # valid, after the refusals: order is the request's
        (a[0], ma),      # the same witness twice
    ])
    assert got == [b"alpha bytes", None, None, None, None, b"beta bytes", b"alpha bytes"]
    # get_objects still serves the staged chunk to this (trusted) caller
    assert c.get_objects(r.id, [(CHUNK, s[0])])[0][2] == b"staged only"
    # once a submit names the staged manifest it is a witness
    assert r.submit([(ADD, "staged.txt", ms, 0, None)])["outcome"] == 1
    assert get_chunks(c, r.id, [(s[0], ms)]) == [b"staged only"]
    # the connection is still in step
    assert c.discover() == bytes.fromhex("0100010000000000")


def test_get_chunks_history_and_branches(repo):
    r, c = repo, repo.c
    old, mold = one_file(r, "f.txt", b"version one")
    assert r.submit([(ADD, "f.txt", mold, 0, None)])["outcome"] == 1
    new, mnew = one_file(r, "f.txt", b"version two")
    assert r.submit([(MODIFY, "f.txt", mnew, 0, None)])["outcome"] == 1
    assert r.submit([(DELETE, "f.txt", None, 0, None)])["outcome"] == 1
    # an older revision's manifest stays accepted after modify and delete
    assert get_chunks(c, r.id, [(old[0], mold), (new[0], mnew)]) == [b"version one",
                                                                      b"version two"]
    # a manifest accepted on another branch only
    feat, op = os.urandom(16), os.urandom(16)
    first, _ = c.branch_mutate(c.branch_create_payload(r.id, r.inc, op, feat, "feature",
                                                       r.main, r.head))
    assert first["outcome"] == 1
    x, mx = one_file(r, "x.txt", b"feature file")
    cid = r.changeset([(ADD, "x.txt", mx, 0, None)])
    o = c.submit(r.id, r.inc, os.urandom(16), feat, r.ws, r.head, cid, "ann", "on feature")
    assert o["outcome"] == 1, o
    assert get_chunks(c, r.id, [(x[0], mx)]) == [b"feature file"]


def test_get_chunks_lz4_and_empty_file(srv):
    with Conn(addr(srv), caps=1) as c:
        r = Repo(c, name="lz")
        big = os.urandom(1000) * 300  # one chunk, compressible
        ch, mid = one_file(r, "big.bin", big)
        _, mempty = one_file(r, "empty", b"")
        assert r.submit([(ADD, "big.bin", mid, 0, None),
                         (ADD, "empty", mempty, 0, None)])["outcome"] == 1
        assert get_chunks(c, r.id, [(ch[0], mid)]) == [big]
        # an empty file's manifest lists no chunk: it witnesses nothing
        assert get_chunks(c, r.id, [(ch[0], mempty)]) == [None]


def test_get_chunks_refusals(repo):
    r, c = repo, repo.c
    pair = (os.urandom(32), os.urandom(32))
    good = chunks_payload(c, r.id, [pair])
    raises("malformed", c.call, OP_CHUNKS, c.enc().raw(r.id).u32(0).bytes())
    raises("malformed", c.call, OP_CHUNKS, c.enc().raw(r.id).u32(1025).raw(b"\0" * 64).bytes())
    raises("malformed", c.call, OP_CHUNKS, good[:-1])
    raises("malformed", c.call, OP_CHUNKS, good + b"\0")
    raises("repository_not_found", c.call, OP_CHUNKS, chunks_payload(c, os.urandom(16), [pair]))
    # 1,024 witnesses is the bound: all absent, in order
    many = [(os.urandom(32), os.urandom(32)) for _ in range(1024)]
    assert get_chunks(c, r.id, many) == [None] * 1024


def test_get_chunks_over_bound_closes(repo):
    c = repo.c
    body = c.enc().raw(repo.id).u32(1025).raw(b"\0" * 64 * 1025).bytes()
    assert len(body) == 65556 + 64
    c.send_frame(OP_CHUNKS, body)
    assert c.closed_by_peer()


# ---- repository_mounts -------------------------------------------------------------------
def mounts_raw(c, repo_id, branch, change):
    return c.call(OP_MOUNTS, c.enc().raw(repo_id).raw(branch).u64(change).bytes())


def mounts(c, repo_id, branch, change):
    d = c.dec(mounts_raw(c, repo_id, branch, change))
    rows = [tuple(d.str16().decode() for _ in range(5)) for _ in range(d.u32())]
    d.end()
    return rows


def mount_toml(rows):
    out = "version = 1\n"
    for name, path, rid, bid, rev in rows:
        out += (f'\n[mounts.{name}]\npath = "{path}"\nrepository = "{rid}"\n'
                f'branch = "{bid}"\nrevision = "{rev}"\n')
    return out


def put_config(r, text, kind=ADD):
    mid = r.upload({CONFIG: text.encode()})[CONFIG]
    return r.submit([(kind, CONFIG, mid, 0, None)])


def test_mounts_at_two_revisions(repo):
    r, c = repo, repo.c
    # no config: an empty list (golden: u32 0)
    assert mounts_raw(c, r.id, r.main, 0) == bytes.fromhex("00000000")
    first = [("engine", "third_party/engine", RID, BID, "42")]
    o1 = put_config(r, mount_toml(first))
    assert o1["outcome"] == 1, o1
    # golden reply (public_fixtures.txt, mounts_resp_one)
    assert mounts_raw(c, r.id, r.main, o1["change"]) == (
        bytes.fromhex("01000000 0600") + b"engine" + bytes.fromhex("1200") +
        b"third_party/engine" + bytes.fromhex("2000") + RID.encode() + bytes.fromhex("2000") +
        BID.encode() + bytes.fromhex("0200") + b"42")
    second = [("zlib", "ext/zlib", BID, RID, "18446744073709551615"),
              ("assets", "art/shared", RID, RID, "0")]
    o2 = put_config(r, mount_toml(second), MODIFY)
    assert o2["outcome"] == 1, o2
    # each revision answers its own declarations, in name order
    assert mounts(c, r.id, r.main, o1["change"]) == first
    assert mounts(c, r.id, r.main, o2["change"]) == sorted(second)
    assert mounts(c, r.id, r.main, 0) == []
    # deleting the config empties the list from then on
    assert r.submit([(DELETE, CONFIG, None, 0, None)])["outcome"] == 1
    assert mounts(c, r.id, r.main, r.head) == []
    assert mounts(c, r.id, r.main, o2["change"]) == sorted(second)
    # a revision outside the branch's lifetime, an unknown branch, a repository
    raises("change_not_found", mounts_raw, c, r.id, r.main, r.head + 1)
    raises("branch_not_found", mounts_raw, c, r.id, os.urandom(16), 0)
    raises("repository_not_found", mounts_raw, c, os.urandom(16), r.main, 0)
    raises("malformed", c.call, OP_MOUNTS, c.enc().raw(r.id).raw(r.main).u32(0).bytes())
    # a trailing byte makes 41 bytes, over the opcode's exact bound of 40: closed unread
    c.send_frame(OP_MOUNTS, c.enc().raw(r.id).raw(r.main).u64(0).u8(0).bytes())
    assert c.closed_by_peer()


def test_mounts_limits_refused_at_submit(repo):
    r, c = repo, repo.c
    rows = [(f"m{i:02d}", f"lib/m{i:02d}", RID, BID, str(i)) for i in range(65)]
    o = put_config(r, mount_toml(rows))
    assert o["outcome"] == 2 and o["code"] == 207, o
    o = put_config(r, mount_toml(rows[:64]))
    assert o["outcome"] == 1, o
    assert mounts(c, r.id, r.main, o["change"]) == rows[:64]
    bad = [
        mount_toml(rows[:1]) + mount_toml(rows[:1])[len("version = 1\n"):],  # a repeated name
        mount_toml([("x", "lib/x", RID.upper(), BID, "1")]),   # an id not lowercase
        mount_toml([("x", "lib/x", RID[:31], BID, "1")]),      # an id of 31 digits
        mount_toml([("x", "lib/x", RID, BID, "01")]),          # a pin with a leading zero
        mount_toml([("x", "lib/x", RID, BID, "18446744073709551616")]),  # past u64
        mount_toml([("x", "lib/x", RID, BID, "-1")]),          # signed
        mount_toml([("x", "lib//x", RID, BID, "1")]),          # a non-canonical path
        mount_toml([("x", "lib/x", RID, BID, "1"), ("y", "lib/x", RID, BID, "2")]),  # same path
        'version = 1\n[mounts.x]\npath = "a"\nrepository = "%s"\nbranch = "%s"\n'
        'revision = 1\n' % (RID, BID),                         # revision an integer
    ]
    for text in bad:
        o = put_config(r, text, MODIFY)
        assert o["outcome"] == 2 and o["code"] == 207, (text, o)
    assert mounts(c, r.id, r.main, r.head) == rows[:64]


def test_repo_mounts_command(srv, tmp_path):
    host, port = addr(srv)
    ep = f"{host}:{port}"
    with Conn(addr(srv)) as c:
        r = Repo(c, name="mnt")
        o1 = put_config(r, mount_toml([("engine", "third_party/engine", RID, BID, "42")]))
        o2 = put_config(r, mount_toml([("engine", "third_party/engine", RID, BID, "43"),
                                       ("docs", "doc/shared", BID, RID, "7")]), MODIFY)
        assert o1["outcome"] == 1 and o2["outcome"] == 1
    ws = str(tmp_path / "ws")
    cli = binary("cairn")
    r0 = run([cli, "repo", "clone", "mnt", ws, "--endpoint", ep], timeout=120)
    assert r0.returncode == 0, r0.stderr
    out = run([cli, "repo", "mounts", "-C", ws, "--endpoint", ep])
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [f"docs\tdoc/shared\t{BID}\t{RID}\t7",
                                       f"engine\tthird_party/engine\t{RID}\t{BID}\t43"]
    out = run([cli, "repo", "mounts", "--change", str(o1["change"]), "-C", ws, "--endpoint", ep])
    assert out.returncode == 0 and out.stdout == f"engine\tthird_party/engine\t{RID}\t{BID}\t42\n"
    out = run([cli, "repo", "mounts", "--change", "0", "-C", ws, "--endpoint", ep])
    assert out.returncode == 0 and out.stdout == "" and "no mounts at change 0" in out.stderr
    out = run([cli, "repo", "mounts", "--change", "99", "-C", ws, "--endpoint", ep])
    assert out.returncode == 3, (out.stdout, out.stderr)  # change_not_found: not found
    out = run([cli, "repo", "mounts", "--change", "x", "-C", ws, "--endpoint", ep])
    assert out.returncode == 2 and "usage" in out.stderr
