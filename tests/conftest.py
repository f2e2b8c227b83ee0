"""Shared pytest fixtures: locate the build, start a real cairnd on ephemeral
loopback ports in a temporary data dir, and stop it when the test ends."""
import contextlib
import http.client
import os
import re
import signal
import socket
import subprocess
import time

import pytest

import fleetmode
from ports import free_port  # noqa: F401 (tests import it from here)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, os.environ.get("CAIRN_BUILD", "build"))
ADMIN_TOKEN = "cnadmin:test-admin-secret-0123456789"


def binary(name):
    path = os.path.join(BUILD, name)
    if not os.path.exists(path):
        pytest.fail(f"{path} is not built; run make")
    return path


def run(args, env=None, timeout=30, input=None, cwd=None):
    """Runs a command to completion; returns CompletedProcess with text output."""
    full_env = dict(os.environ)
    full_env.update(fleetmode.command_env(args))
    full_env.update(env or {})
    return subprocess.run(args, capture_output=True, text=True, env=full_env,
                          timeout=timeout, input=input, cwd=cwd)


class Server:
    """A cairnd process. Listener addresses are parsed from its log lines
    ("listening jay on 127.0.0.1:PORT")."""

    def __init__(self, data_dir, args=(), env=None):
        self.data_dir = str(data_dir)
        self.args = list(args)
        self.env = dict(os.environ)
        self.env.setdefault("CAIRN_ADMIN_TOKEN", ADMIN_TOKEN)
        self.env.update(env or {})
        self.proc = None
        self.addrs = {}
        self.log_path = os.path.join(self.data_dir + ".log")
        self.log = None
        self.log_offset = 0
        self.fleet_engines = fleetmode.active()  # make test-fleet (tests/fleetmode.py)

    def start(self, wait_for=("jay",), timeout=30):
        self.log = open(self.log_path, "ab")
        # A restart appends to the same log: parse only what this run wrote.
        self.log_offset = self.log.tell()
        cmd = [binary("cairnd"), "--data", self.data_dir] + self.args
        if self.fleet_engines:
            cmd += fleetmode.server_args(self.data_dir, self.args)
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, env=self.env)
        deadline = time.time() + timeout
        while time.time() < deadline:
            self.addrs = self._parse_addrs()
            if all(k in self.addrs for k in wait_for):
                return self
            if self.proc.poll() is not None:
                raise RuntimeError("cairnd exited %d:\n%s" % (self.proc.returncode, self.output()))
            time.sleep(0.05)
        self.proc.kill()  # never left running behind a failed test
        self.proc.wait()
        raise RuntimeError("cairnd did not start listening:\n" + self.output())

    def _parse_addrs(self):
        addrs = {}
        for m in re.finditer(r"listening (\w+) on (\S+)", self.output(self.log_offset)):
            host, _, port = m.group(2).rpartition(":")
            addrs[m.group(1)] = (host.strip("[]"), int(port))
        return addrs

    def output(self, offset=0):
        """The server's log from byte offset on (0: every run's)."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(offset)
                return f.read().decode("utf-8", "replace")
        except FileNotFoundError:
            return ""

    def stop(self, sig=signal.SIGTERM, timeout=20):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.log:
            self.log.close()
            self.log = None
        return self.proc.returncode if self.proc else None

    def kill9(self):
        self.proc.kill()
        self.proc.wait()
        if self.log:
            self.log.close()
            self.log = None


def pending_share_toml(n):
    """The [limits] table that lets n connections from one address wait for
    their handshakes at once.  Jay's default share is 16 per source: a test
    that opens more at once sees busy answers when a loaded machine slows
    the handshakes -- admission, which tests/jay/test_jay_handshake.py and
    tests/net test on their own terms."""
    return "[limits]\nmax_pending_per_source = %d\n" % n


def ephemeral_args(jay="127.0.0.1:0", scribe="off", http="off"):
    return ["--jay", jay, "--scribe", scribe, "--http", http]


def pytest_collection_modifyitems(config, items):
    """On the fleet engines, the tests fleetmode.SKIPS names are skipped with its reason."""
    if not fleetmode.active():
        return
    for item in items:
        why = fleetmode.skip_reason(item.nodeid)
        if why:
            item.add_marker(pytest.mark.skip(reason=why))


# What a sanitizer build prints when it found something: a memory error,
# undefined behaviour, or (at exit) a leak.
SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:")


def sanitizer_report(out):
    """out when it holds a sanitizer report, else None."""
    return out if any(m in out for m in SANITIZER_MARKS) else None


@contextlib.contextmanager
def small_fs(path, size):
    """A tmpfs of size (mount's -o size=, e.g. "32m") mounted at the
    directory path for the with block, unmounted after it: a disk that
    fills.  Skips the test where it cannot mount (not root)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    os.makedirs(path, exist_ok=True)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=" + size, "tmpfs",
                       str(path)]).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)])


def assert_no_sanitizer(out):
    """Fails the test on a sanitizer report in a server's or command's output."""
    assert sanitizer_report(out) is None, out


@pytest.fixture
def server_factory(tmp_path):
    servers = []

    def make(args=None, env=None, data=None, wait_for=("jay",)):
        s = Server(data or (tmp_path / f"data{len(servers)}"),
                   args=ephemeral_args() if args is None else args, env=env)
        servers.append(s)
        return s.start(wait_for=wait_for)

    yield make
    for s in servers:
        s.stop()
        out = s.output()
        # A sanitizer report anywhere in the server's output fails the test.
        assert_no_sanitizer(out)


@pytest.fixture
def servers():
    """A list a test appends the Servers it started by hand to; each is
    stopped after the test, and a sanitizer report in its output fails it."""
    started = []
    yield started
    for s in started:
        s.stop()
        out = s.output()
        assert_no_sanitizer(out)


@pytest.fixture
def cert(tmp_path):
    """A throwaway self-signed ECDSA P-256 server certificate for 127.0.0.1 and
    localhost, as (cert path, key path) (Chromium refuses Ed25519 server
    certificates)."""
    c, k = str(tmp_path / "cert.pem"), str(tmp_path / "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-nodes", "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
                    "-keyout", k, "-out", c], check=True, capture_output=True)
    return c, k


def connect(addr, timeout=10):
    s = socket.create_connection(addr, timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def metrics_text(addr):
    """The Prometheus text of the server's /_cairn/metrics at addr."""
    c = http.client.HTTPConnection(*addr, timeout=30)
    try:
        c.request("GET", "/_cairn/metrics")
        return c.getresponse().read().decode()
    finally:
        c.close()


def store_gauges(addr):
    """(cairn_store_blobs, cairn_store_bytes) scraped from the server at
    addr's /_cairn/metrics; -1 for a gauge it does not show."""
    text = metrics_text(addr)
    got = dict(re.findall(r"^(cairn_store_blobs|cairn_store_bytes) (\d+)$", text, re.M))
    return int(got.get("cairn_store_blobs", -1)), int(got.get("cairn_store_bytes", -1))
