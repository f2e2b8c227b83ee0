"""`cairn admin --data D store recount` (issue 26), against the real cairnd and
cairn: totals that a fault left wrong (here the base row of store_usage and a
stray delta row, edited with sqlite3 while the server is stopped) are set back
to what the data directory holds, counted independently (blob files plus pack
index rows), and the restarted server's console metrics and /metrics gauges
show them; a recount while cairnd runs, or with --meta, is refused and
changes nothing."""
import os
import sqlite3
import subprocess

from conftest import BUILD
from test_console_api import Api, s3_client
from test_console_store_totals import ARGS, ENV, agreed, on_disk

import pytest


@pytest.fixture
def node(server_factory):
    return server_factory(args=ARGS, env=ENV, wait_for=("http",))


def recount(data, *extra):
    return subprocess.run([os.path.join(BUILD, "cairn"), "admin", "--data", data, *extra,
                           "store", "recount"], capture_output=True, text=True, timeout=300)


def stored(data):
    """The totals as meta.db holds them (base row plus deltas)."""
    db = sqlite3.connect(os.path.join(data, "meta.db"), timeout=30)
    try:
        return db.execute("SELECT COALESCE(SUM(b), 0), COALESCE(SUM(y), 0) FROM ("
                          "SELECT blobs AS b, bytes AS y FROM store_usage UNION ALL "
                          "SELECT d_blobs, d_bytes FROM store_usage_delta)").fetchone()
    finally:
        db.close()


def corrupt(data):
    db = sqlite3.connect(os.path.join(data, "meta.db"), timeout=30)
    try:
        db.execute("UPDATE store_usage SET blobs = blobs - 3, bytes = bytes + 12345 WHERE id = 0")
        db.execute("INSERT INTO store_usage_delta (d_blobs, d_bytes) VALUES (-7, -70000)")
        db.commit()
    finally:
        db.close()


def test_recount_repairs_corrupted_totals_and_is_refused_while_running(node, tmp_path):
    data = node.data_dir
    api = Api(node.addrs["http"])
    s3 = s3_client(node.addrs["http"])
    api.ok("POST", "buckets", {"name": "recount"}, 201)
    bodies = ([os.urandom(200 + i) for i in range(20)]            # packed
              + [os.urandom(100_000 + i) for i in range(3)]     # journalled files
              + [os.urandom(600_000)])                          # a large file
    for i, b in enumerate(bodies):
        s3.put_object(Bucket="recount", Key="k%02d" % i, Body=b)
    truth = agreed(node, api)
    assert truth[0] >= len(bodies)

    # cairnd holds the data directory: refused, nothing written.
    out = recount(data)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "stop it first" in out.stderr, out.stderr
    assert out.stdout == ""

    node.stop()
    corrupt(data)
    wrong = stored(data)
    assert wrong == (truth[0] - 10, truth[1] - 57655), (wrong, truth)

    # A fleet's totals are not one directory's to recount.
    out = recount(data, "--meta", "sqlite:" + os.path.join(data, "meta.db"))
    assert out.returncode == 1 and "refuses --meta" in out.stderr, out.stdout + out.stderr
    assert stored(data) == wrong

    out = subprocess.run([os.path.join(BUILD, "cairn"), "admin", "--data", data, "store",
                          "recount", "--now"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "store recount" in out.stderr, out.stdout + out.stderr
    assert stored(data) == wrong

    out = recount(data)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout == ("recounted: %d blob(s), %d byte(s) (were %d blob(s), %d byte(s))\n"
                          % (*truth, *wrong)), out.stdout
    assert stored(data) == truth == on_disk(data)

    node.start(wait_for=("http",))
    api = Api(node.addrs["http"])
    assert agreed(node, api) == truth
    s3 = s3_client(node.addrs["http"])
    s3.put_object(Bucket="recount", Key="after", Body=os.urandom(3000))
    assert agreed(node, api)[0] == truth[0] + 1
