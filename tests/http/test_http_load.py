"""Load on cairnd's HTTP listener, as on Jay's, over raw sockets against the
real server:

  * reads and writes go to different worker pools: uploads stalled on every
    storage worker do not hold up a GET (query pool);
  * the worker share counts a request's principal (its access key), not its
    address: one key's stalled uploads hold back its own further uploads
    from any address, while another key from the same address is served;
    nobody is answered "busy" for it (the share is no refusal);
  * a body sent below the I/O rate floor is cut once the floor's grace is
    over (the grace is shortened through the listener's io_timeout_floor_ms,
    the same key Jay's listener takes);
  * 64 stalled uploads hold the listener's request-memory budget: the ones
    past it are answered 503 SlowDown, and the server's RSS stays bounded;
  * one access key's stalled uploads fill its own share of that budget
    (body_budget_per_principal): its next request is answered 503 SlowDown,
    another key's and an anonymous one are served, and the key is served
    again once one of its uploads ends;
  * 4,096 idle keep-alive connections (the default limit) are held with at
    most 16 KiB of server memory each (VmRSS before and after, divided by the
    count: a memory bound, not a timing), and the 4,097th is refused;
  * a stop lets an upload in flight finish; one that stalls past the grace
    period is cut and the server still exits.

Nothing here asserts how long something took.  Where a request must wait
(held by its principal's share), the test checks that it has no answer
while it must wait and that it gets one once it may go on."""
import os
import re
import resource
import select
import signal
import time

import pytest

from conftest import ADMIN_TOKEN, Server, binary, run
from test_http_admission import connect
from test_http_framework import _read_response

MIB = 1 << 20


def start(tmp_path, http=None, server=None, env=None):
    text = ""
    if server:
        text += "[server]\n" + "".join("%s = %d\n" % kv for kv in server.items())
    if http:
        text += "[http]\n" + "".join("%s = %d\n" % kv for kv in http.items())
    cfg = tmp_path / "cairnd.toml"
    cfg.write_text(text)
    e = {"CAIRN_ADMIN_TOKEN": ADMIN_TOKEN}
    e.update(env or {})
    srv = Server(tmp_path / "data", args=["--jay", "off", "--scribe", "off", "--http",
                                          "127.0.0.1:0", "--config", str(cfg)], env=e)
    return srv.start(wait_for=("http",))


def read_response(s):
    """One HTTP response on s (Content-Length framed): (status, head, body);
    status 0 when the peer closes or resets before a whole head."""
    try:
        head, body, _ = _read_response(s)
    except ConnectionResetError:
        return 0, b"", b""
    m = re.match(r"HTTP/1\.[01] (\d{3}) ", head)
    return (int(m.group(1)) if m else 0), head.encode(), body


def request(s, method, path, token=ADMIN_TOKEN, body=b"", headers=""):
    auth = "Authorization: Bearer %s\r\n" % token if token else ""
    s.sendall(("%s %s HTTP/1.1\r\nHost: x\r\n%s%sContent-Length: %d\r\n\r\n"
               % (method, path, auth, headers, len(body))).encode() + body)
    return read_response(s)


def begin_upload(s, path, length, token=ADMIN_TOKEN, first=b"x", on_worker=False):
    """Sends a PUT head declaring length bytes and the first of them: the
    request then waits for the rest on a storage worker.  on_worker: asks
    for 100 Continue and waits for it, which the server sends only from the
    worker, once the request is authorized (then sends first)."""
    auth = "Authorization: Bearer %s\r\n" % token if token else ""
    expect = "Expect: 100-continue\r\n" if on_worker else ""
    s.sendall(("PUT %s HTTP/1.1\r\nHost: x\r\n%s%sContent-Length: %d\r\n\r\n"
               % (path, auth, expect, length)).encode())
    if on_worker:
        cont = b"HTTP/1.1 100 Continue\r\n\r\n"
        got = b""
        while len(got) < len(cont):
            chunk = s.recv(len(cont) - len(got))
            assert chunk, got
            got += chunk
        assert got == cont, got
    s.sendall(first)


def has_answer(s, wait):
    """True when s has bytes to read (or was closed) within wait seconds."""
    r, _, _ = select.select([s], [], [], wait)
    return bool(r)


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def make_bucket(addr, name):
    s = connect(addr)
    status, _, body = request(s, "PUT", "/" + name)
    assert status == 200, body
    s.close()


def new_token(srv):
    perms = []
    for p in ("bucket:list", "object:get", "object:put", "object:list"):
        perms += ["--perm", p]
    r = run([binary("cairn"), "admin", "--data", srv.data_dir, "token", "create", "--account",
             "admin"] + perms, env={"CAIRN_ADMIN_TOKEN": ADMIN_TOKEN})
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def assert_slow_down(status, head, body):
    assert status == 503, (head, body)
    assert re.search(rb"(?im)^Retry-After: 1\r?$", head), head
    assert b"<Code>SlowDown</Code>" in body, body


def test_reads_are_served_while_uploads_stall_every_storage_worker(tmp_path, servers):
    srv = start(tmp_path, server={"storage_workers": 2, "query_workers": 2},
                http={"worker_share_percent": 0, "io_timeout_floor_ms": 600000})
    servers.append(srv)
    addr = srv.addrs["http"]
    make_bucket(addr, "bkt")
    stalled = [connect(addr) for _ in range(3)]
    for i, s in enumerate(stalled):
        begin_upload(s, "/bkt/stalled%d" % i, MIB, on_worker=i < 2)
    # Two uploads occupy both storage workers, the third waits for one; a
    # listing, an object read and the health check are reads, served on
    # the query pool at once.
    for path, want in (("/_cairn/health", 200), ("/bkt?list-type=2", 200), ("/bkt/none", 404)):
        c = connect(addr, "127.0.0.2")
        status, _, body = request(c, "GET", path)
        assert status == want, (path, body)
        c.close()
    # The uploads finish once their bodies come.
    for i, s in enumerate(stalled):
        s.sendall(b"x" * (MIB - 1))
    for s in stalled:
        assert read_response(s)[0] == 200
        s.close()


def test_worker_share_counts_the_principal_not_the_address(tmp_path, servers):
    # 4 storage workers, a share of 50%: two requests of one key at once.
    srv = start(tmp_path, server={"storage_workers": 4, "query_workers": 4},
                http={"worker_share_percent": 50, "io_timeout_floor_ms": 600000,
                      "max_pending_per_source": 1000})
    servers.append(srv)
    addr = srv.addrs["http"]
    make_bucket(addr, "bkt")
    other = new_token(srv)

    def session(source, token):
        # One authenticated request binds the connection's principal; the
        # share counts it from the next request on.
        s = connect(addr, source)
        assert request(s, "GET", "/bkt?list-type=2", token)[0] == 200
        return s

    a1, a2 = session("127.0.0.1", ADMIN_TOKEN), session("127.0.0.1", ADMIN_TOKEN)
    begin_upload(a1, "/bkt/a1", MIB, on_worker=True)
    begin_upload(a2, "/bkt/a2", MIB, on_worker=True)
    # The same key from another address: its share is taken, so its upload
    # waits in the loop, unread, without an answer (no "busy").
    a3 = session("127.0.0.2", ADMIN_TOKEN)
    a3.sendall(b"PUT /bkt/a3 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
               b"Content-Length: 2\r\n\r\nok" % ADMIN_TOKEN.encode())
    # Another key from the stalled uploads' own address is served at once.
    b1 = session("127.0.0.1", other)
    status, _, body = request(b1, "PUT", "/bkt/b1", other, b"from b1")
    assert status == 200, body
    if has_answer(a3, 1.0):
        pytest.fail("a key's request ran beyond its worker share: %r" % (read_response(a3),))
    # One of the key's uploads ends: the held one goes on.
    a1.sendall(b"x" * (MIB - 1))
    assert read_response(a1)[0] == 200
    status, _, body = read_response(a3)
    assert status == 200, body
    a2.sendall(b"x" * (MIB - 1))
    assert read_response(a2)[0] == 200
    for s in (a1, a2, a3, b1):
        s.close()


def test_slow_body_is_cut_at_the_rate_floor(tmp_path, servers):
    # The floor's grace shortened to 1 s (Jay's default is 30 s); the rate,
    # 1 MB/s, is the default.
    srv = start(tmp_path, http={"io_timeout_floor_ms": 1000})
    servers.append(srv)
    addr = srv.addrs["http"]
    make_bucket(addr, "bkt")
    # A client at full speed is not cut.
    s = connect(addr)
    assert request(s, "PUT", "/bkt/fast", body=b"f" * (2 * MIB))[0] == 200
    s.close()
    # A client sending 2 MiB at about 20 KB/s is cut before it is done: its
    # deadline is 1 s + 2 MiB at 1 MB/s.
    total = 2 * MIB
    s = connect(addr)
    begin_upload(s, "/bkt/slow", total, first=b"")
    sent = 0
    cut = False
    give_up = time.monotonic() + 120  # a bound on the loop, not an assertion
    while sent < total and time.monotonic() < give_up:
        if has_answer(s, 0.05):
            cut = True
            break
        try:
            s.sendall(b"s" * 1000)
        except (BrokenPipeError, ConnectionResetError):
            cut = True
            break
        sent += 1000
    assert cut, "a body below the rate floor was not cut (%d of %d bytes sent)" % (sent, total)
    assert sent < total
    status, head, body = read_response(s)
    assert status in (0, 400), (head, body)  # RequestTimeout when it could still be told
    if status:
        assert b"<Code>RequestTimeout</Code>" in body, body
    s.close()
    # The object was not stored.
    c = connect(addr)
    assert request(c, "GET", "/bkt/slow")[0] == 404
    c.close()


def test_stalled_uploads_hold_the_memory_budget(tmp_path, servers):
    # Workers for every upload and no share, so that what bounds them is the
    # listener's budget: 64 request buffers (16 KiB each, reserved while a
    # request is served).
    n, extra = 64, 8
    srv = start(tmp_path, server={"storage_workers": n + extra, "queue_length": 1000},
                http={"worker_share_percent": 0, "body_budget_bytes": n * 16384,
                      "max_pending_per_source": 1000, "io_timeout_floor_ms": 600000})
    servers.append(srv)
    addr = srv.addrs["http"]
    make_bucket(addr, "bkt")
    rss0 = rss_kib(srv.proc.pid)
    conns = [connect(addr) for _ in range(n + extra)]
    for i, s in enumerate(conns):
        begin_upload(s, "/bkt/u%d" % i, 64 * MIB)
    # Whichever arrive last at a worker find the budget spent and are told
    # to slow down; the others stay stalled, answered by nothing.
    refused, waiting = [], list(conns)
    give_up = time.monotonic() + 120
    while len(refused) < extra and time.monotonic() < give_up:
        ready, _, _ = select.select(waiting, [], [], 1.0)
        for s in ready:
            assert_slow_down(*read_response(s))
            refused.append(s)
            waiting.remove(s)
    assert len(refused) == extra
    assert not select.select(waiting, [], [], 0.5)[0], "more refusals than the budget makes"
    rss1 = rss_kib(srv.proc.pid)
    grown = (rss1 - rss0) / 1024.0
    print("load: %d stalled uploads, %d refused: server RSS grew %.1f MiB" % (n, extra, grown))
    assert grown < 48, "RSS grew %.1f MiB under %d stalled uploads" % (grown, n)
    # Every request needs its buffer from the budget, reads too: once a
    # stalled client gives up, its share is free and the next one is served.
    waiting.pop().close()
    for _ in range(200):  # the close reaches the server's worker asynchronously
        c = connect(addr, "127.0.0.2")
        status, head, body = request(c, "GET", "/_cairn/health", None)
        c.close()
        if status == 200:
            break
        assert_slow_down(status, head, body)
        time.sleep(0.05)
    assert status == 200
    for s in conns:
        s.close()


def test_one_principal_fills_only_its_memory_share(tmp_path, servers):
    # A per-principal share of four request buffers, far under the
    # listener's budget (128 MiB by default): what refuses the key's fifth
    # request can only be its own share.  No worker share, workers for
    # every upload, so nothing else holds a request back.
    share = 4
    srv = start(tmp_path, server={"storage_workers": 8, "query_workers": 4},
                http={"worker_share_percent": 0, "body_budget_per_principal": share * 16384,
                      "max_pending_per_source": 1000, "io_timeout_floor_ms": 600000})
    servers.append(srv)
    addr = srv.addrs["http"]
    make_bucket(addr, "bkt")
    other = new_token(srv)

    def session(token):
        # A connection is charged to the principal of its last request: one
        # listing binds it, and nothing of it stays reserved between
        # requests.
        s = connect(addr)
        assert request(s, "GET", "/bkt?list-type=2", token)[0] == 200
        return s

    held = [session(ADMIN_TOKEN) for _ in range(share + 1)]
    # 100 Continue comes from the worker once the request's buffer is
    # reserved: after it, each stalled upload holds 16 KiB of the key's share.
    # Under 1 MiB, so that the buffer never grows (serve.c, body_grow).
    size = 512 << 10
    for i, s in enumerate(held[:share]):
        begin_upload(s, "/bkt/held%d" % i, size, on_worker=True)
    # The key's next request finds its share spent: 503 SlowDown, before
    # any body byte is read (admit.c, cn_conn_budget_reserve).
    last = held[share]
    last.sendall(b"PUT /bkt/over HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                 b"Content-Length: 2\r\n\r\nok" % ADMIN_TOKEN.encode())
    assert_slow_down(*read_response(last))
    last.close()
    # Another key, from the same address, is served at once, a read and an
    # upload; so is an anonymous request.
    b = session(other)
    status, _, body = request(b, "PUT", "/bkt/b", other, b"from b")
    assert status == 200, body
    status, _, body = request(b, "GET", "/bkt/b", other)
    assert (status, body) == (200, b"from b")
    b.close()
    c = connect(addr)
    assert request(c, "GET", "/_cairn/health", None)[0] == 200
    c.close()
    # One of the key's uploads ends: its buffer went back to the share before
    # its answer went out (serve.c, buf_end), so the key's next upload is
    # served as soon as that answer is read -- no retry.
    held[0].sendall(b"x" * (size - 1))
    assert read_response(held[0])[0] == 200
    s = session(ADMIN_TOKEN)
    status, _, body = request(s, "PUT", "/bkt/over", ADMIN_TOKEN, b"ok")
    assert status == 200, body
    s.close()
    for i, h in enumerate(held[1:share], 1):
        h.sendall(b"x" * (size - 1))
        assert read_response(h)[0] == 200, i
        h.close()
    held[0].close()


def raise_nofile(want):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def test_idle_keep_alive_connections_cost_at_most_16_kib_each(tmp_path, servers):
    """Under ASan the allocator's quarantine keeps freed blocks (every
    request's buffer) for a while, which is no memory the server holds for
    its connections: it is made small for this test's server."""
    n = 4096
    if raise_nofile(2 * n + 256) < 2 * n + 256:
        pytest.skip("RLIMIT_NOFILE cannot be raised to hold %d connections" % n)
    asan = os.environ.get("ASAN_OPTIONS", "")
    srv = start(tmp_path, env={"ASAN_OPTIONS": (asan + ":" if asan else "")
                               + "quarantine_size_mb=1:thread_local_quarantine_size_kb=64"})
    servers.append(srv)
    addr = srv.addrs["http"]
    req = b"GET /_cairn/health HTTP/1.1\r\nHost: x\r\n\r\n"

    def open_served(count):
        out = []
        for _ in range(count // 16):  # batches well under the per-source pending share (256)
            batch = [connect(addr) for _ in range(16)]
            for s in batch:
                s.sendall(req)
            for s in batch:
                assert read_response(s)[0] == 200
            out += batch
        return out

    # Warm up: the workers' stacks and allocator caches, then the baseline.
    for s in open_served(256):
        s.close()
    time.sleep(0.5)
    rss0 = rss_kib(srv.proc.pid)
    held = open_served(n)
    rss1 = rss_kib(srv.proc.pid)
    per_conn = (rss1 - rss0) * 1024.0 / n
    print("load: %d idle keep-alive connections: %.0f bytes of server RSS each" % (n, per_conn))
    assert per_conn <= 16 * 1024, "%.0f bytes per idle connection" % per_conn
    # The limit is held: the next one is refused before it sends anything,
    # and a held connection is still served.
    extra = connect(addr)
    assert_slow_down(*read_response(extra))
    extra.close()
    held[0].sendall(req)
    assert read_response(held[0])[0] == 200
    for s in held:
        s.close()


def upload_then_stop(tmp_path, servers, grace_ms):
    """A server with an idle keep-alive connection and an upload waiting for
    its body on a worker, sent SIGTERM: (server, address, upload, idle)."""
    srv = start(tmp_path, server={"shutdown_grace_ms": grace_ms},
                http={"io_timeout_floor_ms": 600000})
    servers.append(srv)
    addr = srv.addrs["http"]
    make_bucket(addr, "bkt")
    idle = connect(addr)
    assert request(idle, "GET", "/_cairn/health", None)[0] == 200
    s = connect(addr)
    begin_upload(s, "/bkt/inflight", MIB, on_worker=True)
    srv.proc.send_signal(signal.SIGTERM)
    # Idle connections are closed at once.
    assert read_response(idle)[0] == 0
    idle.close()
    return srv, addr, s


def test_stop_finishes_requests_in_flight(tmp_path, servers):
    srv, addr, s = upload_then_stop(tmp_path, servers, 600000)
    # New connections are refused...
    with pytest.raises(OSError):
        for _ in range(200):
            connect(addr, timeout=5).close()
            time.sleep(0.05)
    # ...while the upload in flight goes on and is answered, then closed.
    s.sendall(b"x" * (MIB - 1))
    status, head, body = read_response(s)
    assert status == 200, (head, body)
    assert re.search(rb"(?im)^Connection: close\r?$", head), head
    assert srv.proc.wait(60) == 0
    s.close()


def test_stop_cuts_a_stalled_request_after_the_grace_period(tmp_path, servers):
    srv, _, s = upload_then_stop(tmp_path, servers, 500)
    assert srv.proc.wait(60) == 0  # the grace period ended it
    assert read_response(s)[0] == 0
    s.close()
