"""Verified sync (docs/workspace.md "Verified sync") through the real cairnd
and `cairn repo`: first contact trusts the head and says so; the history
anchor is kept in the workspace state; a data directory rolled back to an
older copy (same incarnation) and a history forked at the same change are
refused with exit 9 until `cairn repo anchor reset`; and a TCP proxy that
tampers with tree_proof (43) replies or commit objects -- bits flipped in nodes and roots,
nodes dropped, duplicated, reordered, surplus, truncated, trailing bytes,
empty fragments, a stale reply replayed, the connection cut mid-reply --
makes every sync fail with nothing applied, while the same proxy left
alone lets it through."""
import os
import shutil
import struct

from cairnutil import SCRIBE_ONLY, Relay, recv_exact, scribe_ep, seeded, shut, tree, write
from cairnutil import repo as cairn_repo

OP_TREE_PROOF = 43
STREAMED = (7, 30)  # get_objects, get_chunks: object data follows the payload


def repo(ep, *args, check=True):
    """`cairn repo` over one connection (--conns 0)."""
    return cairn_repo(ep, *args, check=check, extra=("--conns", "0"))


def snapshot(d):
    """Every file under d, .cairn/state included, as bytes."""
    return tree(d, skip=())


def anchors(ws):
    with open(os.path.join(ws, ".cairn", "state")) as f:
        return [line.split() for line in f if line.startswith("anchor ")]


# ---- the tampering proxy ---------------------------------------------------------------
def split_nodes(p):
    count = struct.unpack_from("<I", p, 64)[0]
    nodes, at = [], 68
    for _ in range(count):
        n = struct.unpack_from("<I", p, at)[0]
        nodes.append(p[at + 4:at + 4 + n])
        at += 4 + n
    return p[:64], nodes, p[at:]


def join_nodes(roots, nodes, tail=b""):
    return roots + struct.pack("<I", len(nodes)) + b"".join(
        struct.pack("<I", len(n)) + n for n in nodes) + tail


def flip(b, at):
    return b[:at] + bytes([b[at] ^ 0x10]) + b[at + 1:]


def tamper(mode, p, stale):
    if callable(mode):  # a test's own rewrite (test_repo_verified_sync_pipelined.py)
        return mode(p, stale)
    roots, nodes, tail = split_nodes(p)
    if mode == "flip_node":
        i = len(nodes) // 2
        nodes[i] = flip(nodes[i], len(nodes[i]) // 2)
        return join_nodes(roots, nodes, tail)
    if mode == "flip_content_root":
        return flip(p, 5)
    if mode == "flip_revision_root":
        return flip(p, 40)
    if mode == "drop":
        return join_nodes(roots, nodes[:1] + nodes[2:], tail)
    if mode == "duplicate":
        return join_nodes(roots, nodes[:1] + nodes[:1] + nodes[1:], tail)
    if mode == "reorder":
        return join_nodes(roots, nodes[:1] + [nodes[2], nodes[1]] + nodes[3:], tail)
    if mode == "surplus":
        return join_nodes(roots, nodes + [nodes[-1]], tail)
    if mode == "truncate":
        return p[:-7]
    if mode == "trailing":
        return p + b"\0\0\0\0\0"
    if mode == "empty":
        return join_nodes(roots, [], tail)
    if mode == "stale":
        return stale
    if mode == "flip_commit":
        return p  # the commit object is altered instead (Proxy._down)
    raise AssertionError(mode)


class Proxy(Relay):
    """Between `cairn` and cairnd: forwards bytes, parses the server's frames
    (SCR1 header, payload, and for get_objects/get_chunks their object
    stream, codec 1 without compression) and rewrites each tree_proof reply
    as `mode` says."""

    def __init__(self, upstream):
        self.mode = None
        self.tampered = 0
        self.proofs = 0
        self.recorded = None  # the first untampered tree_proof reply
        self.ops = {}  # opcode -> replies seen
        super().__init__(upstream)

    def _down(self, src, dst):
        try:
            while True:
                h = recv_exact(src, 24)
                op, flags = struct.unpack_from("<HH", h, 4)
                n = struct.unpack_from("<I", h, 16)[0]
                p = recv_exact(src, n)
                self.ops[op] = self.ops.get(op, 0) + 1
                if op == OP_TREE_PROOF and not flags & 2:
                    self.proofs += 1
                    if self.recorded is None and self.mode is None:
                        self.recorded = p
                    if self.mode == "cut":
                        self.tampered += 1
                        dst.sendall(h + p[:n // 2])
                        break
                    if self.mode:
                        p = tamper(self.mode, p, self.recorded)
                        self.tampered += 1
                        h = h[:16] + struct.pack("<I", len(p)) + h[20:]
                dst.sendall(h + p)
                if op in STREAMED and flags & 1 and not flags & 2:
                    for _ in range(struct.unpack_from("<I", p, 0)[0]):
                        item = recv_exact(src, 34)
                        dst.sendall(item)
                        if item[33]:
                            ln = recv_exact(src, 8)
                            body = recv_exact(src, struct.unpack("<Q", ln)[0])
                            if self.mode == "flip_commit" and item[0] == 4:
                                self.tampered += 1
                                body = flip(body, len(body) - 40)  # inside the content root
                            dst.sendall(ln + body)
        except (EOFError, OSError):
            pass
        shut(src, dst)


# ---- tests ------------------------------------------------------------------------------
def test_first_contact_anchor_and_submit(server_factory, tmp_path):
    s = server_factory(args=SCRIBE_ONLY, wait_for=("scribe",))
    ep = scribe_ep(s)
    repo(ep, "create", "game")
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    r = repo(ep, "clone", "game", a)
    assert "first contact" in r.stderr and "change 0" in r.stderr
    assert anchors(a) == []  # an empty branch has no commit to anchor
    write(os.path.join(a, "x/one.txt"), b"one\n")
    repo(ep, "submit", a, "-m", "one")
    r = repo(ep, "clone", "game", b)
    assert "first contact" in r.stderr
    (an,) = anchors(b)
    assert an[2] == "1" and len(an[3]) == 64
    # a's submit moved it to change 1 without a sync; a has no anchor yet (its
    # branch was empty at clone), so its next sync is first contact, said once
    r = repo(ep, "sync", a)
    assert "first contact" in r.stderr and "up to date at change 1" in r.stdout
    r = repo(ep, "sync", a)
    assert "first contact" not in r.stderr and r.stderr == ""
    # a later head reaches the anchor through its parents: no message, anchor moves
    write(os.path.join(a, "x/two.txt"), b"two\n")
    repo(ep, "submit", a, "-m", "two")
    r = repo(ep, "sync", b)
    assert r.stderr == "" and "at change 2" in r.stdout
    assert anchors(b)[0][2] == "2"
    assert open(os.path.join(b, "x/two.txt"), "rb").read() == b"two\n"
    # an older change of the same history: proved against its own commit's roots,
    # reached through the anchor; the anchor stays at the newest head verified
    r = repo(ep, "sync", b, "--change", "1")
    assert r.stderr == "" and "at change 1" in r.stdout
    assert not os.path.exists(os.path.join(b, "x/two.txt")) and anchors(b)[0][2] == "2"
    r = repo(ep, "sync", b, "--change", "7", check=False)
    assert r.returncode == 3, (r.stdout, r.stderr)  # newer than the head


def restart(s, data, backup=None, save=None):
    s.stop()
    if save:
        shutil.copytree(data, save)
    if backup:
        shutil.rmtree(data)
        shutil.copytree(backup, data)
    s.start(wait_for=("scribe",))
    return scribe_ep(s)


def test_rollback_refused_until_anchor_reset(server_factory, tmp_path):
    data = tmp_path / "data"
    s = server_factory(args=SCRIBE_ONLY, data=data, wait_for=("scribe",))
    ep = scribe_ep(s)
    (a,) = seeded(ep, tmp_path, "game", {"f.txt": b"v1\n"}, "v1", more=())
    b = str(tmp_path / "b")
    ep = restart(s, data, save=tmp_path / "backup")  # the data dir at change 1
    write(os.path.join(a, "f.txt"), b"v2\n")
    write(os.path.join(a, "g.txt"), b"new\n")
    repo(ep, "submit", a, "-m", "v2")
    repo(ep, "clone", "game", b)
    assert anchors(b)[0][2] == "2"
    before = snapshot(b)

    # the whole data directory goes back to change 1 (same incarnation)
    ep = restart(s, data, backup=tmp_path / "backup")
    r = repo(ep, "sync", b, check=False)
    assert r.returncode == 9, (r.stdout, r.stderr)
    assert "rollback or restore" in r.stderr and "anchor reset" in r.stderr
    assert snapshot(b) == before  # nothing applied
    # a fork at the same change: a new change 2 that is not the anchored one
    c = str(tmp_path / "c")
    repo(ep, "clone", "game", c)
    write(os.path.join(c, "f.txt"), b"fork\n")
    repo(ep, "submit", c, "-m", "fork")
    r = repo(ep, "sync", b, check=False)
    assert r.returncode == 9 and "rollback or restore" in r.stderr, r.stderr
    assert snapshot(b) == before
    r = repo(ep, "sync", b, "--change", "1", check=False)
    assert r.returncode == 9

    # explicit re-anchoring; then sync follows the server again
    r = cairn_repo(ep, "anchor", "reset", "-C", b, timeout=60)  # without --conns 0
    assert "trusting the server's head, change 2" in r.stderr
    assert snapshot(b)["f.txt"] == b"v2\n"  # files untouched by the reset
    # the reset moved the workspace to change 0 of the new anchor: this sync
    # re-checks every file against the head (the fork) and applies it
    r = repo(ep, "sync", b)
    assert "at change 2" in r.stdout and r.stderr == "", (r.stdout, r.stderr)
    got = snapshot(b)
    assert got["f.txt"] == b"fork\n" and "g.txt" not in got


MODES = ["flip_node", "flip_content_root", "flip_revision_root", "drop", "duplicate", "reorder",
         "surplus", "truncate", "trailing", "empty", "stale", "cut", "flip_commit"]


def test_adversarial_proxy_applies_nothing(server_factory, tmp_path):
    s = server_factory(args=SCRIBE_ONLY, wait_for=("scribe",))
    ep = scribe_ep(s)
    files = {"d%d/f%d.txt" % (i % 3, i): b"v1 %d\n" % i for i in range(12)}
    (a,) = seeded(ep, tmp_path, "game", files, "v1", more=())
    b = str(tmp_path / "b")
    px = Proxy(s.addrs["scribe"])
    try:
        r = repo(px.ep, "clone", "game", b)  # untampered: the proxy is transparent
        assert px.proofs >= 1 and px.recorded is not None
        write(os.path.join(a, "d0/f0.txt"), b"v2\n")
        write(os.path.join(a, "d9/new.txt"), b"new\n")
        os.unlink(os.path.join(a, "d1/f1.txt"))
        repo(ep, "submit", a, "-m", "v2")
        before = snapshot(b)
        for mode in MODES:
            px.mode, px.tampered = mode, 0
            r = repo(px.ep, "sync", b, check=False)
            # a cut connection is a transport failure: the page's proof restarts once
            assert px.tampered == (2 if mode == "cut" else 1), (mode, px.tampered)
            assert r.returncode in (5, 8), (mode, r.returncode, r.stdout, r.stderr)
            assert snapshot(b) == before, mode
        px.mode, px.ops = None, {}
        r = repo(px.ep, "sync", b)
        assert px.ops.get(OP_TREE_PROOF) and not px.ops.get(11)  # no unverified tree_page
        assert "at change 2" in r.stdout
        got = snapshot(b)
        assert got["d0/f0.txt"] == b"v2\n" and got["d9/new.txt"] == b"new\n"
        assert "d1/f1.txt" not in got
    finally:
        px.close()


# ---- mounts materialised by clone and sync ------------------------------------------------
def info(ep, name):
    out = repo(ep, "info", name).stdout
    return dict(line.split(" ", 1) for line in out.splitlines() if " " in line)


def mount_config(rid, bid, rev, path="vendor/lib"):
    return (f'version = 1\n\n[mounts.lib]\npath = "{path}"\nrepository = "{rid}"\n'
            f'branch = "{bid}"\nrevision = "{rev}"\n').encode()


def test_mounts_cloned_and_synced_at_their_pins(server_factory, tmp_path):
    s = server_factory(args=SCRIBE_ONLY, wait_for=("scribe",))
    ep = scribe_ep(s)
    repo(ep, "create", "lib")
    repo(ep, "create", "app")
    lw, aw, b = str(tmp_path / "lw"), str(tmp_path / "aw"), str(tmp_path / "b")
    repo(ep, "clone", "lib", lw)
    write(os.path.join(lw, "lib.txt"), b"lib v1\n")
    repo(ep, "submit", lw, "-m", "lib 1")  # change 1 of lib
    write(os.path.join(lw, "lib.txt"), b"lib v2\n")
    write(os.path.join(lw, "extra.txt"), b"extra\n")
    repo(ep, "submit", lw, "-m", "lib 2")  # change 2 of lib
    li = info(ep, "lib")
    repo(ep, "clone", "app", aw)
    write(os.path.join(aw, "main.c"), b"int main;\n")
    write(os.path.join(aw, ".scribe/config.toml"), mount_config(li["id"], li["main"], 1))
    repo(ep, "submit", aw, "-m", "mount lib at 1")

    r = repo(ep, "clone", "app", b)
    lib = os.path.join(b, "vendor/lib")
    got = snapshot(lib)
    assert got["lib.txt"] == b"lib v1\n" and "extra.txt" not in got  # the pin, not the head
    assert ".cairn/state" in got and anchors(lib)  # a workspace of its own, anchored
    assert "change 1\n" in got[".cairn/state"].decode()
    # the parent's scan leaves the nested workspace alone
    st = repo(ep, "status", b).stdout
    assert "vendor" not in st, st

    # a new pin: sync moves the nested workspace to it
    write(os.path.join(aw, ".scribe/config.toml"), mount_config(li["id"], li["main"], 2))
    repo(ep, "submit", aw, "-m", "mount lib at 2")
    r = repo(ep, "sync", b)
    assert "at change" in r.stdout
    got = snapshot(lib)
    assert got["lib.txt"] == b"lib v2\n" and got["extra.txt"] == b"extra\n"
    # a mount whose repository cannot be found is skipped and said; the rest stands
    write(os.path.join(aw, ".scribe/config.toml"),
          mount_config("0" * 32, li["main"], 1, path="vendor/gone"))
    repo(ep, "submit", aw, "-m", "mount a missing repository")
    r = repo(ep, "sync", b)
    assert "skipping vendor/gone: mount lib: its repository is not found" in r.stderr, r.stderr
    assert not os.path.exists(os.path.join(b, "vendor/gone"))
    # a nested workspace in the way of its pin (a local edit) fails the parent's sync
    write(os.path.join(aw, ".scribe/config.toml"), mount_config(li["id"], li["main"], 1))
    repo(ep, "submit", aw, "-m", "back to lib 1")
    write(os.path.join(lib, "lib.txt"), b"edited locally\n")
    r = repo(ep, "sync", b, check=False)
    assert r.returncode == 6 and "mount lib (vendor/lib)" in r.stderr, (r.returncode, r.stderr)
    assert open(os.path.join(lib, "lib.txt"), "rb").read() == b"edited locally\n"
