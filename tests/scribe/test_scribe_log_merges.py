"""The merge-aware log and merge_read tag 3 through the real cairnd
(docs/protocol/scribe.md 7.5, 7.9, 13.9): follow-merges across a merge and a
move, the ordinary path log following move sources, all-branch rows with a ceiling and ancestry membership, the (before,
after path) cursor over tied rows, the mode refusals, and the descendants of
a path at a revision paged 1,024 at a time.  The client is
tests/scribe/scribe_wire.py, written from the protocol document."""
import os

import pytest

from scribe_wire import ADD, DELETE, MODIFY, MOVE, Conn
from test_scribe_branches import submit_on
from test_scribe_server import ARGS, Repo, addr, raises


@pytest.fixture
def srv(server_factory):
    return server_factory(args=ARGS, wait_for=("scribe",))


def mlog(c, repo, branch, path, all_branches=False, **kw):
    """A follow-merges (or all-branch) log page as dicts."""
    return c.log(repo, branch, path, follow=True, all_branches=all_branches, **kw)


def all_pages(c, repo, branch, path, limit, follow=True, **kw):
    """Every row, page by page, through the (before, after path) cursor (of the
    ordinary log when not follow)."""
    out, before, after = [], None, None
    while True:
        page = c.log(repo, branch, path, follow=follow, before=before, after_path=after,
                     limit=limit, **kw)
        if not page:
            return out
        assert len(page) <= limit
        out += page
        before, after = page[-1]["change"], page[-1]["path"]


def history(r):
    """main: 1 add a.txt; feature from main@1: 2 modify a.txt; main: 3 add o.txt;
    feature: 4 move a.txt -> b.txt; main: 5 merge feature@4 (the move);
    main: 6 modify b.txt; feature: 7 modify b.txt.  Returns the feature id."""
    c = r.c
    m = r.upload({"v1": b"one", "v2": b"two", "v3": b"three", "v4": b"four", "o": b"other"})
    assert r.submit([(ADD, "a.txt", m["v1"], 0, None)], "add a")["change"] == 1
    feat = os.urandom(16)
    assert c.branch_create(r.id, r.inc, os.urandom(16), feat, "feature", r.main,
                           1)["outcome"] == 1
    assert submit_on(r, feat, 1, [(MODIFY, "a.txt", m["v2"], 0, None)], "edit a")["change"] == 2
    assert r.submit([(ADD, "o.txt", m["o"], 0, None)], "other")["change"] == 3
    mv = [(MOVE, "b.txt", m["v2"], 0, "a.txt")]
    assert submit_on(r, feat, 2, mv, "move a to b")["change"] == 4
    cid = r.changeset(mv)
    sub = c.submit_payload(r.id, r.inc, os.urandom(16), r.main, r.ws, 3, cid, "ann", "merge")
    o = c.merge_submit(sub, 3, feat, 4, r.main, 1)
    assert o["outcome"] == 1 and o["change"] == 5
    r.head = 5
    assert r.submit([(MODIFY, "b.txt", m["v3"], 0, None)], "edit b on main")["change"] == 6
    assert submit_on(r, feat, 4, [(MODIFY, "b.txt", m["v4"], 0, None)],
                     "edit b on feature")["change"] == 7
    return feat


def test_follow_merges_across_a_merge_and_a_move(srv):
    with Conn(addr(srv)) as c:
        r = Repo(c)
        feat = history(r)
        rows = mlog(c, r.id, r.main, "b.txt")
        got = [(x["change"], x["path"], x["event"], x["branch_name"]) for x in rows]
        assert got == [(6, "b.txt", MODIFY, "main"), (5, "b.txt", MOVE, "main"),
                       (4, "b.txt", MOVE, "feature"), (2, "a.txt", MODIFY, "feature"),
                       (1, "a.txt", ADD, "main")]
        assert rows[1]["merge"] == (feat, 4) and rows[1]["from"] == "a.txt"
        assert rows[2]["from"] == "a.txt" and rows[2]["branch"] == feat
        assert all(x["merge"] is None for i, x in enumerate(rows) if i != 1)
        assert rows[0]["message"] == "edit b on main" and rows[0]["parent"] == 5
        # without follow-merges the path shows main's first-parent events only: the move
        # the merge made, then its source's on main; the feature's edit of a.txt is a merge
        # source's and stays out
        rows = c.log(r.id, r.main, path="b.txt")
        assert [(x["change"], x["path"], x["event"]) for x in rows] == [
            (6, "b.txt", MODIFY), (5, "b.txt", MOVE), (1, "a.txt", ADD)]
        assert rows[1]["from"] == "a.txt" and rows[1]["merge"] == (feat, 4)
        # the feature's follow-merges log: its own line, then main's add
        rows = mlog(c, r.id, feat, "b.txt")
        assert [(x["change"], x["path"]) for x in rows] == [
            (7, "b.txt"), (4, "b.txt"), (2, "a.txt"), (1, "a.txt")]
        # before is exclusive without after path
        rows = mlog(c, r.id, r.main, "b.txt", before=5)
        assert [x["change"] for x in rows] == [4, 2, 1]
        # page by page, one row a time, the same rows
        assert all_pages(c, r.id, r.main, "b.txt", 1) == mlog(c, r.id, r.main, "b.txt")
        # a path nothing ever held: no rows
        assert mlog(c, r.id, r.main, "nothing.txt") == []
        # changed_paths (13) reports a branch's own events: a branch forked from main at 6
        # inherits main's events and reports none of them
        late = os.urandom(16)
        assert c.branch_create(r.id, r.inc, os.urandom(16), late, "late", r.main,
                               6)["outcome"] == 1
        assert c.changed_paths(r.id, late, 0, 6)[0] == []
        assert [x["path"] for x in c.changed_paths(r.id, r.main, 0, 6)[0]] == [
            "a.txt", "b.txt", "o.txt"]


def plog(c, repo, branch, path, **kw):
    """An ordinary (follow-merges off) path log page as (change, path, event) tuples."""
    return [(x["change"], x["path"], x["event"]) for x in c.log(repo, branch, path, **kw)]


def test_ordinary_log_follows_move_sources(srv):
    """main: 1 add a.txt, d/x; 2 modify a.txt; 3 add b.txt; 4 delete b.txt; 5 move
    a.txt -> b.txt; 6 move b.txt -> d/y, modify d/x; 7 modify d/y.  A fork from main
    at 6 then edits d/y at 8."""
    with Conn(addr(srv)) as c:
        r = Repo(c)
        m = r.upload({"v%d" % i: b"v%d" % i for i in range(9)})
        assert r.submit([(ADD, "a.txt", m["v1"], 0, None), (ADD, "d/x", m["v1"], 0, None)]
                        )["change"] == 1
        assert r.submit([(MODIFY, "a.txt", m["v2"], 0, None)])["change"] == 2
        assert r.submit([(ADD, "b.txt", m["v3"], 0, None)])["change"] == 3
        assert r.submit([(DELETE, "b.txt", None, 0, None)])["change"] == 4
        assert r.submit([(MOVE, "b.txt", m["v2"], 0, "a.txt")], "a to b")["change"] == 5
        assert r.submit([(MOVE, "d/y", m["v2"], 0, "b.txt"), (MODIFY, "d/x", m["v6"], 0, None)],
                        "b to d/y")["change"] == 6
        assert r.submit([(MODIFY, "d/y", m["v7"], 0, None)])["change"] == 7
        # the move row shows its destination and source; the source's older rows follow,
        # through a second move, and an earlier file of the same name keeps its rows
        rows = c.log(r.id, r.main, "d/y")
        assert [(x["change"], x["path"], x["event"]) for x in rows] == [
            (7, "d/y", MODIFY), (6, "d/y", MOVE), (5, "b.txt", MOVE), (2, "a.txt", MODIFY),
            (1, "a.txt", ADD)]
        assert rows[1]["from"] == "b.txt" and rows[2]["from"] == "a.txt"
        assert rows[2]["message"] == "a to b" and rows[2]["parent"] == 4
        assert plog(c, r.id, r.main, "b.txt") == [
            (6, "b.txt", DELETE), (5, "b.txt", MOVE), (4, "b.txt", DELETE), (3, "b.txt", ADD),
            (2, "a.txt", MODIFY), (1, "a.txt", ADD)]
        # the cursor: before exclusive, after path for tied rows, one row a page
        assert plog(c, r.id, r.main, "d/y", before=6) == [
            (5, "b.txt", MOVE), (2, "a.txt", MODIFY), (1, "a.txt", ADD)]
        assert plog(c, r.id, r.main, "b.txt", before=5, limit=2) == [
            (4, "b.txt", DELETE), (3, "b.txt", ADD)]
        for path in ("d/y", "b.txt", "d"):
            assert all_pages(c, r.id, r.main, path, 1, follow=False) == c.log(r.id, r.main, path)
        # a directory query: its paths' events as before (tied rows by path), and the
        # history of d/y before it moved into "d" (b.txt, and a.txt before that); the
        # earlier file named b.txt (3, 4) is another file and stays out
        assert plog(c, r.id, r.main, "d") == [
            (7, "d/y", MODIFY), (6, "d/x", MODIFY), (6, "d/y", MOVE), (5, "b.txt", MOVE),
            (2, "a.txt", MODIFY), (1, "a.txt", ADD), (1, "d/x", ADD)]
        assert plog(c, r.id, r.main, "d", before=6, after_path="d/x", limit=1) == [
            (6, "d/y", MOVE)]
        # a branch forked after the moves follows them through its origin
        feat = os.urandom(16)
        assert c.branch_create(r.id, r.inc, os.urandom(16), feat, "feature", r.main,
                               6)["outcome"] == 1
        assert submit_on(r, feat, 6, [(MODIFY, "d/y", m["v8"], 0, None)])["change"] == 8
        rows = c.log(r.id, feat, "d/y")
        assert [(x["change"], x["path"], x["branch_name"]) for x in rows] == [
            (8, "d/y", "feature"), (6, "d/y", "main"), (5, "b.txt", "main"),
            (2, "a.txt", "main"), (1, "a.txt", "main")]
        # a path nothing ever held: no rows
        assert c.log(r.id, r.main, "nothing") == []


def test_criss_cross_merges_each_change_once(srv):
    with Conn(addr(srv)) as c:
        r = Repo(c)
        m = r.upload({"v%d" % i: b"v%d" % i for i in range(8)})
        assert r.submit([(ADD, "f", m["v1"], 0, None)])["change"] == 1
        feat = os.urandom(16)
        assert c.branch_create(r.id, r.inc, os.urandom(16), feat, "feature", r.main,
                               1)["outcome"] == 1

        def merge(target, thead, source, shead, n):
            base_branch, base = c.merge_base(r.id, target, thead, source, shead)
            cid = r.changeset([(MODIFY, "f", m["v%d" % n], 0, None)])
            sub = c.submit_payload(r.id, r.inc, os.urandom(16), target, r.ws, thead, cid,
                                   "ann", "merge %d" % n)
            o = c.merge_submit(sub, thead, source, shead, base_branch, base)
            assert o["outcome"] == 1 and o["change"] == n, o
        assert submit_on(r, feat, 1, [(MODIFY, "f", m["v2"], 0, None)])["change"] == 2
        assert r.submit([(MODIFY, "f", m["v3"], 0, None)])["change"] == 3
        merge(r.main, 3, feat, 2, 4)            # feature into main
        merge(feat, 2, r.main, 4, 5)            # and main back into feature
        assert submit_on(r, feat, 5, [(MODIFY, "f", m["v6"], 0, None)])["change"] == 6
        merge(r.main, 4, feat, 6, 7)
        rows = mlog(c, r.id, r.main, "f")
        assert [(x["change"], x["branch_name"]) for x in rows] == [
            (7, "main"), (6, "feature"), (5, "feature"), (4, "main"), (3, "main"),
            (2, "feature"), (1, "main")]
        assert [x["merge"] for x in rows] == [(feat, 6), None, (r.main, 4), (feat, 2), None,
                                              None, None]
        assert [x["change"] for x in mlog(c, r.id, feat, "f")] == [6, 5, 4, 3, 2, 1]
        # every revision is in main's ancestry at its head
        rows = mlog(c, r.id, r.main, "f", all_branches=True)
        assert [(x["change"], x["member"]) for x in rows] == [(n, True) for n in range(7, 0, -1)]


def test_all_branches_membership_and_ceiling(srv):
    with Conn(addr(srv)) as c:
        r = Repo(c)
        feat = history(r)
        # from main's head: every revision of the file, both branches, all in main's ancestry
        rows = mlog(c, r.id, r.main, "b.txt", all_branches=True)
        got = [(x["change"], x["path"], x["event"], x["member"]) for x in rows]
        assert got == [(7, "b.txt", MODIFY, False), (6, "b.txt", MODIFY, True),
                       (5, "a.txt", DELETE, True), (5, "b.txt", MOVE, True),
                       (4, "a.txt", DELETE, True), (4, "b.txt", MOVE, True),
                       (2, "a.txt", MODIFY, True), (1, "a.txt", ADD, True)]
        assert {x["ceiling"] for x in rows} == {7}      # the head the read pinned
        # the feature at 5 (its snapshot is its change 4): main's merge is no member
        rows = mlog(c, r.id, feat, "b.txt", all_branches=True, ceiling=5)
        got = [(x["change"], x["path"], x["member"]) for x in rows]
        assert got == [(5, "a.txt", False), (5, "b.txt", False), (4, "a.txt", True),
                       (4, "b.txt", True), (2, "a.txt", True), (1, "a.txt", True)]
        assert {x["ceiling"] for x in rows} == {5}
        # tied rows at change 5 and 4 page through the after-path cursor, ceiling repeated
        assert all_pages(c, r.id, feat, "b.txt", 1, all_branches=True, ceiling=5) == rows
        # the ceiling keeps the page stable while the repository moves on
        m = r.upload({"v5": b"five"})
        assert r.submit([(MODIFY, "b.txt", m["v5"], 0, None)])["change"] == 8
        assert mlog(c, r.id, feat, "b.txt", all_branches=True, ceiling=5) == rows
        now = mlog(c, r.id, feat, "b.txt", all_branches=True)
        assert now[0]["change"] == 8 and not now[0]["member"] and now[0]["ceiling"] == 8
        # a path the snapshot never held: empty, no continuation needed
        assert mlog(c, r.id, feat, "zz", all_branches=True) == []


def test_mode_refusals(srv):
    with Conn(addr(srv)) as c:
        r = Repo(c)
        feat = history(r)

        def call(branch, path, follow=True, **kw):
            return c.log(r.id, branch, path, follow=follow, **kw)
        raises("malformed", call, r.main, None)                          # follow needs a path
        raises("malformed", call, r.main, "b.txt", follow=False, all_branches=True)
        raises("malformed", call, r.main, "b.txt", ceiling=3)           # ceiling: all only
        raises("malformed", call, r.main, "b.txt", after_path="b.txt")  # after path: before
        raises("malformed", call, r.main, "dir/", all_branches=True)    # not canonical
        raises("malformed", call, feat, "b.txt", all_branches=True, ceiling=0)  # before origin
        raises("malformed", call, feat, "b.txt", all_branches=True, ceiling=99)  # past head
        # main's head is 6: a ceiling up to the repository head (7) is its head's snapshot
        rows = mlog(c, r.id, r.main, "b.txt", all_branches=True, ceiling=7)
        assert rows == mlog(c, r.id, r.main, "b.txt", all_branches=True)
        raises("branch_not_found", call, os.urandom(16), "b.txt")
        raises("repository_not_found", c.log, os.urandom(16), r.main, "b.txt", follow=True)


def descendants(c, repo, branch, revision, path, cursor=None):
    e = c.enc().raw(repo).u8(3).raw(branch).u64(revision).str16(path).bool(cursor is not None)
    if cursor is not None:
        e.str16(cursor)
    d = c.merge_read(e.bytes())
    assert d.u8() == 3
    cur = d.str16().decode() if d.bool() else None
    out = []
    for _ in range(d.u32()):
        p = d.str16().decode()
        out.append((p, c.file_state_dec(d)))
    d.end()
    return cur, out


def ancestor_and_descendants(c, top, names):
    """A repository whose change 1 adds the file `top`, 2 deletes it and 3 adds
    `names` (under `top/`) in one submit; returns it and its manifests."""
    r = Repo(c)
    m = r.upload({top: top.encode(), "f": b"f"})
    assert r.submit([(ADD, top, m[top], 0, None)])["change"] == 1
    assert r.submit([(DELETE, top, None, 0, None)])["change"] == 2
    assert r.submit([(ADD, n, m["f"], 0, None) for n in names])["change"] == 3
    return r, m


def test_merge_read_descendants_pages(srv):
    with Conn(addr(srv)) as c:
        names = ["x/y/f%04d" % i for i in range(1500)]
        r, m = ancestor_and_descendants(c, "x", names)
        assert r.submit([(DELETE, names[5], None, 0, None)])["change"] == 4
        # the first page: the ancestor tombstone, then 1,024 descendants (deleted too)
        cur, page = descendants(c, r.id, r.main, 4, "x/y")
        assert page[0] == ("x", dict(kind=2, change=2))
        desc = page[1:]
        assert len(desc) == 1024 and len(page) <= 5120
        assert [p for p, _ in desc] == names[:1024]
        assert desc[5][1] == dict(kind=2, change=4)
        assert desc[0][1]["kind"] == 1 and desc[0][1]["change"] == 3
        assert cur == names[1023]
        cur2, page2 = descendants(c, r.id, r.main, 4, "x/y", cur)
        assert cur2 is None and [p for p, _ in page2] == names[1024:]
        # at revision 3 nothing was deleted yet; at 1 "x" was a live file, exact match
        _, page = descendants(c, r.id, r.main, 3, "x/y")
        assert all(s["kind"] == 1 for _, s in page[1:])
        cur, page = descendants(c, r.id, r.main, 1, "x")
        assert cur is None and page == [("x", dict(kind=1, change=1, manifest=m["x"], size=1,
                                                   mode=0))]
        # refusals: a cursor outside the path, a revision past the head, a bad path
        raises("malformed", descendants, c, r.id, r.main, 4, "x/y", "z/a")
        raises("malformed", descendants, c, r.id, r.main, 4, "/x")
        raises("change_not_found", descendants, c, r.id, r.main, 9, "x")
        raises("branch_not_found", descendants, c, r.id, os.urandom(16), 4, "x")


def descendant_pages(c, repo, branch, revision, path):
    """Every tag 3 page of (revision, path), following the cursor to its end."""
    pages, cur = [], None
    while True:
        cur, page = descendants(c, repo, branch, revision, path, cur)
        pages.append((cur, page))
        if cur is None:
            return pages


def test_merge_read_descendants_past_5120(srv):
    """13.9: 5,120 bounds one reply (4,095 ancestors + the path + 1,024
    descendants), not the walk: a path with more historical descendants pages
    on, 1,024 a page, to the last one, with no limit_exceeded and nothing
    dropped; the cursor is absent exactly when no descendant follows."""
    with Conn(addr(srv)) as c:
        names = ["d/e/f%05d" % i for i in range(5120)]
        r, m = ancestor_and_descendants(c, "d", names)
        assert r.submit([(ADD, "d/e/g", m["f"], 0, None),
                         (DELETE, names[7], None, 0, None)])["change"] == 4
        # revision 3: exactly 5,120 descendants are five full pages, the last
        # without a cursor; the first page opens with the ancestor tombstone
        pages = descendant_pages(c, r.id, r.main, 3, "d/e")
        assert pages[0][1][0] == ("d", dict(kind=2, change=2))
        desc = [pages[0][1][1:]] + [page for _, page in pages[1:]]
        assert [len(p) for p in desc] == [1024] * 5
        assert [cur for cur, _ in pages] == [names[i * 1024 - 1] for i in range(1, 5)] + [None]
        assert [p for page in desc for p, _ in page] == names
        assert all(s == dict(kind=1, change=3, manifest=m["f"], size=1, mode=0)
                   for page in desc for _, s in page)
        # revision 4: the 5,121st descendant is a sixth page, a tombstone counts
        pages = descendant_pages(c, r.id, r.main, 4, "d/e")
        desc = [pages[0][1][1:]] + [page for _, page in pages[1:]]
        assert [len(p) for p in desc] == [1024] * 5 + [1]
        assert all(len(page) <= 5120 for _, page in pages)
        assert [cur for cur, _ in pages] == [names[i * 1024 - 1] for i in range(1, 6)] + [None]
        flat = [e for page in desc for e in page]
        assert [p for p, _ in flat] == names + ["d/e/g"]
        assert flat[7][1] == dict(kind=2, change=4)
        assert flat[5120][1]["kind"] == 1 and flat[5120][1]["change"] == 4
        # past the last descendant nothing is left: the last one as cursor is an empty end
        assert descendants(c, r.id, r.main, 4, "d/e", "d/e/g") == (None, [])
