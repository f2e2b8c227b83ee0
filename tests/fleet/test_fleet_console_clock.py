"""Console sessions on nodes whose clocks disagree (issue 24; docs/fleet.md
"Clocks", docs/console.md "Sessions").  Two nodes on one PostgreSQL
database, the second's clock SKEW_S behind (the test switch
CAIRN_TEST_CLOCK_SKEW_MS), with an idle timeout shorter than the skew.  A
session row's times are written on the database's clock and checked against
it, so a session made on either node works on the other and is listed by
both.  With the nodes' own clocks, a session made on the slow node looked
idle for SKEW_S to the node on time, which answered 401 at once (and left
it out of its list), and one made on the fast side lived SKEW_S too long
on the slow one."""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "console"))
from fleetutil import Fleet, needs_pg, pg  # noqa: E402,F401
from conftest import ADMIN_TOKEN  # noqa: E402
from test_console_session import API, Console  # noqa: E402
from test_fleet_console import new_token  # noqa: E402

pytestmark = needs_pg

SKEW_S = 600
IDLE_MS = 300000  # shorter than the skew
MAX_MS = 3600000
DB = "conclock"
NOW = "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)"


def row_ages(pg, account):
    """(ms since created, ms since seen, ms left) of account's one session,
    on the database's clock."""
    out = pg.psql("SELECT %s - created_ms, %s - last_seen_ms, ends_ms - %s"
                  " FROM console_sessions WHERE account = '%s'" % (NOW, NOW, NOW, account),
                  db=DB)
    rows = [tuple(int(v) for v in line.split("|")) for line in out.split()]
    assert len(rows) == 1, out
    return rows[0]


def test_sessions_are_on_the_database_clock(pg, tmp_path):
    env = {"CAIRN_CONSOLE_IDLE_MS": str(IDLE_MS), "CAIRN_CONSOLE_MAX_MS": str(MAX_MS)}
    f = Fleet(pg, tmp_path, DB, count=1, env=env)
    try:
        f.nodes.append(None)
        f.start(1, env={"CAIRN_TEST_CLOCK_SKEW_MS": str(-SKEW_S * 1000)})
        for made, used, account in ((1, 0, "slowmade"), (0, 1, "fastmade")):
            a = Console(f.nodes[made].server.addrs["http"])
            b = Console(f.nodes[used].server.addrs["http"])
            assert a.login(new_token(f, account))[0] == 200
            b.cookie = a.cookie
            st, _, body = b.request("GET", API + "session")
            assert st == 200, body
            assert json.loads(body)["account"] == account
            created, seen, left = row_ages(pg, account)
            print("%s: created %d ms ago, seen %d ms ago, %d ms left"
                  % (account, created, seen, left))
            assert 0 <= created < 5000 and 0 <= seen < 5000, "written on node %d's clock" % made
            assert MAX_MS - 5000 < left <= MAX_MS
            for i in (0, 1):
                admin = Console(f.nodes[i].server.addrs["http"])
                assert admin.login(ADMIN_TOKEN)[0] == 200
                st, _, body = admin.request("GET", API + "sessions")
                assert st == 200
                assert account in [x["account"] for x in json.loads(body)["sessions"]], i
    finally:
        bad = f.stop()
        assert not bad, bad[0][-4000:]
