"""Branches over Scribe through the real cairnd (docs/protocol/scribe.md 7.8):
branch_list, branch_mutate (create and rename with operation identity),
branch_info, branch_outcome and operation_outcome's branch kind; submits on a
branch; an operation kept in a backup replayed after a restore, and a new one
from the old incarnation refused.  The client is tests/scribe/scribe_wire.py,
written from the protocol document."""
import os

import pytest

from cairnutil import restore_in_place
from scribe_wire import (ADD, CHANGESET, ERR, MODIFY, OP, Conn, Dec, changeset_encode,
                         changeset_id)
from test_scribe_server import ARGS, Repo, addr, raises


@pytest.fixture
def srv(server_factory):
    return server_factory(args=ARGS, wait_for=("scribe",))


def ids(first):
    return bytes(range(first, first + 16))


def submit_on(r, branch, base, entries, message="msg", op=None):
    """Submits entries on branch at base through r's connection."""
    cs = changeset_encode(entries)
    cid = changeset_id(cs)
    r.c.put_objects(r.id, [(CHANGESET, cid, cs)])
    return r.c.submit(r.id, r.inc, op or os.urandom(16), branch, r.ws, base, cid, "ann", message)


# ---- the client's bytes are the document's ------------------------------------------------
def test_fixture_bytes():
    c = Conn.__new__(Conn)
    c.be = False
    got = c.branch_create_payload(ids(0), ids(0x20), ids(0x30), ids(0x50), "feature", ids(0x10), 5)
    want = bytes.fromhex("000102030405060708090a0b0c0d0e0f" "202122232425262728292a2b2c2d2e2f"
                         "303132333435363738393a3b3c3d3e3f" "505152535455565758595a5b5c5d5e5f"
                         "0700") + b"feature" + bytes.fromhex(
                             "01" "101112131415161718191a1b1c1d1e1f" "0500000000000000")
    assert got == want
    info = (ids(0x50) + bytes.fromhex("0700") + b"feature" + bytes.fromhex(
        "0900000000000000" "01" "101112131415161718191a1b1c1d1e1f" "0500000000000000"
        "0068e5cf8b010000"))
    d = Dec(info)
    b = c.branch_info_dec(d)
    d.end()
    assert b == dict(id=ids(0x50), name="feature", head=9, origin=(ids(0x10), 5),
                     created_ms=1700000000000)


# ---- create, list, info, rename ----------------------------------------------------------------
def test_create_list_info_rename(srv):
    with Conn(addr(srv)) as c:
        r = Repo(c)
        mids = r.upload({"a.txt": b"one"})
        assert r.submit([(ADD, "a.txt", mids["a.txt"], 0, None)])["outcome"] == 1
        main = c.branch_info(r.id, bid=r.main)
        assert main["name"] == "main" and main["head"] == 1 and main["origin"] is None
        assert main["created_ms"] == r.info["created_ms"]
        assert c.branch_info(r.id, name="main") == main

        feat = os.urandom(16)
        o = c.branch_create(r.id, r.inc, os.urandom(16), feat, "feature", r.main, 1)
        assert o["outcome"] == 1
        b = o["branch"]
        assert b["id"] == feat and b["name"] == "feature" and b["head"] == 1
        assert b["origin"] == (r.main, 1) and b["created_ms"] > 0
        assert c.branch_info(r.id, bid=feat) == b
        assert c.branch_info(r.id, name="feature") == b
        for n in ("team/ui", "Zeta", "v1.2"):
            assert c.branch_create(r.id, r.inc, os.urandom(16), os.urandom(16), n, feat,
                                   1)["outcome"] == 1
        rows, more = c.branch_list(r.id)
        assert [x["name"] for x in rows] == ["Zeta", "feature", "main", "team/ui", "v1.2"]
        assert not more
        rows, more = c.branch_list(r.id, limit=2)
        assert [x["name"] for x in rows] == ["Zeta", "feature"] and more
        rows, more = c.branch_list(r.id, limit=2, after="feature")
        assert [x["name"] for x in rows] == ["main", "team/ui"] and more
        rows, more = c.branch_list(r.id, limit=2, after="team/ui")
        assert [x["name"] for x in rows] == ["v1.2"] and not more

        # rename: the old name is gone at once, the id and origin stay
        o = c.branch_rename(r.id, r.inc, os.urandom(16), feat, "feature/ui", "feature")
        assert o["outcome"] == 1 and o["branch"] == dict(b, name="feature/ui")
        raises("branch_not_found", c.branch_info, r.id, name="feature")
        assert "feature" not in [x["name"] for x in c.branch_list(r.id)[0]]
        # main can be renamed, and stays the repository's main branch
        o = c.branch_rename(r.id, r.inc, os.urandom(16), r.main, "trunk", "main")
        assert o["outcome"] == 1 and o["branch"]["name"] == "trunk"
        assert c.repo_info(rid=r.id)["main"] == r.main


# ---- operation identity ---------------------------------------------------------------------
def test_replay_and_refusals(srv):
    with Conn(addr(srv)) as c:
        r = Repo(c)
        op, feat = os.urandom(16), os.urandom(16)
        p = c.branch_create_payload(r.id, r.inc, op, feat, "feature", r.main, 0)
        first, raw = c.branch_mutate(p)
        assert first["outcome"] == 1
        # the same operation: the same outcome, byte for byte, and no second branch
        again, raw2 = c.branch_mutate(p)
        assert raw2 == raw
        assert len(c.branch_list(r.id)[0]) == 2
        # the same id with another intent, or another incarnation
        raises("operation_intent_mismatch", c.branch_create, r.id, r.inc, op, feat, "other",
               r.main, 0)
        raises("operation_intent_mismatch", c.branch_create, r.id, os.urandom(16), op, feat,
               "feature", r.main, 0)
        # a name taken (ignoring case): a recorded rejection, replayed as recorded
        op2 = os.urandom(16)
        p2 = c.branch_create_payload(r.id, r.inc, op2, os.urandom(16), "FEATURE", r.main, 0)
        o, raw = c.branch_mutate(p2)
        assert o["outcome"] == 2 and o["code"] == ERR["branch_exists"]
        assert c.branch_mutate(p2)[1] == raw
        kind, rec, _ = c.branch_outcome(r.id, op2)
        assert kind == 2 and rec == o
        # rename with a stale expected name
        op3 = os.urandom(16)
        o = c.branch_rename(r.id, r.inc, op3, feat, "feature2", "feat")
        assert o["outcome"] == 2 and o["code"] == ERR["name_mismatch"]
        assert c.operation_outcome(r.id, op3) == (2, o)
        # unknown branches, named in the message; nothing recorded for them
        ghost = bytes.fromhex("99" * 16)
        e = raises("branch_not_found", c.branch_rename, r.id, r.inc, os.urandom(16), ghost,
                   "x", "y")
        assert "99" * 16 in e.message
        op4 = os.urandom(16)
        raises("branch_not_found", c.branch_create, r.id, r.inc, op4, os.urandom(16), "x",
               ghost, 0)
        assert c.branch_outcome(r.id, op4)[0] == 0
        raises("branch_not_found", c.branch_info, r.id, bid=ghost)
        # a source change outside the source's lifetime
        raises("change_not_found", c.branch_create, r.id, r.inc, os.urandom(16),
               os.urandom(16), "x", r.main, 7)
        # an older incarnation: refused before anything is recorded
        op5 = os.urandom(16)
        raises("incarnation_mismatch", c.branch_create, r.id, os.urandom(16), op5,
               os.urandom(16), "y", r.main, 0)
        assert c.branch_outcome(r.id, op5)[0] == 0
        assert c.operation_outcome(r.id, op5) == (0, None)
        # names breaking the rule, and an action other than 1 and 2
        for bad in ("a@1", "-x", "a//b", ".hidden", "x" * 257):
            raises("malformed", c.call, OP["branch_mutate"],
                   c.branch_create_payload(r.id, r.inc, os.urandom(16), os.urandom(16), bad,
                                           r.main, 0))
        archive = (c.enc().raw(r.id).raw(r.inc).raw(os.urandom(16)).raw(feat).str16("feature")
                   .u8(3).bytes())
        raises("malformed", c.call, OP["branch_mutate"], archive)
        raises("repository_not_found", c.branch_list, os.urandom(16))


def test_branch_outcome_kinds(srv):
    with Conn(addr(srv)) as c:
        r = Repo(c)
        op = os.urandom(16)
        o, raw = c.branch_mutate(c.branch_create_payload(r.id, r.inc, op, os.urandom(16), "b1",
                                                         r.main, 0))
        kind, rec, body = c.branch_outcome(r.id, op)
        assert kind == 2 and rec == o and body == b"\x02" + raw
        assert c.operation_outcome(r.id, op) == (2, o)
        assert c.branch_outcome(r.id, os.urandom(16)) == (0, None, b"\x00")
        # an id a submit recorded is not a branch operation
        mids = r.upload({"a": b"a"})
        sop = os.urandom(16)
        assert r.submit([(ADD, "a", mids["a"], 0, None)], op=sop)["outcome"] == 1
        raises("operation_intent_mismatch", c.branch_outcome, r.id, sop)
        # ... nor may a branch mutation reuse it
        raises("operation_intent_mismatch", c.branch_create, r.id, r.inc, sop, os.urandom(16),
               "b2", r.main, 0)
        assert c.operation_outcome(r.id, sop)[0] == 1


# ---- submits on a branch --------------------------------------------------------------------
def test_submit_on_branch(srv):
    with Conn(addr(srv)) as c:
        r = Repo(c)
        mids = r.upload({"a.txt": b"one", "b.txt": b"two", "c.txt": b"three"})
        assert r.submit([(ADD, "a.txt", mids["a.txt"], 0, None)])["outcome"] == 1
        feat = os.urandom(16)
        assert c.branch_create(r.id, r.inc, os.urandom(16), feat, "feature", r.main,
                               1)["outcome"] == 1
        # main moves on; the branch starts from change 1
        assert r.submit([(ADD, "b.txt", mids["b.txt"], 0, None)])["outcome"] == 1
        o = submit_on(r, feat, 1, [(ADD, "c.txt", mids["c.txt"], 0, None),
                                   (MODIFY, "a.txt", mids["b.txt"], 0, None)], "on feature")
        assert o["outcome"] == 1 and o["change"] == 3
        info = c.branch_info(r.id, bid=feat)
        assert info["head"] == 3 and info["origin"] == (r.main, 1)
        assert c.branch_info(r.id, bid=r.main)["head"] == 2
        assert c.repo_info(rid=r.id)["head"] == 3
        rows, _, _, _ = c.tree_page(r.id, feat, 3)
        assert [(x["path"], x["last_change"]) for x in rows] == [("a.txt", 3), ("c.txt", 3)]
        rows, _, _, _ = c.tree_page(r.id, feat, 1)
        assert [x["path"] for x in rows] == ["a.txt"]
        rows, _, _, _ = c.tree_page(r.id, r.main, 2)
        assert [x["path"] for x in rows] == ["a.txt", "b.txt"]
        raises("change_not_found", c.tree_page, r.id, feat, 0)
        # the branch's log: its own change, then what it inherited from main
        log = c.log(r.id, feat)
        assert [(x["change"], x["branch_name"], x["parent"]) for x in log] == [
            (3, "feature", 1), (1, "main", 0)]
        assert log[0]["branch"] == feat and log[1]["branch"] == r.main
        log = c.log(r.id, feat, path="a.txt")
        assert [(x["change"], x["branch_name"]) for x in log] == [(3, "feature"), (1, "main")]
        # a case-fold alias of a path the branch holds is a conflict there only
        mids2 = r.upload({"B": b"bee"})
        o = submit_on(r, feat, 3, [(ADD, "A.TXT", mids2["B"], 0, None)])
        assert o["outcome"] == 2 and o["code"] == ERR["path_conflict"]
        o = submit_on(r, feat, 3, [(ADD, "B.TXT", mids2["B"], 0, None)])
        assert o["outcome"] == 1


# ---- backup and restore ---------------------------------------------------------------------
def test_operation_survives_restore(server_factory, tmp_path):
    data = tmp_path / "srv"
    s = server_factory(args=ARGS, data=data, wait_for=("scribe",))
    op, feat = os.urandom(16), os.urandom(16)
    with Conn(addr(s)) as c:
        r = Repo(c)
        payload = c.branch_create_payload(r.id, r.inc, op, feat, "feature", r.main, 0)
        first, raw = c.branch_mutate(payload)
        assert first["outcome"] == 1
    restore_in_place(s, data, tmp_path)
    with Conn(addr(s)) as c:
        info = c.repo_info(rid=r.id)
        assert info["incarnation"] != r.inc
        # the exact intent kept in the backup finishes: the same bytes
        again, raw2 = c.branch_mutate(payload)
        assert raw2 == raw
        assert c.branch_info(r.id, bid=feat) == first["branch"]
        # a new operation from the old incarnation is refused, nothing recorded
        op2 = os.urandom(16)
        raises("incarnation_mismatch", c.branch_create, r.id, r.inc, op2, os.urandom(16),
               "later", feat, 0)
        assert c.branch_outcome(r.id, op2)[0] == 0
        o = c.branch_create(r.id, info["incarnation"], op2, os.urandom(16), "later", feat, 0)
        assert o["outcome"] == 1 and o["branch"]["origin"] == (feat, 0)


# ---- merges (section 7.9) -------------------------------------------------------------------
def test_merge_reads_and_submit(srv):
    with Conn(addr(srv)) as c:
        r = Repo(c)
        mids = r.upload({"one": b"one", "two": b"two", "three": b"three"})
        assert r.submit([(ADD, "a.txt", mids["one"], 0, None),
                         (ADD, "b.txt", mids["one"], 0, None)])["outcome"] == 1
        feat = os.urandom(16)
        assert c.branch_create(r.id, r.inc, os.urandom(16), feat, "feature", r.main,
                               1)["outcome"] == 1
        assert submit_on(r, feat, 1, [(MODIFY, "a.txt", mids["two"], 0, None)])["change"] == 2
        assert r.submit([(ADD, "c.txt", mids["three"], 0, None)])["change"] == 3

        # the reads a merge plan makes
        assert c.merge_base(r.id, r.main, 3, feat, 2) == (r.main, 1)
        assert c.merge_chains(r.id, 3, 2) == (1, 1, None, ["c.txt", "a.txt"])
        states = c.merge_states(r.id, feat, 2, ["a.txt", "zz"])
        assert states[0] == dict(kind=1, change=2, manifest=mids["two"], size=3, mode=0)
        assert states[1] is None
        assert c.merge_unchanged(r.id, r.main, 1, 3, ["b.txt"]) is True
        assert c.merge_unchanged(r.id, r.main, 1, 3, ["C.TXT"]) is False
        raises("change_not_found", c.merge_states, r.id, feat, 0, ["a.txt"])
        raises("branch_not_found", c.merge_base, r.id, os.urandom(16), 1, feat, 2)
        assert c.merge_origins(r.id, feat, 2, r.main, 3, ["a.txt", "c.txt", "zz"]) == [
            "a.txt", None, None]
        d = c.merge_read(c.enc().raw(r.id).u8(3).raw(feat).u64(2).str16("a.txt").bool(False)
                         .bytes())
        assert d.u8() == 3 and not d.bool() and d.u32() == 1    # the exact match
        raises("malformed", c.call, OP["merge_read"], c.enc().raw(r.id).u8(7).bytes())

        def merge(entries, base_branch, base, op):
            cs = changeset_encode(entries)
            cid = changeset_id(cs)
            c.put_objects(r.id, [(CHANGESET, cid, cs)])
            sub = c.submit_payload(r.id, r.inc, op, r.main, r.ws, 3, cid, "ann", "merge feature")
            return c.merge_submit(sub, 3, feat, 2, base_branch, base)

        op = os.urandom(16)
        full = [(MODIFY, "a.txt", mids["two"], 0, None)]
        # another base, or a path the source changed left out: refused, not recorded
        raises("base_mismatch", merge, full, r.main, 0, op)
        e = raises("merge_incomplete", merge, [(MODIFY, "c.txt", mids["one"], 0, None)],
                   r.main, 1, op)
        assert "a.txt" in e.message
        assert c.operation_outcome(r.id, op) == (0, None)
        # the corrected plan under the same operation id
        o = merge(full, r.main, 1, op)
        assert o["outcome"] == 1 and o["change"] == 4
        assert merge(full, r.main, 1, op) == o
        assert c.operation_outcome(r.id, op) == (1, o)
        log = c.log(r.id, r.main, limit=1)
        assert log[0]["change"] == 4 and log[0]["merge"] == (feat, 2) and log[0]["parent"] == 3
        assert c.merge_base(r.id, r.main, 4, feat, 2) == (feat, 2)
        rows, _, _, _ = c.tree_page(r.id, r.main, 4)
        assert [(x["path"], x["last_change"]) for x in rows] == [
            ("a.txt", 4), ("b.txt", 1), ("c.txt", 3)]
