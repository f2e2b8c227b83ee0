"""Combined metadata commits through the real cairnd (src/meta/group.c,
G7-G9): small Jay PUTs from many connections at once queue their commit
bodies behind the run holding the group's turn, which runs them on its own
thread; every PUT is answered, and every answered object reads back with
its own bytes after a kill -9 and a restart.  On SQLite the server's
cairn_meta_combined_runs_total shows that bodies were combined; PostgreSQL
has no groups (one transaction per run), so there the count stays 0."""
import hashlib
import os
import re
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "jay"))

import fleetmode  # noqa: E402
from conftest import metrics_text, pending_share_toml  # noqa: E402
from jayfixtures import conn  # noqa: E402

BUCKET = "combine"
ARGS = ["--jay", "127.0.0.1:0", "--scribe", "off", "--http", "127.0.0.1:0"]
THREADS, PER = 24, 12


def combined(srv):
    text = metrics_text(srv.addrs["http"])
    m = re.search(r"^cairn_meta_combined_runs_total (\S+)$", text, re.M)
    return float(m.group(1)) if m else 0.0


def test_concurrent_small_puts_combined_and_answered(server_factory, tmp_path):
    cfg = tmp_path / "cairnd.toml"
    cfg.write_text(pending_share_toml(THREADS))  # all connect at once
    args = ARGS + ["--config", str(cfg)]
    srv = server_factory(args=args, wait_for=("jay", "http"))
    with conn(srv) as c:
        c.create_bucket(BUCKET)
    sums, errors = {}, []

    def writer(t):
        try:
            with conn(srv) as c:
                for i in range(PER):
                    key = "t%d/%d" % (t, i)
                    body = os.urandom(4096)
                    c.put_object(BUCKET, key, body)
                    sums[key] = hashlib.sha256(body).digest()
        except Exception as e:  # surfaced below
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    assert len(sums) == THREADS * PER
    n = combined(srv)
    if fleetmode.active():
        assert n == 0  # no groups on PostgreSQL
    else:
        assert n > 0, "no commit body was combined"
    srv.kill9()  # answered means durable (G1), for a queued member too
    srv2 = server_factory(args=args, data=srv.data_dir, wait_for=("jay", "http"))
    with conn(srv2) as c:
        for key, want in sums.items():
            assert hashlib.sha256(c.get_object(BUCKET, key)[1]).digest() == want, key
