"""`cairn repo cherry-pick BRANCH@CHANGE` through the real cairnd and the real
`cairn` binary, as a team uses it: branch from main, fix something on the
branch, pick that one change onto main (its files arrive, main's own work
stays), the log showing where the change came from; then the exit statuses
of a change already on main (6), a path changed on both sides (6, nothing
written), a change the branch did not make itself (1), an unknown branch
(3), a ref without a change (2) and local changes in the way (6); and a pick
the server rejects (another workspace picked the same change first), which
leaves the workspace as it was before the pick."""
import os
import re
import socket

from cairnutil import ep, read, repo, tree, write  # noqa: F401 (ep: the server fixture)
from test_repo_branch_cli import LossyProxy, submitted_change


def submit(ep, ws, message):
    return submitted_change(repo(ep, "submit", ws, "-m", message).stdout)


def fix_on_feature(ep, name, a, blob):
    """Repository `name` with change 1 on main (README, src/lib.txt,
    old.txt), and workspace a on branch feature with one fix made there
    (modify src/lib.txt, delete old.txt, add assets/new.bin = blob); returns
    the fix's change."""
    repo(ep, "create", name)
    repo(ep, "clone", name, a)
    write(os.path.join(a, "README"), b"readme\n")
    write(os.path.join(a, "src/lib.txt"), b"lib with a bug\n")
    write(os.path.join(a, "old.txt"), b"old\n")
    assert submit(ep, a, "start") == 1
    repo(ep, "branch", "create", "feature", "-C", a)
    repo(ep, "switch", "feature", "-C", a)
    write(os.path.join(a, "src/lib.txt"), b"lib fixed\n")
    os.remove(os.path.join(a, "old.txt"))
    write(os.path.join(a, "assets/new.bin"), blob)
    return submit(ep, a, "fix lib")


def test_cherry_pick_workflow(ep, tmp_path):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    # on a branch: one fix (modify, delete, add), then a README edit
    blob = os.urandom(200000)
    fix = fix_on_feature(ep, "game", a, blob)
    write(os.path.join(a, "README"), b"readme from feature\n")
    readme = submit(ep, a, "feature readme")

    # main moves on meanwhile
    repo(ep, "clone", "game", b)
    write(os.path.join(b, "README"), b"readme on main\n")
    main_change = submit(ep, b, "main readme")

    r = repo(ep, "cherry-pick", "feature@%d" % fix, "-C", b)
    m = re.match(r"change (\d+): picked feature@%d \(3 paths applied\)" % fix, r.stdout)
    assert m, r.stdout
    picked = int(m.group(1))
    assert tree(b) == {"README": b"readme on main\n", "src/lib.txt": b"lib fixed\n",
                       "assets/new.bin": blob}
    assert repo(ep, "status", b).stdout.startswith("clean at change %d" % picked)
    log = repo(ep, "log", b, "-n", "1").stdout
    assert log.startswith("change %d " % picked)
    assert "fix lib" in log and "(cherry picked from feature@%d)" % fix in log
    # the source branch by its name, not its id
    assert "picked from change %d of branch feature\n" % fix in log
    # the branch's own log has no provenance; main's earlier rows neither
    assert "picked from" not in repo(ep, "log", a).stdout
    assert repo(ep, "log", b).stdout.count("picked from change") == 1

    # already on main: a second pick is a conflict, nothing changes
    r = repo(ep, "cherry-pick", "feature@%d" % fix, "-C", b, check=False)
    assert r.returncode == 6, r.stderr
    assert "already" in r.stderr
    # README changed on both sides: exit 6, the workspace untouched
    r = repo(ep, "cherry-pick", "feature@%d" % readme, "-C", b, check=False)
    assert r.returncode == 6, r.stderr
    assert "README" in r.stderr
    assert read(os.path.join(b, "README")) == b"readme on main\n"
    assert repo(ep, "status", b).stdout.startswith("clean at change %d" % picked)
    # change 1 is main's, inherited by feature: not pickable from it
    r = repo(ep, "cherry-pick", "feature@1", "-C", b, check=False)
    assert r.returncode == 1, r.stderr
    assert "not an ordinary commit" in r.stderr
    assert repo(ep, "cherry-pick", "nosuch@%d" % fix, "-C", b, check=False).returncode == 3
    assert repo(ep, "cherry-pick", "feature", "-C", b, check=False).returncode == 2
    assert main_change < picked

    # a message of one's own, and local changes in the way
    write(os.path.join(a, "docs/guide.txt"), b"guide\n")
    guide = submit(ep, a, "add a guide")
    write(os.path.join(b, "scratch.txt"), b"local\n")
    write(os.path.join(b, "src/lib.txt"), b"local edit\n")
    r = repo(ep, "cherry-pick", "feature@%d" % guide, "-C", b, check=False)
    assert r.returncode == 6 and "local changes" in r.stderr
    write(os.path.join(b, "src/lib.txt"), b"lib fixed\n")
    os.remove(os.path.join(b, "scratch.txt"))
    r = repo(ep, "cherry-pick", "feature@%d" % guide, "-m", "guide for main", "-C", b)
    assert read(os.path.join(b, "docs/guide.txt")) == b"guide\n"
    log = repo(ep, "log", b, "-n", "1").stdout
    assert "guide for main" in log and "cherry picked" not in log
    assert "picked from change %d" % guide in log


class HoldingProxy(LossyProxy):
    """A TCP relay to the server that runs `before()` when the client's first
    frame of opcode `op` passes through, and forwards the frame only once
    that returned: another client acts between this one's planning and its
    request, without any timing.  The frame is found by its header's first
    6 bytes (magic, opcode), which the other bytes the client sends match
    only by a 2^-48 chance per offset; replies pass untouched."""

    def __init__(self, ep, op, before):
        self.marker = b"SCR1" + op.to_bytes(2, "little")
        self.before, self.held = before, False
        super().__init__(ep, ops=(), times=0)

    def _up(self, c, u):
        self._relay(c, u, True)

    def _down(self, u, c):
        self._relay(u, c, False)

    def _relay(self, src, dst, watch):
        tail = b""
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if watch and not self.held and self.marker in tail + data:
                    self.held = True
                    self.before()
                tail = data[-(len(self.marker) - 1):]
                dst.sendall(data)
        except OSError:
            pass
        try:  # pass the end on; the other direction ends on its own
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def test_rejected_pick_restores_the_workspace(ep, tmp_path):
    a, b, c = (str(tmp_path / n) for n in "abc")
    fix = fix_on_feature(ep, "race", a, os.urandom(100000))
    repo(ep, "clone", "race", b)
    repo(ep, "clone", "race", c)
    before = tree(b)

    # c picks the fix while b's pick of it is planned, applied and on its way
    competing = []
    proxy = HoldingProxy(ep, 33, lambda: competing.append(
        repo(ep, "cherry-pick", "feature@%d" % fix, "-C", c, check=False)))
    r = repo(proxy.ep, "cherry-pick", "feature@%d" % fix, "-C", b, check=False)
    proxy.close()
    assert len(competing) == 1 and competing[0].returncode == 0, competing
    assert r.returncode == 6 and "already on the target" in r.stderr, r.stderr

    # b is as it was before its pick: no local change, main's files
    assert tree(b) == before
    assert repo(ep, "status", b).stdout.startswith("clean at change 1")
    repo(ep, "sync", b)
    assert tree(b) == tree(c)
