"""Opcodes the other gateway tests do not reach, end to end through a real
plaintext gateway in front of two real storage servers (tests/scribe/
test_gateway.py's Fleet): changed_paths (13), branch_outcome (23),
get_chunks (30, an anonymous read: protocol 2 has no callers), cherry_pick_info
and cherry_pick_submit (32, 33: the repository id at offset 4 of 33),
describe_change (39), change_notes and change_note_history (40, 41) and
tree_proof (43, the repository id at offset 4).

Each read's reply through the gateway is byte for byte the owning storage
server's reply to the same request asked directly (streams included); a
mutation made through the gateway is read back directly, and its replay (or
its refusal) through the gateway equals the one asked directly.  An id at
offset 4 that no server holds is repository_not_found from the gateway,
since it routes by that id."""
import os

import pytest

from scribe_wire import ADD, ERR, MODIFY, OP, ScribeError
from test_gateway import Fleet
from test_scribe_cherry import pick, pick_info, pick_payload, submit_on
from test_scribe_proof import CHANGED, LIVE, page_req, proof_req, verify
from test_scribe_public import OP_CHUNKS, get_chunks, one_file
from test_scribe_server import Repo


class Pair:
    """A repository created through the gateway, with a connection to it
    through the gateway (r.c) and one straight to its storage server."""

    def __init__(self, fleet, name):
        self.gw = fleet.conn()
        self.r = Repo(self.gw, name)
        where = fleet.where(name)
        assert len(where) == 1, where
        self.direct = fleet.direct(where[0])

    def both(self, op, payload):
        """The reply (payload and flags, or the error) through the gateway
        and direct."""
        return answer(self.gw, op, payload), answer(self.direct, op, payload)

    def same(self, op, payload):
        got, want = self.both(op, payload)
        assert got == want, (op, got, want)
        return got

    def close(self):
        self.gw.close()
        self.direct.close()


def answer(c, op, payload):
    try:
        body = c.call(op, payload)
        return "ok", c.last_flags, body
    except ScribeError as e:
        return "error", e.code, e.message


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    f = Fleet(tmp_path_factory.mktemp("opcodes"))
    yield f
    f.stop()


@pytest.fixture
def hist(fleet, request):
    """main: 1 adds a.txt, b.txt; feature from main@1: 2 modifies a.txt;
    main: 3 adds c.txt.  Made through the gateway."""
    p = Pair(fleet, request.node.name.replace("[", "-").replace("]", "")[:100])
    r, c = p.r, p.gw
    r.mids = r.upload({"one": b"one", "two": b"two", "three": b"three"})
    m = r.mids
    assert r.submit([(ADD, "a.txt", m["one"], 0, None), (ADD, "b.txt", m["one"], 0, None)],
                    "base")["change"] == 1
    r.feat, r.feat_op = os.urandom(16), os.urandom(16)
    assert c.branch_create(r.id, r.inc, r.feat_op, r.feat, "feature", r.main,
                           1)["outcome"] == 1
    assert submit_on(r, r.feat, 1, [(MODIFY, "a.txt", m["two"], 0, None)], "fix a") == 2
    assert submit_on(r, r.main, 1, [(ADD, "c.txt", m["three"], 0, None)]) == 3
    yield p
    p.close()


def test_changed_paths_13(hist):
    r, c = hist.r, hist.gw
    e = c.enc().raw(r.id).raw(r.main).u64(0).u64(3).str16("").u32(1).bool(False)
    kind, _, body = hist.same(OP["changed_paths"], e.bytes())
    assert kind == "ok"
    # and its continuation, token and all
    rows, tok = c.changed_paths(r.id, r.main, 0, 3, limit=1)
    assert len(rows) == 1 and tok is not None
    e = c.enc().raw(r.id).raw(r.main).u64(0).u64(3).str16("").u32(10).bool(True).bytes16(tok)
    assert hist.same(OP["changed_paths"], e.bytes())[0] == "ok"
    assert [x["path"] for x in c.changed_paths(r.id, r.main, 0, 3)[0]] == [
        "a.txt", "b.txt", "c.txt"]
    # a refusal is storage's: an unknown branch
    e = c.enc().raw(r.id).raw(os.urandom(16)).u64(0).u64(3).str16("").u32(1).bool(False)
    assert hist.same(OP["changed_paths"], e.bytes())[:2] == ("error", ERR["branch_not_found"])


def test_branch_outcome_23(hist):
    r = hist.r
    kind, _, body = hist.same(OP["branch_outcome"], r.id + r.feat_op)
    assert kind == "ok" and body[0] == 2  # recorded, with its branch
    kind, _, body = hist.same(OP["branch_outcome"], r.id + os.urandom(16))
    assert kind == "ok" and body == b"\x00"  # never seen


def test_get_chunks_30_anonymous(hist):
    r = hist.r
    ch, mid = one_file(r, "d.txt", b"delta, read by anyone")
    r.submit([(ADD, "d.txt", mid, 0, None)])
    staged, smid = one_file(r, "s.txt", b"staged, never submitted")
    for c in (hist.gw, hist.direct):
        # no witness, the wrong witness, a staged manifest: absent items
        assert get_chunks(c, r.id, [(ch[0], mid), (ch[0], r.mids["one"]), (staged[0], smid),
                                    (os.urandom(32), mid)]) == [
            b"delta, read by anyone", None, None, None]
    # the whole reply, stream included, is storage's own
    e = hist.gw.enc().raw(r.id).u32(2).raw(ch[0]).raw(mid).raw(staged[0]).raw(smid).bytes()
    got = []
    for c in (hist.gw, hist.direct):
        c.send_frame(OP_CHUNKS, e)
        op, flags, _, body = c.recv_frame()
        got.append((op, flags, body, c.stream_items(c.dec(body).u32())))
    assert got[0] == got[1], got


def test_cherry_pick_32_33(hist):
    r, m = hist.r, hist.r.mids
    info = pick_info(hist.gw, r.id, r.main, r.feat, 2)
    assert info["already_applied"] is False and info["parent"] == 1
    assert hist.same(OP["cherry_pick_info"],
                     hist.gw.enc().raw(r.id).raw(r.main).raw(r.feat).u64(2).bytes())[0] == "ok"
    op = os.urandom(16)
    payload = pick_payload(r, r.main, 3, r.feat, 2, [(MODIFY, "a.txt", m["two"], 0, None)],
                           "fix a (picked from feature@2)", op)
    o = pick(hist.gw, payload)
    assert o["outcome"] == 1 and o["change"] == 4, o
    assert hist.direct.branch_info(r.id, bid=r.main)["head"] == 4
    assert hist.direct.operation_outcome(r.id, op) == (1, o)
    # the replay of the same operation, through the gateway and direct
    assert hist.same(OP["cherry_pick_submit"], payload)[0] == "ok"
    assert pick(hist.gw, payload) == o
    assert pick_info(hist.gw, r.id, r.main, r.feat, 2)["already_applied"] is True
    assert info["target"]["head"] == 3
    # the id at offset 4 routes the request: one no server holds
    sub_len = int.from_bytes(payload[:4], "little")
    stray = payload[:4] + os.urandom(16) + payload[20:]
    assert len(stray) == len(payload) and sub_len > 16
    got, _ = hist.both(OP["cherry_pick_submit"], stray)
    assert got[:2] == ("error", ERR["repository_not_found"]), got


def test_notes_39_40_41(hist):
    r, c = hist.r, hist.gw
    n = c.describe(r.id, 1, 0, "ann", "described through the gateway")
    assert n["revision"] == 1 and n["text"] == "described through the gateway"
    assert hist.direct.notes(r.id, [1])[0] == n
    c.describe(r.id, 1, 1, "bob", "and again")
    # a stale revision is refused alike (nothing is written by either)
    e = c.enc().raw(r.id).u64(1).u32(0).str16("ann").str32("stale").bytes()
    assert hist.same(OP["describe_change"], e)[:2] == ("error", ERR["note_revision_stale"])
    e = c.enc().raw(r.id).u64(7).u32(0).str16("ann").str32("x").bytes()
    assert hist.same(OP["describe_change"], e)[:2] == ("error", ERR["change_not_found"])
    e = c.enc().raw(r.id).u32(3).u64(1).u64(2).u64(9).bytes()
    assert hist.same(OP["change_notes"], e)[0] == "ok"
    assert [x and x["text"] for x in c.notes(r.id, [1, 2, 9])] == ["and again", None, None]
    e = c.enc().raw(r.id).u64(1).u32(0).u32(1).bytes()
    kind, _, body = hist.same(OP["change_note_history"], e)
    assert kind == "ok"
    hist_rows, more = c.note_history(r.id, 1, limit=1)
    assert len(hist_rows) == 1 and more
    assert [x["revision"] for x in c.note_history(r.id, 1)[0]] == [
        x["revision"] for x in hist.direct.note_history(r.id, 1)[0]]


def test_tree_proof_43(hist):
    r, c = hist.r, hist.gw
    _, _, content, revision = c.tree_page(r.id, r.main, 3)
    for req in (proof_req(page_req(r, 3), LIVE), proof_req(page_req(r, 3), CHANGED, lower=1),
                proof_req(page_req(r, 3, "a.txt", 1), LIVE)):
        kind, _, body = hist.same(OP["tree_proof"], req)
        assert kind == "ok" and body[:64] == content + revision
    # the proof verifies against the roots tree_page reported through the gateway
    got, _ = verify(c, page_req(r, 3), LIVE, (content, revision))
    assert got is not None and [v[0] for v in got[0]] == ["a.txt", "b.txt", "c.txt"]
    # the id at offset 4 routes the request
    page = page_req(r, 3)
    stray = proof_req(os.urandom(16) + page[16:], LIVE)
    got, _ = hist.both(OP["tree_proof"], stray)
    assert got[:2] == ("error", ERR["repository_not_found"]), got
