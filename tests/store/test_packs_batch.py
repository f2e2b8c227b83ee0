"""Pack index rows written in batches (issue 24: a committer batch's rows go
as multi-row INSERTs, src/store/pack.c insert_all) lose and duplicate
nothing, on both metadata engines: many concurrent small durable PUTs
through Jay (some of them the same bytes under other keys, so one batch can
hold a new blob and its repeat), then every object reads back byte-exact,
before and after a restart (which rebuilds the memory index from the rows
alone: a lost or misplaced row is an unreadable object there, since
recovery re-indexes only records past the pack's indexed end), and the
pack index holds exactly one row per distinct body, each at its own
record.  On PostgreSQL the statements are logged, and the test prints how
many INSERTs carried the rows."""
import os
import sqlite3
import subprocess
import sys
import threading

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "jay"))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "fleet"))

from conftest import ADMIN_TOKEN, pending_share_toml  # noqa: E402
import jayclient  # noqa: E402
import pgharness  # noqa: E402

WRITERS = 24
PER_WRITER = 20
REPEATS = 3  # every REPEATS-th key of an odd writer repeats the writer before's
SIZE = 4096


def digests(tmp, bodies):
    """BLAKE3 hex of each body, with one b3sum run."""
    names = []
    for i, b in enumerate(bodies):
        p = tmp / ("b%d" % i)
        p.write_bytes(b)
        names.append(str(p))
    out = subprocess.run(["b3sum", "--no-names"] + names, capture_output=True, check=True)
    return out.stdout.decode().split()


def workload():
    """WRITERS lists of PER_WRITER (key, body); a repeated body is the one
    the even writer before puts at the same step, so the two race into one
    committer batch when the timing allows."""
    fresh = [[os.urandom(SIZE) for _ in range(PER_WRITER)] for _ in range(WRITERS)]
    plan = []
    for w in range(WRITERS):
        keys = []
        for i in range(PER_WRITER):
            repeat = w % 2 == 1 and i % REPEATS == REPEATS - 1
            b = fresh[w - 1][i] if repeat else fresh[w][i]
            keys.append(("w%d-%d" % (w, i), b))
        plan.append(keys)
    return plan


def put_all(srv, plan):
    errors = []

    def writer(keys):
        try:
            with jayclient.Conn(srv.addrs["jay"], ADMIN_TOKEN) as c:
                for k, b in keys:
                    c.put_object("packbatch", k, b)
        except Exception as e:  # reported below, not lost in the thread
            errors.append(repr(e))

    threads = [threading.Thread(target=writer, args=(keys,)) for keys in plan]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]


def read_all(srv, objs):
    with jayclient.Conn(srv.addrs["jay"], ADMIN_TOKEN) as c:
        bad = [k for k, b in objs.items() if c.get_object("packbatch", k)[1] != b]
    assert not bad, bad[:5]


def check_rows(rows, want):
    """rows: (digest hex, pack_id, off) of every index row; want: the
    distinct bodies' digests.  One row per body, each at its own record."""
    ours = [r for r in rows if r[0] in want]
    assert len(ours) == len(want), (len(ours), len(want))
    assert {r[0] for r in ours} == want
    places = [(r[1], r[2]) for r in rows]
    assert len(set(places)) == len(places), "two index rows name one record"


def run_engine(server_factory, tmp_path, meta_args, rows_of):
    cfg = tmp_path / "cairnd.toml"
    cfg.write_text("[store]\npack_max_bytes = 65536\n" + pending_share_toml(WRITERS))
    srv = server_factory(args=["--jay", "127.0.0.1:0", "--config", str(cfg)] + meta_args)
    with jayclient.Conn(srv.addrs["jay"], ADMIN_TOKEN) as c:
        c.create_bucket("packbatch")
    plan = workload()
    objs = {k: b for keys in plan for k, b in keys}
    put_all(srv, plan)
    read_all(srv, objs)
    srv.stop()
    want = set(digests(tmp_path, list({b: 1 for b in objs.values()})))
    assert len(want) == WRITERS * PER_WRITER - WRITERS // 2 * (PER_WRITER // REPEATS)
    check_rows(rows_of(srv), want)
    srv.start()
    read_all(srv, objs)
    return srv


def test_batched_pack_rows_sqlite(server_factory, tmp_path):
    def rows_of(srv):
        db = sqlite3.connect("file:%s?mode=ro" % os.path.join(srv.data_dir, "meta.db"), uri=True)
        try:
            return [(bytes(d).hex(), p, o) for d, p, o in
                    db.execute("SELECT digest, pack_id, off FROM store_pack_blob")]
        finally:
            db.close()

    run_engine(server_factory, tmp_path, [], rows_of)


@pytest.mark.skipif(not pgharness.available(), reason="PostgreSQL 15 server binaries not installed")
def test_batched_pack_rows_postgres(server_factory, tmp_path):
    with pgharness.PgCluster() as pg:
        uri = pg.create_db("pbatch")
        pg.psql("ALTER DATABASE pbatch SET log_statement = 'all'")
        pg.psql("ALTER DATABASE pbatch SET log_parameter_max_length = 0")

        def rows_of(srv):
            out = pg.psql("SELECT encode(digest, 'hex'), pack_id, off FROM store_pack_blob",
                          db="pbatch")
            return [tuple(ln.split("|")) for ln in out.split()]

        run_engine(server_factory, tmp_path, ["--meta", uri], rows_of).stop()
        with open(os.path.join(pg.dir, "log"), "rb") as f:
            log = f.read().decode(errors="replace")
        ins = [ln for ln in log.splitlines()
               if "INSERT INTO store_pack_blob" in ln and "LOG:  " in ln]
        print("%d PUTs: %d INSERT(s) into store_pack_blob, the largest of %d rows"
              % (WRITERS * PER_WRITER, len(ins), max(ln.count("(?") + ln.count("($") for ln in ins)
                 if ins else 0))
