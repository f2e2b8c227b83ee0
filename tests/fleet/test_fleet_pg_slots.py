"""A fleet's nodes share the PostgreSQL server's connection slots (issue 24;
docs/fleet.md "Connections"; src/meta/meta.c, pool invariants P1 and P2).

test_pools_give_slots_back: a server with SLOTS connections in all, fewer
than two nodes' pools may open under load.  Two nodes take a burst of PUTs
and GETs from WRITERS clients each: nothing is refused (a connection the
server refuses while others of the pool are open waits for one of those).
Once idle for `[meta] idle_connection_timeout` the pools close all but one
connection each, so the server has slots again: a third node starts and
serves.  Before pools shrank, the first two nodes kept every slot they had
opened, and the third one could not start ("too many clients")."""
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import pgharness  # noqa: E402
from fleetutil import Fleet, needs_pg  # noqa: E402

pytestmark = needs_pg

SLOTS = 14  # the server's max_connections (the test role may use them all)
WRITERS = 16  # clients per node in the burst
IDLE_S = 2  # the nodes' idle_connection_timeout
# Per node once idle: the watcher, one writer, one reader (P1 keeps one of
# each pool), and a connection a periodic job may hold at that moment.
IDLE_MAX = 4


def sessions(pg, db):
    return int(pg.psql("SELECT count(*) FROM pg_stat_activity WHERE datname = '%s'" % db))


def burst(fleet, n_nodes):
    errors = []

    def client(i):
        s3 = fleet.nodes[i % n_nodes].client()
        other = fleet.nodes[(i + 1) % n_nodes].client()
        for j in range(40):
            key, body = "k%d-%d" % (i, j), os.urandom(2000)
            try:
                s3.put_object(Bucket="slots", Key=key, Body=body)
                assert other.get_object(Bucket="slots", Key=key)["Body"].read() == body
            except Exception as e:  # noqa: BLE001 (every refusal is the finding)
                errors.append(repr(e)[:200])

    threads = [threading.Thread(target=client, args=(i,)) for i in range(WRITERS * n_nodes)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    return errors


def test_pools_give_slots_back(tmp_path):
    conf = tmp_path / "node.toml"
    conf.write_text("[meta]\nidle_connection_timeout = %d\n" % IDLE_S)
    with pgharness.PgCluster(settings={"max_connections": str(SLOTS)}) as pg:
        f = Fleet(pg, tmp_path, "slots", count=2, extra=["--config", str(conf)],
                  env={"CAIRN_NODE_HEARTBEAT_MS": "300"})
        f.nodes.append(None)
        try:
            f.nodes[0].client().create_bucket(Bucket="slots")
            errors = burst(f, 2)
            refused = open(os.path.join(pg.dir, "log")).read().count("too many clients")
            print("connections the server refused during the burst: %d" % refused)
            assert not errors, errors[:5]
            deadline = time.monotonic() + IDLE_S + 20
            while True:
                try:
                    n = sessions(pg, "slots")
                except Exception:  # every slot still taken: psql refused
                    n = SLOTS
                if n <= 2 * IDLE_MAX:
                    break
                assert time.monotonic() < deadline, "%d sessions still open" % n
                time.sleep(0.5)
            print("sessions of two idle nodes: %d (server slots %d)" % (n, SLOTS))
            f.start(2)
            s3 = f.nodes[2].client()
            s3.put_object(Bucket="slots", Key="third", Body=b"3")
            assert f.nodes[0].client().get_object(
                Bucket="slots", Key="third")["Body"].read() == b"3"
            errors = burst(f, 3)
            assert not errors, errors[:5]
        finally:
            bad = f.stop()
            assert not bad, bad[0][-4000:]
