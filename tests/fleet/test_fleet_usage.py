"""Usage totals on a fleet (docs/architecture.md, "Usage totals"): two
nodes on one PostgreSQL database writing the same bucket at once (PUTs,
overwrites, deletes from four threads per node) end with exact figures on
both nodes' consoles, equal to S3's own listing; the writers appended
deltas (no shared counter row), and the leased usage-fold job of one node
folds them into the base rows without changing any figure."""
import concurrent.futures
import os
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "console"))
from fleetutil import Fleet, list_keys, needs_pg, pg  # noqa: E402,F401
from test_console_api import Api  # noqa: E402

pytestmark = needs_pg

PER_THREAD = 60


@pytest.fixture(scope="module")
def fleet(pg, tmp_path_factory):
    f = Fleet(pg, tmp_path_factory.mktemp("usage"), "usage", count=2)
    try:
        yield f
    finally:
        bad = f.stop()
        assert not bad, bad[0][-4000:]


def figures(api, bucket):
    one = api.ok("GET", "buckets/" + bucket)
    return one["objects"], one["versions"], one["bytes"]


def test_two_nodes_writing_one_bucket_end_exact(fleet, pg):
    s3 = [n.client() for n in fleet.nodes]
    s3[0].create_bucket(Bucket="shared")

    def writer(t):
        c = s3[t % 2]
        for i in range(PER_THREAD):
            k = "t%d/%03d" % (t, i)
            c.put_object(Bucket="shared", Key=k, Body=b"x" * (i % 50 + 1))
            if i % 3 == 0:
                s3[(t + 1) % 2].put_object(Bucket="shared", Key=k, Body=b"y" * (i % 50 + 2))
            if i % 5 == 0:
                c.delete_object(Bucket="shared", Key=k)

    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        list(ex.map(writer, range(8)))

    live = [i for i in range(PER_THREAD) if i % 5]
    objects = 8 * len(live)
    size = 8 * sum(i % 50 + 1 + (i % 3 == 0) for i in live)
    assert len(list_keys(s3[1], "shared")) == objects
    apis = [Api(n.server.addrs["http"]) for n in fleet.nodes]
    for api in apis:
        assert figures(api, "shared") == (objects, objects, size)

    # The fold: one node's leased job empties the deltas (every 10 s); the
    # figures stay what they were.
    db = "usage"  # the fleet's database (Fleet(..., "usage"))
    deadline = time.monotonic() + 90
    while int(pg.psql("SELECT COUNT(*) FROM obj_usage_delta", db=db)) and \
            time.monotonic() < deadline:
        time.sleep(0.5)
    assert pg.psql("SELECT COUNT(*) FROM obj_usage_delta", db=db).strip() == "0"
    base = pg.psql("SELECT objects, versions, bytes FROM obj_usage u JOIN obj_bucket b "
                   "ON b.bucket_id = u.bucket_id WHERE b.name = 'shared'", db=db).strip()
    assert base == "%d|%d|%d" % (objects, objects, size)
    for api in apis:
        assert figures(api, "shared") == (objects, objects, size)
