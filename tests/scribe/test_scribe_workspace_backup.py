"""Workspace rows in a repository backup (docs/protocol/scribe.md 13.8,
table 11) through the real cairnd and `cairn admin repo backup|restore`:
a repository restored into another data directory still knows its
registered workspaces (label, tags, branch, creation time) and its retired
ones (a retired workspace's submit and registration still answer
workspace_retired); a restore over the repository replaces the live rows
with the backup's and never revives an id retired after the backup."""
import os

from cairnutil import admin_repo
from scribe_wire import ADD, Conn
from test_scribe_server import ARGS, Repo, addr, raises
from test_scribe_workspaces import register, remove, ws_page


def admin(data, *args):
    return admin_repo(data, *args, check=True)


def reopen(c, r):
    """r after a restore: the same id, the new incarnation, main's head."""
    info = c.repo_info(r.id)
    r.c, r.inc, r.head = c, info["incarnation"], info["head"]
    return r


def test_restore_keeps_registered_and_retired(server_factory, tmp_path):
    s = server_factory(args=ARGS, data=tmp_path / "one", wait_for=("scribe",))
    c = Conn(addr(s))
    r = Repo(c)
    m = r.upload({"a.txt": b"a\n"})
    assert r.submit([(ADD, "a.txt", m["a.txt"], 0, None)])["outcome"] == 1
    live, retired, later = os.urandom(16), os.urandom(16), os.urandom(16)
    row = register(c, r.id, live, r.main, "h1:/live", ["gpu", "os=linux"])
    register(c, r.id, retired, r.main, "h1:/gone")
    gone = remove(c, r, retired)
    assert gone["code"] == 0
    c.close()
    s.stop()
    bak = str(tmp_path / "art.bak")
    admin(tmp_path / "one", "backup", "art", bak)

    # into another data directory: the rows come with the repository
    admin(tmp_path / "two", "restore", bak)
    s2 = server_factory(args=ARGS, data=tmp_path / "two", wait_for=("scribe",))
    with Conn(addr(s2)) as c2:
        reopen(c2, r)
        rows, more = ws_page(c2, r.id, scope=1)
        assert rows == [row] and not more
        # the row is the one registered: the same tags, so no conflict
        assert register(c2, r.id, live, r.main, "h1:/live", ["os=linux", "gpu"]) == row
        raises("malformed", register, c2, r.id, live, r.main, "h1:/live", ["gpu"])
        # the retired one is still refused, its submit as its registration
        r.ws = retired
        raises("workspace_retired", r.submit, [(ADD, "b.txt", m["a.txt"], 0, None)])
        raises("workspace_retired", register, c2, r.id, retired, r.main)
        r.ws = live
        assert r.submit([(ADD, "b.txt", m["a.txt"], 0, None)])["outcome"] == 1
    s2.stop()

    # over the repository itself: the workspace registered after the backup
    # goes, the one retired after it stays retired
    s.start(wait_for=("scribe",))
    with Conn(addr(s)) as c3:
        reopen(c3, r)
        register(c3, r.id, later, r.main, "h2:/later")
        assert remove(c3, r, live)["code"] == 0
    s.stop()
    admin(tmp_path / "one", "restore", bak, "--replace")
    s.start(wait_for=("scribe",))
    with Conn(addr(s)) as c4:
        reopen(c4, r)
        assert ws_page(c4, r.id, scope=1) == ([], False)
        raises("workspace_retired", register, c4, r.id, live, r.main, "h1:/live",
               ["gpu", "os=linux"])
        assert register(c4, r.id, later, r.main, "h2:/again")["label"] == "h2:/again"
