"""Helpers shared by the proof suite (crash, faults, load, security): servers
that restart on one data dir, /proc readings, the fault shim.

Everything here drives the real cairnd over loopback sockets."""
import os
import resource
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
for _face in ("jay", "scribe", "blobops"):
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), _face))

from conftest import ADMIN_TOKEN, BUILD, Server, ephemeral_args  # noqa: E402
import jayclient  # noqa: E402,F401  (re-exported for the tests)

SANITIZER_MARKS = ("ERROR: AddressSanitizer", "runtime error:", "ERROR: LeakSanitizer")


class Node:
    """One data dir served by a succession of cairnd processes (restarts after
    a kill).  Each process logs to its own file, so a restart never reads the
    previous process's "listening" line."""

    def __init__(self, data_dir, args=None, env=None, wait_for=("jay",)):
        self.data_dir = str(data_dir)
        self.args = ephemeral_args() if args is None else list(args)
        # The proofs cut S3 multipart uploads of small parts to keep each
        # crash cycle short; S3's 5 MiB minimum is tested in tests/s3.
        self.env = {"CAIRN_S3_MIN_PART_SIZE": "1"}
        self.env.update(env or {})
        self.wait_for = wait_for
        self.procs = []
        self.server = None

    def start(self, extra_env=None):
        env = dict(self.env)
        env.update(extra_env or {})
        s = Server(self.data_dir, args=self.args, env=env)
        s.log_path = "%s.%d.log" % (self.data_dir, len(self.procs))
        self.procs.append(s)
        self.server = s.start(wait_for=self.wait_for)
        return s

    @property
    def jay(self):
        return self.server.addrs["jay"]

    def addr(self, proto):
        """(host, port) of a listener of the running process: jay, http, scribe."""
        return self.server.addrs[proto]

    @property
    def http_url(self):
        return "http://%s:%d" % self.server.addrs["http"]

    @property
    def pid(self):
        return self.server.proc.pid

    def kill9(self):
        self.server.kill9()

    def stop(self):
        if self.server:
            self.server.stop()

    def check_sanitizers(self):
        for s in self.procs:
            out = s.output()
            for m in SANITIZER_MARKS:
                assert m not in out, out


@pytest.fixture
def node_factory(tmp_path):
    nodes = []

    def make(args=None, env=None, data=None, wait_for=("jay",), start=True):
        n = Node(data or (tmp_path / ("node%d" % len(nodes))), args=args, env=env,
                 wait_for=wait_for)
        nodes.append(n)
        if start:
            n.start()
        return n

    yield make
    for n in nodes:
        n.stop()
    for n in nodes:
        n.check_sanitizers()


def jay(node_or_addr, cred=ADMIN_TOKEN, timeout=60):
    addr = node_or_addr.jay if isinstance(node_or_addr, Node) else node_or_addr
    return jayclient.Conn(addr, cred, timeout=timeout)


def proc_status(pid, field):
    """A /proc/PID/status field in KiB (VmRSS, VmHWM) or as a count (Threads)."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def thread_count(pid):
    return len(os.listdir("/proc/%d/task" % pid))


def raise_nofile(want):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < want:
        new = min(want, hard) if hard != resource.RLIM_INFINITY else want
        resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def files_under(path):
    out = []
    for root, _dirs, files in os.walk(path):
        out.extend(os.path.join(root, f) for f in files)
    return out


def faultshim_path():
    p = os.path.join(BUILD, "tests", "proof", "faultshim.so")
    if not os.path.exists(p):
        pytest.fail(p + " is not built; run make")
    return p


# ---- every face at once (test_*_faces.py) ---------------------------------------------
# Jay, S3 + blob ops (one HTTP listener) and Scribe protocol 2, on ephemeral ports.
FACES_ARGS = ["--jay", "127.0.0.1:0", "--http", "127.0.0.1:0", "--scribe", "127.0.0.1:0"]
FACES = ("jay", "http", "scribe")
ADMIN_KEY, ADMIN_SECRET = ADMIN_TOKEN.split(":", 1)
REGION = "us-east-1"


def s3_client(node_or_url, key=ADMIN_KEY, secret=ADMIN_SECRET, timeout=30):
    """A boto3 S3 client (path style, SigV4, no retries: a failure is seen,
    never hidden by a retry).  Each has its own session, so threads may make
    clients at once (boto3's default session is not thread-safe)."""
    import boto3
    from botocore.config import Config
    url = node_or_url.http_url if isinstance(node_or_url, Node) else node_or_url
    return boto3.session.Session().client("s3", endpoint_url=url, aws_access_key_id=key,
                        aws_secret_access_key=secret, region_name=REGION,
                        config=Config(s3={"addressing_style": "path"}, signature_version="s3v4",
                                      retries={"max_attempts": 0, "mode": "standard"},
                                      connect_timeout=5, read_timeout=timeout,
                                      tcp_keepalive=True))


def scribe(node_or_addr, timeout=30, caps=0):
    """A Scribe protocol-2 connection (tests/scribe/scribe_wire.py)."""
    import scribe_wire
    addr = node_or_addr.addr("scribe") if isinstance(node_or_addr, Node) else node_or_addr
    return scribe_wire.Conn(addr, caps=caps, timeout=timeout)


class FaultShim:
    """The fault shim's control file (tests/proof/faultshim.c): env() goes to
    the server, set()/off() switch a fault while it runs, hits() counts the
    failures it injected since the last switch."""

    def __init__(self, tmp_path):
        self.ctl = str(tmp_path / "fault.ctl")
        self.env = {"LD_PRELOAD": faultshim_path(), "CN_FAULT_CTL": self.ctl}
        self.off()

    def _write(self, text):
        # A new inode each time: the shim notices the change on its next call.
        tmp = self.ctl + ".new"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, self.ctl)

    def set(self, **kv):
        self._write("".join("%s=%s\n" % item for item in kv.items()))

    def off(self):
        self._write("off\n")

    def hits(self):
        try:
            with open(self.ctl + ".hits") as f:
                return int(f.read() or 0)
        except (FileNotFoundError, ValueError):
            return 0
