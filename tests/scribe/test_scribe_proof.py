"""tree_proof (opcode 43, docs/protocol/scribe.md 17) through the real cairnd:
every selector verified by libcairn's verifier (tests/scribe/scribe_proof_driver,
cairn/tree_verify.h) against the roots tree_page reports, the request rules
refused as malformed, a page over many fragments, and an adversary between
server and verifier that drops, replays, reorders, truncates, appends or flips
bits in fragments and roots: verification fails every time and yields no
value.  The wire client is tests/scribe/scribe_wire.py.

The issue's tree runs in `make test` (about 25 s on the ASan build of a
loaded two-core machine): 100,000 paths shaped as a binary trie, so that
every 4,096 page and its witness visit more than the 8,192 nodes of one
fragment, and one 8,192-byte path."""
import os
import struct
import subprocess

from conftest import binary
from scribe_fixtures import repo, srv  # noqa: F401 (fixtures)
from scribe_wire import ADD, CHANGESET, DELETE, MODIFY, OP, changeset_id
from test_scribe_server import raises

LIVE, CHANGED, EXACT, PATHS = 0, 1, 2, 3


# ---- layouts (17.2, codec 1) ---------------------------------------------------------
def page_req(r, change, prefix="", limit=100, after=None):
    p = prefix.encode()
    b = r.id + r.main + struct.pack("<QH", change, len(p)) + p + struct.pack("<I", limit)
    if after is None:
        return b + b"\x00"
    a = after.encode()
    return b + b"\x01" + struct.pack("<H", len(a)) + a


def proof_req(page, sel, lower=0, paths=(), edge=None, remaining=0):
    b = struct.pack("<I", len(page)) + page + bytes([sel])
    if sel == CHANGED:
        b += struct.pack("<Q", lower)
    b += struct.pack("<I", len(paths))
    for p in paths:
        b += struct.pack("<H", len(p)) + p
    if edge is None:
        return b + b"\x00"
    return b + b"\x01" + struct.pack("<I", len(edge)) + edge + struct.pack("<I", remaining)


def nodes_of(reply):
    """(roots, [node bytes]) of a reply."""
    n = struct.unpack_from("<I", reply, 64)[0]
    at, out = 68, []
    for _ in range(n):
        ln = struct.unpack_from("<I", reply, at)[0]
        out.append(reply[at + 4:at + 4 + ln])
        at += 4 + ln
    assert at == len(reply)
    return reply[:64], out


def reply_of(roots, nodes):
    b = roots + struct.pack("<I", len(nodes))
    for n in nodes:
        b += struct.pack("<I", len(n)) + n
    return b


# ---- the verifier ----------------------------------------------------------------------
def verify(c, page, sel, roots, lower=0, paths=(), tamper=None):
    """Runs the driver: each request goes to the server, each reply through
    tamper(i, reply, honest replies so far) (None: a transport failure).
    Returns ((values, more, fragments) or None for a failed proof, replies)."""
    args = [binary("tests/scribe/scribe_proof_driver"), page.hex(), str(sel), str(lower),
            roots[0].hex(), roots[1].hex()] + [p.hex() for p in paths]
    p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    replies, i = [], 0
    try:
        while True:
            line = p.stdout.readline().strip()
            if line.startswith("REQ "):
                body = c.call(OP["tree_proof"], bytes.fromhex(line[4:]))
                replies.append(body)
                if tamper:
                    body = tamper(i, body, replies)
                i += 1
                p.stdin.write("ERR\n" if body is None else "REP " + body.hex() + "\n")
                p.stdin.flush()
                continue
            if line.startswith("FAIL"):
                rest = p.stdout.read()
                assert not rest.strip(), rest  # no value after a failure
                return None, replies
            assert line.startswith("OK "), line
            _, count, more, frags = line.split()
            vals = []
            for _ in range(int(count)):
                _, state, change, path = p.stdout.readline().split()
                vals.append((bytes.fromhex(path).decode(), int(state), int(change)))
            return (vals, more == "1", int(frags)), replies
    finally:
        p.stdin.close()
        assert p.wait(timeout=60) == 0


def live_page(c, r, change, prefix="", limit=100, after=None):
    rows, more, content, revision = c.tree_page(r.id, r.main, change, prefix, limit, after)
    return [x["path"] for x in rows], more, (content, revision)


def small_tree(r):
    m = r.upload({"a": b"one", "b": b"two"})
    r.submit([(ADD, p, m["a"], 0, None) for p in
              ["a.txt", "art/a.png", "art/b.png", "art/sub/c", "artx", "b", "bb/x",
               "d/1", "d/2", "d/3", "é/ü"]])
    r.submit([(DELETE, "art/a.png", None, 0, None), (MODIFY, "art/b.png", m["b"], 0, None),
              (DELETE, "b", None, 0, None)])


# ---- every selector --------------------------------------------------------------------
def test_every_selector(repo):
    r, c = repo, repo.c
    small_tree(r)
    for prefix, limit, after in [("", 100, None), ("", 3, None), ("art", 100, None),
                                 ("d", 1, "d/1"), ("nothing", 5, None)]:
        paths, more, roots = live_page(c, r, 2, prefix, limit, after)
        got, _ = verify(c, page_req(r, 2, prefix, limit, after), LIVE, roots)
        assert got is not None
        assert [v[0] for v in got[0]] == paths and got[1] == more
    _, _, roots = live_page(c, r, 2)
    got, _ = verify(c, page_req(r, 2, "", 100), CHANGED, roots, lower=1)
    assert got[0] == [("art/a.png", 2, 2), ("art/b.png", 1, 2), ("b", 2, 2)] and not got[1]
    got, _ = verify(c, page_req(r, 2, "art/a.png", 1), EXACT, roots)
    assert got[0] == [("art/a.png", 2, 2)]
    got, _ = verify(c, page_req(r, 2, "art/zz", 1), EXACT, roots)
    assert got[0] == []
    wanted = [b"a.txt", b"art/b", b"b", "é/ü".encode()]
    got, _ = verify(c, page_req(r, 2, "", len(wanted)), PATHS, roots, paths=wanted)
    assert got[0] == [("a.txt", 1, 1), ("b", 2, 2), ("é/ü", 1, 1)]
    # an older snapshot against its own roots
    paths, more, roots1 = live_page(c, r, 1)
    got, _ = verify(c, page_req(r, 1), LIVE, roots1)
    assert [v[0] for v in got[0]] == paths
    # and against the newer snapshot's roots: refused
    got, _ = verify(c, page_req(r, 1), LIVE, roots)
    assert got is None


def test_empty_and_all_deleted(repo):
    r, c = repo, repo.c
    _, _, roots0 = live_page(c, r, 0)
    got, replies = verify(c, page_req(r, 0), LIVE, roots0)
    assert got[0] == [] and not got[1] and len(nodes_of(replies[0])[1]) == 1
    m = r.upload({"a": b"x"})["a"]
    r.submit([(ADD, "p/q", m, 0, None), (ADD, "r", m, 0, None)])
    r.submit([(DELETE, "p/q", None, 0, None), (DELETE, "r", None, 0, None)])
    _, _, roots = live_page(c, r, 2)
    assert roots[0] == roots0[0]  # nothing live: the empty content root
    got, replies = verify(c, page_req(r, 2), LIVE, roots)
    assert got[0] == [] and len(nodes_of(replies[0])[1]) == 1  # the root alone
    got, _ = verify(c, page_req(r, 2), CHANGED, roots, lower=1)
    assert [v[0] for v in got[0]] == ["p/q", "r"]


# ---- refusals ------------------------------------------------------------------------------
def test_request_rules(repo):
    r, c = repo, repo.c
    small_tree(r)
    pg = page_req(r, 2)
    ok = proof_req(pg, LIVE)
    c.call(OP["tree_proof"], ok)
    bad = [
        ok + b"\x00",                                    # trailing byte
        ok[:-1],                                         # truncated
        proof_req(pg, 4),                                # unknown selector
        proof_req(pg, LIVE, paths=[b"a.txt"]),           # paths on a range
        proof_req(page_req(r, 2, "", 1), EXACT),         # exact without a prefix
        proof_req(page_req(r, 2, "a.txt", 2), EXACT),    # exact, limit 2
        proof_req(page_req(r, 2, "", 2), PATHS, paths=[b"b", b"a.txt"]),  # unsorted
        proof_req(page_req(r, 2, "", 2), PATHS, paths=[b"b", b"b"]),       # repeated
        proof_req(page_req(r, 2, "", 3), PATHS, paths=[b"a.txt", b"b"]),   # limit != count
        proof_req(page_req(r, 2, "", 1), PATHS, paths=[b"/a"]),            # not canonical
        proof_req(pg, LIVE, edge=b"a", remaining=0),     # remaining 0
        proof_req(pg, LIVE, edge=b"a", remaining=102),   # past limit + 1
        proof_req(pg, LIVE, edge=b"", remaining=1),      # empty edge
        proof_req(pg, LIVE, edge=b"a" * 8193, remaining=1),  # edge over 8,192
        proof_req(pg, LIVE, edge=b"zz", remaining=1),    # names no node
        struct.pack("<I", 4) + b"\x00" * 4 + bytes([0]) + b"\x00" * 5,  # not a tree_page
        ok[:-1] + b"\x00" * 4 + struct.pack("<I", 4097) + b"\x00",  # count over 4,096
    ]
    for b in bad:
        raises("malformed", c.call, OP["tree_proof"], b)
    # the same rules in the codec's count: more than 4,096 paths
    many = [b"p%05d" % i for i in range(4097)]
    raises("malformed", c.call, OP["tree_proof"],
           proof_req(page_req(r, 2, "", 4097), PATHS, paths=many))
    # an absent change
    raises("change_not_found", c.call, OP["tree_proof"], proof_req(page_req(r, 9), LIVE))
    assert c.call(OP["tree_proof"], ok)[:64] == b"".join(live_page(c, r, 2)[2])


# ---- many fragments, and the adversary -------------------------------------------------------
def add_tree(r, paths, per=20000):
    """Submits adding every path, per paths a change set (changes 1, 2, ...).
    The encoding is joined once (changeset_encode's += is quadratic)."""
    m = r.upload({"f": b"the file"})["f"]
    paths = sorted(p.encode() for p in paths)
    for at in range(0, len(paths), per):
        part = paths[at:at + per]
        enc = b"".join([struct.pack("<BI", 1, len(part))] +
                       [struct.pack("<BH", ADD, len(p)) + p + m + b"\x00" for p in part])
        cid = changeset_id(enc)
        r.c.put_objects(r.id, [(CHANGESET, cid, enc)])
        o = r.c.submit(r.id, r.inc, os.urandom(16), r.main, r.ws, r.head, cid, "ann", "tree")
        assert o["outcome"] == 1, o
        r.head = o["change"]


def binary_paths(n):
    """n paths "b/" + 13 binary digits: below "b/0" a full binary trie of
    4,096 leaves, so a 4,096 page and its witness visit more than 8,192
    nodes and need two fragments, with little data."""
    return ["b/" + format(i, "013b") for i in range(n)]


def flip(b, at):
    return b[:at] + bytes([b[at] ^ 0x20]) + b[at + 1:]


def attacks():
    """(name, tamper) pairs; each changes at least one reply of a proof of
    several fragments."""
    def node_edit(fn):
        def t(i, body, replies):
            roots, nodes = nodes_of(body)
            return reply_of(roots, fn(i, nodes))
        return t
    return [
        ("drop a node", node_edit(lambda i, n: n[1:] if i == 1 else n)),
        ("duplicate a node", node_edit(lambda i, n: [n[0]] + n if i == 1 else n)),
        ("reorder nodes", node_edit(lambda i, n: [n[1], n[0]] + n[2:] if i == 0 else n)),
        ("truncate a fragment", lambda i, b, rs: b[:len(b) // 2] if i == 1 else b),
        ("append a node", node_edit(lambda i, n: n + [n[-1]] if i == 0 else n)),
        ("append after the end", node_edit(lambda i, n: n + [n[0]])),
        ("flip a node bit", lambda i, b, rs: flip(b, len(b) - 100) if i == 1 else b),
        ("flip a content root bit", lambda i, b, rs: flip(b, 3) if i == 1 else b),
        ("flip a revision root bit", lambda i, b, rs: flip(b, 40) if i == 0 else b),
        ("empty fragment", node_edit(lambda i, n: [] if i == 1 else n)),
        ("replay the previous fragment", lambda i, b, rs: rs[0] if i == 1 else b),
        ("omit a fragment", None),  # answered from an honest run: see below
        ("transport failure", lambda i, b, rs: None if i == 1 else b),
    ]


def test_many_fragments_and_the_adversary(repo):
    r, c = repo, repo.c
    c.sock.settimeout(120)
    # a binary trie: a 4,096 page visits more than 8,192 nodes (the node
    # budget); and one 8,192-byte path
    add_tree(r, ["a"] + binary_paths(4200) + ["zz/" + "y" * 8189])
    paths, more, roots = live_page(c, r, 1, limit=4096)
    assert len(paths) == 4096 and more
    page = page_req(r, 1, limit=4096)
    got, honest = verify(c, page, LIVE, roots)
    assert [v[0] for v in got[0]] == paths and got[1]
    assert got[2] >= 2 and len(honest) == got[2]
    for h in honest:
        ns = nodes_of(h)[1]
        assert len(ns) <= 8192 and sum(map(len, ns)) <= 8 << 20
    for name, tamper in attacks():
        if tamper is None:  # answer request i with the honest fragment i + 1
            def tamper(i, b, rs):
                return honest[i + 1] if i + 1 < len(honest) else b
        res, _ = verify(c, page, LIVE, roots, tamper=tamper)
        assert res is None, name
    # a fragment cut at a node boundary is a valid shorter fragment (there
    # is no completion flag to forge): the verifier asks for the rest itself
    # and the page is the same
    cut = verify(c, page, LIVE, roots,
                 tamper=lambda i, b, rs: reply_of(nodes_of(b)[0], nodes_of(b)[1][:-1])
                 if i == 0 else b)[0]
    assert cut[0] == got[0] and cut[1] == got[1] and cut[2] >= got[2]
    # the next page, from the cursor: the rest of the tree, the long path last
    last, more, _ = live_page(c, r, 1, limit=4096, after=paths[-1])
    got, _ = verify(c, page_req(r, 1, limit=4096, after=paths[-1]), LIVE, roots)
    assert [v[0] for v in got[0]] == last and not got[1] and last[-1] == "zz/" + "y" * 8189


def test_issue_tree_100000_paths(repo):
    """The issue's tree: 100,000 paths (a binary trie below "b/", so every
    4,096 page and its witness need more than one fragment) and one
    8,192-byte path, every page at limit 4,096 proved and equal to tree_page."""
    r, c = repo, repo.c
    c.sock.settimeout(600)
    long_path = "zz/" + "y" * 8189
    add_tree(r, ["b/" + format(i, "017b") for i in range(100000 - 1)] + [long_path])
    head = r.head
    _, _, roots = live_page(c, r, head, limit=4096)
    cursor, pages, fragments = None, 0, 0
    while True:
        got, replies = verify(c, page_req(r, head, limit=4096, after=cursor), LIVE, roots)
        want, more, _ = live_page(c, r, head, limit=4096, after=cursor)
        assert [v[0] for v in got[0]] == want and got[1] == more
        pages += 1
        fragments += got[2]
        if more:
            assert got[2] >= 2  # page and witness span fragments
        else:
            break
        cursor = want[-1]
    assert pages == 100000 // 4096 + 1 and fragments > 2 * (pages - 1)
    assert got[0][-1][0] == long_path
