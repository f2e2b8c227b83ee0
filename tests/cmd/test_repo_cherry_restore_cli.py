"""A cherry-pick the server rejects whose restore then fails, through the real
cairnd and the real `cairn` binary: a relay lets another workspace pick the
same change first, forwards the rejection, then cuts every connection and
refuses new ones, so the picked files cannot be fetched back.  The command
still reports the rejection first, then what to run; `status` says a pick is
left to undo (exit 6); `cherry-pick --abort` puts the workspace back.  A
second pick left the same way is put back by re-running the pick."""
import os
import socket
import struct

from cairnutil import ep, repo, tree  # noqa: F401 (ep: the server fixture)
from test_repo_cherry_cli import HoldingProxy, fix_on_feature


class CuttingProxy(HoldingProxy):
    """HoldingProxy that, once the held request's reply has passed, closes
    every relayed connection and its listener: whatever the client asks
    next fails on the network."""

    def __init__(self, ep, op, before):
        self.socks = []
        super().__init__(ep, op, before)

    def _up(self, c, u):
        self.socks += [c, u]
        super()._up(c, u)

    def _down(self, u, c):
        buf = b""
        try:
            while True:
                data = u.recv(65536)
                if not data:
                    break
                if not self.held:
                    c.sendall(data)
                    continue
                # the client waits for this reply: the bytes are its frame
                buf += data
                while len(buf) >= 24:
                    length = struct.unpack("<I", buf[16:20])[0]
                    if len(buf) < 24 + length:
                        break
                    c.sendall(buf[:24 + length])
                    self.cut()
                    return
        except OSError:
            pass

    def cut(self):
        try:
            self.lsock.close()
        except OSError:
            pass
        for s in self.socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
                s.close()
            except OSError:
                pass


def rejected_and_cut(ep, tmp_path, name):
    """Workspace b on main of a new repository `name`, whose pick of
    feature's fix was rejected (workspace c picked it first) and then cut
    off; returns b, the fix, b's tree before the pick and the pick's run."""
    a, b, c = (str(tmp_path / n) for n in "abc")
    fix = fix_on_feature(ep, name, a, os.urandom(100000))
    repo(ep, "clone", name, b)
    repo(ep, "clone", name, c)
    before = tree(b)
    competing = []
    proxy = CuttingProxy(ep, 33, lambda: competing.append(
        repo(ep, "cherry-pick", "feature@%d" % fix, "-C", c, check=False)))
    r = repo(proxy.ep, "cherry-pick", "feature@%d" % fix, "-C", b, "--conns", "0", check=False)
    proxy.cut()
    assert len(competing) == 1 and competing[0].returncode == 0, competing
    return b, fix, before, r


def test_failed_restore_reports_rejection_then_abort_restores(ep, tmp_path):
    b, fix, before, r = rejected_and_cut(ep, tmp_path, "cut")
    assert r.returncode == 6, (r.stdout, r.stderr)
    err = r.stderr
    # the server's rejection first, then the failed restore and what to run
    assert "already on the target" in err, err
    assert err.index("already on the target") < err.index("could not be put back"), err
    assert "cherry-pick --abort" in err
    assert tree(b) != before  # the picked files are still there

    st = repo(ep, "status", b, check=False)
    assert st.returncode == 6 and "cherry-pick --abort" in st.stdout, st.stdout
    r = repo(ep, "cherry-pick", "--abort", "-C", b)
    assert tree(b) == before
    assert repo(ep, "status", b).stdout.startswith("clean at change 1")
    # nothing left to undo
    assert repo(ep, "cherry-pick", "--abort", "-C", b, check=False).returncode != 0


def test_rerun_pick_finishes_the_restore_first(ep, tmp_path):
    b, fix, before, r = rejected_and_cut(ep, tmp_path, "cut2")
    assert r.returncode == 6 and "could not be put back" in r.stderr, r.stderr
    # the same pick again: the workspace is put back first, then the pick
    # stops as any pick at a stale head does (c's pick moved main)
    r = repo(ep, "cherry-pick", "feature@%d" % fix, "-C", b, check=False)
    assert r.returncode == 6 and "sync first" in r.stderr, r.stderr
    assert tree(b) == before
    assert repo(ep, "status", b).stdout.startswith("clean at change 1")
