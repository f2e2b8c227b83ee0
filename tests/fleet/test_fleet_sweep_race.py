"""The sweeper of a fleet against a dedup put through another node (issue 24;
src/store/sweep.c S6-S8, docs/fleet.md "Sweeper"): two nodes on one
PostgreSQL database and one blob tier, sweeping every second with a grace
window of one second.

* The race: blob X is put and its key deleted, so the leased sweeper (on
  whichever node holds the lease: A) decides to remove it.  The test hook
  CAIRN_TEST_SWEEP_HOLD stops A with X's store_blob row locked, its decision
  made and the backend DELETE not yet sent.  Then the same bytes are put
  through the other node (B): the put must wait (its row upsert waits for
  A's lock) and, once A has deleted X and committed, upload X anew, so that
  X is on the backend and reads back through A, whose cache lost X with the
  DELETE.  Without the row lock B's put is answered at once (412, then a
  self-copy), A deletes X after it, and the acknowledged bytes are gone.
* Plainly: an unreferenced blob is deleted (its row with it), a referenced
  one is kept (its row too)."""
import os
import sys
import threading
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "blobops"))
from fleetutil import Fleet, needs_pg, pg  # noqa: E402,F401
from blobsclient import b3  # noqa: E402

pytestmark = needs_pg

DB = "sweeprace"
BUCKET = "race"


@pytest.fixture(scope="module")
def fleet(pg, tmp_path_factory):
    base = tmp_path_factory.mktemp("sweeprace")
    hold = base / "hold"
    f = Fleet(pg, base, DB, count=2,
              env={"CAIRN_SWEEP_INTERVAL_SECONDS": "1", "CAIRN_SWEEP_GRACE_SECONDS": "1",
                   "CAIRN_TEST_SWEEP_HOLD": str(hold)})
    f.hold = hold
    f.nodes[0].client().create_bucket(Bucket=BUCKET)
    try:
        yield f
    finally:
        if hold.exists():
            hold.unlink()
        bad = f.stop()
        assert not bad, bad[0][-4000:]


def wait_for(what, cond, timeout=30):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            pytest.fail("timed out waiting for " + what)
        time.sleep(0.1)


def rows(pg):
    """The hex digests of the store_blob rows."""
    out = pg.psql("SELECT encode(digest, 'hex') FROM store_blob", db=DB)
    return set(out.split())


def test_dedup_put_waits_for_the_sweeper_and_stores_anew(fleet, pg):
    data = os.urandom(50_000)
    d = b3(data)
    obj = "%s/%s" % (fleet.PREFIX, d)
    held = fleet.hold.with_name(fleet.hold.name + ".held")
    fleet.hold.write_text(d + "\n")  # hold the sweeper at X only
    s3 = [n.client() for n in fleet.nodes]
    s3[0].put_object(Bucket=BUCKET, Key="x", Body=data)
    assert d in rows(pg)  # the put took X's row before its backend PUT
    s3[0].delete_object(Bucket=BUCKET, Key="x")  # X is unreferenced now
    wait_for("the sweeper to hold X's row", held.exists)
    pid = int(held.read_text())
    a = next(i for i, n in enumerate(fleet.nodes) if n.server.proc.pid == pid)
    b = 1 - a
    assert obj in fleet.backend_keys()  # decided, not yet deleted

    done = {}

    def put_again():
        t0 = time.monotonic()
        try:
            done["resp"] = s3[b].put_object(Bucket=BUCKET, Key="x2", Body=data)
        except Exception as e:  # noqa: BLE001 (reported below)
            done["error"] = e
        done["secs"] = time.monotonic() - t0

    t = threading.Thread(target=put_again)
    t.start()
    time.sleep(1.5)
    # Not acknowledged while the sweeper holds the row it will delete.
    assert not done, done
    fleet.hold.unlink()
    t.join(30)
    assert not t.is_alive()
    assert "error" not in done, done
    assert done["secs"] >= 1.4, done
    wait_for("the sweeper to finish", lambda: not held.exists())

    # The bytes B acknowledged are on the backend (uploaded after A's
    # DELETE), and read back through A, whose cache the DELETE emptied of X.
    assert obj in fleet.backend_keys()
    body = fleet.backend.client().get_object(Bucket=fleet.BUCKET, Key=obj)["Body"].read()
    assert body == data
    assert not (fleet.base / ("n%d" % a) / "cache" / d).exists()
    assert s3[a].get_object(Bucket=BUCKET, Key="x2")["Body"].read() == data
    assert d in rows(pg)
    out = fleet.nodes[a].server.output(fleet.nodes[a].server.log_offset)
    assert "sweep stopped" not in out, out[-3000:]


def test_unreferenced_blob_deleted_referenced_kept(fleet, pg):
    s3 = [n.client() for n in fleet.nodes]
    kept, dropped = os.urandom(7000), os.urandom(8000)
    s3[0].put_object(Bucket=BUCKET, Key="kept", Body=kept)
    s3[1].put_object(Bucket=BUCKET, Key="dropped", Body=dropped)
    s3[1].delete_object(Bucket=BUCKET, Key="dropped")
    gone = "%s/%s" % (fleet.PREFIX, b3(dropped))
    wait_for("the sweep of the unreferenced blob", lambda: gone not in fleet.backend_keys())
    assert b3(dropped) not in rows(pg)  # its row went with it
    time.sleep(2.5)  # more sweeps, past the kept blob's grace window
    assert "%s/%s" % (fleet.PREFIX, b3(kept)) in fleet.backend_keys()
    assert b3(kept) in rows(pg)
    for c in s3:
        assert c.get_object(Bucket=BUCKET, Key="kept")["Body"].read() == kept
