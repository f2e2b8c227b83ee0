"""blobs/have on PostgreSQL metadata (issue 24: "`have` of 10,000 digests is
one query"): a cairnd on --meta postgres://... answers a have of 10,000
digests exactly (present, absent, present only in another namespace, a
digest asked twice, the order of the request kept), and the server logs
one execution of the batch statement for it, not one statement per digest
(the database runs with log_statement = all)."""
import os
import sys
import time

from conftest import Server

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "blobops"))
from fleetutil import needs_pg, pg  # noqa: E402,F401
from blobsclient import Ops, b3  # noqa: E402

pytestmark = needs_pg

HTTP_ONLY = ["--jay", "off", "--scribe", "off", "--http", "127.0.0.1:0"]


def log_tail(pg, since):
    """The cluster's server log from byte offset since, and its new end."""
    with open(os.path.join(pg.dir, "log"), "rb") as f:
        f.seek(since)
        text = f.read()
    return text.decode(errors="replace"), since + len(text)


def log_end(pg):
    return os.path.getsize(os.path.join(pg.dir, "log"))


def test_have_of_10000_digests_is_one_statement(pg, tmp_path):
    uri = pg.create_db("have")
    # Every statement of every new session of this database is logged, its
    # parameters left out (10,000 digests would be 640 KiB a line).
    pg.psql("ALTER DATABASE have SET log_statement = 'all'")
    pg.psql("ALTER DATABASE have SET log_parameter_max_length = 0")
    srv = Server(tmp_path / "n", args=HTTP_ONLY + ["--meta", uri])
    srv.start(wait_for=("http",))
    try:
        ops = Ops(srv)
        blobs = [b"have-%d" % i for i in range(3)]
        for b in blobs:
            assert ops.put("team/a", b)[0] == 200
        other = b"only in team/b"
        assert ops.put("team/b", other)[0] == 200
        digests = ["%064x" % (i + 1) for i in range(10000)]
        where = {17: b3(blobs[0]), 5000: b3(blobs[1]), 9999: b3(blobs[2]),
                 6: b3(blobs[1]), 42: b3(other)}
        for i, d in where.items():
            digests[i] = d

        since = log_end(pg)
        t0 = time.monotonic()
        present = ops.have("team/a", digests)
        took = time.monotonic() - t0
        text, _ = log_tail(pg, since)

        assert len(present) == 10000
        assert [i for i, p in enumerate(present) if p] == [6, 17, 5000, 9999]
        lookups = [ln for ln in text.splitlines() if "blobs_member" in ln and "ns = $" in ln]
        assert len(lookups) == 1, lookups[:5]
        assert "unnest" in lookups[0]
        print("have of 10,000 digests on PostgreSQL: %.3f s" % took)

        # Another namespace sees only its own digest; an empty have runs nothing.
        assert [i for i, p in enumerate(ops.have("team/b", digests)) if p] == [42]
        since = log_end(pg)
        assert ops.have("team/a", []) == []
        text, _ = log_tail(pg, since)
        assert "blobs_member" not in text
    finally:
        srv.stop()
