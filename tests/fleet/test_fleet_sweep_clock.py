"""Nodes whose clocks disagree, and the times the blob sweeper compares
(issue 24; docs/fleet.md "Clocks", src/store/sweep.c S6-S7).  Three nodes on
one PostgreSQL database and one blob tier: one on time, one whose clock runs
SKEW_S ahead and one SKEW_S behind (the test switch CAIRN_TEST_CLOCK_SKEW_MS,
added to the node's whole wall clock).  Whichever node holds the sweep's
lease compares a blob row's touched_ms and a pin's expiry with "now", so all
three must write them on one clock, the database's: a pin put through any
node expires TTL_MS after its put on the database's clock, and its blob row
was touched at the put.  With the nodes' own clocks in the rows, the slow
node's pins were expired and its touches older than any grace window in the
eyes of a sweeper on time, and the fast node's pins lived SKEW_S too long."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "blobops"))
from fleetutil import Fleet, needs_pg, pg  # noqa: E402,F401
from blobsclient import Ops, b3  # noqa: E402

pytestmark = needs_pg

SKEW_S = 600
TTL_MS = 30000
NS = "clocks"
DB = "clocks"
NOW = "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)"


def row_times(pg, d):
    """(ms left on d's pin, ms since d's row was touched), on the database's clock."""
    out = pg.psql("SELECT p.expires_ms - %s, %s - b.touched_ms FROM store_pin p"
                  " JOIN store_blob b USING (digest) WHERE p.digest = '\\x%s'" % (NOW, NOW, d),
                  db=DB)
    rows = [tuple(int(v) for v in line.split("|")) for line in out.split()]
    assert len(rows) == 1, out
    return rows[0]


def test_pins_and_touches_are_on_the_database_clock(pg, tmp_path):
    f = Fleet(pg, tmp_path, DB, count=1, env={"CAIRN_BLOB_PIN_TTL_MS": str(TTL_MS)})
    try:
        f.nodes += [None, None]
        f.start(1, env={"CAIRN_TEST_CLOCK_SKEW_MS": str(SKEW_S * 1000)})
        f.start(2, env={"CAIRN_TEST_CLOCK_SKEW_MS": str(-SKEW_S * 1000)})
        for i, node in enumerate(f.nodes):
            ops = Ops(node.server)
            data = os.urandom(3000)
            d = b3(data)
            status, put = ops.put(NS, data, digest=d)
            assert status == 200
            left, since = row_times(pg, d)
            print("node %d: pin %d ms left, touched %d ms ago" % (i, left, since))
            assert 0 < left <= TTL_MS, "node %d's pin expires at its own clock's time" % i
            assert TTL_MS - left < 5000
            assert 0 <= since < 5000, "node %d touched its blob at its own clock's time" % i
            # a renewal moves the expiry on the same clock
            assert ops.have(NS, [d], token=put["token"]) == [True]
            assert 0 < row_times(pg, d)[0] <= TTL_MS
    finally:
        bad = f.stop()
        assert not bad, bad[0][-4000:]


def test_pins_default_to_sixty_seconds(pg, tmp_path):
    """A fleet node given no CAIRN_BLOB_PIN_TTL_MS still writes pin rows,
    with the blob document's fleet default of 60 s (ADR-008): another node's
    sweeper honours only rows.  Before, a fleet node's default token was an
    in-process guard and wrote no row at all."""
    f = Fleet(pg, tmp_path, DB + "ttl", count=1)
    try:
        ops = Ops(f.nodes[0].server)
        data = os.urandom(3000)
        d = b3(data)
        status, put = ops.put(NS, data, digest=d)
        assert status == 200
        out = pg.psql("SELECT p.expires_ms - %s FROM store_pin p WHERE p.digest = '\\x%s'"
                      % (NOW, d), db=DB + "ttl").split()
        assert len(out) == 1, out
        left = int(out[0])
        assert 55000 < left <= 60000, left
        assert ops.have(NS, [d], token=put["token"]) == [True]
    finally:
        bad = f.stop()
        assert not bad, bad[0][-4000:]
