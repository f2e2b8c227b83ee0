"""Account ids under concurrency on a fleet (docs/fleet.md, "Isolation and
the retry rule"): an account's id is `COALESCE(MAX(id), 0) + 1`, read and
used inside one SERIALIZABLE write transaction (src/identity/accounts.c).
Two such transactions at once, on two nodes or on two writer connections
of one node, read the same MAX; one of them must fail with 40001 (not a
duplicate-key 23505, which would reach the client as 409 "name taken" or
500) and be run again under CN_META_RETRY with a fresh MAX.

Two cairnd nodes on one PostgreSQL database, each with the administrator
token, are started at the same moment on the empty database (both
bootstrap the `admin` account through the same MAX+1 insert); then 16
threads, 8 per node, create 40 accounts through the console's admin API at
once; then 8 threads on both nodes create one account name at once.  Two
more nodes start at once on an empty database without CAIRN_ADMIN_TOKEN
(the administrator with a random credential written to DATA/admin.token,
in a run cn_meta_run does not repeat: bootstrap.c repeats it itself).

The PostgreSQL cluster is this module's own (fleetutil's pg fixture, as
every tests/fleet file), so `make test` runs it; it is skipped without the
PostgreSQL 15 server binaries, and on the fleet engines (`make test-fleet`,
tests/fleet/pg.sh) conftest skips tests/fleet/ with fleetmode's reason."""
import json
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "console"))
from fleetutil import key_file, needs_pg, pg  # noqa: E402,F401
from conftest import (ADMIN_TOKEN, Server, assert_no_sanitizer, metrics_text,  # noqa: E402
                      sanitizer_report)
from test_console_session import API, Console  # noqa: E402

pytestmark = needs_pg

NODES = 2
THREADS_PER_NODE = 8
ACCOUNTS = 40


def start_at_once(servers):
    """Starts every server in a thread of its own, released together;
    returns the exceptions of those that did not come up."""
    gate = threading.Barrier(len(servers))
    errors = [None] * len(servers)

    def one(i):
        gate.wait()
        try:
            servers[i].start(wait_for=("http",))
        except Exception as e:  # noqa: BLE001 (reported by the test)
            errors[i] = e

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(servers))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [e for e in errors if e is not None]


@pytest.fixture(scope="module")
def fleet(pg, tmp_path_factory):
    base = tmp_path_factory.mktemp("ids")
    key = key_file(base / "fleet.key")
    uri = pg.create_db("ids")
    servers = [Server(base / ("n%d" % i),
                      args=["--jay", "off", "--scribe", "off", "--http", "127.0.0.1:0",
                            "--meta", uri, "--identity-key", key, "--node-id", "n%d" % i])
               for i in range(NODES)]
    try:
        errors = start_at_once(servers)
        assert not errors, errors[0]
        yield pg, servers
    finally:
        bad = []
        stops = [threading.Thread(target=s.stop) for s in servers]  # at once: each drains
        for t in stops:
            t.start()
        for t in stops:
            t.join()
        for s in servers:
            out = s.output()
            if sanitizer_report(out):
                bad.append(out)
        assert not bad, bad[0][-4000:]


def admins(servers):
    """One signed-in console per node (the administrator's session)."""
    cons = []
    for s in servers:
        c = Console(s.addrs["http"])
        st, _, body = c.login(ADMIN_TOKEN)
        assert st == 200, body
        cons.append(c)
    return cons


def accounts(pg):
    """Every account row as {name: id}, read from the database itself."""
    rows = pg.psql("SELECT name, id FROM cn_accounts", db="ids").split()
    return {n: int(i) for n, i in (r.split("|") for r in rows)}


def retries(servers):
    """cairn_meta_busy_retries_total summed over the nodes (run.c: each
    repeated run of a body that failed CN_E_DB_LOCKED, e.g. a 40001)."""
    total = 0.0
    for s in servers:
        text = metrics_text(s.addrs["http"])
        total += sum(float(line.split()[-1]) for line in text.splitlines()
                     if line.startswith("cairn_meta_busy_retries_total"))
    return total


def listed(con):
    st, _, body = con.request("GET", API + "accounts")
    assert st == 200, body
    return {a["name"] for a in json.loads(body)["accounts"]}


def create_all(cons, names):
    """POSTs an account for each name, THREADS_PER_NODE threads per node, the
    i-th name through node i % NODES, every thread released together;
    returns [(name, status, body)]."""
    gate = threading.Barrier(len(cons) * THREADS_PER_NODE)
    lock = threading.Lock()
    todo = list(enumerate(names))
    done = []

    def worker():
        gate.wait()
        while True:
            with lock:
                if not todo:
                    return
                i, name = todo.pop(0)
            con = cons[i % len(cons)]  # request() opens a connection per call
            st, _, body = con.mutate("POST", API + "accounts",
                                     {"name": name, "email": name + "@example.com"})
            with lock:
                done.append((name, st, body))

    with ThreadPoolExecutor(max_workers=len(cons) * THREADS_PER_NODE) as ex:
        for f in [ex.submit(worker) for _ in range(len(cons) * THREADS_PER_NODE)]:
            f.result()
    return done


def test_two_nodes_bootstrap_one_admin_at_once(fleet):
    """Both nodes came up on the empty database at the same moment (the
    fixture): one `admin` account, whose token signs in on both."""
    pg, servers = fleet
    rows = accounts(pg)
    assert list(rows) == ["admin"], rows
    admins(servers)


def test_concurrent_creations_get_distinct_ids(fleet):
    """40 accounts from 2 x 8 threads at once: every one 201 (the losers of
    the MAX+1 race were repeated, not answered 409 or 500), each its own id,
    listed by both nodes.  Without CN_META_RETRY on the creation's run this
    answers 500 "metadata database is locked"; the repeated runs (printed
    with -s) were 3-66 over 14 runs here."""
    pg, servers = fleet
    cons = admins(servers)
    names = ["acct%02d" % i for i in range(ACCOUNTS)]
    before = retries(servers)
    done = create_all(cons, names)
    print("repeated runs: %d" % (retries(servers) - before))
    bad = [(n, st, body) for n, st, body in done if st != 201]
    assert not bad, bad
    assert sorted(json.loads(b)["name"] for _, _, b in done) == names
    rows = accounts(pg)
    made = {n: rows[n] for n in names}
    assert len(set(made.values())) == ACCOUNTS, made
    assert rows["admin"] not in made.values()
    # each node lists every account, whichever node made it
    for con in cons:
        assert set(names) <= listed(con)


def test_one_name_at_once_is_made_once(fleet):
    """The same name from 2 x 8 threads: one 201, every other 409 (a retried
    40001 ends in the name's unique violation), never a 500 or a 503."""
    pg, servers = fleet
    cons = admins(servers)
    n = len(cons) * THREADS_PER_NODE
    done = create_all(cons, ["same"] * n)
    codes = sorted(st for _, st, _ in done)
    assert codes == [201] + [409] * (n - 1), done
    assert "same" in accounts(pg)
    for con in cons:
        assert "same" in listed(con)


def test_two_nodes_first_start_without_admin_token(pg, tmp_path):
    """Two nodes started at once on an empty database without
    CAIRN_ADMIN_TOKEN: both come up, one `admin` account is made (MAX+1
    again, in a run that writes DATA/admin.token before its commit, so it
    is not repeated by cn_meta_run), and exactly one data dir holds its
    credential, which signs in on both nodes."""
    key = key_file(tmp_path / "fleet.key")
    db = "boot_" + "".join(c for c in tmp_path.name if c.isalnum())
    uri = pg.create_db(db)
    servers = [Server(tmp_path / ("n%d" % i),
                      args=["--jay", "off", "--scribe", "off", "--http", "127.0.0.1:0",
                            "--meta", uri, "--identity-key", key, "--node-id", "n%d" % i],
                      env={"CAIRN_ADMIN_TOKEN": ""})
               for i in range(NODES)]
    try:
        errors = start_at_once(servers)
        assert not errors, errors[0]
        rows = pg.psql("SELECT name FROM cn_accounts", db=db).split()
        assert rows == ["admin"], rows
        files = [tmp_path / ("n%d" % i) / "admin.token" for i in range(NODES)]
        creds = [f.read_text().strip() for f in files if f.exists()]
        assert len(creds) == 1, creds
        for s in servers:
            st, _, body = Console(s.addrs["http"]).login(creds[0])
            assert st == 200, body
    finally:
        for s in servers:
            s.stop()
            out = s.output()
            assert_no_sanitizer(out)
