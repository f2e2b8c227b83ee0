"""Workspace lifecycle over Scribe through the real cairnd
(docs/protocol/scribe.md 7.11): workspace_register (12) is idempotent, may
change the label and the branch but never the tags; workspace_list (34)
pages at 128 by workspace id (plaintext: own and all both list everything);
workspace_remove (35) is a recorded operation in the mutation namespace
(replay, intent mismatch, incarnation mismatch), refused with a recorded
lock_held while the workspace holds locks; a retired workspace is refused
with workspace_retired by registration, pin_objects, submit (9, 24, 33) and
lock requests; a removal whose reply is lost to a kill -9 is resolved by
workspace_remove_outcome (36).  The layouts are written here from the
document."""
import os

import pytest

from scribe_fixtures import repo, srv  # noqa: F401 (the fixtures)
from scribe_wire import ADD, CHUNK, ERR, MODIFY, OP, Conn, chunk_id
from test_scribe_cherry import pick, pick_payload, submit_on
from test_scribe_locks import acquire, release
from test_scribe_server import ARGS, Repo, addr, raises

OP_REGISTER, OP_WS_LIST, OP_WS_REMOVE, OP_WS_OUTCOME = 12, 34, 35, 36


def row_dec(d):
    w = dict(workspace=d.raw(16), branch=d.raw(16))
    w["owner"] = d.raw(16) if d.bool() else None
    w["label"] = d.str16().decode()
    w["tags"] = [d.str16().decode() for _ in range(d.u16())]
    w["created"] = d.u64()
    w["locks"] = d.bool()
    return w


def register(c, repo, ws, branch, label="host:/dir", tags=()):
    e = c.enc().raw(repo).raw(ws).raw(branch).str16(label).u16(len(tags))
    for t in tags:
        e.str16(t)
    d = c.dec(c.call(OP_REGISTER, e.bytes()))
    w = row_dec(d)
    d.end()
    return w


def ws_page(c, repo, scope=0, cursor=None, limit=128):
    e = c.enc().raw(repo).u8(scope).bool(cursor is not None).raw(cursor or bytes(16)).u32(limit)
    d = c.dec(c.call(OP_WS_LIST, e.bytes()))
    rows = [row_dec(d) for _ in range(d.u32())]
    more = d.bool()
    d.end()
    return rows, more


def removal_dec(c, body):
    d = c.dec(body)
    o = dict(operation=d.raw(16), code=d.u16())
    if o["code"] == 0:
        o["retired"] = d.u64()
    else:
        o["detail"] = d.str16().decode()
    d.end()
    return o


def remove(c, r, ws, op=None, inc=None):
    body = c.enc().raw(r.id).raw(inc or r.inc).raw(op or os.urandom(16)).raw(ws).bytes()
    return removal_dec(c, c.call(OP_WS_REMOVE, body))


def removal_outcome(c, repo, op):
    return removal_dec(c, c.call(OP_WS_OUTCOME, c.enc().raw(repo).raw(op).bytes()))


def test_register_idempotent_label_branch_tags(repo):
    r, c = repo, repo.c
    w = register(c, r.id, r.ws, r.main, "h1:/a", ["os=linux", "gpu"])
    assert w["workspace"] == r.ws and w["branch"] == r.main and w["label"] == "h1:/a"
    assert w["tags"] == ["gpu", "os=linux"] and w["owner"] is None and not w["locks"]
    assert w["created"] > 1_600_000_000_000
    # the same registration again: the same row
    assert register(c, r.id, r.ws, r.main, "h1:/a", ["gpu", "os=linux"]) == w
    # the label and the branch may change; created stays
    feat = os.urandom(16)
    assert c.branch_create(r.id, r.inc, os.urandom(16), feat, "feature", r.main,
                           0)["outcome"] == 1
    w2 = register(c, r.id, r.ws, feat, "h2:/b", ["os=linux", "gpu"])
    assert (w2["branch"], w2["label"], w2["created"]) == (feat, "h2:/b", w["created"])
    # tags never change: fewer, more or other tags are malformed
    for tags in ([], ["gpu"], ["gpu", "os=mac"], ["gpu", "os=linux", "x"]):
        raises("malformed", register, c, r.id, r.ws, r.main, "h1:/a", tags)
    # bad tags never reach the service
    for tags in (["GPU"], ["a b"], ["-x"], ["os=a", "os=b"], ["t%d" % i for i in range(17)]):
        raises("malformed", register, c, r.id, os.urandom(16), r.main, "x", tags)
    raises("branch_not_found", register, c, r.id, os.urandom(16), os.urandom(16))
    raises("repository_not_found", register, c, os.urandom(16), os.urandom(16), r.main)
    # has-locks follows the lock table
    assert acquire(c, r.id, r.ws, r.main, ["a.psd"]) == 1
    assert register(c, r.id, r.ws, feat, "h2:/b", ["gpu", "os=linux"])["locks"]
    rows, _ = ws_page(c, r.id)
    assert [x["locks"] for x in rows] == [True]


def test_list_pages_at_128_own_and_all(repo):
    r, c = repo, repo.c
    ids = sorted(os.urandom(16) for _ in range(300))
    for i, ws in enumerate(ids):
        register(c, r.id, ws, r.main, "h:/w%d" % i)
    for scope in (0, 1):  # plaintext: no principal, everything listed either way
        got, cursor, pages = [], None, 0
        while True:
            rows, more = ws_page(c, r.id, scope=scope, cursor=cursor, limit=1000)
            assert len(rows) <= 128
            got += [x["workspace"] for x in rows]
            pages += 1
            if not more:
                break
            cursor = rows[-1]["workspace"]
        assert got == ids and pages == 3
    rows, more = ws_page(c, r.id, limit=0)  # 0 means 1
    assert len(rows) == 1 and more
    rows, more = ws_page(c, r.id, cursor=ids[-2])
    assert [x["workspace"] for x in rows] == [ids[-1]] and not more
    # a retired workspace is no longer listed
    assert remove(c, r, ids[0])["code"] == 0
    rows, _ = ws_page(c, r.id, limit=2)
    assert rows[0]["workspace"] == ids[1]
    raises("malformed", c.call, OP_WS_LIST, c.enc().raw(r.id).u8(2).u8(0).raw(bytes(16))
           .u32(1).bytes())


def test_removal_with_locks_is_a_recorded_lock_held(repo):
    r, c = repo, repo.c
    register(c, r.id, r.ws, r.main)
    assert acquire(c, r.id, r.ws, r.main, ["hero.psd"]) == 1
    op = os.urandom(16)
    o = remove(c, r, r.ws, op)
    assert o["code"] == ERR["lock_held"] and "hero.psd" in o["detail"], o
    # recorded: the replay and 36 answer the same, even once the lock is gone
    assert release(c, r.id, r.ws, ["hero.psd"]) == 1
    assert remove(c, r, r.ws, op) == o
    assert removal_outcome(c, r.id, op) == o
    # the workspace is still live: a new removal retires it
    assert acquire(c, r.id, r.ws, r.main, ["x"]) == 1 and release(c, r.id, r.ws, ["x"]) == 1
    assert remove(c, r, r.ws)["code"] == 0


def test_retired_then_every_reuse_is_refused(repo):
    r, c = repo, repo.c
    m = r.upload({"one": b"one", "two": b"two"})
    assert r.submit([(ADD, "a.txt", m["one"], 0, None)])["outcome"] == 1
    feat = os.urandom(16)
    assert c.branch_create(r.id, r.inc, os.urandom(16), feat, "feature", r.main,
                           r.head)["outcome"] == 1
    picked = submit_on(r, feat, r.head, [(MODIFY, "a.txt", m["two"], 0, None)], "fix")
    register(c, r.id, r.ws, r.main, "h:/w", ["gpu"])
    # a pin under an intent of the workspace, released by the removal
    data = b"pinned chunk"
    intent = os.urandom(16)
    c.pin(r.id, r.ws, intent, [(CHUNK, chunk_id(data))])
    op = os.urandom(16)
    o = remove(c, r, r.ws, op)
    assert o["code"] == 0 and o["retired"] > 1_600_000_000_000 and o["operation"] == op
    raises("workspace_retired", register, c, r.id, r.ws, r.main, "h:/w", ["gpu"])
    raises("workspace_retired", c.pin, r.id, r.ws, os.urandom(16), [(CHUNK, chunk_id(data))])
    raises("workspace_retired", c.pin, r.id, r.ws, intent, [(CHUNK, chunk_id(data))])
    raises("workspace_retired", r.submit, [(MODIFY, "a.txt", m["two"], 0, None)])
    raises("workspace_retired", acquire, c, r.id, r.ws, r.main, ["a.txt"])
    raises("workspace_retired", release, c, r.id, r.ws, ["a.txt"])
    raises("workspace_retired", pick, c,
           pick_payload(r, r.main, r.head, feat, picked, [(MODIFY, "a.txt", m["two"], 0, None)]))
    cid = r.changeset([(MODIFY, "a.txt", m["two"], 0, None)])
    sub = c.submit_payload(r.id, r.inc, os.urandom(16), r.main, r.ws, r.head, cid, "ann", "merge")
    body = (c.enc().u32(len(sub)).raw(sub).u64(r.head).raw(feat).u64(picked).raw(r.main)
            .u64(r.head).bytes())
    raises("workspace_retired", c.call, OP["merge_submit"], body)
    # another workspace is unaffected; a never-registered id can be retired too
    other = os.urandom(16)
    register(c, r.id, other, r.main)
    assert acquire(c, r.id, other, r.main, ["a.txt"]) == 1
    stranger = os.urandom(16)
    assert remove(c, r, stranger)["code"] == 0
    raises("workspace_retired", register, c, r.id, stranger, r.main)
    # removing it again under a new operation answers the first retirement
    assert remove(c, r, r.ws)["retired"] == o["retired"]


def test_removal_replay_and_mismatches(repo):
    r, c = repo, repo.c
    register(c, r.id, r.ws, r.main)
    op = os.urandom(16)
    o = remove(c, r, r.ws, op)
    assert o["code"] == 0
    assert remove(c, r, r.ws, op) == o and removal_outcome(c, r.id, op) == o
    # the same id for another workspace, or a submit's id, is another intent
    raises("operation_intent_mismatch", remove, c, r, os.urandom(16), op)
    m = r.upload({"one": b"one"})
    r.ws = os.urandom(16)  # the removed one is retired: submits come from another
    raises("operation_intent_mismatch", r.submit, [(ADD, "a.txt", m["one"], 0, None)], op=op)
    raises("operation_intent_mismatch", c.operation_outcome, r.id, op)
    sop = os.urandom(16)
    assert r.submit([(ADD, "a.txt", m["one"], 0, None)], op=sop)["outcome"] == 1
    raises("operation_intent_mismatch", remove, c, r, os.urandom(16), sop)
    raises("operation_intent_mismatch", removal_outcome, c, r.id, sop)
    # a new removal from another incarnation; an unknown operation
    raises("incarnation_mismatch", remove, c, r, os.urandom(16), None, os.urandom(16))
    raises("change_not_found", removal_outcome, c, r.id, os.urandom(16))
    raises("malformed", c.call, OP_WS_REMOVE,
           c.enc().raw(r.id).raw(r.inc).raw(bytes(16)).raw(r.ws).bytes())


def test_kill9_after_durable_removal_is_resolved_by_36(server_factory, tmp_path):
    """The server dies (SIGKILL at a test-build fault point) after the
    removal committed and before its reply: the client sees no reply, and a
    restarted server answers 36 with the retirement."""
    data = tmp_path / "kill"
    s = server_factory(args=ARGS, data=data, wait_for=("scribe",),
                       env={"CAIRN_TEST_KILL_AFTER_WS_REMOVE": "1"})
    c = Conn(addr(s))
    r = Repo(c)
    register(c, r.id, r.ws, r.main)
    op = os.urandom(16)
    with pytest.raises(Exception) as ei:
        remove(c, r, r.ws, op)
    assert not hasattr(ei.value, "code"), ei.value  # no reply at all, not an error frame
    c.close()
    s.proc.wait(30)
    assert s.proc.returncode == -9
    s.stop()
    s2 = server_factory(args=ARGS, data=data, wait_for=("scribe",))
    with Conn(addr(s2)) as c2:
        o = removal_outcome(c2, r.id, op)
        assert o["code"] == 0 and o["operation"] == op
        raises("workspace_retired", register, c2, r.id, r.ws, r.main)
        assert remove(c2, r, r.ws, op) == o


def test_two_connections_and_restart_see_the_same_workspaces(server_factory, tmp_path):
    data = tmp_path / "shared"
    s = server_factory(args=ARGS, data=data, wait_for=("scribe",))
    c1, c2 = Conn(addr(s)), Conn(addr(s))
    r = Repo(c1)
    register(c1, r.id, r.ws, r.main, "h:/one", ["a"])
    assert [x["label"] for x in ws_page(c2, r.id)[0]] == ["h:/one"]
    raises("malformed", register, c2, r.id, r.ws, r.main, "h:/one", ["b"])
    c1.close()
    c2.close()
    s.stop()
    s2 = server_factory(args=ARGS, data=data, wait_for=("scribe",))
    with Conn(addr(s2)) as c3:
        rows, more = ws_page(c3, r.id, scope=1)
        assert [(x["workspace"], x["tags"]) for x in rows] == [(r.ws, ["a"])] and not more
