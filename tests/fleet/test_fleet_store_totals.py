"""The store's running totals on a fleet (issue 26; docs/store.md, "Usage
totals"): two nodes on one PostgreSQL database and one blob tier.  Puts on
both nodes (the same bytes put on each: stored once in the tier, counted
once), then deletes reclaimed by the leased sweep: every node's
cairn_store_blobs / cairn_store_bytes gauges equal what the tier holds,
listed independently; the leased usage-fold job empties the deltas and no
figure moves."""
import os
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from fleetutil import Fleet, needs_pg, pg  # noqa: E402,F401
from conftest import store_gauges  # noqa: E402

pytestmark = needs_pg


@pytest.fixture(scope="module")
def fleet(pg, tmp_path_factory):
    f = Fleet(pg, tmp_path_factory.mktemp("stotals"), "stotals", count=2,
              env={"CAIRN_SWEEP_INTERVAL_SECONDS": "1", "CAIRN_SWEEP_GRACE_SECONDS": "1"})
    try:
        yield f
    finally:
        bad = f.stop()
        assert not bad, bad[0][-4000:]


def tier(fleet):
    """(blobs, bytes) the blob tier holds, from its own listing."""
    c = fleet.backend.client()
    n = size = 0
    for page in c.get_paginator("list_objects_v2").paginate(Bucket=fleet.BUCKET,
                                                            Prefix=fleet.PREFIX + "/"):
        for o in page.get("Contents", []):
            n += 1
            size += o["Size"]
    return n, size


def agreed(fleet, want, timeout=90):
    deadline = time.monotonic() + timeout
    while True:
        truth = tier(fleet)
        seen = [store_gauges(n.server.addrs["http"]) for n in fleet.nodes]
        if truth[0] == want and all(g == truth for g in seen):
            return truth
        if time.monotonic() > deadline:
            pytest.fail("gauges %r, tier %r, want %d blobs" % (seen, truth, want))
        time.sleep(0.5)


def test_two_nodes_store_totals_exact(fleet, pg):
    s3 = [n.client() for n in fleet.nodes]
    s3[0].create_bucket(Bucket="stotals")
    base = tier(fleet)[0]
    bodies = [os.urandom(200 + i) for i in range(12)] + [os.urandom(300_000)]
    for i, b in enumerate(bodies):
        s3[i % 2].put_object(Bucket="stotals", Key="a%02d" % i, Body=b)
        s3[(i + 1) % 2].put_object(Bucket="stotals", Key="b%02d" % i, Body=b)  # the same bytes
    agreed(fleet, base + len(bodies))

    for i in range(6):  # both keys of six bodies: their blobs go
        s3[0].delete_object(Bucket="stotals", Key="a%02d" % i)
        s3[1].delete_object(Bucket="stotals", Key="b%02d" % i)
    s3[1].delete_object(Bucket="stotals", Key="a12")  # b12 keeps the large one
    after = agreed(fleet, base + len(bodies) - 6)

    db = "stotals"
    deadline = time.monotonic() + 90
    while int(pg.psql("SELECT COUNT(*) FROM store_usage_delta", db=db)) and \
            time.monotonic() < deadline:
        time.sleep(0.5)
    assert pg.psql("SELECT COUNT(*) FROM store_usage_delta", db=db).strip() == "0"
    assert pg.psql("SELECT blobs, bytes FROM store_usage", db=db).strip() == "%d|%d" % after
    assert agreed(fleet, after[0]) == after
