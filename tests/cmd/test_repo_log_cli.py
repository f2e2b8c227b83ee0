"""`cairn repo log PATH --follow-merges | --all-branches [--change N]` through
the real cairnd and the real `cairn` binary: a branch's change reaches main
by a merge (made over the wire, tests/scribe/scribe_wire.py), and the
follow-merges log of main shows it where the ordinary log does not; the
all-branch log from the branch shows main's later change as outside the
branch, and --change pins the ceiling (one past the repository head is the
server's malformed, exit 1); a mode without a PATH is a usage error (exit 2)."""
import os
import re
import sys

from cairnutil import ep, repo, write  # noqa: F401 (ep: the server fixture)
from test_repo_branch_cli import submitted_change

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "scribe"))
from scribe_wire import CHANGESET, MODIFY, Conn, changeset_encode, changeset_id  # noqa: E402


def changes(out):
    """(change, branch, extra) of each row of a merge-aware log."""
    rows, cur = [], None
    for line in out.splitlines():
        m = re.match(r"change (\d+) ", line)
        if m:
            cur = int(m.group(1))
            continue
        m = re.match(r"    branch ([^;\s]+)(.*)$", line)
        if m:
            rows.append((cur, m.group(1), m.group(2)))
    return rows


def merge_over_wire(ep, name, source_name, path, target_head, source_head, base):
    host, port = ep.rsplit(":", 1)
    with Conn((host, int(port))) as c:
        info = c.repo_info(name=name)
        rid, main, inc = info["id"], info["main"], info["incarnation"]
        src = c.branch_info(rid, name=source_name)["id"]
        state = c.merge_states(rid, src, source_head, [path])[0]
        cs = changeset_encode([(MODIFY, path, state["manifest"], 0, None)])
        cid = changeset_id(cs)
        c.put_objects(rid, [(CHANGESET, cid, cs)])
        sub = c.submit_payload(rid, inc, os.urandom(16), main, os.urandom(16), target_head, cid,
                               "ann", "merge " + source_name)
        o = c.merge_submit(sub, target_head, src, source_head, main, base)
        assert o["outcome"] == 1, o
        return o["change"]


def test_follow_merges_and_all_branches(ep, tmp_path):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    repo(ep, "create", "game")
    repo(ep, "clone", "game", a)
    write(os.path.join(a, "f.txt"), b"one\n")
    c1 = submitted_change(repo(ep, "submit", a, "-m", "import").stdout)
    repo(ep, "branch", "create", "feature", cwd=a)
    repo(ep, "clone", "game", b, "--branch", "feature")
    write(os.path.join(b, "f.txt"), b"one\ntwo\n")
    c2 = submitted_change(repo(ep, "submit", b, "-m", "on feature").stdout)
    c3 = merge_over_wire(ep, "game", "feature", "f.txt", c1, c2, c1)
    repo(ep, "sync", a)

    # the ordinary log of main: its own changes; follow-merges adds the branch's
    plain = repo(ep, "log", a, "f.txt").stdout
    assert [int(x) for x in re.findall(r"^change (\d+) ", plain, re.M)] == [c3, c1]
    out = repo(ep, "log", a, "f.txt", "--follow-merges").stdout
    assert changes(out) == [(c3, "main", "; merge of change %d" % c2), (c2, "feature", ""),
                            (c1, "main", "")]
    assert "on feature" in out
    # --change N starts there
    out = repo(ep, "log", a, "f.txt", "--follow-merges", "--change", str(c2)).stdout
    assert [x[0] for x in changes(out)] == [c2, c1]

    # main moves on; from the branch, main's changes are not in its ancestry
    write(os.path.join(a, "f.txt"), b"one\ntwo\nthree\n")
    c4 = submitted_change(repo(ep, "submit", a, "-m", "main again").stdout)
    out = repo(ep, "log", b, "f.txt", "--all-branches").stdout
    assert changes(out) == [
        (c4, "main", "; not in the branch at change %d" % c4),
        (c3, "main", "; merge of change %d; not in the branch at change %d" % (c2, c4)),
        (c2, "feature", "; in the branch at change %d" % c4),
        (c1, "main", "; in the branch at change %d" % c4)]
    # a ceiling: nothing past it, the same membership
    out = repo(ep, "log", b, "f.txt", "--all-branches", "--change", str(c3)).stdout
    assert [(x[0], "not in" in x[2]) for x in changes(out)] == [
        (c3, True), (c2, False), (c1, False)]
    # -n bounds the rows
    out = repo(ep, "log", b, "f.txt", "--all-branches", "-n", "2").stdout
    assert [x[0] for x in changes(out)] == [c4, c3]

    # a ceiling past the repository head is refused by the server (malformed: exit 1)
    r = repo(ep, "log", b, "f.txt", "--all-branches", "--change", "99", check=False)
    assert r.returncode == 1 and "ceiling" in r.stderr, r.stderr
    # a mode needs a PATH
    r = repo(ep, "log", a, "--follow-merges", check=False)
    assert r.returncode == 2 and "PATH" in r.stderr
