"""libcairn's Jay client (tests/client/client_live.c) against the real cairnd:
every operation, the pool's reuse, idle discard, liveness check and its one
retry.  The retry scenarios put a small TCP proxy between client and server
that breaks a chosen connection at a moment the C program asks for."""
import os
import socket
import subprocess
import threading

from clitools import no_sanitizer_report
from conftest import ADMIN_TOKEN, BUILD, binary, ephemeral_args, run

MAX_OBJECT = 8 << 20


def live_binary():
    path = os.path.join(BUILD, "tests", "client", "client_live")
    assert os.path.exists(path), f"{path} is not built; run make"
    return path


def endpoint(srv):
    host, port = srv.addrs["jay"]
    return f"{host}:{port}"


def ro_token(srv):
    r = run([binary("cairn"), "admin", "--data", srv.data_dir, "token", "create",
             "--account", "admin", "--perm", "object:get"], env={"CAIRN_ADMIN_TOKEN": ADMIN_TOKEN})
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def live(mode, ep, env=None, on_arm=None, timeout=180):
    """Runs client_live MODE; on_arm(what) answers each "# ARM what" line."""
    full = dict(os.environ, CAIRN_ENDPOINT=ep, CAIRN_TOKEN=ADMIN_TOKEN, **(env or {}))
    p = subprocess.Popen([live_binary(), mode], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=full)
    out = []
    # stderr is drained by a thread so a chatty failure cannot block the child.
    err = []
    t = threading.Thread(target=lambda: err.append(p.stderr.read()), daemon=True)
    t.start()
    try:
        for line in p.stdout:
            out.append(line)
            if line.startswith("# ARM "):
                on_arm(line[6:].strip())
                p.stdin.write("go\n")
                p.stdin.flush()
        rc = p.wait(timeout)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    t.join(10)
    text = "".join(out) + "".join(err)
    assert rc == 0, text
    no_sanitizer_report(text)
    assert "not ok" not in text, text
    return text


def test_every_operation(server_factory):
    srv = server_factory(env={"JAY_MAX_OBJECT_SIZE": str(MAX_OBJECT)})
    text = live("ops", endpoint(srv), env={"CAIRN_TOKEN_RO": ro_token(srv),
                                           "CAIRN_TEST_MAX_OBJECT": str(MAX_OBJECT)})
    assert text.count("\nok ") == 11, text


def test_put_file_parallel_and_verified_get(server_factory):
    srv = server_factory()
    text = live("transfer", endpoint(srv))
    assert text.count("\nok ") == 1 or text.startswith("ok "), text


def test_idle_discard(server_factory):
    srv = server_factory()
    live("idle", endpoint(srv))


def test_reaped_connections_are_noticed(server_factory, tmp_path):
    cfg = tmp_path / "idle.toml"
    cfg.write_text("[jay]\nidle_timeout_ms = 300\n")
    srv = server_factory(args=ephemeral_args() + ["--config", str(cfg)])
    live("reaped", endpoint(srv))


class Proxy:
    """Forwards loopback TCP to the server.  Armed with "drop N", it closes the
    next N connections on which a request arrives after the handshake, before
    forwarding a byte of it; with "cut N", it forwards the next N requests and
    then only the first byte of each answer before closing."""

    def __init__(self, upstream):
        self.upstream = upstream
        self.ls = socket.socket()
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(16)
        self.addr = "127.0.0.1:%d" % self.ls.getsockname()[1]
        self.lock = threading.Lock()
        self.drop = self.cut = 0
        self.socks = []
        self.stopped = False
        threading.Thread(target=self._accept, daemon=True).start()

    def arm(self, what):
        kind, n = what.split()
        with self.lock:
            setattr(self, kind, int(n))

    def _take(self, kind):
        with self.lock:
            if getattr(self, kind) > 0:
                setattr(self, kind, getattr(self, kind) - 1)
                return True
            return False

    def _accept(self):
        while not self.stopped:
            try:
                c, _ = self.ls.accept()
            except OSError:
                return
            s = socket.create_connection(self.upstream)
            st = {"welcomed": False, "cut": False}
            with self.lock:
                self.socks += [c, s]
            threading.Thread(target=self._up, args=(c, s, st), daemon=True).start()
            threading.Thread(target=self._down, args=(c, s, st), daemon=True).start()

    @staticmethod
    def _kill(*socks):
        for x in socks:
            try:
                x.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _up(self, c, s, st):
        while True:
            try:
                data = c.recv(65536)
            except OSError:
                data = b""
            if not data:
                return self._kill(c, s)
            if st["welcomed"] and not st["cut"]:
                if self._take("drop"):
                    return self._kill(c, s)
                if self._take("cut"):
                    st["cut"] = True
            try:
                s.sendall(data)
            except OSError:
                return self._kill(c, s)

    def _down(self, c, s, st):
        while True:
            try:
                data = s.recv(65536)
            except OSError:
                data = b""
            if not data:
                return self._kill(c, s)
            if st["welcomed"] and st["cut"]:
                c.sendall(data[:1])
                return self._kill(c, s)
            # Set before forwarding: the client answers the welcome at once.
            st["welcomed"] = True
            try:
                c.sendall(data)
            except OSError:
                return self._kill(c, s)

    def close(self):
        self.stopped = True
        self.ls.close()
        with self.lock:
            for x in self.socks:
                self._kill(x)
                x.close()


def test_one_retry_and_never_with_a_body(server_factory):
    srv = server_factory()
    proxy = Proxy(srv.addrs["jay"])
    try:
        text = live("retry", proxy.addr, on_arm=proxy.arm)
    finally:
        proxy.close()
    assert text.count("# ARM") == 5, text


def test_server_restart_between_calls(server_factory):
    srv = server_factory()
    host, port = srv.addrs["jay"]
    state = {}

    def restart(what):
        assert what == "restart"
        srv.stop()
        state["new"] = server_factory(args=ephemeral_args(jay=f"{host}:{port}"),
                                      data=srv.data_dir)

    live("restart", f"{host}:{port}", on_arm=restart)
    assert state["new"].addrs["jay"] == (host, port)
