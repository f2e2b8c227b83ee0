"""`cairn repo branch` and `cairn repo switch` through the real cairnd and the
real `cairn` binary, as a team uses them: branch from main, work on the
branch, switch back and forth (the files follow), clone a branch elsewhere,
list, inspect and rename branches; the exit statuses of a taken name (6), an
unknown branch (3) and a switch over local changes (6); and a branch create
whose reply was lost: resolved inside the command through branch_outcome, or
replayed by running the same command again."""
import os
import re
import struct
import sys

from cairnutil import (Relay, ep, read, recv_exact, repo, seeded, shut,  # noqa: F401 (ep: the fixture)
                       tree, write)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "scribe"))


def one_change(ep, tmp_path, name, path="f", data=b"data"):
    """A new repository `name` with one change on main (path), and a
    workspace on main at it; returns the workspace."""
    return seeded(ep, tmp_path, name, {path: data}, "one", more=())[0]


def branches(ep, ws):
    """`branch list` as {name: (head, origin or None, current)}; asserts one
    line per branch in the documented form."""
    out = {}
    for line in repo(ep, "branch", "list", "-C", ws).stdout.splitlines():
        m = re.fullmatch(r"(\S+)\thead (\d+)\t(?:from (\S+@\d+)|-)(\tcurrent)?", line)
        assert m, line
        out[m.group(1)] = (int(m.group(2)), m.group(3), bool(m.group(4)))
    return out


def info(ep, ws, name):
    r = repo(ep, "branch", "info", name, "-C", ws)
    return dict(line.split(" ", 1) for line in r.stdout.splitlines())


def submitted_change(out):
    m = re.match(r"change (\d+): ", out)
    assert m, out
    return int(m.group(1))


def test_branch_workflow(ep, tmp_path):
    repo(ep, "create", "game")
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    repo(ep, "clone", "game", a)
    write(os.path.join(a, "README"), b"main readme\n")
    write(os.path.join(a, "assets/tree.bin"), os.urandom(300000))
    c1 = submitted_change(repo(ep, "submit", a, "-m", "import").stdout)
    main_files = tree(a)
    assert branches(ep, a) == {"main": (c1, None, True)}

    # a branch starts at the head of the workspace's branch; the workspace stays on main
    out = repo(ep, "branch", "create", "feature", cwd=a).stdout
    assert out.strip() == "created feature from main@%d" % c1
    assert branches(ep, a) == {"feature": (c1, "main@%d" % c1, False),
                               "main": (c1, None, True)}
    assert "on branch main" in repo(ep, "status", a).stdout

    # switch (from a subdirectory: the workspace holding it), then work there
    os.makedirs(os.path.join(a, "assets/deep"), exist_ok=True)
    out = repo(ep, "switch", "feature", cwd=os.path.join(a, "assets/deep")).stdout
    assert "on branch feature at change %d" % c1 in out
    assert tree(a) == main_files
    write(os.path.join(a, "README"), b"feature readme\n")
    write(os.path.join(a, "src/feature.c"), b"int feature;\n")
    os.remove(os.path.join(a, "assets/tree.bin"))
    c2 = submitted_change(repo(ep, "submit", a, "-m", "feature work").stdout)
    assert "clean at change %d on branch feature" % c2 in repo(ep, "status", a).stdout
    feature_files = tree(a)
    log = repo(ep, "log", a).stdout
    assert "feature work" in log and "import" in log    # its own change and the inherited one
    assert branches(ep, a)["feature"] == (c2, "main@%d" % c1, True)
    assert branches(ep, a)["main"] == (c1, None, False)

    # back to main: the files revert to main's
    out = repo(ep, "switch", "main", "-C", a).stdout
    assert "on branch main at change %d" % c1 in out and "1 removed" in out
    assert tree(a) == main_files
    assert "feature work" not in repo(ep, "log", a).stdout

    # a clone of the branch elsewhere sees the branch's files, and follows it
    repo(ep, "clone", "game", b, "--branch", "feature")
    assert tree(b) == feature_files
    assert "on branch feature" in repo(ep, "status", b).stdout
    # BRANCH@N: the branch as it was at change N (its origin snapshot here)
    repo(ep, "switch", "feature@%d" % c1, "-C", b)
    assert tree(b) == main_files
    repo(ep, "switch", "feature", "-C", b)
    assert tree(b) == feature_files

    # info: name, id, head, origin, created, current
    fi = info(ep, b, "feature")
    assert fi["name"] == "feature" and fi["head"] == str(c2)
    assert fi["origin"] == "main@%d" % c1 and fi["current"] == "yes"
    assert re.fullmatch(r"[0-9a-f]{32}", fi["id"])
    assert info(ep, b, "main")["origin"] == "-"

    # --from names another branch (and change); the name is then taken: exit 6
    out = repo(ep, "branch", "create", "team/fix", "--from", "feature@%d" % c2, "-C", a).stdout
    assert out.strip() == "created team/fix from feature@%d" % c2
    r = repo(ep, "branch", "create", "feature", "-C", a, check=False)
    assert r.returncode == 6 and "branch_exists" in r.stderr, r.stderr
    r = repo(ep, "branch", "create", "FEATURE", "-C", a, check=False)   # unique ignoring case
    assert r.returncode == 6 and "branch_exists" in r.stderr, r.stderr

    # rename: the old name is gone at once; a workspace on it follows the new name
    out = repo(ep, "branch", "rename", "feature", "feature/ui", "-C", a).stdout
    assert out.strip() == "renamed feature to feature/ui"
    listed = branches(ep, a)
    assert "feature" not in listed and listed["feature/ui"][0] == c2
    assert listed["team/fix"] == (c2, "feature/ui@%d" % c2, False)
    r = repo(ep, "branch", "rename", "feature", "other", "-C", a, check=False)
    assert r.returncode == 3, r.stderr
    r = repo(ep, "branch", "rename", "team/fix", "main", "-C", a, check=False)
    assert r.returncode == 6 and "branch_exists" in r.stderr, r.stderr
    assert "up to date" in repo(ep, "sync", b).stdout
    assert "on branch feature/ui" in repo(ep, "status", b).stdout
    write(os.path.join(b, "more.txt"), b"more\n")
    c3 = submitted_change(repo(ep, "submit", b, "-m", "more on ui").stdout)
    assert branches(ep, a)["feature/ui"][0] == c3

    # unknown branches: the not-found status, for every verb that names one
    for args in (["switch", "nope"], ["branch", "info", "nope"],
                 ["branch", "create", "x", "--from", "nope"],
                 ["branch", "create", "x", "--from", "main@%d" % c3]):   # outside main's lifetime
        r = repo(ep, *args, "-C", a, check=False)
        assert r.returncode == 3, (args, r.stderr)
    r = repo(ep, "clone", "game", str(tmp_path / "c"), "--branch", "nope", check=False)
    assert r.returncode == 3 and not os.path.exists(str(tmp_path / "c"))
    # names that break the rule never reach the server: usage
    for bad in ("-x", "a//b", "a@b", ".hidden", "x/"):
        r = repo(ep, "branch", "create", bad, "-C", a, check=False)
        assert r.returncode == 2, (bad, r.stderr)
    assert "x" not in branches(ep, a)


def test_switch_refuses_local_changes(ep, tmp_path):
    a = one_change(ep, tmp_path, "art", "f.txt", b"one\n")
    repo(ep, "branch", "create", "dev", "-C", a)
    for edit in ("modify", "add", "delete"):
        if edit == "modify":
            write(os.path.join(a, "f.txt"), b"edited\n")
        elif edit == "add":
            write(os.path.join(a, "new.txt"), b"new\n")
        else:
            os.remove(os.path.join(a, "f.txt"))
        r = repo(ep, "switch", "dev", "-C", a, check=False)
        assert r.returncode == 6 and "local changes" in r.stderr, (edit, r.stderr)
        assert branches(ep, a)["main"][2]                          # nothing moved
        assert "branch_name main\n" in read(os.path.join(a, ".cairn/state")).decode()
        # put the workspace back as it was
        if edit == "add":
            os.remove(os.path.join(a, "new.txt"))
        else:
            write(os.path.join(a, "f.txt"), b"one\n")
    assert "clean at change 1 on branch main" in repo(ep, "status", a).stdout
    assert "on branch dev" in repo(ep, "switch", "dev", "-C", a).stdout
    # outside any workspace the branch verbs say so
    r = repo(ep, "branch", "list", cwd=str(tmp_path), check=False)
    assert r.returncode == 7 and "not inside a workspace" in r.stderr
    # -C belongs to the branch verbs (the others take DIR), --branch to clone,
    # --from to branch create
    for args in (["status", "-C", a], ["sync", a, "--branch", "dev"],
                 ["switch", "main", "--from", "dev", "-C", a]):
        r = repo(ep, *args, check=False)
        assert r.returncode == 2 and "is for" in r.stderr, (args, r.stderr)
    assert "on branch dev" in repo(ep, "status", a).stdout


def test_old_workspace_state_is_on_main(ep, tmp_path):
    """A workspace cloned before branches (no branch name in its state) is on
    main and keeps working."""
    repo(ep, "create", "old")
    a = str(tmp_path / "a")
    repo(ep, "clone", "old", a)
    state = os.path.join(a, ".cairn/state")
    text = read(state).decode()
    assert "branch_name main\n" in text
    with open(state, "w") as f:
        f.write(text.replace("branch_name main\n", ""))
    assert "on branch main" in repo(ep, "status", a).stdout
    write(os.path.join(a, "x"), b"x")
    repo(ep, "submit", a, "-m", "x")
    assert branches(ep, a) == {"main": (1, None, True)}
    repo(ep, "branch", "create", "next", "-C", a)
    assert branches(ep, a)["next"] == (1, "main@1", False)


def test_lost_reply_replays(ep, tmp_path):
    """A branch create whose reply never arrived stays recorded in the
    workspace (operation id, branch id, intent); running the same command
    again replays that operation -- the branch it made, not branch_exists."""
    from scribe_wire import Conn, b3
    a = one_change(ep, tmp_path, "lost")
    state = read(os.path.join(a, ".cairn/state")).decode()
    field = lambda k: bytes.fromhex(re.search(r"^%s (\w+)$" % k, state, re.M).group(1))
    rid, inc, main = field("repo_id"), field("incarnation"), field("branch")
    op, bid = os.urandom(16), os.urandom(16)
    host, port = ep.rsplit(":", 1)
    with Conn((host, int(port))) as c:   # what the command sent before its reply was lost
        o = c.branch_create(rid, inc, op, bid, "hotfix", main, 1)
        assert o["outcome"] == 1
    fp = b3(b"cairn:branch-operation:v1\0" + rid + inc + bid + bytes([1]) +
            struct.pack("<H", 6) + b"hotfix" + main + struct.pack("<Q", 1))
    with open(os.path.join(a, ".cairn/state"), "a") as f:
        f.write("branch_op %s %s %s\n" % (op.hex(), bid.hex(), fp.hex()))
    out = repo(ep, "branch", "create", "hotfix", "-C", a).stdout
    assert out.strip() == "created hotfix from main@1"
    assert "branch_op" not in read(os.path.join(a, ".cairn/state")).decode()
    assert info(ep, a, "hotfix")["id"] == bid.hex()
    # the operation is settled: the same command now meets the branch it made
    r = repo(ep, "branch", "create", "hotfix", "-C", a, check=False)
    assert r.returncode == 6 and "branch_exists" in r.stderr
    # a recorded operation of another intent is not reused: a new one is made
    with open(os.path.join(a, ".cairn/state"), "a") as f:
        f.write("branch_op %s %s %s\n" % (op.hex(), bid.hex(), fp.hex()))
    out = repo(ep, "branch", "create", "hotfix2", "-C", a).stdout
    assert out.strip() == "created hotfix2 from main@1"
    assert info(ep, a, "hotfix2")["id"] != bid.hex()


class LossyProxy(Relay):
    """A TCP relay to the server that loses replies: the first `times`
    replies to an opcode in `ops` are never forwarded -- the connection is
    cut instead, after the server has acted on the request."""

    def __init__(self, ep, ops, times):
        self.ops, self.left, self.lost = set(ops), times, []
        super().__init__(ep)

    def _down(self, u, c):
        """Replies frame by frame (the branch verbs use no streams)."""
        try:
            while True:
                h = recv_exact(u, 24)
                op, _flags, _rid, length, _ = struct.unpack("<HHQII", h[4:])
                body = recv_exact(u, length)
                if op in self.ops and self.left > 0:
                    self.left -= 1
                    self.lost.append(op)
                    break
                c.sendall(h + body)
        except (OSError, EOFError):
            pass
        shut(c, u, close=True)


def test_lost_reply_resolved_or_replayed(ep, tmp_path):
    a = one_change(ep, tmp_path, "flaky")
    state = os.path.join(a, ".cairn/state")

    # one lost reply: the command asks branch_outcome and reports the branch made
    p = LossyProxy(ep, ops={21}, times=1)
    out = repo(p.ep, "branch", "create", "one", "-C", a).stdout
    p.close()
    assert p.lost == [21] and out.strip() == "created one from main@1"
    assert "branch_op" not in read(state).decode()

    # every reply lost: the command fails (network), the operation stays recorded ...
    p = LossyProxy(ep, ops={21, 23}, times=100)
    r = repo(p.ep, "branch", "create", "two", "-C", a, check=False)
    p.close()
    assert r.returncode == 5 and p.lost[0] == 21 and 23 in p.lost, (r.stderr, p.lost)
    assert "branch_op " in read(state).decode()
    # ... and the same command again replays it: the branch it made, not branch_exists
    out = repo(ep, "branch", "create", "two", "-C", a).stdout
    assert out.strip() == "created two from main@1"
    assert "branch_op" not in read(state).decode()

    # a rename whose replies are all lost, replayed although the old name is gone
    p = LossyProxy(ep, ops={21, 23}, times=100)
    r = repo(p.ep, "branch", "rename", "two", "three", "-C", a, check=False)
    p.close()
    assert r.returncode == 5
    assert "two" not in branches(ep, a)
    out = repo(ep, "branch", "rename", "two", "three", "-C", a).stdout
    assert out.strip() == "renamed two to three"
    assert sorted(branches(ep, a)) == ["main", "one", "three"]

    # a submit's lost reply is settled the same way (one retry path serves both)
    write(os.path.join(a, "g"), b"more")
    p = LossyProxy(ep, ops={9}, times=1)
    out = repo(p.ep, "submit", a, "-m", "two", "--conns", "0").stdout
    p.close()
    assert p.lost == [9] and out.startswith("change 2: "), out
    assert "clean at change 2 on branch main" in repo(ep, "status", a).stdout
