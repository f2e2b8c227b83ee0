"""Small Jay GETs answered on the event loops, against the real cairnd over
real sockets (src/net/loop.c, docs/architecture.md "Small reads on the loop").

With a loop per CPU (cairnd's default) there is no busy-loop cut-off: 64
connections that each send a GetObject of a small object at the same moment
are all answered by the loops themselves, none handed to a worker, as
cairn_net_loop_answered_total{listener="jay"} counts.  Each connection's
answer is its own object's bytes, so the loops' answers stay per connection.

Nothing here asserts how long something took."""
import os
import re
import urllib.request

import jayclient as j
from conftest import ADMIN_TOKEN
from jayfixtures import conn

CONNS = 64


def scrape(srv, name, labels):
    host, port = srv.addrs["http"]
    with urllib.request.urlopen("http://%s:%d/_cairn/metrics" % (host, port), timeout=30) as r:
        text = r.read().decode()
    m = re.search(r"^%s\{%s\} (\S+)$" % (re.escape(name), re.escape(labels)), text, re.M)
    return float(m.group(1)) if m else 0.0


def settled(conns):
    """A Ping on every connection: its loop has finished the bookkeeping of
    the connection's previous request (the counter is added just after the
    answer is written) before it takes the Ping."""
    for c in conns:
        assert c.ping()


def test_a_loop_per_cpu_answers_a_burst_of_small_gets_itself(server_factory):
    loops = max(1, min(os.cpu_count() or 1, 64))  # one per online CPU, as loop.c counts them
    srv = server_factory(args=["--jay", "127.0.0.1:0", "--scribe", "off", "--http", "127.0.0.1:0",
                               "--net-loops", str(loops)],
                         env={"CAIRN_ADMIN_TOKEN": ADMIN_TOKEN, "CAIRN_NET_LOOPS": ""},
                         wait_for=("jay", "http"))
    conns = []
    try:
        for _ in range(CONNS):
            # A first request settles each connection (no longer pending), so
            # the per-source pending share does not refuse the next one.
            conns.append(conn(srv))
            assert conns[-1].ping()
        conns[0].create_bucket("burst")
        bodies = [os.urandom(4096) for _ in range(CONNS)]
        for i, c in enumerate(conns):
            c.put_object("burst", "k%d" % i, bodies[i])
        # Each connection's first GET files its object's head (a miss reads
        # SQL, which only a worker does): the burst below is of second looks.
        for i, c in enumerate(conns):
            assert c.get_object("burst", "k%d" % i)[1] == bodies[i]
        settled(conns)
        before = scrape(srv, "cairn_net_loop_answered_total", 'listener="jay"')
        for rounds in range(4):
            # Every request is on its way before any answer is read, so the
            # loops' waits bring many events at once.
            for i, c in enumerate(conns):
                c.send_frame(j.OP["GetObject"], j.s("burst") + j.s("k%d" % i))
            for i, c in enumerate(conns):
                r = c.read_response()
                assert r.status == j.ST_OK and r.body == bodies[i]
        settled(conns)
        after = scrape(srv, "cairn_net_loop_answered_total", 'listener="jay"')
        assert after - before == 4 * CONNS
    finally:
        for c in conns:
            c.close()
