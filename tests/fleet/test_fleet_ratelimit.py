"""Per-token rate limits across a fleet (issue 24; docs/identity.md, "Rate
limiting", src/identity/ratesync.c).  Two nodes on one PostgreSQL database,
each with CAIRN_RATE_LIMIT=RATE,BURST, and one token whose requests go to
both nodes in turn as fast as a client sends them.  The fleet admits the
token's limit, RATE per second after a BURST, plus at most the documented
overshoot: what the other node admits before this one hears of it, a burst
and a sync period's rate.  Before, each node kept its own buckets and the
fleet admitted twice the limit."""
import os
import sys
import time

from botocore.exceptions import ClientError

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from fleetutil import Fleet, needs_pg, pg  # noqa: E402,F401

pytestmark = needs_pg

RATE = 10
BURST = 10
SYNC_S = 0.2  # ratesync.c's SYNC_MS
SECONDS = 4.0


def test_a_token_is_limited_across_the_fleet(pg, tmp_path):
    f = Fleet(pg, tmp_path, "ratelimit", count=2,
              env={"CAIRN_RATE_LIMIT": "%d,%d" % (RATE, BURST)})
    try:
        clients = [n.client() for n in f.nodes]
        admitted = [0, 0]
        refused = 0
        t0 = time.monotonic()
        i = 0
        while time.monotonic() - t0 < SECONDS:
            try:
                clients[i % 2].list_buckets()
                admitted[i % 2] += 1
            except ClientError as e:
                assert e.response["Error"]["Code"] == "SlowDown", e.response
                refused += 1
            i += 1
        elapsed = time.monotonic() - t0
        limit = RATE * elapsed + BURST
        overshoot = (len(f.nodes) - 1) * (BURST + RATE * SYNC_S)
        print("admitted %s of %d in %.2f s; the limit %.1f, with overshoot %.1f"
              % (admitted, i, elapsed, limit, limit + overshoot))
        assert refused > 0
        assert min(admitted) > 0  # both nodes serve the token
        # one more request of slack per node for a request in flight at a sync
        assert sum(admitted) <= limit + overshoot + len(f.nodes), admitted
        assert sum(admitted) >= RATE * elapsed * 0.8, admitted
    finally:
        bad = f.stop()
        assert not bad, bad[0][-4000:]
