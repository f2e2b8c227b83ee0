"""The store's running totals across crashes (issue 26, gaps a and b), against
the real cairnd and cairn: a kill between a blob file's publish and its note,
a note a power loss took back, and a pack migration killed between its index
commit and the removal of the files it packed.  The totals are checked
against the data directory counted independently, a digest once: the blob
files whose digest the pack index does not hold, plus the index rows."""
import os
import signal
import sqlite3
import subprocess
import time

from conftest import BUILD, store_gauges
from test_console_api import Api, s3_client
from test_console_store_recount import stored
from test_console_store_totals import ARGS, ENV, console_totals

import pytest


def distinct_on_disk(data_dir):
    """(blobs, bytes) of the data directory, a digest once."""
    db = sqlite3.connect("file:%s?mode=ro" % os.path.join(data_dir, "meta.db"), uri=True,
                         timeout=30)
    try:
        rows = dict((bytes(d).hex(), n) for d, n in
                    db.execute("SELECT digest, len FROM store_pack_blob"))
    finally:
        db.close()
    n, size = len(rows), sum(rows.values())
    for root, _, files in os.walk(os.path.join(data_dir, "blobs")):
        for f in files:
            if f.split(".")[0] not in rows:
                n += 1
                size += os.path.getsize(os.path.join(root, f))
    return n, size


def both_copies(data_dir):
    """Digests held both as a blob file and as a pack index row."""
    db = sqlite3.connect("file:%s?mode=ro" % os.path.join(data_dir, "meta.db"), uri=True,
                         timeout=30)
    try:
        rows = {bytes(d).hex() for (d,) in db.execute("SELECT digest FROM store_pack_blob")}
    finally:
        db.close()
    files = {f.split(".")[0] for _, _, fs in os.walk(os.path.join(data_dir, "blobs")) for f in fs}
    return rows & files


def agreed(node, api, want=None, timeout=60):
    """Polls until the console, /metrics and the data directory (a digest
    once) agree, and hold want blobs when given; returns the totals."""
    deadline = time.time() + timeout
    while True:
        truth = distinct_on_disk(node.data_dir)
        seen = (console_totals(api), store_gauges(node.addrs["http"]))
        if all(x == truth for x in seen) and (want is None or truth[0] == want):
            return truth
        if time.time() > deadline:
            pytest.fail("totals %r / %r, data directory %r, want %r" % (*seen, truth, want))
        time.sleep(0.3)


def test_kill_after_publish_before_note_restarts_exact(server_factory):
    # No sweeper: the blob of the PUT the kill cut is referenced by no object.
    node = server_factory(args=ARGS, env={"CAIRN_CONSOLE_METRICS_MS": "200"},
                          wait_for=("http",))
    api, s3 = Api(node.addrs["http"]), s3_client(node.addrs["http"])
    api.ok("POST", "buckets", {"name": "crash"}, 201)
    for i, b in enumerate([os.urandom(300 + i) for i in range(10)]       # packed
                          + [os.urandom(100_000), os.urandom(700_000)]):  # journalled, large
        s3.put_object(Bucket="crash", Key="k%02d" % i, Body=b)
    before = agreed(node, api)

    # A note written but lost with the tail of meta's log (a power loss:
    # commits without a sync), after a kill -9 right after the PUTs.
    s3.put_object(Bucket="crash", Key="late", Body=os.urandom(300_000))
    before = agreed(node, api, want=before[0] + 1)
    node.kill9()
    db = sqlite3.connect(os.path.join(node.data_dir, "meta.db"), timeout=30)
    db.execute("UPDATE store_usage SET blobs = blobs - 1, bytes = bytes - 300000 WHERE id = 0")
    db.commit()
    db.close()
    node.start(wait_for=("http",))
    assert agreed(node, Api(node.addrs["http"]), timeout=20) == before
    assert "the last stop did not close them" in node.output(node.log_offset)

    # Killed right after a large blob's publish (synced file, directory
    # synced), before its note: the restart finds the totals still marked
    # open and recounts them.
    node.stop()
    node.env["CAIRN_TEST_STORE_USAGE_CRASH"] = "1"
    node.start(wait_for=("http",))
    with pytest.raises(Exception):
        s3_client(node.addrs["http"]).put_object(Bucket="crash", Key="big",
                                                 Body=os.urandom(800_000))
    assert node.proc.wait(timeout=60) == -signal.SIGKILL
    node.stop()
    del node.env["CAIRN_TEST_STORE_USAGE_CRASH"]
    assert stored(node.data_dir)[0] == before[0]  # the note never made it
    node.start(wait_for=("http",))
    assert "the last stop did not close them" in node.output(node.log_offset)
    api = Api(node.addrs["http"])
    truth = agreed(node, api)
    assert truth[0] == before[0] + 1 and truth[1] >= before[1] + 800_000

    # A clean stop marks them closed: the next start does not walk.
    node.stop()
    node.start(wait_for=("http",))
    assert "did not close them" not in node.output(node.log_offset)
    assert agreed(node, Api(node.addrs["http"])) == truth


def test_pack_migration_counts_a_digest_once_across_a_crash(server_factory, tmp_path):
    off = tmp_path / "off.toml"
    off.write_text("[store]\npack_max_bytes = 0\n")  # small objects as files
    node = server_factory(args=ARGS + ["--config", str(off)], env=ENV, wait_for=("http",))
    api, s3 = Api(node.addrs["http"]), s3_client(node.addrs["http"])
    api.ok("POST", "buckets", {"name": "mig"}, 201)
    for i in range(12):
        s3.put_object(Bucket="mig", Key="k%02d" % i, Body=os.urandom(1000 + i))
    truth = agreed(node, api)
    node.stop()

    # `store pack` killed after its index commit, before it removed the
    # files it packed: each of those digests is held twice, counted once.
    env = dict(node.env, CAIRN_TEST_PACK_CRASH="3:1")
    out = subprocess.run([os.path.join(BUILD, "cairn"), "admin", "--data", node.data_dir,
                          "store", "pack"], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == -signal.SIGKILL, out.stdout + out.stderr
    assert len(both_copies(node.data_dir)) >= 12
    assert distinct_on_disk(node.data_dir) == truth
    assert stored(node.data_dir) == truth  # before any recount

    node.args = list(ARGS)  # packs on
    node.start(wait_for=("http",))
    api, s3 = Api(node.addrs["http"]), s3_client(node.addrs["http"])
    assert agreed(node, api) == truth
    # The sweeper reclaims both copies of a deleted object's blob: one blob.
    for i in range(3):
        s3.delete_object(Bucket="mig", Key="k%02d" % i)
    after = agreed(node, api, want=truth[0] - 3)
    assert after[1] < truth[1]
    node.stop()
    assert stored(node.data_dir) == after
