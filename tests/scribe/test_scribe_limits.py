"""The history budget through the real cairnd (docs/protocol/scribe.md 7.5,
7.9, 12, 13.9): 100,000 metadata visits or 32 MiB of lineage paths per read,
past it `limit_exceeded` and no rows, never a short answer; a narrower query
on the same repository still answers.  The client is
tests/scribe/scribe_wire.py, written from the protocol document.

- The path log's 32 MiB: a file moved 4,097 times between 8,192-byte paths
  (the longest canonical path), one submit per move, so the walk of the last
  path reads the source of every move, 4,097 x 8,192 bytes, one move past the
  budget, and the path one move earlier is exactly at it.  Building it takes
  4,098 submits (minutes on the ASan build), so that test runs only with
  CAIRN_SLOW_TESTS=1 (`make test-slow`); `make test` skips it.
- merge_read tag 4's 100,000 visits: 1,024 files modified 40 times each
  after the base, so one batch walks about 120,000 lineage visits; 41 submits.

And merge_read tag 3's page bound with the ancestors filled: a path whose
every ancestor holds an entry, the path, and exactly 1,024 descendants come
in one reply, each once; one descendant more pages on as 13.9 documents.
The 5,120-entry bound (4,095 ancestors + the path + 1,024) cannot be
reached with canonical paths: a path with n segments is at least 2n - 1
bytes and a descendant 2n + 1 <= 8,192, so a path that has descendants has
at most 4,094 ancestors and a reply at most 5,119 entries.  That largest
reply is not built here: each submit re-encodes the snapshot nodes along its
path, so a chain of k segments costs O(k^2) (600 segments took 208 s on the
ASan build under load); 63 ancestors exercise the same reply layout."""
import os
import subprocess
import tempfile

import pytest

from scribe_wire import ADD, CHANGESET, DELETE, MODIFY, MOVE, Conn, ScribeError, changeset_encode
from test_scribe_log_merges import descendant_pages
from test_scribe_server import ARGS, Repo, addr, raises

slow = pytest.mark.skipif(os.environ.get("CAIRN_SLOW_TESTS") != "1",
                          reason="slow: 4,098 submits (make test-slow)")

PATH_MAX = 8192
BUDGET_BYTES = 32 << 20
MOVES = BUDGET_BYTES // PATH_MAX + 1  # 4,097: the first chain past the budget


def long_path(i):
    """The i-th path of the chain: 8,192 bytes, distinct in its first segment."""
    head = "m%05d/" % i
    return head + "x" * (PATH_MAX - len(head))


@pytest.fixture
def srv(server_factory):
    return server_factory(args=ARGS, wait_for=("scribe",))


def changesets(entries):
    """[(id, encoding)] of each change set in entries (a list of entry lists),
    hashed by one b3sum run over files (scribe_wire hashes one object per
    process, too slow for thousands)."""
    encs = [changeset_encode(e) for e in entries]
    with tempfile.TemporaryDirectory() as d:
        names = []
        for i, enc in enumerate(encs):
            names.append(os.path.join(d, "%06d" % i))
            with open(names[-1], "wb") as f:
                f.write(b"cairn:changeset:v1\0" + enc)
        out = subprocess.run(["b3sum", "--no-names"] + names, capture_output=True, check=True,
                             text=True).stdout.split()
    return [(bytes.fromhex(h), enc) for h, enc in zip(out, encs)]


def submit_all(r, entries, first):
    """Submits each change set of entries in turn on main; the k-th is
    change first + k.  Change sets are put together up to 256 or 1 MiB a
    request."""
    sets = changesets(entries)
    batch, size = [], 0
    for k, (cid, enc) in enumerate(sets):
        batch.append((CHANGESET, cid, enc))
        size += len(enc)
        if len(batch) == 256 or size >= 1 << 20 or k == len(sets) - 1:
            r.c.put_objects(r.id, batch)
            batch, size = [], 0
    for k, (cid, _) in enumerate(sets):
        o = r.c.submit(r.id, r.inc, os.urandom(16), r.main, r.ws, r.head, cid, "ann", "msg")
        assert o["outcome"] == 1 and o["change"] == first + k, o
        r.head = o["change"]


def moved_chain(c, n):
    """A repository whose change 1 adds long_path(0) and change k + 1 moves
    long_path(k - 1) to long_path(k), for k = 1..n."""
    r = Repo(c, "limits")
    m = r.upload({"f": b"the file"})["f"]
    entries = [[(ADD, long_path(0), m, 0, None)]]
    entries += [[(MOVE, long_path(k), m, 0, long_path(k - 1))] for k in range(1, n + 1)]
    submit_all(r, entries, 1)
    return r


def log_or_error(c, r, path, **kw):
    """The follow-merges log's first page of path, or the error code."""
    try:
        return c.log(r.id, r.main, path, follow=True, limit=2, **kw)
    except ScribeError as e:
        return e.code


@slow
def test_follow_log_past_the_path_budget(srv):
    with Conn(addr(srv), timeout=120) as c:
        r = moved_chain(c, MOVES)
        last = long_path(MOVES)
        # past 32 MiB of move sources: an error, never a short page; the
        # ordinary path log follows the same moves and shares the budget
        e = raises("limit_exceeded", c.log, r.id, r.main, last, follow=True, limit=2)
        assert "32 MiB" in e.message
        raises("limit_exceeded", c.log, r.id, r.main, last, follow=False, limit=2)
        # the same chain one move shorter is exactly 32 MiB: it answers, newest
        # first, the move away (a delete at the source) and the move in
        page = log_or_error(c, r, long_path(MOVES - 1))
        assert isinstance(page, list), page
        assert [(row["change"], row["event"]) for row in page] == [(MOVES + 1, DELETE),
                                                                   (MOVES, MOVE)]
        assert page[1]["path"] == long_path(MOVES - 1)
        assert page[1]["from"] == long_path(MOVES - 2)
        # narrower: the tenth path's history is its ten moves and the add
        rows = c.log(r.id, r.main, long_path(10), follow=True, limit=100)
        moves = [row for row in rows if row["event"] == MOVE]
        assert [(row["change"], row["path"]) for row in moves] == [
            (k + 1, long_path(k)) for k in range(10, 0, -1)]
        assert rows[-1]["change"] == 1 and rows[-1]["event"] == ADD
        assert rows[-1]["path"] == long_path(0)
        # the over-budget file itself is intact: the head's tree holds it alone
        rows = c.tree_page(r.id, r.main, MOVES + 1, limit=5)[0]
        assert [row["path"] for row in rows] == [long_path(MOVES)]


def test_merge_origins_past_the_visit_budget(srv):
    with Conn(addr(srv), timeout=120) as c:
        r = Repo(c, "origins")
        names = ["d%02d/f%04d" % (i // 100, i) for i in range(1024)]
        m = r.upload({"a": b"one", "b": b"two"})
        entries = [[(ADD, n, m["a"], 0, None) for n in names]]
        entries += [[(MODIFY, n, m["b" if k % 2 else "a"], 0, None) for n in names]
                    for k in range(1, 41)]
        submit_all(r, entries, 1)
        # every path's walk goes back through its 40 revisions to the base file
        # (and looks forward from each): the batch of 1,024 passes the budget
        e = raises("limit_exceeded", c.merge_origins, r.id, r.main, 41, r.main, 1, names)
        assert "budget" in e.message
        # a quarter of the batch stays inside it: each path's base file is itself
        assert c.merge_origins(r.id, r.main, 41, r.main, 1, names[:256]) == names[:256]
        # and nearer the base the whole batch answers
        assert c.merge_origins(r.id, r.main, 5, r.main, 1, names) == names


# two of these make a descendant's last segment: no letters (no case-fold
# aliases), no '/' or '.' (no "..")
NAME_BYTES = sorted(set(map(chr, range(0x21, 0x7f))) - set("/.") -
                    set(map(chr, range(0x41, 0x5b))) - set(map(chr, range(0x61, 0x7b))))


def chain(depth):
    """The path of depth segments "s/s/.../s"."""
    return "/".join(["s"] * depth)


def test_merge_read_descendants_full_first_page(srv):
    depth = 64
    with Conn(addr(srv), timeout=120) as c:
        r = Repo(c, "deep")
        m = r.upload({"f": b"f"})["f"]
        # change k holds chain(k) alone (k = 1..depth): every ancestor of
        # chain(depth) is a tombstone of the change after its own
        entries = [[(ADD, chain(1), m, 0, None)]]
        entries += [[(DELETE, chain(k - 1), None, 0, None), (ADD, chain(k), m, 0, None)]
                    for k in range(2, depth + 1)]
        path = chain(depth)
        names = ["%s/%s" % (path, a + b) for a in NAME_BYTES for b in NAME_BYTES][:1025]
        entries.append([(DELETE, path, None, 0, None)] +
                       [(ADD, n, m, 0, None) for n in names[:1024]])
        entries.append([(ADD, names[1024], m, 0, None)])
        submit_all(r, entries, 1)
        # revision depth + 1: one reply, no cursor — the ancestors shortest
        # first, the path, then the 1,024 descendants, each once
        pages = descendant_pages(c, r.id, r.main, depth + 1, path)
        assert len(pages) == 1 and pages[0][0] is None
        page = pages[0][1]
        assert len(page) == depth + 1024 <= 5120
        assert [p for p, _ in page] == [chain(k) for k in range(1, depth + 1)] + names[:1024]
        assert [s for _, s in page[:depth]] == [dict(kind=2, change=k + 1)
                                                for k in range(1, depth + 1)]
        assert all(s == dict(kind=1, change=depth + 1, manifest=m, size=1, mode=0)
                   for _, s in page[depth:])
        # revision depth + 2: the 1,025th descendant is a second page
        pages = descendant_pages(c, r.id, r.main, depth + 2, path)
        assert [cur for cur, _ in pages] == [names[1023], None]
        assert [len(p) for _, p in pages] == [depth + 1024, 1]
        assert pages[1][1] == [(names[1024], dict(kind=1, change=depth + 2, manifest=m, size=1,
                                                  mode=0))]
