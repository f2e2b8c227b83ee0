"""Submit lock disposition through the real cairnd (docs/protocol/scribe.md
7.10): at durable acceptance an ordinary, merge or cherry-pick submit
releases the submitting workspace's locks on its submitted paths (keep
entries and both ends of a move included), never other paths or other
workspaces' locks; keep locks retains them and lets a move's destination
follow an owned source lock; a rejection keeps every lock; a replay of a
recorded operation returns its result and leaves a newer acquisition
alone."""
import os

import pytest

from scribe_wire import ADD, KEEP, MODIFY, MOVE, OP, Conn
from test_scribe_cherry import pick_payload, pick, submit_on
from test_scribe_locks import acquire, all_locks
from test_scribe_server import ARGS, Repo, addr


@pytest.fixture
def srv(server_factory):
    return server_factory(args=ARGS, wait_for=("scribe",))


@pytest.fixture
def repo(srv):
    """main at 1: a.psd, b.psd, c.psd, d.psd; locks by r.ws on all four and
    by r.ws2 on other.psd."""
    c = Conn(addr(srv))
    r = Repo(c)
    r.m = r.upload({"one": b"one", "two": b"two"})
    assert r.submit([(ADD, p, r.m["one"], 0, None) for p in ("a.psd", "b.psd", "c.psd",
                                                              "d.psd")])["outcome"] == 1
    r.ws2 = os.urandom(16)
    assert acquire(c, r.id, r.ws, r.main, ["a.psd", "b.psd", "c.psd", "d.psd"]) == 4
    assert acquire(c, r.id, r.ws2, r.main, ["other.psd"]) == 1
    yield r
    c.close()


def held(r):
    return {x["path"]: ("mine" if x["workspace"] == r.ws else "other") for x in all_locks(r.c, r.id)}


def submit(r, entries, keep_locks=False, op=None, base=None):
    cid = r.changeset(entries)
    o = r.c.submit(r.id, r.inc, op or os.urandom(16), r.main, r.ws,
                   r.head if base is None else base, cid, "ann", "m", keep_locks=keep_locks)
    if o["outcome"] == 1:
        r.head = o["change"]
    return o


def test_accepted_releases_submitted_paths_only(repo):
    r = repo
    o = submit(r, [(MODIFY, "a.psd", r.m["two"], 0, None), (KEEP, "b.psd", None, 0, None),
                   (MOVE, "e.psd", r.m["one"], 0, "c.psd")])
    assert o["outcome"] == 1, o
    # a.psd (modify), b.psd (keep), c.psd (move source) released; d.psd and
    # the other workspace's lock untouched; the move destination not locked
    assert held(r) == {"d.psd": "mine", "other.psd": "other"}


def test_keep_locks_and_move_destination(repo):
    r = repo
    o = submit(r, [(MODIFY, "a.psd", r.m["two"], 0, None), (MOVE, "e.psd", r.m["one"], 0, "c.psd")],
               keep_locks=True)
    assert o["outcome"] == 1, o
    assert held(r) == {"a.psd": "mine", "b.psd": "mine", "c.psd": "mine", "d.psd": "mine",
                       "e.psd": "mine", "other.psd": "other"}


def test_rejection_keeps_locks(repo):
    r = repo
    before = held(r)
    # adding a path that is live: a recorded path_conflict rejection
    o = submit(r, [(ADD, "a.psd", r.m["two"], 0, None)])
    assert o["outcome"] == 2, o
    assert held(r) == before


def test_replay_never_changes_a_newer_acquisition(repo):
    r = repo
    op = os.urandom(16)
    base = r.head
    o = submit(r, [(MODIFY, "a.psd", r.m["two"], 0, None)], op=op)
    assert o["outcome"] == 1 and "a.psd" not in held(r)
    assert acquire(r.c, r.id, r.ws, r.main, ["a.psd"]) == 1
    since = [x["since"] for x in all_locks(r.c, r.id) if x["path"] == "a.psd"]
    again = submit(r, [(MODIFY, "a.psd", r.m["two"], 0, None)], op=op, base=base)
    assert again == o
    assert [x["since"] for x in all_locks(r.c, r.id) if x["path"] == "a.psd"] == since
    assert r.c.operation_outcome(r.id, op) == (1, o)


def test_merge_and_cherry_pick_release(repo):
    r, c = repo, repo.c
    feat = os.urandom(16)
    assert c.branch_create(r.id, r.inc, os.urandom(16), feat, "feature", r.main,
                           r.head)["outcome"] == 1
    picked = submit_on(r, feat, r.head, [(MODIFY, "d.psd", r.m["two"], 0, None)], "fix d")
    o = pick(c, pick_payload(r, r.main, r.head, feat, picked, [(MODIFY, "d.psd", r.m["two"], 0,
                                                                 None)]))
    assert o["outcome"] == 1, o
    r.head = o["change"]
    assert "d.psd" not in held(r) and held(r)["a.psd"] == "mine"
    # a merge submit of feature's change to b.psd releases b.psd
    fixed = submit_on(r, feat, picked, [(MODIFY, "b.psd", r.m["two"], 0, None)], "fix b")
    cid = r.changeset([(MODIFY, "b.psd", r.m["two"], 0, None), (MODIFY, "d.psd", r.m["two"], 0,
                                                                 None)])
    sub = c.submit_payload(r.id, r.inc, os.urandom(16), r.main, r.ws, r.head, cid, "ann", "merge")
    body = (c.enc().u32(len(sub)).raw(sub).u64(r.head).raw(feat).u64(fixed).raw(r.main)
            .u64(1).bytes())
    d = c.dec(c.call(OP["merge_submit"], body))
    m = c.outcome_dec(d)
    d.end()
    assert m["outcome"] == 1, m
    assert held(r) == {"a.psd": "mine", "c.psd": "mine", "other.psd": "other"}
