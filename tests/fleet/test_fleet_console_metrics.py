"""The console's metrics per node in a fleet (docs/console.md, "Metrics"):
GET metrics lists the registry's nodes for the view's picker, and
GET metrics?node=ID on one node answers another node's own samples, asked
from that node's advertised URL with the caller's session (sessions are
rows every node shares; no node credential exists).  Three nodes on one
PostgreSQL database: n0 and n1 advertise their HTTP listeners, n2 does not.
Traffic made on n1 only shows in n1's samples read through n0; an unknown
node is 404 NoSuchNode, a node with no advertised URL 503 NodeUnavailable,
and no session is 401 before any peer is asked.  A peer whose console has
a listener of its own (--console ADDR) is asked there (its registry row's
console URL; a fleet of two of its own).  The view's picker is
driven in Chromium by console_picker.mjs (when node, chromium and the
console tests' npm packages are there)."""
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.parse

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "console"))
from fleetutil import Fleet, free_port, needs_pg, pg  # noqa: E402,F401
from conftest import ADMIN_TOKEN, binary, run  # noqa: E402
from test_console_session import API, Console  # noqa: E402

pytestmark = needs_pg


class AdvertisedFleet(Fleet):
    """Nodes n0 and n1 on fixed HTTP ports they advertise; n2 advertises none."""

    ADVERTISED = 2

    def args(self, i):
        a = super().args(i)
        if i >= self.ADVERTISED:
            return a
        ports = self.__dict__.setdefault("ports", {})
        port = ports.setdefault(i, free_port())
        a[a.index("--http") + 1] = "127.0.0.1:%d" % port
        return a + ["--advertise", "http://127.0.0.1:%d" % port]


@pytest.fixture(scope="module")
def fleet(pg, tmp_path_factory):
    f = AdvertisedFleet(pg, tmp_path_factory.mktemp("metrics"), "metrics", count=3,
                        env={"CAIRN_CONSOLE_METRICS_MS": "200"})
    try:
        yield f
    finally:
        bad = f.stop()
        assert not bad, bad[0][-4000:]


def get(c, path):
    st, _, body = c.request("GET", API + path)
    return st, json.loads(body) if body else None


def http_4xx(doc):
    return sum(s["requests"].get("http", {}).get("4xx", 0) for s in doc["samples"])


def test_the_picker_lists_the_nodes_and_reads_another_nodes_samples(fleet):
    a = Console(fleet.nodes[0].server.addrs["http"])
    b = Console(fleet.nodes[1].server.addrs["http"])
    assert a.login(ADMIN_TOKEN)[0] == 200
    st, doc = get(a, "metrics")
    assert st == 200 and doc["node"] == "n0"
    assert sorted((n["id"], n["up"], n["self"]) for n in doc["nodes"]) == [
        ("n0", True, True), ("n1", True, False), ("n2", True, False)], doc["nodes"]
    # Traffic on n1 only: unsigned S3 reads of a missing bucket, each a 4xx
    # of the http face, counted in n1's ring and not in n0's.
    base0 = http_4xx(get(a, "metrics")[1])
    for _ in range(30):
        assert 400 <= b.request("GET", "/no-such-bucket/k", cookie=False)[0] < 500
    deadline = time.monotonic() + 30
    while True:
        st, peer = get(a, "metrics?node=n1")
        assert st == 200, peer
        if http_4xx(peer) >= 30 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert peer["node"] == "n1" and peer["interval_s"] == 0.2, peer["node"]
    assert http_4xx(peer) >= 30, peer["samples"][-3:]
    assert 1 <= len(peer["samples"]) <= 720
    # the list is the asking node's (n0 is "self" there)
    assert [n["id"] for n in peer["nodes"] if n["self"]] == ["n0"]
    # n0's own samples did not see n1's 404s
    assert http_4xx(get(a, "metrics")[1]) - base0 < 30
    # asking n0 for itself by name is its own document
    st, own = get(a, "metrics?node=n0")
    assert st == 200 and own["node"] == "n0"


def test_unknown_unadvertised_and_unauthenticated(fleet):
    a = Console(fleet.nodes[0].server.addrs["http"])
    assert a.login(ADMIN_TOKEN)[0] == 200
    st, doc = get(a, "metrics?node=" + urllib.parse.quote("nope"))
    assert (st, doc["error"]) == (404, "NoSuchNode"), doc
    st, doc = get(a, "metrics?node=n2")
    assert (st, doc["error"]) == (503, "NodeUnavailable"), doc
    assert "advertise" in doc["message"]
    anon = Console(fleet.nodes[0].server.addrs["http"])
    assert anon.request("GET", API + "metrics?node=n1")[0] == 401


def test_a_session_ended_is_refused_by_the_peer_too(fleet):
    """The peer checks the forwarded session itself: once signed out, the
    cookie is refused on n0 (401) and, asked directly, on n1."""
    a = Console(fleet.nodes[0].server.addrs["http"])
    assert a.login(ADMIN_TOKEN)[0] == 200
    assert get(a, "metrics?node=n1")[0] == 200
    cookie = a.cookie
    assert a.mutate("DELETE", API + "session")[0] == 204
    a.cookie = cookie
    assert a.request("GET", API + "metrics?node=n1")[0] == 401
    b = Console(fleet.nodes[1].server.addrs["http"])
    b.cookie = cookie
    assert b.request("GET", API + "metrics")[0] == 401


class OwnConsoleFleet(AdvertisedFleet):
    """n0 and n1 advertising their HTTP listeners; n1's console on a listener
    of its own (--console 127.0.0.1:0), which the registry records."""

    def args(self, i):
        a = super().args(i)
        return a + ["--console", "127.0.0.1:0"] if i == 1 else a

    def start(self, i, env=None):
        node = super().start(i, env)
        if i == 1:
            deadline = time.monotonic() + 10
            while "console" not in node.server._parse_addrs() and time.monotonic() < deadline:
                time.sleep(0.05)
            node.server.addrs = node.server._parse_addrs()
        return node


def test_a_peer_with_a_console_of_its_own(pg, tmp_path_factory):
    """n1 serves its console on a listener of its own: its advertised HTTP
    URL serves none, so n0 asks n1's recorded console URL (its advertised
    host, the console listener's bound port) with the session made on n0."""
    f = OwnConsoleFleet(pg, tmp_path_factory.mktemp("ownconsole"), "metrics_own", count=2,
                        env={"CAIRN_CONSOLE_METRICS_MS": "200"})
    try:
        own = f.nodes[1].server.addrs["console"]
        assert own != f.nodes[1].server.addrs["http"]
        a = Console(f.nodes[0].server.addrs["http"])
        assert a.login(ADMIN_TOKEN)[0] == 200
        st, peer = get(a, "metrics?node=n1")
        assert st == 200, peer
        assert peer["node"] == "n1" and peer["interval_s"] == 0.2
        assert [n["id"] for n in peer["nodes"] if n["self"]] == ["n0"]
        # the registry holds the console's URL: n1's own listener, asked directly
        b = Console(own)
        b.cookie = a.cookie
        st, direct = get(b, "metrics")
        assert st == 200 and direct["node"] == "n1"
        r = run([binary("cairn"), "admin", "--meta", f.uri, "fleet", "status", "--json"])
        assert r.returncode == 0, r.stderr
        rows = {n["id"]: n for n in json.loads(r.stdout)["nodes"]}
        assert rows["n1"]["console"] == "http://127.0.0.1:%d" % own[1]
        assert rows["n0"]["console"] is None
    finally:
        bad = f.stop()
    assert not bad, bad[0][-4000:]


@pytest.mark.skipif(not (shutil.which("node") and shutil.which("chromium") and os.path.isdir(
    os.path.join(os.path.dirname(HERE), "console", "node_modules", "playwright-core"))),
    reason="node, chromium or tests/console's npm packages missing")
def test_the_node_picker_in_chromium(fleet):
    host, port = fleet.nodes[0].server.addrs["http"]
    r = subprocess.run(["node", os.path.join(HERE, "console_picker.mjs"),
                        "http://%s:%d" % (host, port)], capture_output=True, text=True,
                       timeout=300, env=dict(os.environ, PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD="1"))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
