"""Lock requests (14, 16, 17), the lock policy (29) and the workspace
lifecycle (12, 34-36) through the Scribe gateway (issue 19: "gateway-
forwarded"; docs/protocol/scribe-gateway.md): a `cairnd --gateway` in front
of two real storage servers, driven by the tests' wire client.

What it proves: each request reaches the repository's owning storage server
and its answer comes back unchanged — a lock taken through the gateway is
held on that server (seen by a direct connection, refused to another
workspace through the gateway with lock_held naming the holder), the policy
is the default text, a removal of a workspace holding a lock is a recorded
lock_held, a removal after the release retires it, 36 reads the outcome
through the gateway, and the retired id is refused (workspace_retired)."""
import os

import pytest

from scribe_wire import ERR, ScribeError
from test_gateway import Fleet
from test_scribe_lock_policy import OP_POLICY
from test_scribe_locks import acquire, all_locks, release
from test_scribe_workspaces import register, removal_outcome, remove, ws_page


@pytest.fixture
def fleet(tmp_path):
    f = Fleet(tmp_path)
    yield f
    f.stop()


class Info:
    def __init__(self, info):
        self.id, self.main, self.inc = info["id"], info["main"], info["incarnation"]


def test_locks_and_workspaces_are_forwarded_to_the_owner(fleet):
    with fleet.conn() as g, fleet.conn() as g2:
        r = Info(g.repo_create("locked"))
        owner = fleet.where("locked")
        assert len(owner) == 1
        a, b = os.urandom(16), os.urandom(16)
        assert register(g, r.id, a, r.main, "h:/a")["workspace"] == a
        assert register(g2, r.id, b, r.main, "h:/b")["workspace"] == b
        assert {w["workspace"] for w in ws_page(g, r.id, 1)[0]} == {a, b}
        # a lock through the gateway is held on the owning server
        assert acquire(g, r.id, a, r.main, ["art/hero.psd"]) == 1
        with fleet.direct(owner[0]) as d:
            assert [(x["path"], x["workspace"]) for x in all_locks(d, r.id)] == [
                ("art/hero.psd", a)]
        with pytest.raises(ScribeError) as ei:
            acquire(g2, r.id, b, r.main, ["Art/Hero.PSD"])
        assert ei.value.code == ERR["lock_held"] and a.hex() in str(ei.value), ei.value
        d = g.dec(g.call(OP_POLICY, r.id))
        assert (d.u64(), d.str32()) == (0, b"version = 1\n")
        # removal while holding a lock: a recorded lock_held; then retired
        op = os.urandom(16)
        o = remove(g, r, a, op)
        assert o["code"] == ERR["lock_held"], o
        assert removal_outcome(g2, r.id, op) == o
        assert release(g, r.id, a, ["art/hero.psd"]) == 1
        op = os.urandom(16)
        o = remove(g, r, a, op)
        assert o["code"] == 0 and o["retired"] > 0, o
        assert removal_outcome(g, r.id, op) == o
        with pytest.raises(ScribeError) as ei:
            register(g, r.id, a, r.main)
        assert ei.value.code == ERR["workspace_retired"]
        assert [w["workspace"] for w in ws_page(g2, r.id, 1)[0]] == [b]
