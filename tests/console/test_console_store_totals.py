"""The store's running totals (issue 26), against the real cairnd: the
console's metrics samples (stored_blobs, stored_bytes) and the Prometheus
gauges cairn_store_blobs / cairn_store_bytes agree with what the data
directory holds, counted independently (blob files on disk plus the pack
index rows in meta.db) — through packed, journalled and large puts,
duplicate bodies (a blob stored once counts once), deletes, the sweeper's
reclaim and its compaction, and a restart."""
import os
import sqlite3
import time

from test_console_api import Api, s3_client
from conftest import store_gauges

import pytest

ENV = {"CAIRN_CONSOLE_METRICS_MS": "200", "CAIRN_SWEEP_INTERVAL_SECONDS": "1",
       "CAIRN_SWEEP_GRACE_SECONDS": "1"}
ARGS = ["--jay", "off", "--scribe", "off", "--http", "127.0.0.1:0"]


@pytest.fixture
def node(server_factory):
    return server_factory(args=ARGS, env=ENV, wait_for=("http",))


def on_disk(data_dir):
    """(blobs, bytes) the store holds, counted without the server: every blob
    file under DATA/blobs and every row of the pack index."""
    n = size = 0
    for root, _, files in os.walk(os.path.join(data_dir, "blobs")):
        for f in files:
            n += 1
            size += os.path.getsize(os.path.join(root, f))
    db = sqlite3.connect("file:%s?mode=ro" % os.path.join(data_dir, "meta.db"), uri=True,
                         timeout=30)
    try:
        pn, psize = db.execute("SELECT COUNT(*), COALESCE(SUM(len), 0) FROM store_pack_blob"
                               ).fetchone()
    finally:
        db.close()
    return n + pn, size + psize


def console_totals(api):
    s = api.ok("GET", "metrics")["samples"]
    return (s[-1]["stored_blobs"], s[-1]["stored_bytes"]) if s else (None, None)


def agreed(node, api, want=None, timeout=60):
    """Polls until the console, /metrics and the data directory agree (and
    equal want's blob count when given); returns the totals."""
    deadline = time.time() + timeout
    while True:
        truth = on_disk(node.data_dir)
        seen = (console_totals(api), store_gauges(node.addrs["http"]))
        if all(x == truth for x in seen) and (want is None or truth[0] == want):
            return truth
        if time.time() > deadline:
            pytest.fail("totals %r / %r, data directory %r, want %r blobs" % (*seen, truth, want))
        time.sleep(0.3)


def test_store_totals_exact_through_puts_dedup_deletes_sweep_and_restart(node):
    api = Api(node.addrs["http"])
    s3 = s3_client(node.addrs["http"])
    api.ok("POST", "buckets", {"name": "totals"}, 201)
    agreed(node, api)
    bodies = ([os.urandom(100 + i) for i in range(40)]             # packed
              + [os.urandom(100_000 + i) for i in range(4)]      # journalled files
              + [os.urandom(600_000 + i) for i in range(2)])     # large files
    for i, b in enumerate(bodies):
        s3.put_object(Bucket="totals", Key="k%02d" % i, Body=b)
    # The same bytes under other keys: stored once, counted once.
    for i in (0, 1, 40, 44):
        s3.put_object(Bucket="totals", Key="dup%02d" % i, Body=bodies[i])
    blobs, size = agreed(node, api)
    assert blobs >= len(bodies) and size >= sum(map(len, bodies))

    # Deleted objects: the sweeper reclaims their blobs (and compacts the
    # packs it emptied); the duplicates keep theirs.
    for i in list(range(0, 30)) + [40, 41, 44]:
        s3.delete_object(Bucket="totals", Key="k%02d" % i)
    after = agreed(node, api, want=blobs - 29)
    assert after[1] < size

    node.stop()
    node.start(wait_for=("http",))
    api = Api(node.addrs["http"])
    assert agreed(node, api) == after
    s3 = s3_client(node.addrs["http"])
    s3.put_object(Bucket="totals", Key="again", Body=os.urandom(5000))
    assert agreed(node, api)[0] == after[0] + 1
