"""A browser that stops reading a repository file download holds no worker
(issue 16, docs/architecture.md "A reply in parts"): the console sends a
file's bytes as a producer body, its chunks read by position a piece at a
time, each piece by cn_conn_reply; a piece the client has not taken goes to
the network loop and the next one is made on a worker once it took it.
With one worker per request pool, more stalled downloads than workers leave
a fresh client's sign-in and download answered at once; the stalled ones
then read their files whole and byte-exact (SHA-256), chunks stored LZ4."""
import hashlib
import socket
import time

from cairnutil import cairn_at, half_compressible
from conftest import ADMIN_TOKEN, Server
from test_console_api import API, Api, scribe_ep
from test_console_repos import write

BIG = 12 << 20


def stalled_get(addr, cookie, path):
    """A download on a socket with a 4 KiB receive buffer, not read."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(60)
    s.connect(addr)
    s.sendall(b"GET %s%s HTTP/1.1\r\nHost: %s:%d\r\nCookie: cairn_session=%s\r\n\r\n"
              % (API.encode(), path.encode(), addr[0].encode(), addr[1], cookie.encode()))
    return s


def read_reply(s):
    """(status line, body) of one reply with a Content-Length."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(65536)
        assert chunk, buf
        buf += chunk
    head, _, body = buf.partition(b"\r\n\r\n")
    length = int([ln.split(b":", 1)[1] for ln in head.split(b"\r\n")
                  if ln.lower().startswith(b"content-length:")][0])
    while len(body) < length:
        chunk = s.recv(1 << 20)
        if not chunk:
            break
        body += chunk
    return head.split(b"\r\n")[0], body


def test_stalled_file_downloads_leave_the_workers_free(tmp_path):
    cfg = tmp_path / "cairnd.toml"
    cfg.write_text("[server]\nquery_workers = 1\nstorage_workers = 1\n"
                   "[http]\nworker_share_percent = 0\nio_timeout_floor_ms = 30000\n"
                   "io_rate_bytes_per_sec = 1000000000\n")
    srv = Server(tmp_path / "data", args=["--jay", "off", "--scribe", "127.0.0.1:0", "--http",
                                          "127.0.0.1:0", "--config", str(cfg)],
                 env={"CAIRN_ADMIN_TOKEN": ADMIN_TOKEN})
    srv.start(wait_for=("http", "scribe"))
    try:
        ep = scribe_ep(srv)
        ws = str(tmp_path / "ws")
        cairn_at(ep, "repo", "create", "art", "--lz4-storage")
        cairn_at(ep, "repo", "clone", "art", ws)
        big = half_compressible(BIG)
        write(ws, "big.bin", big)
        write(ws, "small.txt", b"small\n")
        cairn_at(ep, "repo", "submit", ws, "-m", "files")
        addr = srv.addrs["http"]
        api = Api(addr)
        stalled = [stalled_get(addr, api.cookie, "repos/art/file?path=big.bin")
                   for _ in range(4)]
        time.sleep(0.5)  # each has had its turn on the one worker
        t = time.monotonic()
        fresh = Api(addr)
        st, _, body = fresh.raw("GET", "repos/art/file?path=small.txt")
        took = time.monotonic() - t
        assert (st, body) == (200, b"small\n")
        assert took < 2, "a sign-in and a download waited %.1f s behind stalled ones" % took
        want = hashlib.sha256(big).hexdigest()
        for s in stalled:
            # a 4 KiB window takes minutes for a file this size: read at full speed
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
            line, body = read_reply(s)
            assert line.startswith(b"HTTP/1.1 200"), line
            assert len(body) == BIG and hashlib.sha256(body).hexdigest() == want
            s.close()
    finally:
        srv.stop()
        out = srv.output()
        assert "Sanitizer" not in out and "runtime error:" not in out, out
