"""Helpers shared by the Python integration tests that drive the real `cairn`
and `cairnd` binaries: one copy of what test files used to define each for
themselves -- the `cairn repo` runner and its Scribe-only server fixture,
workspace file helpers, offline `cairn admin repo` backup/restore, cairnd
usage errors, a sanitizer check on a command's output, the TCP relay
the lost-reply and tampering tests build their proxies on, a check that
the server closed a connection, and a boto3 client of a server's S3 face.

What a test file needs differently is a parameter here (extra flags such as
`--conns 0`, a credential in the environment, a working directory, a longer
timeout), never a second copy.  Every command run through here fails the
test on a sanitizer report in its output, whatever its exit status, so the
same tests hold under an ASan+UBSan build (CAIRN_BUILD=build-asan-...)."""
import os
import select
import socket
import threading
import time

import pytest

import fleetmode
from conftest import binary, run

# A cairnd serving only Scribe, on an ephemeral loopback port.
SCRIBE_ONLY = ["--jay", "off", "--http", "off", "--scribe", "127.0.0.1:0"]


def no_sanitizer_report(err):
    """Under the sanitizer build a report fails the test even when the
    command's exit status looks right."""
    if isinstance(err, bytes):
        err = err.decode("utf-8", "replace")
    assert "Sanitizer" not in err and "runtime error:" not in err, err


def half_compressible(n):
    """n bytes that LZ4 halves: 512 random bytes, then 512 zeros, per KiB."""
    return b"".join(os.urandom(512) + bytes(512) for _ in range(n // 1024))


def scribe_ep(srv):
    """The "host:port" of a running server's Scribe listener."""
    host, port = srv.addrs["scribe"]
    return "%s:%d" % (host, port)


@pytest.fixture
def ep(server_factory):
    """A Scribe-only cairnd for the test; its endpoint as "host:port"."""
    return scribe_ep(server_factory(args=SCRIBE_ONLY, wait_for=("scribe",)))


def cairn_at(ep, *args, check=True, cwd=None, env=None, extra=(), timeout=120):
    """Runs `cairn ARGS --endpoint EP [EXTRA]`; text out.  check: the exit
    status must be 0."""
    r = run([binary("cairn")] + list(args) + ["--endpoint", ep] + list(extra),
            env=env, timeout=timeout, cwd=cwd)
    no_sanitizer_report(r.stderr)
    if check:
        assert r.returncode == 0, (args, r.stdout, r.stderr)
    return r


def repo(ep, *args, **kw):
    """Runs `cairn repo ARGS --endpoint EP`; the keywords of cairn_at."""
    return cairn_at(ep, "repo", *args, **kw)


def seeded(ep, tmp_path, name, files, message, more=("b",)):
    """Repository `name` created and cloned into tmp_path/a, files ({path:
    bytes}) written there and submitted with message, then cloned again into
    tmp_path/NAME for each name in more; returns the workspaces, a first."""
    a = str(tmp_path / "a")
    repo(ep, "create", name)
    repo(ep, "clone", name, a)
    for path, data in files.items():
        write(os.path.join(a, path), data)
    repo(ep, "submit", a, "-m", message)
    out = [a]
    for n in more:
        out.append(str(tmp_path / n))
        repo(ep, "clone", name, out[-1])
    return out


def cairnd_refuses(data, *args, says):
    """cairnd --data DATA ARGS refuses to start: a usage error (exit 2)
    whose message holds `says`."""
    r = run([binary("cairnd"), "--data", str(data)] + list(args))
    no_sanitizer_report(r.stderr)
    assert r.returncode == 2 and says in r.stderr, (r.returncode, r.stderr)
    return r


def admin_repo(data, *args, check=False, timeout=120):
    """Runs `cairn admin --data DATA repo ARGS` (offline: no server may be
    running on DATA).  On the fleet engines with the S3 tier it names the
    tier of the server on DATA too (fleetmode.server_args), as an operator
    backs up a fleet's repository.  check: the exit status must be 0."""
    tier = fleetmode.server_args(data, ["--meta"]) if fleetmode.active() else []
    r = run([binary("cairn"), "admin", "--data", str(data), "repo"] + list(args) + tier,
            timeout=timeout)
    no_sanitizer_report(r.stderr)
    if check:
        assert r.returncode == 0, (args, r.stdout, r.stderr)
    return r


def restore_in_place(srv, data, tmp_path, name="art"):
    """Stops srv, backs repository `name` up offline, restores the backup
    over it (--replace) and starts srv again on its Scribe listener."""
    srv.stop()
    bak = str(tmp_path / (name + ".bak"))
    assert admin_repo(data, "backup", name, bak).returncode == 0
    res = admin_repo(data, "restore", bak, "--replace")
    assert res.returncode == 0, res.stderr
    srv.start(wait_for=("scribe",))


def write(path, data):
    """Writes bytes to path, making its directories."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def tree(d, skip=(".cairn",)):
    """Every file under d as {relative path: bytes}, the directories named
    in skip (the workspace state by default) left out."""
    out = {}
    for root, dirs, files in os.walk(d):
        for s in skip:
            if s in dirs:
                dirs.remove(s)
        for f in files:
            p = os.path.join(root, f)
            out[os.path.relpath(p, d)] = read(p)
    return out


def recv_exact(sock, n):
    """Exactly n bytes from sock; EOFError when the peer closes first."""
    buf = b""
    while len(buf) < n:
        part = sock.recv(n - len(buf))
        if not part:
            raise EOFError
        buf += part
    return buf


def shut(*socks, close=False):
    """Shuts both directions of each socket, one already gone included;
    close: closes them too."""
    for s in socks:
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        if close:
            s.close()


class Relay:
    """A TCP relay between a client and cairnd for the tests that lose,
    hold or rewrite traffic: listens on an ephemeral loopback port (ep) and,
    for each connection, dials upstream ("host:port" or (host, port)) and
    runs _up(client, server) and _down(server, client) on threads of their
    own.  Both copy bytes as they come until either side ends; subclasses
    override them to watch or tamper."""

    def __init__(self, upstream):
        if isinstance(upstream, str):
            host, port = upstream.rsplit(":", 1)
            upstream = (host, int(port))
        self.upstream = upstream
        self.closed = False
        self.lsock = socket.create_server(("127.0.0.1", 0))
        self.ep = "127.0.0.1:%d" % self.lsock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.closed:
            try:
                c, _ = self.lsock.accept()
            except OSError:
                return
            u = socket.create_connection(self.upstream)
            threading.Thread(target=self._up, args=(c, u), daemon=True).start()
            threading.Thread(target=self._down, args=(u, c), daemon=True).start()

    @staticmethod
    def pump(src, dst):
        """Copies src to dst until either ends, then shuts both."""
        try:
            while True:
                b = src.recv(65536)
                if not b:
                    break
                dst.sendall(b)
        except OSError:
            pass
        shut(src, dst)

    def _up(self, c, u):
        self.pump(c, u)

    def _down(self, u, c):
        self.pump(u, c)

    def close(self):
        self.closed = True
        self.lsock.close()


def closed_by_server(sock, timeout):
    """Whether the server closed sock within timeout; what it sent is read
    raw and dropped (for a client that never goes on, e.g. inside TLS)."""
    fd, end = sock.fileno(), time.time() + timeout
    while time.time() < end:
        r, _, _ = select.select([fd], [], [], max(0.0, end - time.time()))
        if not r:
            return False
        try:
            if not os.read(fd, 65536):
                return True
        except OSError:
            return True
    return False


def s3_client(srv, token=None):
    """A boto3 S3 client of srv's HTTP listener, path style, SigV4, no
    retries (a test sees the server's first answer), as the admin unless
    token ("KEY:SECRET") says otherwise."""
    import boto3
    from botocore.config import Config
    from conftest import ADMIN_TOKEN
    key, secret = (token or ADMIN_TOKEN).split(":", 1)
    host, port = srv.addrs["http"]
    return boto3.session.Session().client(
        "s3", endpoint_url="http://%s:%d" % (host, port), aws_access_key_id=key,
        aws_secret_access_key=secret, region_name="us-east-1",
        config=Config(s3={"addressing_style": "path"}, signature_version="s3v4",
                      retries={"max_attempts": 0}, read_timeout=30))
