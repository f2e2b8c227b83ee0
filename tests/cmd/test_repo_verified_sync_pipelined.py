"""Pipelined verified sync (issue 22; docs/protocol/scribe.md 17.5): the
client sends the next tree_proof request (the page's next fragment or the
next page's first) as soon as a reply's shape pass named it, and hashes and
hands out that reply while the server answers.  Through the real cairnd,
`cairn repo` and the tampering proxy of test_repo_verified_sync.py, with
small proof pages (CAIRN_PROOF_PAGE=8) and commit batches
(CAIRN_WALK_BATCH=4) so that a few dozen files and changes cross many of
both.

What each test proves: a sync across many pages and batches lands on
exactly the files of the workspace that submitted them; a proof reply in the
middle of the listing whose one node no longer hashes to its commitment
(layout intact, so only the check pass can see it) aborts the sync naming
the page whose proof failed, with the workspace byte for byte as before, after the
client had already sent the next page's request (the proxy sees that reply
too: pipelined), and the unpipelined order (CAIRN_PROOF_PIPELINE=0) sends
none; the honest sync afterwards succeeds."""
import os
import struct

from cairnutil import SCRIBE_ONLY, scribe_ep, seeded, tree, write
from cairnutil import repo as cairn_repo
from test_repo_verified_sync import OP_TREE_PROOF, Proxy, join_nodes, snapshot, split_nodes

SMALL = {"CAIRN_PROOF_PAGE": "8", "CAIRN_WALK_BATCH": "4"}
OP_GET, OP_LOG = 7, 15


def repo(ep, *args, check=True, env=None, conns=("--conns", "0")):
    """`cairn repo` over one connection (--conns 0, unless conns says
    otherwise), with env added."""
    return cairn_repo(ep, *args, check=check, env=env, extra=conns)


def files_of(ws):
    return tree(ws)  # every file but .cairn


class FlipAt:
    """The proxy's rewrite: the at-th tree_proof reply (0-based) gets one
    byte of its last node's manifest flipped.  That node is a live leaf (the
    page's lookahead witness), so the reply still parses and walks; only its
    hash gives it away."""

    def __init__(self, at):
        self.at, self.seen = at, 0

    def __call__(self, p, stale):
        self.seen += 1
        if self.seen != self.at + 1:
            return p
        roots, nodes, tail = split_nodes(p)
        last = nodes[-1]
        plen = struct.unpack_from("<H", last, 1)[0]
        assert last[3 + plen] == 1, "the last node holds a live entry"
        at = 3 + plen + 1 + 8 + 5  # inside the manifest, after u8 state and u64 change
        nodes[-1] = last[:at] + bytes([last[at] ^ 0x01]) + last[at + 1:]
        return join_nodes(roots, nodes, tail)


def history(ep, tmp_path):
    """game: 60 files at change 1 (workspace b cloned there), then 12 changes
    from a that edit, add and delete; returns (a, b)."""
    files = {"d%d/f%02d.txt" % (i % 4, i): b"v1 %d\n" % i for i in range(60)}
    a, b = seeded(ep, tmp_path, "game", files, "v1", more=("b",))
    for k in range(12):
        write(os.path.join(a, "d%d/f%02d.txt" % (k % 4, k * 4 % 60)), b"v%d\n" % (k + 2))
        write(os.path.join(a, "e/n%02d.txt" % k), b"new %d\n" % k)
        if k % 3 == 0:
            os.unlink(os.path.join(a, "d%d/f%02d.txt" % ((k + 1) % 4, 41 + k)))
        repo(ep, "submit", a, "-m", "c%d" % (k + 2))
    return a, b


def test_pipelined_sync_across_pages_and_batches_is_exact(server_factory, tmp_path):
    s = server_factory(args=SCRIBE_ONLY, wait_for=("scribe",))
    ep = scribe_ep(s)
    a, b = history(ep, tmp_path)
    px = Proxy(s.addrs["scribe"])
    try:
        # data connections allowed: the walk's next batch comes over one
        # while the walk hashes the current one
        r = repo(px.ep, "sync", b, env=SMALL, conns=())
        assert "at change 13" in r.stdout, r.stdout
        # 64 live files in pages of 8: at least 8 proofs, each answered
        assert px.ops.get(OP_TREE_PROOF, 0) >= 8, px.ops
        assert not px.ops.get(11)  # no unverified tree_page
        # 13 commits from the head down to the anchor in batches of 4: four
        # log pages besides the head's, four get_objects for the commits
        assert px.ops.get(OP_LOG, 0) >= 5 and px.ops.get(OP_GET, 0) >= 4, px.ops
    finally:
        px.close()
    assert files_of(b) == files_of(a)
    c = str(tmp_path / "c")
    repo(ep, "clone", "game", c)  # default pages: the same files
    assert files_of(c) == files_of(a)


def test_a_bad_reply_mid_pipeline_aborts_with_nothing_applied(server_factory, tmp_path):
    s = server_factory(args=SCRIBE_ONLY, wait_for=("scribe",))
    ep = scribe_ep(s)
    a, b = history(ep, tmp_path)
    before = snapshot(b)
    sixteenth = sorted(files_of(a))[15]
    px = Proxy(s.addrs["scribe"])
    try:
        for order, answered in (("pipelined", 4), ("0", 3)):
            env = dict(SMALL)
            if order == "0":
                env["CAIRN_PROOF_PIPELINE"] = "0"
            px.mode, px.ops = FlipAt(2), {}
            r = repo(px.ep, "sync", b, check=False, env=env)
            assert r.returncode in (5, 8), (order, r.returncode, r.stdout, r.stderr)
            assert "failed its proof" in r.stderr and "nothing was applied" in r.stderr, r.stderr
            # named: the third page of 8 starts after the 16th path in order
            assert "(the page after '%s')" % sixteenth in r.stderr, r.stderr
            assert snapshot(b) == before, order
            # the third reply is the bad one; pipelined, the fourth page's
            # request was already out (its reply is read and dropped)
            assert px.ops.get(OP_TREE_PROOF) == answered, (order, px.ops)
        px.mode = None
        repo(px.ep, "sync", b, env=SMALL)
    finally:
        px.close()
    assert files_of(b) == files_of(a)
