"""Verified sync split into key ranges (issue 22; docs/protocol/scribe.md
17.5, "Key-range splits"): the client lists the tree as up to five ranges
(cursor = the bound before, entries up to its own bound), one per
connection, each page proved as before, and merges them in order.  Through
the real cairnd, `cairn repo` and the tampering proxy of
test_repo_verified_sync.py, with small proof pages (CAIRN_PROOF_PAGE=8).

What each test proves: a split sync runs tree_proof on several connections
at once and lands on exactly the files an unsplit sync (CAIRN_PROOF_SPLIT=1)
lands on; a reply of a range other than the first with one node no longer
hashing to its commitment aborts the sync with the workspace byte for byte
as before; a range whose first page leaves out its first entry (the one
right after the boundary: a server dropping a boundary entry) is caught
the same way; the honest sync afterwards succeeds; a bad first reply in
one range while the others have many pages to go cancels them (17.5,
"Early cancel"): the server serves a fraction of an honest sync's pages."""
import os
import struct
import threading

from cairnutil import SCRIBE_ONLY, scribe_ep, seeded, write
from test_repo_verified_sync import OP_TREE_PROOF, Proxy, join_nodes, snapshot, split_nodes
from test_repo_verified_sync_pipelined import files_of, history, repo

SMALL = {"CAIRN_PROOF_PAGE": "8", "CAIRN_WALK_BATCH": "4"}
ALL = ()  # `cairn repo` with its default data connections (4)


def live_at(node):
    """Where a node's entry state byte is, and whether it holds a live entry."""
    plen = struct.unpack_from("<H", node, 1)[0]
    return 3 + plen, node[3 + plen] == 1


class OtherConns:
    """The proxy's rewrite: counts the connections carrying tree_proof
    replies (by the proxy thread reading them) and, with `how`, rewrites the
    first reply seen on a connection other than the first one's (the
    control connection: its probe is the first tree_proof of a sync)."""

    def __init__(self, how=None):
        self.how, self.threads, self.done = how, [], False
        self.lock = threading.Lock()

    def __call__(self, p, stale):
        me = threading.get_ident()
        with self.lock:
            if me not in self.threads:
                self.threads.append(me)
            if not self.how or self.done or me == self.threads[0]:
                return p
            self.done = True
        roots, nodes, tail = split_nodes(p)
        return join_nodes(roots, self.how(nodes), tail)


def flip_last(nodes):
    """One byte of the last live node's manifest flipped: the layout holds,
    only its hash gives it away."""
    i = max(k for k, n in enumerate(nodes) if live_at(n)[1])
    at = live_at(nodes[i])[0] + 1 + 8 + 5  # inside the manifest
    nodes[i] = nodes[i][:at] + bytes([nodes[i][at] ^ 0x01]) + nodes[i][at + 1:]
    return nodes


def drop_first_entry(nodes):
    """The range's first entry (the first live node of its first reply,
    the entry right after the bound its cursor names) left out."""
    i = min(k for k, n in enumerate(nodes) if live_at(n)[1])
    return nodes[:i] + nodes[i + 1:]


def test_split_sync_equals_the_unsplit_one(server_factory, tmp_path):
    s = server_factory(args=SCRIBE_ONLY, wait_for=("scribe",))
    ep = scribe_ep(s)
    a, b = history(ep, tmp_path)
    c = str(tmp_path / "c")
    repo(ep, "clone", "game", c, "--change", "1")
    px = Proxy(s.addrs["scribe"])
    try:
        px.mode = OtherConns()
        r = repo(px.ep, "sync", b, env=SMALL, conns=ALL)
        assert "at change 13" in r.stdout, r.stdout
        # the probe and range 0 on the control connection, the other ranges
        # on data connections, all at once
        assert len(px.mode.threads) >= 3, (px.mode.threads, px.ops)
        assert not px.ops.get(11)  # no unverified tree_page
        px.mode = OtherConns()
        env = dict(SMALL, CAIRN_PROOF_SPLIT="1")
        repo(px.ep, "sync", c, env=env, conns=ALL)
        assert len(px.mode.threads) == 1, px.mode.threads  # unsplit: one connection
    finally:
        px.close()
    assert files_of(b) == files_of(a) == files_of(c)
    # a clone (nothing on disk yet) is split the same way
    d = str(tmp_path / "d")
    repo(ep, "clone", "game", d, env=SMALL, conns=ALL)
    assert files_of(d) == files_of(a)


def test_a_bad_reply_in_one_range_aborts_with_nothing_applied(server_factory, tmp_path):
    s = server_factory(args=SCRIBE_ONLY, wait_for=("scribe",))
    ep = scribe_ep(s)
    a, b = history(ep, tmp_path)
    before = snapshot(b)
    px = Proxy(s.addrs["scribe"])
    try:
        for how in (flip_last, drop_first_entry):
            for order in ("pipelined", "0"):
                env = dict(SMALL)
                if order == "0":
                    env["CAIRN_PROOF_PIPELINE"] = "0"
                px.mode = OtherConns(how)
                r = repo(px.ep, "sync", b, check=False, env=env, conns=ALL)
                assert px.mode.done, (how.__name__, order)  # a later range was rewritten
                assert r.returncode in (5, 8), (how.__name__, order, r.returncode, r.stderr)
                assert "failed its proof" in r.stderr, r.stderr
                assert "nothing was applied" in r.stderr, r.stderr
                assert snapshot(b) == before, (how.__name__, order)
        px.mode = None
        repo(px.ep, "sync", b, env=SMALL, conns=ALL)
    finally:
        px.close()
    assert files_of(b) == files_of(a)


def big(ep, tmp_path):
    """Repository big: 600 files at change 1 (workspaces b and c there), one
    edited at change 2 from a; returns (a, b, c)."""
    files = {"d%d/f%03d.txt" % (i % 8, i): b"v1 %d\n" % i for i in range(600)}
    a, b, c = seeded(ep, tmp_path, "big", files, "v1", more=("b", "c"))
    write(os.path.join(a, "d0/f000.txt"), b"v2\n")
    repo(ep, "submit", a, "-m", "v2")
    return a, b, c


def test_a_bad_reply_cancels_the_other_ranges_early(server_factory, tmp_path):
    s = server_factory(args=SCRIBE_ONLY, wait_for=("scribe",))
    ep = scribe_ep(s)
    a, b, c = big(ep, tmp_path)
    before = snapshot(b)
    env = {"CAIRN_PROOF_PAGE": "4"}  # 600 live entries: 150 pages, ~30 a range
    px = Proxy(s.addrs["scribe"])
    try:
        for order in ("pipelined", "0"):
            if order == "0":
                env["CAIRN_PROOF_PIPELINE"] = "0"
            px.mode, px.proofs = OtherConns(flip_last), 0
            r = repo(px.ep, "sync", b, check=False, env=env, conns=ALL)
            bad = px.proofs
            assert px.mode.done and r.returncode in (5, 8), (order, r.returncode, r.stderr)
            assert "failed its proof" in r.stderr and "nothing was applied" in r.stderr, r.stderr
            assert snapshot(b) == before, order
            # the same sync, honest, on a workspace at the same change
            px.mode, px.proofs = OtherConns(), 0
            repo(px.ep, "sync", c, env=env, conns=ALL)
            honest = px.proofs
            assert len(px.mode.threads) >= 3, px.mode.threads  # it was split
            # without the cancel every range runs to its end (bad ~ honest);
            # with it each stops within about a page of the bad reply
            assert bad * 3 < honest, (order, bad, honest)
            repo(ep, "sync", c, "--change", "1")  # back, for the next round
        px.mode = None
        repo(px.ep, "sync", b, env=env, conns=ALL)  # the connections still serve
    finally:
        px.close()
    assert files_of(b) == files_of(a)


class CountLive(OtherConns):
    """OtherConns that also counts the live entries every tree_proof reply
    carries (each page's entries and its lookahead witness, the probe's)."""

    def __init__(self):
        super().__init__()
        self.live = 0

    def __call__(self, p, stale):
        super().__call__(p, stale)
        n = sum(1 for node in split_nodes(p)[1] if live_at(node)[1])
        with self.lock:
            self.live += n
        return p


def test_a_range_lists_hardly_past_its_bound(server_factory, tmp_path):
    """Each range's pages ask for as many entries as the probe counted up to
    its bound (plus the first past it), so its last page stops at the bound
    instead of listing up to a page beyond it: a split sync moves about the
    entries an unsplit one does.  Fails with the count hints off (each of
    the first four ranges then overshoots by up to a 64-entry page)."""
    s = server_factory(args=SCRIBE_ONLY, wait_for=("scribe",))
    ep = scribe_ep(s)
    a, b, c = big(ep, tmp_path)
    env = {"CAIRN_PROOF_PAGE": "64"}
    px = Proxy(s.addrs["scribe"])
    try:
        px.mode = CountLive()
        repo(px.ep, "sync", b, env=dict(env, CAIRN_PROOF_SPLIT="1"), conns=ALL)
        unsplit = px.mode.live
        px.mode = CountLive()
        repo(px.ep, "sync", c, env=env, conns=ALL)
        split, ranges = px.mode.live, len(px.mode.threads)
    finally:
        px.close()
    assert ranges >= 3, ranges
    # per range at most its own witness and the entry past its bound, the
    # probe's two; an unhinted split overshoots by about 32 entries a range
    assert unsplit >= 600 and split <= unsplit + 3 * ranges + 2, (split, unsplit, ranges)
    assert files_of(b) == files_of(c) == files_of(a)


def test_a_sparse_sync_is_split_too(server_factory, tmp_path):
    """A workspace of one prefix (--path) is listed in key ranges as a whole
    tree is: the probe's path goes down to the prefix, the bounds fall
    inside it, and the files are those of an unsplit listing."""
    s = server_factory(args=SCRIBE_ONLY, wait_for=("scribe",))
    ep = scribe_ep(s)
    files = {"d%d/f%03d.txt" % (i % 4, i): b"v1 %d\n" % i for i in range(400)}
    seeded(ep, tmp_path, "sparse", files, "v1", more=())
    px = Proxy(s.addrs["scribe"])
    try:
        got = {}
        for split in ("5", "1"):
            ws = str(tmp_path / ("s" + split))
            px.mode = OtherConns()
            repo(px.ep, "clone", "sparse", ws, "--path", "d2/",
                 env=dict(SMALL, CAIRN_PROOF_SPLIT=split), conns=ALL)
            got[split] = (files_of(ws), len(px.mode.threads))
    finally:
        px.close()
    assert got["5"][1] >= 3 and got["1"][1] == 1, got
    assert got["5"][0] == got["1"][0]
    assert sorted(got["5"][0]) == sorted(p for p in files if p.startswith("d2/")), got["5"][0]
