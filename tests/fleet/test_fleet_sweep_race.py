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
  one is kept (its row too).
* Unheld, 1,000 rounds at once (issue 24: "a sweep racing a re-put, 1,000
  bounded rounds, never loses a committed blob"): each round puts its own
  bytes through one node, deletes the key through the other, waits about
  the grace window (so the sweeper, every second, may be deciding on that
  blob) and puts the same bytes again; every acknowledged re-put's blob is
  on the backend and reads back through both nodes after further sweeps,
  and the sweepers removed blobs meanwhile (the race was run, not missed)."""
import os
import random
import re
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

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


ROUNDS = 1000
ROUND_THREADS = 32


def sweep_deleted(fleet):
    """Blobs the nodes' sweeps have deleted so far (their log lines)."""
    total = 0
    for n in fleet.nodes:
        for m in re.finditer(r"sweep: scanned \d+, young \d+, live \d+, pinned \d+, deleted (\d+)",
                             n.server.output()):
            total += int(m.group(1))
    return total


def test_a_thousand_rounds_of_sweep_against_reput(fleet):
    s3 = [n.client() for n in fleet.nodes]
    before = sweep_deleted(fleet)
    rng = random.Random(24)
    waits = [rng.uniform(0.8, 2.2) for _ in range(ROUNDS)]

    def round_(i):
        key, data = "round/%d" % i, os.urandom(512 + i)
        a, b = s3[i % 2], s3[(i + 1) % 2]
        a.put_object(Bucket=BUCKET, Key=key, Body=data)
        b.delete_object(Bucket=BUCKET, Key=key)
        time.sleep(waits[i])  # about the grace window: the sweeper may be on it now
        b.put_object(Bucket=BUCKET, Key=key, Body=data)
        return key, data

    with ThreadPoolExecutor(ROUND_THREADS) as ex:
        done = list(ex.map(round_, range(ROUNDS)))
    assert len(done) == ROUNDS
    time.sleep(3)  # more sweeps past every round's grace window
    on_backend = set(fleet.backend_keys())
    lost = [k for k, d in done if "%s/%s" % (fleet.PREFIX, b3(d)) not in on_backend]
    assert not lost, "acknowledged re-puts whose blob is gone: %d, e.g. %s" % (len(lost), lost[:5])
    with ThreadPoolExecutor(8) as ex:
        got = list(ex.map(lambda kd: [c.get_object(Bucket=BUCKET, Key=kd[0])["Body"].read()
                                      for c in s3] == [kd[1]] * 2, done))
    assert all(got), got.count(False)
    deleted = sweep_deleted(fleet) - before
    print("%d rounds; the sweepers deleted %d blobs meanwhile" % (ROUNDS, deleted))
    assert deleted > 0, "no sweep removed anything: the race was not run"
