"""The web console on a fleet (docs/console.md, "Sessions"): two cairnd nodes
on one PostgreSQL database share the console_sessions rows, so a session
made on node A is good on node B; a token revoked through B's console ends
the session on A within 2 s (identity's topic invalidates A's token cache,
and A re-checks the token on every request); a sign-out on A ends the
session on B at once (the row is gone; no node caches sessions)."""
import json
import os
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "console"))
from fleetutil import Fleet, needs_pg, pg  # noqa: E402,F401
from conftest import ADMIN_TOKEN, binary, run  # noqa: E402
from test_console_session import API, Console  # noqa: E402

pytestmark = needs_pg

BOUND = 2.0  # seconds: the fleet's revocation bound (issue 24)


@pytest.fixture(scope="module")
def fleet(pg, tmp_path_factory):
    f = Fleet(pg, tmp_path_factory.mktemp("console"), "console", count=2)
    try:
        yield f
    finally:
        bad = f.stop()
        assert not bad, bad[0][-4000:]


def consoles(fleet):
    return [Console(n.server.addrs["http"]) for n in fleet.nodes]


def new_token(fleet, account):
    base = [binary("cairn"), "admin", "--meta", fleet.uri, "--identity-key", fleet.key]
    r = run(base + ["account", "create", account])
    assert r.returncode == 0, r.stderr
    r = run(base + ["token", "create", "--account", account, "--perm", "all"])
    assert r.returncode == 0, r.stderr
    return r.stdout.strip().splitlines()[-1]


def status(c, path="buckets"):
    return c.request("GET", API + path)[0]


def test_session_made_on_one_node_works_on_the_other(fleet):
    a, b = consoles(fleet)
    token = new_token(fleet, "cora")
    st, _, body = a.login(token)
    assert st == 200 and json.loads(body)["node"] == "n0"
    b.cookie = a.cookie
    assert status(b) == 200
    st, _, body = b.request("GET", API + "session")
    assert st == 200 and json.loads(body)["node"] == "n1", body
    # an admin on B sees the session A made
    admin = consoles(fleet)[1]
    assert admin.login(ADMIN_TOKEN)[0] == 200
    st, _, body = admin.request("GET", API + "sessions")
    assert st == 200 and "cora" in [x["account"] for x in json.loads(body)["sessions"]]


def test_token_revoked_on_b_ends_the_session_on_a(fleet):
    a, b = consoles(fleet)
    token = new_token(fleet, "dove")
    assert a.login(token)[0] == 200
    for _ in range(3):  # the token's state is now in A's cache
        assert status(a) == 200
    admin = b
    assert admin.login(ADMIN_TOKEN)[0] == 200
    st, _, _ = admin.mutate("DELETE", API + "tokens/" + token.split(":", 1)[0])
    assert st == 204
    t0 = time.monotonic()
    while status(a) != 401:
        assert time.monotonic() - t0 < 3 * BOUND, "A still serves a revoked token's session"
        time.sleep(0.02)
    took = time.monotonic() - t0
    assert took < BOUND, took
    # the row is gone: B refuses the cookie too, and it stays refused
    b.cookie = a.cookie
    assert status(b) == 401 and status(a) == 401


def test_sign_out_on_a_ends_the_session_on_b(fleet):
    a, b = consoles(fleet)
    token = new_token(fleet, "emmy")
    assert a.login(token)[0] == 200
    b.cookie = a.cookie
    assert status(b) == 200
    st, hd, _ = a.mutate("DELETE", API + "session")
    assert st == 204 and "Max-Age=0" in hd["Set-Cookie"]
    assert status(b) == 401
    assert b.request("GET", API + "session")[0] == 401


def test_disable_and_enable_with_no_request_between_on_postgresql(fleet):
    """`cairn admin` disabling the account deletes its session rows in the
    same transaction (on PostgreSQL too): enabled again before the browser's
    next request, the session is still gone on every node; revoking a token
    deletes its rows the same way."""
    a, b = consoles(fleet)
    token = new_token(fleet, "ezra")
    assert a.login(token)[0] == 200
    b.cookie = a.cookie
    base = [binary("cairn"), "admin", "--meta", fleet.uri, "--identity-key", fleet.key]
    for verb in ("disable", "enable"):
        r = run(base + ["account", verb, "ezra"])
        assert r.returncode == 0, r.stderr
    assert status(a) == 401 and status(b) == 401
    assert a.login(token)[0] == 200
    r = run(base + ["token", "revoke", token.split(":", 1)[0]])
    assert r.returncode == 0, r.stderr
    admin = consoles(fleet)[1]
    assert admin.login(ADMIN_TOKEN)[0] == 200
    st, _, body = admin.request("GET", API + "sessions")
    assert st == 200 and "ezra" not in [x["account"] for x in json.loads(body)["sessions"]]
