"""A small durable PUT's metadata commit reaches meta.db-wal in one write
(src/meta/walbuf.c): the server's write-class system calls per 4 KiB PUT stay
few, and what was acknowledged survives a kill -9 and a restart, also after
group commits larger than one gathered write (96 KiB)."""
import os
import threading

from jayfixtures import conn, jay_args, restart

BUCKET = "walbucket"


def syscw(pid):
    """Write-class system calls (write, pwrite, writev ...) of process pid."""
    with open("/proc/%d/io" % pid) as f:
        for line in f:
            if line.startswith("syscw:"):
                return int(line.split()[1])
    raise AssertionError("no syscw in /proc/%d/io" % pid)


def test_serial_put_writes_wal_once(server_factory):
    srv = server_factory(args=jay_args())
    body = os.urandom(4096)
    with conn(srv) as c:
        c.create_bucket(BUCKET)
        for i in range(20):  # warm: first pack, first statements
            c.put_object(BUCKET, "warm%d" % i, body)
        w0 = syscw(srv.proc.pid)
        n = 200
        for i in range(n):
            c.put_object(BUCKET, "k%d" % i, body)
        per_put = (syscw(srv.proc.pid) - w0) / n
    # Measured 3.6 (the pack append, the index commit's and the object
    # commit's WAL writes); about 20 when SQLite wrote each frame's header
    # and page on their own.
    assert per_put < 8, per_put


def test_acknowledged_puts_survive_kill9(server_factory):
    srv = server_factory(args=jay_args())
    with conn(srv) as c:
        c.create_bucket(BUCKET)
    bodies = {}
    errors = []

    def writer(t):
        try:
            with conn(srv) as c:
                for i in range(40):
                    key = "t%d/%d" % (t, i)
                    body = os.urandom(4096)
                    c.put_object(BUCKET, key, body, metadata={"pad": "x" * 1000})
                    bodies[key] = body
        except Exception as e:  # surfaced below
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    srv.kill9()
    srv2 = restart(server_factory, srv)
    with conn(srv2) as c:
        for key, body in bodies.items():
            assert c.get_object(BUCKET, key)[1] == body, key
