"""Cherry-picks over Scribe through the real cairnd (docs/protocol/scribe.md 7.9):
cherry_pick_info (32) and cherry_pick_submit (33): which changes qualify, the
duplicate pick as a recorded rejection, a target that moved on (unrelated
paths accepted, integration path dependencies rejected), replay of one
operation, operation_outcome, and the provenance on log rows.  The client is
tests/scribe/scribe_wire.py, written from the protocol document."""
import os

import pytest

from cairnutil import restore_in_place
from scribe_wire import ADD, CHANGESET, ERR, MODIFY, OP, Conn, changeset_encode, changeset_id
from test_scribe_server import ARGS, Repo, addr, raises


@pytest.fixture
def srv(server_factory):
    return server_factory(args=ARGS, wait_for=("scribe",))


def pick_info(c, repo, target, source, change):
    d = c.dec(c.call(OP["cherry_pick_info"],
                     c.enc().raw(repo).raw(target).raw(source).u64(change).bytes()))
    out = dict(target=c.branch_info_dec(d), source=c.branch_info_dec(d), parent_branch=d.raw(16),
               parent=d.u64(), already_applied=d.bool())
    d.end()
    return out


def pick_payload(r, target, head, source, change, entries, message="pick", op=None):
    """The cherry_pick_submit payload of entries on target planned at head."""
    cs = changeset_encode(entries)
    cid = changeset_id(cs)
    r.c.put_objects(r.id, [(CHANGESET, cid, cs)])
    sub = r.c.submit_payload(r.id, r.inc, op or os.urandom(16), target, r.ws, head, cid, "ann",
                             message)
    return r.c.enc().u32(len(sub)).raw(sub).u64(head).raw(source).u64(change).bytes()


def pick(c, payload):
    d = c.dec(c.call(OP["cherry_pick_submit"], payload))
    o = c.outcome_dec(d)
    d.end()
    return o


def submit_on(r, branch, base, entries, message="msg"):
    cs = changeset_encode(entries)
    cid = changeset_id(cs)
    r.c.put_objects(r.id, [(CHANGESET, cid, cs)])
    o = r.c.submit(r.id, r.inc, os.urandom(16), branch, r.ws, base, cid, "ann", message)
    assert o["outcome"] == 1, o
    return o["change"]


@pytest.fixture
def hist(srv):
    """main: 1 adds a.txt, b.txt; feature from main@1: 2 modifies a.txt;
    main: 3 adds c.txt."""
    c = Conn(addr(srv))
    r = Repo(c)
    r.mids = r.upload({"one": b"one", "two": b"two", "three": b"three", "four": b"four"})
    m = r.mids
    assert r.submit([(ADD, "a.txt", m["one"], 0, None), (ADD, "b.txt", m["one"], 0, None)],
                    "base")["change"] == 1
    r.feat = os.urandom(16)
    assert c.branch_create(r.id, r.inc, os.urandom(16), r.feat, "feature", r.main,
                           1)["outcome"] == 1
    assert submit_on(r, r.feat, 1, [(MODIFY, "a.txt", m["two"], 0, None)], "fix a") == 2
    assert submit_on(r, r.main, 1, [(ADD, "c.txt", m["three"], 0, None)]) == 3
    yield r
    c.close()


def test_info_qualification(hist):
    r, c = hist, hist.c
    info = pick_info(c, r.id, r.main, r.feat, 2)
    assert info["target"]["id"] == r.main and info["target"]["head"] == 3
    assert info["source"]["id"] == r.feat and info["source"]["head"] == 2
    assert info["source"]["origin"] == (r.main, 1)
    assert (info["parent_branch"], info["parent"], info["already_applied"]) == (r.main, 1, False)
    # the change must be an ordinary commit accepted on the source itself
    raises("change_not_pickable", pick_info, c, r.id, r.main, r.feat, 1)
    raises("change_not_pickable", pick_info, c, r.id, r.feat, r.main, 2)
    raises("change_not_found", pick_info, c, r.id, r.main, r.feat, 99)
    raises("branch_not_found", pick_info, c, r.id, r.main, os.urandom(16), 2)
    # a change already in the target's ancestry: feature holds main's change 1
    assert pick_info(c, r.id, r.feat, r.main, 1)["already_applied"] is True
    # the first commit of a repository has no parent
    first = pick_info(c, r.id, r.feat, r.main, 1)
    assert (first["parent_branch"], first["parent"]) == (r.main, 0)
    raises("malformed", c.call, OP["cherry_pick_info"], r.id + r.main + r.feat)


def test_pick_replay_provenance_duplicate(hist):
    r, c, m = hist, hist.c, hist.mids
    op = os.urandom(16)
    payload = pick_payload(r, r.main, 3, r.feat, 2, [(MODIFY, "a.txt", m["two"], 0, None)],
                           "fix a (picked from feature@2)", op)
    o = pick(c, payload)
    assert o["outcome"] == 1 and o["change"] == 4
    # the same request replays the same change; the outcome is recorded
    assert pick(c, payload) == o
    assert c.operation_outcome(r.id, op) == (1, o)
    # the same operation with another intent (any field) is refused
    for other in (pick_payload(r, r.main, 3, r.feat, 2, [(MODIFY, "a.txt", m["two"], 0, None)],
                               "another message", op),
                  pick_payload(r, r.main, 3, r.main, 1, [(MODIFY, "a.txt", m["two"], 0, None)],
                               "fix a (picked from feature@2)", op)):
        raises("operation_intent_mismatch", pick, c, other)
    # provenance on the log row, one parent, no merge parent
    row = c.log(r.id, r.main, limit=1)[0]
    assert row["change"] == 4 and row["pick"] == (r.feat, 2)
    assert row["merge"] is None and row["parent"] == 3
    assert all(x["pick"] is None for x in c.log(r.id, r.main)[1:])
    rows, _, _, _ = c.tree_page(r.id, r.main, 4)
    assert [(x["path"], x["last_change"]) for x in rows] == [
        ("a.txt", 4), ("b.txt", 1), ("c.txt", 3)]
    # provenance is not ancestry: the merge base of feature into main stays the fork
    assert c.merge_base(r.id, r.main, 4, r.feat, 2) == (r.main, 1)
    # a second pick of the same change is a recorded rejection
    assert pick_info(c, r.id, r.main, r.feat, 2)["already_applied"] is True
    op2 = os.urandom(16)
    dup = pick(c, pick_payload(r, r.main, 4, r.feat, 2, [(MODIFY, "b.txt", m["two"], 0, None)],
                               "again", op2))
    assert dup["outcome"] == 2 and dup["code"] == ERR["already_applied"] and dup["head"] == 4
    assert c.operation_outcome(r.id, op2) == (1, dup)
    assert c.branch_info(r.id, bid=r.main)["head"] == 4


def test_competing_picks(hist):
    r, c, m = hist, hist.c, hist.mids
    entries = [(MODIFY, "a.txt", m["two"], 0, None)]
    first = pick(c, pick_payload(r, r.main, 3, r.feat, 2, entries))
    second = pick(c, pick_payload(r, r.main, 3, r.feat, 2, entries))
    assert first["outcome"] == 1
    assert second["outcome"] == 2 and second["code"] == ERR["already_applied"]


def test_refusals_not_recorded(hist):
    r, c, m = hist, hist.c, hist.mids
    entries = [(MODIFY, "a.txt", m["two"], 0, None)]
    op = os.urandom(16)
    raises("change_not_pickable", pick, c, pick_payload(r, r.main, 3, r.feat, 1, entries, op=op))
    raises("change_not_found", pick, c, pick_payload(r, r.main, 3, r.feat, 77, entries, op=op))
    raises("branch_not_found", pick, c, pick_payload(r, r.main, 3, os.urandom(16), 2, entries,
                                                     op=op))
    raises("change_not_found", pick, c, pick_payload(r, r.main, 9, r.feat, 2, entries, op=op))
    assert c.operation_outcome(r.id, op) == (0, None)
    # a corrected request under the same operation id is accepted
    assert pick(c, pick_payload(r, r.main, 3, r.feat, 2, entries, op=op))["outcome"] == 1


def test_advanced_target(hist):
    r, c, m = hist, hist.c, hist.mids
    # feature: 4 modifies b.txt, 5 modifies c... (c.txt is main's), 5 adds E.txt
    assert submit_on(r, r.feat, 2, [(MODIFY, "b.txt", m["three"], 0, None)]) == 4
    assert submit_on(r, r.feat, 4, [(ADD, "E.txt", m["four"], 0, None)]) == 5
    assert submit_on(r, r.feat, 5, [(ADD, "docs/x", m["four"], 0, None)]) == 6
    # main moves on with unrelated paths: a pick planned at 3 still applies
    assert submit_on(r, r.main, 3, [(ADD, "d.txt", m["four"], 0, None)]) == 7
    o = pick(c, pick_payload(r, r.main, 3, r.feat, 4, [(MODIFY, "b.txt", m["three"], 0, None)]))
    assert o["outcome"] == 1 and o["change"] == 8
    assert c.log(r.id, r.main, limit=1)[0]["parent"] == 7
    # a case-fold alias changed on the target since the planned head: rejected
    assert submit_on(r, r.main, 8, [(ADD, "e.txt", m["one"], 0, None)]) == 9
    o = pick(c, pick_payload(r, r.main, 8, r.feat, 5, [(ADD, "E.txt", m["four"], 0, None)]))
    assert o["outcome"] == 2 and o["code"] == ERR["base_conflict"]
    assert o["head"] == 9 and o["paths"] == ["E.txt"]
    # an ancestor of a picked path changed: rejected too
    assert submit_on(r, r.main, 9, [(ADD, "docs", m["one"], 0, None)]) == 10
    o = pick(c, pick_payload(r, r.main, 9, r.feat, 6, [(ADD, "docs/x", m["four"], 0, None)]))
    assert o["outcome"] == 2 and o["code"] == ERR["base_conflict"] and o["paths"] == ["docs/x"]
    assert c.branch_info(r.id, bid=r.main)["head"] == 10


def test_provenance_survives_backup(server_factory, tmp_path):
    data = tmp_path / "srv"
    s = server_factory(args=ARGS, data=data, wait_for=("scribe",))
    with Conn(addr(s)) as c:
        r = Repo(c)
        m = r.upload({"one": b"one", "two": b"two"})
        assert r.submit([(ADD, "a.txt", m["one"], 0, None)])["change"] == 1
        feat = os.urandom(16)
        assert c.branch_create(r.id, r.inc, os.urandom(16), feat, "feature", r.main,
                               1)["outcome"] == 1
        assert submit_on(r, feat, 1, [(MODIFY, "a.txt", m["two"], 0, None)]) == 2
        o = pick(c, pick_payload(r, r.main, 1, feat, 2, [(MODIFY, "a.txt", m["two"], 0, None)]))
        assert o["outcome"] == 1 and o["change"] == 3
    restore_in_place(s, data, tmp_path)
    with Conn(addr(s)) as c:
        assert c.log(r.id, r.main, limit=1)[0]["pick"] == (feat, 2)
        assert pick_info(c, r.id, r.main, feat, 2)["already_applied"] is True
