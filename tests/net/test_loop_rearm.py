"""The event loop's registration rule (src/net/loop.c, top of the file),
against the real cairnd over real sockets: with a loop per CPU a plaintext
Jay connection stays registered level-triggered between the requests the
loop answers (no epoll_ctl per answered request), is taken out of epoll
while a worker has it, and registered again when it comes back; with fewer
loops than CPUs it is registered one-shot and re-armed as before.  Either
way:

  * pipelined GETs, more than the loop answers in a row (CN__FAST_RUN, 8),
    are all answered, in order, with their own bytes: what the loop leaves
    in the socket or its buffer reports again by itself;
  * a connection handed to a worker (a PUT) and back is still served, on
    the loop (cairn_net_loop_answered_total{listener="jay"} counts its GETs),
    many times over.

Nothing here asserts how long something took."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "jay"))
import jayclient as j  # noqa: E402
from conftest import ADMIN_TOKEN  # noqa: E402
from jayfixtures import conn  # noqa: E402
from test_jay_loop import scrape  # noqa: E402 (the metrics scrape, one copy)

PIPELINED = 40  # five times the loop's run cap


@pytest.mark.parametrize("per_cpu", [True, False], ids=["loop_per_cpu", "one_loop"])
def test_pipelined_and_handed_back_connections_are_served(server_factory, per_cpu):
    loops = max(1, min(os.cpu_count() or 1, 64)) if per_cpu else 1
    srv = server_factory(args=["--jay", "127.0.0.1:0", "--scribe", "off", "--http", "127.0.0.1:0",
                               "--net-loops", str(loops)],
                         env={"CAIRN_ADMIN_TOKEN": ADMIN_TOKEN, "CAIRN_NET_LOOPS": ""},
                         wait_for=("jay", "http"))
    c = conn(srv)
    try:
        assert c.ping()
        c.create_bucket("rearm")
        bodies = [os.urandom(4096) for _ in range(4)]
        for i, b in enumerate(bodies):
            c.put_object("rearm", "k%d" % i, b)
            assert c.get_object("rearm", "k%d" % i)[1] == b  # files the head

        # Pipelined: every request sent before any answer is read.
        frames = b""
        for n in range(PIPELINED):
            meta = j.s("rearm") + j.s("k%d" % (n % 4))
            frames += j.header(j.OP["GetObject"], len(meta), 0, 0) + meta
        c.sock.sendall(frames)
        for n in range(PIPELINED):
            r = c.read_response()
            assert r.status == j.ST_OK and r.body == bodies[n % 4]

        # Handed to a worker (PUT) and back, then answered on the loop.
        for rnd in range(10):
            c.put_object("rearm", "w", os.urandom(100))
            assert c.ping()  # the loop has done the previous request's bookkeeping
            before = scrape(srv, "cairn_net_loop_answered_total", 'listener="jay"')
            for i in range(4):
                assert c.get_object("rearm", "k%d" % i)[1] == bodies[i]
            assert c.ping()
            after = scrape(srv, "cairn_net_loop_answered_total", 'listener="jay"')
            if per_cpu:  # no busy-loop cut-off: the loop answers every one
                assert after - before >= 4
    finally:
        c.close()
